//! The delay heap behind `add_after`: a min-heap of ready times plus a map for deduplication.
//! A duplicate only ever moves an item's ready time earlier (earliest deadline wins) and its
//! priority up (the higher wins, as in controller-runtime's priority queue).

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};
use std::hash::Hash;

use tokio::time::Instant;

use std::hash::BuildHasher;

use hashbrown::HashTable;
use hashbrown::hash_table::Entry as TableEntry;

use super::core::ItemHasher;

/// A schedule. It names its item by (hash, seq): the item itself lives only in the table, and
/// a superseded schedule (its seq no longer the item's live one) finds nothing.
struct HeapEntry {
    ready_at: Instant,
    seq: u64,
    hash: u64,
}

impl PartialEq for HeapEntry {
    fn eq(&self, other: &Self) -> bool {
        self.ready_at == other.ready_at && self.seq == other.seq
    }
}
impl Eq for HeapEntry {}
impl PartialOrd for HeapEntry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for HeapEntry {
    // Reversed: BinaryHeap is a max-heap, we want the earliest (then first-inserted) on top.
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .ready_at
            .cmp(&self.ready_at)
            .then(other.seq.cmp(&self.seq))
    }
}

/// Items waiting for their ready time.
///
/// Schedules usually arrive in ready-time order (one delay for many items, e.g. a backoff
/// step), so entries whose ready time is not earlier than the last one queued go to a FIFO
/// (O(1) in and out); only out-of-order ones go to the heap. The earlier head of the two is
/// due first. Superseded entries (an item moved earlier) are skipped lazily and compacted away
/// when they outnumber live ones.
pub(crate) struct DelayHeap<T> {
    fifo: VecDeque<HeapEntry>,
    heap: BinaryHeap<HeapEntry>,
    /// Live schedule per item: (item, ready_at, seq of its live entry, priority), by
    /// precomputed hash.
    waiting: HashTable<(T, Instant, u64, i32)>,
    hasher: ItemHasher,
    next_seq: u64,
}

impl<T: Clone + Eq + Hash> DelayHeap<T> {
    pub(crate) fn new(hasher: ItemHasher) -> Self {
        DelayHeap {
            fifo: VecDeque::new(),
            heap: BinaryHeap::new(),
            waiting: HashTable::new(),
            hasher,
            next_seq: 0,
        }
    }

    /// [`DelayHeap::push`] hashing the item itself.
    #[cfg(test)]
    fn push_item(&mut self, item: T, ready_at: Instant) -> bool {
        let hash = self.hasher.hash_one(&item);
        self.push(item, hash, ready_at, 0)
    }

    /// Schedules `item` (whose hash under the queue's hasher is `hash`) at `ready_at`, keeping
    /// an earlier existing schedule and the higher priority. Returns whether the item's ready
    /// time changed (false: an earlier one was kept).
    pub(crate) fn push(&mut self, item: T, hash: u64, ready_at: Instant, priority: i32) -> bool {
        let seq = self.next_seq;
        self.next_seq += 1;
        let hasher = &self.hasher;
        match self
            .waiting
            .entry(hash, |w| w.0 == item, |w| hasher.hash_one(&w.0))
        {
            TableEntry::Occupied(mut o) if o.get().1 <= ready_at => {
                let live = o.get_mut();
                live.3 = live.3.max(priority);
                return false;
            }
            TableEntry::Occupied(mut o) => {
                let live = o.get_mut();
                live.1 = ready_at;
                live.2 = seq;
                live.3 = live.3.max(priority);
            }
            TableEntry::Vacant(v) => {
                v.insert((item, ready_at, seq, priority));
            }
        }
        let entry = HeapEntry {
            ready_at,
            seq,
            hash,
        };
        if self.fifo.back().is_none_or(|b| b.ready_at <= ready_at) {
            self.fifo.push_back(entry);
        } else {
            self.heap.push(entry);
        }
        let entries = self.fifo.len() + self.heap.len();
        if entries > 64 && entries > 2 * self.waiting.len() {
            self.compact();
        }
        true
    }

    fn is_live(waiting: &HashTable<(T, Instant, u64, i32)>, e: &HeapEntry) -> bool {
        // Seqs are unique, so matching on the seq alone identifies the live schedule.
        waiting.find(e.hash, |w| w.2 == e.seq).is_some()
    }

    fn compact(&mut self) {
        let waiting = &self.waiting;
        self.heap.retain(|e| Self::is_live(waiting, e));
        self.fifo.retain(|e| Self::is_live(waiting, e));
    }

    /// Whether the FIFO head comes before the heap head (earlier, or equal and older).
    fn fifo_first(&self) -> Option<bool> {
        match (self.fifo.front(), self.heap.peek()) {
            (None, None) => None,
            (Some(_), None) => Some(true),
            (None, Some(_)) => Some(false),
            (Some(f), Some(h)) => Some((f.ready_at, f.seq) <= (h.ready_at, h.seq)),
        }
    }

    fn pop_earliest(&mut self) -> Option<HeapEntry> {
        if self.fifo_first()? {
            self.fifo.pop_front()
        } else {
            self.heap.pop()
        }
    }

    fn peek_earliest(&self) -> Option<&HeapEntry> {
        if self.fifo_first()? {
            self.fifo.front()
        } else {
            self.heap.peek()
        }
    }

    /// Moves every item whose ready time is `<= now` into `out` with its hash and priority, in
    /// ready-time order.
    pub(crate) fn pop_due(&mut self, now: Instant, out: &mut Vec<(T, u64, i32)>) {
        while self.peek_earliest().is_some_and(|e| e.ready_at <= now) {
            let e = self.pop_earliest().expect("peeked");
            // One probe: remove only the live schedule of the item.
            if let Ok(o) = self.waiting.find_entry(e.hash, |w| w.2 == e.seq) {
                let (item, _, _, priority) = o.remove().0;
                out.push((item, e.hash, priority));
            }
        }
    }

    /// The earliest live ready time, if any (drops superseded entries from the heads).
    pub(crate) fn next_deadline(&mut self) -> Option<Instant> {
        while let Some(e) = self.peek_earliest() {
            if Self::is_live(&self.waiting, e) {
                return Some(e.ready_at);
            }
            self.pop_earliest();
        }
        None
    }

    pub(crate) fn len(&self) -> usize {
        self.waiting.len()
    }

    pub(crate) fn clear(&mut self) {
        self.fifo.clear();
        self.heap.clear();
        self.waiting.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// The items of `pop_due`'s output, without their hashes.
    pub(super) fn items<T: Clone>(out: &[(T, u64, i32)]) -> Vec<T> {
        out.iter().map(|(t, _, _)| t.clone()).collect()
    }

    #[test]
    fn earliest_deadline_wins_and_order_is_by_ready_time() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut h = DelayHeap::new(ItemHasher::default());
        assert!(h.push_item("a", t0 + ms(30)));
        assert!(h.push_item("b", t0 + ms(20)));
        assert!(!h.push_item("a", t0 + ms(40)), "later duplicate is ignored");
        assert!(!h.push_item("a", t0 + ms(30)), "same time is a no-op");
        assert_eq!(h.len(), 2);
        assert!(
            h.push_item("a", t0 + ms(10)),
            "earlier duplicate moves it up"
        );
        assert_eq!(h.len(), 2);
        assert_eq!(h.next_deadline(), Some(t0 + ms(10)));
        let mut out = Vec::new();
        h.pop_due(t0 + ms(15), &mut out);
        assert_eq!(items(&out), vec!["a"]);
        h.pop_due(t0 + ms(100), &mut out);
        assert_eq!(
            items(&out),
            vec!["a", "b"],
            "stale entry of a is not delivered twice"
        );
        assert_eq!(h.len(), 0);
        assert_eq!(h.next_deadline(), None);
    }

    #[test]
    fn compaction_keeps_live_entries() {
        let t0 = Instant::now();
        let mut h = DelayHeap::new(ItemHasher::default());
        for i in 0..1000u64 {
            // Each push moves "x" one ns earlier, leaving a stale entry behind.
            h.push_item("x", t0 + Duration::from_secs(10) - Duration::from_nanos(i));
        }
        h.push_item("y", t0 + Duration::from_secs(20));
        assert!(
            h.heap.len() <= 2 * h.len() + 65,
            "stale entries are compacted"
        );
        let mut out = Vec::new();
        h.pop_due(t0 + Duration::from_secs(30), &mut out);
        assert_eq!(items(&out), vec!["x", "y"]);
    }
}

#[cfg(test)]
mod order_tests {
    use super::tests::items;
    use super::*;
    use std::time::Duration;

    /// Mixed in-order and out-of-order schedules come out sorted by (ready time, insertion).
    #[test]
    fn fifo_and_heap_merge_in_ready_time_order() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut h = DelayHeap::new(ItemHasher::default());
        let delays = [5u64, 7, 7, 3, 9, 1, 7, 12, 2, 12, 4];
        for (i, d) in delays.iter().enumerate() {
            h.push_item(i, t0 + ms(*d));
        }
        let mut expected: Vec<usize> = (0..delays.len()).collect();
        expected.sort_by_key(|&i| (delays[i], i));
        assert_eq!(h.next_deadline(), Some(t0 + ms(1)));
        let mut out = Vec::new();
        h.pop_due(t0 + ms(6), &mut out);
        assert_eq!(items(&out), expected[..5]);
        h.pop_due(t0 + ms(100), &mut out);
        assert_eq!(items(&out), expected);
        assert_eq!(h.len(), 0);
    }
}
