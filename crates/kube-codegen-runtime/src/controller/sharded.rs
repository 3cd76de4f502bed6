//! Ring mode ([`Controller::shard_ring`](super::Controller::shard_ring)): the workers reconcile
//! only keys whose hash the replica's [`ShardRing`](crate::shard::ShardRing) allows now, a
//! running reconcile is dropped when the ring revokes its range, and a gained range's objects
//! are queued. Without the `sharding` feature the gate type is uninhabited, so the unsharded
//! path costs one `None` check.

use std::future::Future;

use kube::Resource;

use super::run::Tombstones;
use crate::cache::{StoreReader, key_of};
use crate::workqueue::WorkQueue;

#[cfg(feature = "sharding")]
pub(crate) type Gate = crate::shard::ShardRing;
#[cfg(feature = "sharding")]
pub(crate) type Held = crate::shard::Permit;

/// No gate without the `sharding` feature.
#[cfg(not(feature = "sharding"))]
#[derive(Clone, Debug)]
pub(crate) enum Gate {}
#[cfg(not(feature = "sharding"))]
pub(crate) enum Held {}

/// What the gate says about one object.
#[cfg_attr(not(feature = "sharding"), allow(dead_code))]
pub(crate) enum Admit {
    /// Reconcile it (holding the permit, when sharded).
    Go(Option<Held>),
    /// Being taken: drop the key now, it is queued again when allowed; keep a tombstone.
    Later,
    /// Another replica's.
    NotMine,
}

/// What the gate says about `object` (`deleted`: its tombstone, which a replica giving its
/// range away still reconciles until the handoff is acknowledged).
pub(crate) fn admit<K: Resource>(gate: Option<&Gate>, object: &K, deleted: bool) -> Admit {
    let Some(gate) = gate else {
        return Admit::Go(None);
    };
    #[cfg(feature = "sharding")]
    {
        use crate::shard::Admission;
        let hash = crate::shard::object_hash(object, gate.shard_key());
        let admission = if deleted {
            gate.admit_deleted(hash)
        } else {
            gate.admit(hash)
        };
        match admission {
            Admission::Reconcile(p) => Admit::Go(Some(p)),
            Admission::Later => Admit::Later,
            Admission::NotMine => Admit::NotMine,
        }
    }
    #[cfg(not(feature = "sharding"))]
    {
        let _ = (object, deleted);
        match *gate {}
    }
}

/// Runs `work` (the workers, until they stopped) with the ring taking part, then leaves the
/// ring (its Lease deleted, so the others take over at once) if `leave()` says so afterwards;
/// otherwise the Lease is left to expire (a worker could not be stopped).
pub(crate) async fn in_ring<F: Future>(
    ring: Gate,
    work: F,
    leave: impl FnOnce() -> bool,
) -> F::Output {
    #[cfg(feature = "sharding")]
    {
        let driver = tokio::spawn({
            let ring = ring.clone();
            async move { ring.run().await }
        });
        let out = work.await;
        driver.abort();
        if leave() {
            ring.leave().await;
        } else {
            tracing::error!("a reconcile could not be stopped: leaving the ring's Lease to expire");
        }
        out
    }
    #[cfg(not(feature = "sharding"))]
    {
        drop((work, leave));
        match ring {}
    }
}

/// `work`'s output, or `None` when the permit was revoked first (then `work` is dropped).
pub(crate) async fn unless_revoked<F: Future>(work: F, permit: Option<&Held>) -> Option<F::Output> {
    let Some(permit) = permit else {
        return Some(work.await);
    };
    #[cfg(feature = "sharding")]
    {
        tokio::select! {
            biased;
            out = work => Some(out),
            () = permit.revoked() => None,
        }
    }
    #[cfg(not(feature = "sharding"))]
    {
        drop(work);
        match *permit {}
    }
}

/// On every gained range, queues the cached objects and the tombstones whose hash is in it;
/// and reports the cache's keys as the replica's load (what the ring's table is cut by).
pub(crate) fn queue_gains<K>(
    gate: &Gate,
    store: StoreReader<K>,
    tombstones: Tombstones<K>,
    queue: WorkQueue<String>,
) where
    K: Resource + Send + Sync + 'static,
{
    #[cfg(feature = "sharding")]
    {
        let key = gate.shard_key();
        let cached = store.clone();
        gate.membership().add_load_source(move || {
            cached
                .list()
                .iter()
                .map(|o| (crate::shard::object_hash(&**o, key), 1))
                .collect()
        });
        gate.on_gain(move |gained| {
            let hash = |o: &K| crate::shard::object_hash(o, key);
            let mut n = 0usize;
            for o in store.list() {
                if gained.contains(hash(&o))
                    && let Ok(k) = key_of(&*o)
                {
                    // A gained range's objects are a backlog like an initial list's: live
                    // changes go first (controller-runtime's `LowPriority`).
                    queue.add_with_priority(k, crate::workqueue::LOW_PRIORITY);
                    n += 1;
                }
            }
            let deleted: Vec<String> = tombstones
                .lock()
                .iter()
                .filter(|(_, o)| gained.contains(hash(o)))
                .map(|(k, _)| k.clone())
                .collect();
            n += deleted.len();
            for k in deleted {
                queue.add(k);
            }
            tracing::debug!(queue = queue.name(), keys = n, "queued a gained range");
        });
    }
    #[cfg(not(feature = "sharding"))]
    {
        let _ = (store, tombstones, queue, key_of::<K>);
        match *gate {}
    }
}
