//! The ready items of the queue, by priority (controller-runtime's priority queue order):
//! a higher priority is handed out first, FIFO within one priority. One lane per priority in
//! use, highest first; with only the default priority this is the plain FIFO of client-go.

use std::collections::VecDeque;

/// A lane that drained is kept (its buffer reused) unless more than this many lanes exist, so
/// a queue that only ever sees the default priority never reallocates, and a caller using
/// many distinct priorities does not make `pop` scan a long list of empty lanes.
const KEPT_LANES: usize = 4;

#[derive(Debug, Clone)]
struct Lane<T> {
    priority: i32,
    items: VecDeque<(T, u64)>,
}

/// Items with their precomputed hash, in hand-out order.
#[derive(Debug, Clone)]
pub(crate) struct Lanes<T> {
    /// Sorted by priority, highest first.
    lanes: Vec<Lane<T>>,
    len: usize,
}

impl<T> Lanes<T> {
    pub(crate) fn new() -> Self {
        Lanes {
            lanes: Vec::new(),
            len: 0,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl<T: Eq> Lanes<T> {
    fn lane(&mut self, priority: i32) -> &mut VecDeque<(T, u64)> {
        let at = match self.lanes.iter().position(|l| l.priority == priority) {
            Some(i) => i,
            None => self.insert_lane(priority),
        };
        &mut self.lanes[at].items
    }

    fn insert_lane(&mut self, priority: i32) -> usize {
        if self.lanes.len() >= KEPT_LANES {
            self.lanes.retain(|l| !l.items.is_empty());
        }
        let at = self
            .lanes
            .iter()
            .position(|l| l.priority < priority)
            .unwrap_or(self.lanes.len());
        self.lanes.insert(
            at,
            Lane {
                priority,
                items: VecDeque::new(),
            },
        );
        at
    }

    /// Appends an item at the back of its priority's lane.
    pub(crate) fn push(&mut self, priority: i32, item: T, hash: u64) {
        self.lane(priority).push_back((item, hash));
        self.len += 1;
    }

    /// The next item to hand out, with its priority.
    pub(crate) fn pop(&mut self) -> Option<(T, u64, i32)> {
        let lane = self.lanes.iter_mut().find(|l| !l.items.is_empty())?;
        let (item, hash) = lane.items.pop_front()?;
        self.len -= 1;
        Some((item, hash, lane.priority))
    }

    /// Moves a queued item from lane `from` to the back of lane `to` (a re-add with a higher
    /// priority). A linear search of one lane: raises are rare (a live event for an item of a
    /// backlog), adds and pops stay O(1).
    pub(crate) fn raise(&mut self, item: &T, hash: u64, from: i32, to: i32) {
        let Some(lane) = self.lanes.iter_mut().find(|l| l.priority == from) else {
            return;
        };
        let Some(at) = lane.items.iter().position(|(k, h)| *h == hash && k == item) else {
            return;
        };
        let moved = lane.items.remove(at).expect("position is in range");
        self.len -= 1;
        self.push(to, moved.0, moved.1);
    }

    /// Every queued item with its hash and priority, in hand-out order.
    #[cfg(test)]
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&T, u64, i32)> {
        self.lanes
            .iter()
            .flat_map(|l| l.items.iter().map(move |(k, h)| (k, *h, l.priority)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(l: &mut Lanes<&'static str>) -> Vec<(&'static str, i32)> {
        std::iter::from_fn(|| l.pop().map(|(k, _, p)| (k, p))).collect()
    }

    #[test]
    fn higher_priority_first_then_fifo() {
        let mut l = Lanes::new();
        l.push(-100, "old-a", 1);
        l.push(0, "live-a", 2);
        l.push(-100, "old-b", 3);
        l.push(5, "urgent", 4);
        l.push(0, "live-b", 5);
        assert_eq!(l.len(), 5);
        assert_eq!(
            drain(&mut l),
            [
                ("urgent", 5),
                ("live-a", 0),
                ("live-b", 0),
                ("old-a", -100),
                ("old-b", -100)
            ]
        );
        assert!(l.is_empty());
    }

    #[test]
    fn raise_moves_one_item_to_the_back_of_the_higher_lane() {
        let mut l = Lanes::new();
        l.push(-100, "a", 1);
        l.push(-100, "b", 2);
        l.push(-100, "c", 3);
        l.push(0, "live", 4);
        l.raise(&"b", 2, -100, 0);
        assert_eq!(l.len(), 4);
        assert_eq!(
            drain(&mut l),
            [("live", 0), ("b", 0), ("a", -100), ("c", -100)]
        );
    }

    #[test]
    fn many_distinct_priorities_keep_order_and_drop_empty_lanes() {
        let mut l = Lanes::new();
        for p in 0..20 {
            l.push(p, "x", p as u64);
            assert_eq!(l.pop().map(|(_, _, q)| q), Some(p));
        }
        assert!(l.lanes.len() <= KEPT_LANES + 1, "{} lanes", l.lanes.len());
        for p in [3, -1, 7, 3, 0] {
            l.push(p, "y", 0);
        }
        let order: Vec<i32> = drain(&mut l).into_iter().map(|(_, p)| p).collect();
        assert_eq!(order, [7, 3, 3, 0, -1]);
    }
}
