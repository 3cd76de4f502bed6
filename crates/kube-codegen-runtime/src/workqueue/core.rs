//! The synchronous heart of the queue: dirty / processing / FIFO bookkeeping plus the list of
//! waiting getters. It holds no lock and never blocks; [`super::WorkQueue`] wraps it in a mutex.
//! Wake-ups are returned to the caller (generic `W`, a `Waker` in production and a plain id in
//! the exhaustive interleaving test) so they can be delivered after the lock is released.

use std::borrow::Borrow;
use std::collections::VecDeque;
use std::hash::BuildHasher;

use hashbrown::HashTable;
use hashbrown::hash_table::Entry as TableEntry;
#[cfg(test)]
use std::fmt;
use std::hash::Hash;
use std::sync::Arc;

use tokio::time::Instant;

use super::lanes::Lanes;
use super::metrics::QueueMetrics;

/// The item hasher. The queue hashes items before taking its lock, to keep the critical
/// section short; the core only probes.
pub(crate) type ItemHasher = foldhash::fast::RandomState;

const DIRTY: u8 = 1;
const PROCESSING: u8 = 2;

/// Per-item state. An item has an entry iff it is dirty (needs processing) or processing.
/// Invariant: every element of `queue` has an entry that is dirty and not processing.
#[derive(Debug, Clone)]
struct Entry {
    flags: u8,
    /// The priority it is (or will be, once `done`) queued with.
    priority: i32,
    /// When the item became dirty (only tracked with metrics).
    added_at: Option<Instant>,
    /// When a worker got the item (only tracked with metrics).
    started_at: Option<Instant>,
}

/// What a getter gets from [`Core::poll_get`].
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum GetPoll<T> {
    /// The item and the priority it was queued with.
    Item(T, i32),
    Shutdown,
    Wait,
}

/// Wake-ups to deliver once the lock is released. `many` only allocates on shutdown paths.
#[derive(Debug)]
pub(crate) struct Wakes<W> {
    pub(crate) one: Option<W>,
    pub(crate) many: Vec<W>,
}

impl<W> Wakes<W> {
    fn none() -> Self {
        Wakes {
            one: None,
            many: Vec::new(),
        }
    }

    pub(crate) fn into_iter(self) -> impl Iterator<Item = W> {
        self.one.into_iter().chain(self.many)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SlotState {
    Free,
    /// Registered and in the idle list: will be notified when an item arrives.
    Idle,
    /// Notified (an item arrived for it, or shutdown); its next poll takes an item or re-arms.
    Notified,
}

#[derive(Debug, Clone)]
struct Slot<W> {
    state: SlotState,
    waker: Option<W>,
}

/// Getters waiting for an item. Bounded by the number of concurrent `get` calls.
#[derive(Debug, Clone)]
struct Waiters<W> {
    slots: Vec<Slot<W>>,
    free: Vec<usize>,
    idle: VecDeque<usize>,
}

impl<W> Waiters<W> {
    fn new() -> Self {
        Waiters {
            slots: Vec::new(),
            free: Vec::new(),
            idle: VecDeque::new(),
        }
    }

    fn register(&mut self, waker: W) -> usize {
        let slot = Slot {
            state: SlotState::Idle,
            waker: Some(waker),
        };
        let key = match self.free.pop() {
            Some(k) => {
                self.slots[k] = slot;
                k
            }
            None => {
                self.slots.push(slot);
                self.slots.len() - 1
            }
        };
        self.idle.push_back(key);
        key
    }

    fn rearm(&mut self, key: usize, waker: W) {
        let slot = &mut self.slots[key];
        slot.waker = Some(waker);
        if slot.state == SlotState::Notified {
            slot.state = SlotState::Idle;
            self.idle.push_back(key);
        }
    }

    /// Removes a registration; returns whether it had been notified.
    fn remove(&mut self, key: usize) -> bool {
        let slot = &mut self.slots[key];
        let was = slot.state;
        slot.state = SlotState::Free;
        slot.waker = None;
        if was == SlotState::Idle {
            self.idle.retain(|&k| k != key);
        }
        self.free.push(key);
        was == SlotState::Notified
    }

    fn notify_one(&mut self) -> Option<W> {
        let key = self.idle.pop_front()?;
        let slot = &mut self.slots[key];
        slot.state = SlotState::Notified;
        slot.waker.take()
    }

    fn notify_all(&mut self, out: &mut Vec<W>) {
        while let Some(w) = self.notify_one() {
            out.push(w);
        }
    }
}

/// The queue state machine (client-go `queue.go` semantics, drain fixed to include queued items;
/// ready items handed out by priority as controller-runtime's priority queue does).
#[derive(Debug, Clone)]
pub(crate) struct Core<T, W> {
    /// Items that are dirty or processing, with their state (probed by precomputed hash).
    items: HashTable<(T, Entry)>,
    hasher: ItemHasher,
    /// Queued items with their hash, by priority then FIFO.
    queue: Lanes<T>,
    shutting_down: bool,
    drain: bool,
    waiters: Waiters<W>,
    drain_waiters: Vec<W>,
    metrics: Option<Arc<QueueMetrics>>,
}

impl<T, W> Core<T, W> {
    /// A getter gave up (its future was dropped). A notification it consumed is passed on.
    pub(crate) fn cancel_get(&mut self, key: usize) -> Option<W> {
        if self.waiters.remove(key) && !self.queue.is_empty() {
            self.waiters.notify_one()
        } else {
            None
        }
    }
}

impl<T: Clone + Eq + Hash, W> Core<T, W> {
    pub(crate) fn new(hasher: ItemHasher, metrics: Option<Arc<QueueMetrics>>) -> Self {
        Core {
            items: HashTable::new(),
            hasher,
            queue: Lanes::new(),
            shutting_down: false,
            drain: false,
            waiters: Waiters::new(),
            drain_waiters: Vec::new(),
            metrics,
        }
    }

    /// The hash the other methods expect for `item` (the queue computes it outside the lock).
    #[cfg(test)]
    pub(crate) fn hash<Q: Hash + ?Sized>(&self, item: &Q) -> u64 {
        self.hasher.hash_one(item)
    }

    /// Marks `item` dirty with `priority` (a queued item keeps the higher of its priority and
    /// this one). `hash` is `self.hash(&item)`; `now` is only read with metrics on.
    pub(crate) fn add(
        &mut self,
        item: T,
        hash: u64,
        priority: i32,
        now: impl FnOnce() -> Instant,
    ) -> Option<W> {
        if self.shutting_down {
            return None;
        }
        let hasher = &self.hasher;
        match self
            .items
            .entry(hash, |(k, _)| *k == item, |(k, _)| hasher.hash_one(k))
        {
            TableEntry::Occupied(mut o) => {
                let (k, e) = o.get_mut();
                Self::redirty(
                    k,
                    hash,
                    e,
                    priority,
                    &mut self.queue,
                    self.metrics.as_deref(),
                    now,
                );
                None
            }
            TableEntry::Vacant(v) => {
                let added_at = self.metrics.as_ref().map(|m| {
                    m.add();
                    now()
                });
                v.insert((
                    item.clone(),
                    Entry {
                        flags: DIRTY,
                        priority,
                        added_at,
                        started_at: None,
                    },
                ));
                self.queue.push(priority, item, hash);
                self.waiters.notify_one()
            }
        }
    }

    /// Like [`Core::add`] from a borrowed form: clones only when the item is new.
    pub(crate) fn add_ref<Q>(
        &mut self,
        item: &Q,
        hash: u64,
        priority: i32,
        now: impl FnOnce() -> Instant,
    ) -> Option<W>
    where
        T: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = T> + ?Sized,
    {
        if self.shutting_down {
            return None;
        }
        let hasher = &self.hasher;
        match self.items.entry(
            hash,
            |(k, _)| k.borrow() == item,
            |(k, _)| hasher.hash_one(k),
        ) {
            TableEntry::Occupied(mut o) => {
                let (k, e) = o.get_mut();
                Self::redirty(
                    k,
                    hash,
                    e,
                    priority,
                    &mut self.queue,
                    self.metrics.as_deref(),
                    now,
                );
                None
            }
            TableEntry::Vacant(v) => {
                let added_at = self.metrics.as_ref().map(|m| {
                    m.add();
                    now()
                });
                let owned = item.to_owned();
                v.insert((
                    owned.clone(),
                    Entry {
                        flags: DIRTY,
                        priority,
                        added_at,
                        started_at: None,
                    },
                ));
                self.queue.push(priority, owned, hash);
                self.waiters.notify_one()
            }
        }
    }

    /// An add of an item that has an entry: queued already, or processing.
    fn redirty(
        item: &T,
        hash: u64,
        e: &mut Entry,
        priority: i32,
        queue: &mut Lanes<T>,
        metrics: Option<&QueueMetrics>,
        now: impl FnOnce() -> Instant,
    ) {
        if e.flags & DIRTY != 0 {
            // Already queued, or already due for a re-run after done: the higher priority wins.
            if priority > e.priority {
                if e.flags & PROCESSING == 0 {
                    queue.raise(item, hash, e.priority, priority);
                }
                e.priority = priority;
            }
            return;
        }
        // Processing: `done` re-queues it (with this add's priority), so it never runs on two
        // workers at once.
        e.flags |= DIRTY;
        e.priority = priority;
        if let Some(m) = metrics {
            m.add();
            e.added_at = Some(now());
        }
    }

    fn pop(&mut self, now: impl FnOnce() -> Instant) -> Option<(T, i32)> {
        let (item, hash, priority) = self.queue.pop()?;
        let (_, e) = self
            .items
            .find_mut(hash, |(k, _)| *k == item)
            .expect("workqueue invariant: queued item has an entry");
        e.flags = PROCESSING;
        if let Some(m) = &self.metrics {
            let now = now();
            m.get(e.added_at.take().map(|t| now.saturating_duration_since(t)));
            e.started_at = Some(now);
        }
        Some((item, priority))
    }

    /// One poll of a getter. `key` is the getter's waiter registration, kept across polls.
    pub(crate) fn poll_get(
        &mut self,
        key: &mut Option<usize>,
        waker: impl FnOnce() -> W,
        now: impl FnOnce() -> Instant,
    ) -> GetPoll<T> {
        if let Some((item, priority)) = self.pop(now) {
            if let Some(k) = key.take() {
                self.waiters.remove(k);
            }
            return GetPoll::Item(item, priority);
        }
        if self.shutting_down {
            if let Some(k) = key.take() {
                self.waiters.remove(k);
            }
            return GetPoll::Shutdown;
        }
        match *key {
            None => *key = Some(self.waiters.register(waker())),
            Some(k) => self.waiters.rearm(k, waker()),
        }
        GetPoll::Wait
    }

    /// The worker finished `item`. Unknown or not-processing items are ignored.
    pub(crate) fn done(&mut self, item: &T, hash: u64, now: impl FnOnce() -> Instant) -> Wakes<W> {
        let mut wakes = Wakes::none();
        let Ok(mut o) = self.items.find_entry(hash, |(k, _)| k == item) else {
            return wakes;
        };
        let e = &mut o.get_mut().1;
        if e.flags & PROCESSING == 0 {
            return wakes;
        }
        e.flags &= !PROCESSING;
        if let Some(m) = &self.metrics
            && let Some(t) = e.started_at.take()
        {
            m.done(now().saturating_duration_since(t));
        }
        if e.flags & DIRTY != 0 {
            self.queue.push(e.priority, item.clone(), hash);
            wakes.one = self.waiters.notify_one();
        } else {
            o.remove();
            if self.shutting_down && self.items.is_empty() {
                wakes.many = std::mem::take(&mut self.drain_waiters);
            }
        }
        wakes
    }

    /// Stops accepting adds; getters drain what is queued, then get `Shutdown`. Also releases
    /// anyone waiting in `shutdown_with_drain` (client-go's escape hatch).
    pub(crate) fn shutdown(&mut self) -> Wakes<W> {
        self.shutting_down = true;
        self.drain = false;
        let mut wakes = Wakes::none();
        self.waiters.notify_all(&mut wakes.many);
        wakes.many.append(&mut self.drain_waiters);
        wakes
    }

    /// Starts a drain: like `shutdown`, but `poll_drain` stays pending until nothing is queued
    /// or in flight.
    pub(crate) fn shutdown_with_drain(&mut self) -> Wakes<W> {
        self.shutting_down = true;
        self.drain = true;
        let mut wakes = Wakes::none();
        self.waiters.notify_all(&mut wakes.many);
        wakes
    }

    /// Whether a drain is complete (or was aborted by `shutdown`); registers `waker` otherwise.
    pub(crate) fn poll_drain(&mut self, waker: impl FnOnce() -> W) -> bool {
        if !self.drain || self.items.is_empty() {
            return true;
        }
        self.drain_waiters.push(waker());
        false
    }

    pub(crate) fn len(&self) -> usize {
        self.queue.len()
    }

    #[cfg(test)]
    pub(crate) fn is_shutting_down(&self) -> bool {
        self.shutting_down
    }

    /// A canonical description of the state (for the model checker's visited set).
    #[cfg(test)]
    pub(crate) fn snapshot(&self) -> String
    where
        T: Ord + fmt::Debug,
        W: fmt::Debug,
    {
        let mut items: Vec<(&T, u8)> = self.items.iter().map(|(k, e)| (k, e.flags)).collect();
        let queue: Vec<(&T, i32)> = self.queue.iter().map(|(k, _, p)| (k, p)).collect();
        items.sort();
        let slots: Vec<_> = self
            .waiters
            .slots
            .iter()
            .map(|s| (s.state, &s.waker))
            .collect();
        format!(
            "{queue:?}|{items:?}|{}{}|{slots:?}|{:?}|{:?}|{:?}",
            self.shutting_down,
            self.drain,
            self.waiters.idle,
            self.waiters.free,
            self.drain_waiters
        )
    }

    #[cfg(test)]
    pub(crate) fn is_idle(&self) -> bool {
        self.items.is_empty() && self.queue.is_empty()
    }

    /// Number of items currently handed out and not yet done.
    pub(crate) fn in_flight(&self) -> usize {
        self.items
            .iter()
            .filter(|(_, e)| e.flags & PROCESSING != 0)
            .count()
    }

    /// Sum and maximum age of in-flight items (for the unfinished-work gauges).
    pub(crate) fn unfinished(&self, now: Instant) -> (f64, f64) {
        let mut total = 0.0;
        let mut longest = 0.0f64;
        for (_, e) in &self.items {
            if let Some(t) = e.started_at {
                let age = now.saturating_duration_since(t).as_secs_f64();
                total += age;
                longest = longest.max(age);
            }
        }
        (total, longest)
    }

    #[cfg(test)]
    pub(crate) fn check_invariants(&self) {
        let unique: std::collections::HashSet<&T> = self.queue.iter().map(|(k, _, _)| k).collect();
        assert_eq!(
            unique.len(),
            self.queue.len(),
            "an item is queued at most once"
        );
        for (item, hash, priority) in self.queue.iter() {
            assert_eq!(hash, self.hash(item), "queued hash matches the item");
            let (_, e) = self
                .items
                .find(hash, |(k, _)| k == item)
                .expect("queued item has an entry");
            assert_eq!(
                e.flags, DIRTY,
                "queued item must be dirty and not processing"
            );
            assert_eq!(e.priority, priority, "queued in its priority's lane");
        }
        let queued = self.items.iter().filter(|(_, e)| e.flags == DIRTY).count();
        assert_eq!(
            queued,
            self.queue.len(),
            "dirty idle items are exactly the queue"
        );
    }
}
