//! Which priority an event's key is queued with (controller-runtime's
//! `handler.WithLowPriorityWhenUnchanged`, which its builder puts on `For`, `Owns` and
//! `Watches`): objects of an initial list and resyncs (an update that did not change the
//! resource version) go behind live changes, so after a start or a failover with many objects a
//! user's change is reconciled before the backlog.

use kube::Resource;

use crate::workqueue::{DEFAULT_PRIORITY, LOW_PRIORITY};

/// An add: low if the object came with the informer's initial list.
pub(crate) fn of_add(in_initial_list: bool) -> i32 {
    if in_initial_list {
        LOW_PRIORITY
    } else {
        DEFAULT_PRIORITY
    }
}

/// An update: low if nothing changed (a resync delivers the cached object again).
pub(crate) fn of_update<K: Resource>(old: &K, new: &K) -> i32 {
    if old.meta().resource_version == new.meta().resource_version {
        LOW_PRIORITY
    } else {
        DEFAULT_PRIORITY
    }
}
