//! A lock-free view of which items are dirty, so that re-adding a queued item never takes the
//! queue lock.
//!
//! In a busy controller most adds are duplicates: the key is already queued because informer
//! events for one object arrive faster than workers drain it. A duplicate add changes nothing,
//! so it only has to *read* shared state, and reads of a cache line that no core is writing stay
//! in every core's cache. The [`Core`](super::core::Core) remains the single source of truth and
//! keeps each item's flag here in step with its own `DIRTY` bit, always inside its critical
//! section: the flag is set when the item becomes dirty and cleared when a worker takes it.
//! So a reader that sees `true` saw a moment at which the item was dirty, where an add is a
//! no-op; a reader that sees `false` (or no entry) takes the lock and decides there.
//!
//! An item gets an entry only once it is added again while tracked (the first duplicate takes the
//! lock and attaches the flag), so workloads without duplicates pay nothing here. Entries
//! outlive their items on purpose (a key that keeps coming back reuses its flag instead of
//! reallocating it); [`DirtyMirror::sweep`] drops the ones no core entry holds.

use std::hash::Hash;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::core::ItemHasher;

/// The shared flags, keyed by item. Written only under the core lock; read without it.
pub(crate) struct DirtyMirror<T> {
    map: papaya::HashMap<T, Arc<AtomicBool>, ItemHasher>,
}

impl<T> std::fmt::Debug for DirtyMirror<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirtyMirror").finish_non_exhaustive()
    }
}

/// A mirror never shrinks below this many entries (sweeping tiny maps costs more than it frees).
const MIN_SWEEP_AT: usize = 1024;

impl<T: Clone + Eq + Hash> DirtyMirror<T> {
    pub(crate) fn new(hasher: ItemHasher) -> Self {
        DirtyMirror {
            map: papaya::HashMap::builder()
                .hasher(hasher)
                // The core's lock already serialises writers; incremental resizing would only make
                // readers check for a resize in progress.
                .resize_mode(papaya::ResizeMode::Blocking)
                .build(),
        }
    }

    /// Whether `item` is dirty right now (false also when unsure: the caller then takes the lock).
    pub(crate) fn is_dirty<Q>(&self, item: &Q) -> bool
    where
        Q: Hash + papaya::Equivalent<T> + ?Sized,
    {
        let guard = self.map.guard();
        self.map
            .get(item, &guard)
            .is_some_and(|flag| flag.load(Ordering::Acquire))
    }

    /// The flag of `item`, created if needed. Call with the core lock held.
    pub(crate) fn flag(&self, item: &T) -> Arc<AtomicBool> {
        let guard = self.map.guard();
        if let Some(flag) = self.map.get(item, &guard) {
            return flag.clone();
        }
        self.map
            .get_or_insert_with(item.clone(), || Arc::new(AtomicBool::new(false)), &guard)
            .clone()
    }

    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    /// Drops the entries of items the core no longer tracks (only the map holds their flag, and
    /// the core cleared it before letting go). Call with the core lock held. Returns the size at
    /// which the next sweep is due: four times what is left, so memory stays within a constant
    /// factor of the tracked items while a stable key set is swept rarely (amortised O(1)).
    pub(crate) fn sweep(&self) -> usize {
        let guard = self.map.guard();
        self.map
            .retain(|_, flag| Arc::strong_count(flag) > 1, &guard);
        (4 * self.map.len()).max(MIN_SWEEP_AT)
    }

    /// Initial sweep threshold.
    pub(crate) fn first_sweep_at() -> usize {
        MIN_SWEEP_AT
    }

    /// Whether the flag of `item` is set (tests compare it with the core's state).
    #[cfg(test)]
    pub(crate) fn flag_of(&self, item: &T) -> Option<bool> {
        let guard = self.map.guard();
        self.map
            .get(item, &guard)
            .map(|flag| flag.load(Ordering::Acquire))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::DirtyMirror;
    use crate::workqueue::core::{Core, GetPoll, ItemHasher};

    type TestCore = Core<u32, ()>;

    fn core() -> (TestCore, Arc<DirtyMirror<u32>>) {
        let hasher = ItemHasher::default();
        let mirror = Arc::new(DirtyMirror::new(hasher.clone()));
        (Core::new(hasher, None, Some(mirror.clone())), mirror)
    }

    fn add(c: &mut TestCore, x: u32) {
        let h = c.hash(&x);
        c.add(x, h, tokio::time::Instant::now);
    }

    fn get(c: &mut TestCore) -> Option<u32> {
        match c.poll_get(&mut None, || (), tokio::time::Instant::now) {
            GetPoll::Item(x) => Some(x),
            _ => None,
        }
    }

    fn done(c: &mut TestCore, x: u32) {
        let h = c.hash(&x);
        c.done(&x, h, tokio::time::Instant::now);
    }

    #[test]
    fn flag_appears_on_the_first_duplicate_and_follows_the_dirty_bit() {
        let (mut c, m) = core();
        add(&mut c, 7);
        assert_eq!(m.flag_of(&7), None, "a single add costs no mirror entry");
        assert!(!m.is_dirty(&7), "no entry: the caller takes the lock");
        add(&mut c, 7);
        assert!(m.is_dirty(&7), "queued and mirrored");
        assert_eq!(get(&mut c), Some(7));
        assert!(
            !m.is_dirty(&7),
            "processing, not dirty: an add must reach the core"
        );
        add(&mut c, 7);
        assert!(m.is_dirty(&7), "dirty again while processing");
        done(&mut c, 7);
        assert!(m.is_dirty(&7), "re-queued by done");
        assert_eq!(get(&mut c), Some(7));
        done(&mut c, 7);
        assert!(!m.is_dirty(&7), "finished: the stale entry reads clean");
        c.check_invariants();
    }

    #[test]
    fn random_operations_keep_flags_exact_and_the_mirror_bounded() {
        let (mut c, m) = core();
        let mut held: Vec<u32> = Vec::new();
        // xorshift: deterministic, no dependency.
        let mut s = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        for step in 0..200_000u32 {
            let r = next();
            match r % 4 {
                // Keys drift over time, so old ones go stale and must be swept.
                0 | 1 => add(&mut c, (step / 64) + (r >> 32) as u32 % 96),
                2 => {
                    if let Some(x) = get(&mut c) {
                        held.push(x);
                    }
                }
                _ => {
                    if !held.is_empty() {
                        let x = held.swap_remove((r >> 8) as usize % held.len());
                        done(&mut c, x);
                    }
                }
            }
            if step % 97 == 0 {
                c.check_invariants();
            }
        }
        c.check_invariants();
        assert!(m.len() > 0, "duplicates were mirrored");
        // ~3,100 keys are seen over the run, ~100 at a time: without sweeping the mirror would
        // hold them all; with it, at most the first threshold plus the live ones.
        assert!(
            m.len() <= super::MIN_SWEEP_AT + 200,
            "stale entries are swept (mirror holds {})",
            m.len()
        );
    }
}
