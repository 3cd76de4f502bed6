//! Which assignment each sharded reflector has cached: a replica acknowledges a new table
//! only once every one of its sharded informers has listed the ranges it is taking, so a
//! range is reconciled only with all its objects cached (a Foo gained before its Deployments
//! would look as if its Deployment were missing).

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::watch;

type Slots = BTreeMap<u64, (u64, bool)>;

/// The assignment generation each live sharded reflector last listed, and whether its last
/// attempt failed.
#[derive(Debug)]
pub(crate) struct CacheSync {
    /// The last slot id handed out, and per slot: generation listed, failing.
    slots: Mutex<(u64, Slots)>,
    changed: watch::Sender<u64>,
}

impl Default for CacheSync {
    fn default() -> Self {
        CacheSync {
            slots: Mutex::default(),
            changed: watch::channel(0).0,
        }
    }
}

impl CacheSync {
    /// A reflector's slot, removed when dropped (a stopped informer holds no acknowledgement).
    pub(crate) fn register(self: &Arc<Self>) -> CacheSlot {
        let mut slots = self.slots.lock();
        slots.0 += 1;
        let id = slots.0;
        slots.1.insert(id, (0, false));
        CacheSlot {
            sync: self.clone(),
            id,
        }
    }

    /// Whether every live reflector has listed generation `generation` (or a later one).
    pub(crate) fn listed(&self, generation: u64) -> bool {
        self.slots.lock().1.values().all(|(g, _)| *g >= generation)
    }

    /// Whether every reflector that has not listed `generation` is failing (its last list or
    /// watch errored): waiting for those may never end.
    pub(crate) fn only_failing_behind(&self, generation: u64) -> bool {
        self.slots
            .lock()
            .1
            .values()
            .all(|(g, failing)| *g >= generation || *failing)
    }

    /// Changes whenever a reflector reports or leaves.
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    fn bump(&self) {
        self.changed.send_modify(|n| *n += 1);
    }
}

/// One reflector's entry in [`CacheSync`].
#[derive(Debug)]
pub(crate) struct CacheSlot {
    sync: Arc<CacheSync>,
    id: u64,
}

impl CacheSlot {
    /// The reflector stored a full list of assignment `generation`.
    pub(crate) fn listed(&self, generation: u64) {
        if let Some((g, failing)) = self.sync.slots.lock().1.get_mut(&self.id) {
            *g = (*g).max(generation);
            *failing = false;
        }
        self.sync.bump();
    }

    /// The reflector's last request failed (until it lists again).
    pub(crate) fn failed(&self) {
        if let Some((_, failing)) = self.sync.slots.lock().1.get_mut(&self.id) {
            *failing = true;
        }
        self.sync.bump();
    }
}

impl Drop for CacheSlot {
    fn drop(&mut self) {
        self.sync.slots.lock().1.remove(&self.id);
        self.sync.bump();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_live_reflector_must_have_listed() {
        let sync = Arc::new(CacheSync::default());
        assert!(sync.listed(3), "no reflector: nothing to wait for");
        let a = sync.register();
        let b = sync.register();
        a.listed(3);
        assert!(!sync.listed(3));
        b.listed(2);
        assert!(!sync.listed(3));
        b.listed(4);
        assert!(sync.listed(3) && !sync.listed(4));
        drop(a);
        assert!(sync.listed(4));
        let c = sync.register();
        assert!(!sync.only_failing_behind(4));
        c.failed();
        assert!(sync.only_failing_behind(4) && !sync.listed(4));
        c.listed(4);
        assert!(sync.listed(4));
    }
}
