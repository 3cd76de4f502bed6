//! Predicates: which updates of the primary kind queue a reconcile.

use std::collections::BTreeMap;

use kube::Resource;

/// A filter on updates of the primary kind: `(old, new) -> queue it?`. Adds and deletes always
/// queue.
pub type UpdatePredicate<K> = dyn Fn(&K, &K) -> bool + Send + Sync;

/// True when `metadata.generation`, the labels, the annotations or the deletion timestamp
/// changed (controller-runtime's `GenerationChangedPredicate` or'ed with its label and
/// annotation predicates): status writes, resyncs and relist repeats are skipped. The deletion
/// timestamp is checked too because a finalizer's cleanup must run when it is set, whether or
/// not the server bumped the generation.
pub fn generation_changed<K: Resource>(old: &K, new: &K) -> bool {
    let (o, n) = (old.meta(), new.meta());
    let empty = BTreeMap::new();
    o.generation != n.generation
        || o.labels.as_ref().unwrap_or(&empty) != n.labels.as_ref().unwrap_or(&empty)
        || o.annotations.as_ref().unwrap_or(&empty) != n.annotations.as_ref().unwrap_or(&empty)
        || o.deletion_timestamp != n.deletion_timestamp
}
