//! Owner references: the handlers that map a watched object to keys of the primary kind
//! (controller-runtime's `handler.EnqueueRequestForOwner` with `OnlyControllerOwner`, and
//! `EnqueueRequestsFromMapFunc`), and `metav1`'s controller-reference helpers.

use std::marker::PhantomData;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::Resource;

use crate::cache::{Deleted, EventHandler, Lister, NotSynced};
use crate::workqueue::{DEFAULT_PRIORITY, WorkQueue};

/// The owner reference marked `controller: true`, if any (`metav1.GetControllerOf`).
pub fn controller_of(meta: &ObjectMeta) -> Option<&OwnerReference> {
    meta.owner_references
        .as_deref()?
        .iter()
        .find(|r| r.controller == Some(true))
}

/// The owner reference that makes `owner` the controller of an object
/// (`metav1.NewControllerRef`): `controller` and `blockOwnerDeletion` set, so deleting the
/// owner deletes what it controls. A missing name or uid is left empty.
pub fn controller_ref<K: Resource<DynamicType = ()>>(owner: &K) -> OwnerReference {
    let meta = owner.meta();
    OwnerReference {
        api_version: K::api_version(&()).into_owned(),
        kind: K::kind(&()).into_owned(),
        name: meta.name.clone().unwrap_or_default(),
        uid: meta.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// Whether `owner` controls `object` (`metav1.IsControlledBy`: the controller reference
/// carries the owner's uid).
pub fn is_controlled_by<K: Resource>(object: &ObjectMeta, owner: &K) -> bool {
    match (controller_of(object), &owner.meta().uid) {
        (Some(r), Some(uid)) => r.uid == *uid,
        _ => false,
    }
}

/// The group of an `apiVersion` (`""` for the core group's `v1`).
fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(g, _)| g)
}

/// The key of the `P` that controls `object`, when that `P` is in `owners`' cache. The
/// controller reference must name `P`'s kind in `P`'s group (any version: the server converts
/// between them); objects of other controllers, and orphans whose owner is gone from the
/// cache (or not listed yet: its own add queues it), map to nothing.
pub fn controller_owner_key<P>(object: &ObjectMeta, owners: &Lister<P>) -> Option<String>
where
    P: Resource<DynamicType = ()>,
{
    let r = controller_of(object)?;
    if r.kind != P::kind(&()) || group_of(&r.api_version) != P::group(&()) {
        return None;
    }
    // A namespaced owner is in its object's namespace; a cluster-scoped one has none.
    let found = match object.namespace.as_deref() {
        Some(ns) => match owners.namespace(ns).get(&r.name) {
            Ok(None) => owners.get(&r.name),
            other => other,
        },
        None => owners.get(&r.name),
    };
    match found {
        Ok(Some(owner)) => crate::cache::key_of(&*owner).ok(),
        Ok(None) | Err(NotSynced) => {
            tracing::debug!(
                object = object.name.as_deref().unwrap_or_default(),
                owner = %r.name,
                "ignoring an object whose controller is not in the cache"
            );
            None
        }
    }
}

/// Queues the key of the `P` controlling each added, changed or deleted object (a delete seen
/// only at a relist maps from the tombstone's last known state). An update with an unchanged
/// resourceVersion (a resync or relist repeat) queues nothing: it changed nothing the owner's
/// reconcile reads. It only enqueues, so the controller adds it inline.
pub struct EnqueueRequestForOwner<P, C> {
    queue: WorkQueue<String>,
    owners: Lister<P>,
    _child: PhantomData<fn(&C)>,
}

impl<P, C> EnqueueRequestForOwner<P, C> {
    /// A handler putting keys of `owners`' objects in `queue`.
    pub fn new(queue: WorkQueue<String>, owners: Lister<P>) -> Self {
        EnqueueRequestForOwner {
            queue,
            owners,
            _child: PhantomData,
        }
    }
}

impl<P, C> EnqueueRequestForOwner<P, C>
where
    P: Resource<DynamicType = ()>,
    C: Resource,
{
    fn enqueue(&self, child: &C, priority: i32) {
        if let Some(key) = controller_owner_key(child.meta(), &self.owners) {
            self.queue.add_with_priority(key, priority);
        }
    }
}

impl<P, C> EventHandler<C> for EnqueueRequestForOwner<P, C>
where
    P: Resource<DynamicType = ()> + Send + Sync + 'static,
    C: Resource + Send + Sync + 'static,
{
    fn on_add(&self, object: &Arc<C>, in_initial_list: bool) {
        self.enqueue(object, super::priority::of_add(in_initial_list));
    }
    fn on_update(&self, old: &Arc<C>, new: &Arc<C>) {
        if old.meta().resource_version != new.meta().resource_version {
            self.enqueue(new, DEFAULT_PRIORITY);
        }
    }
    fn on_delete(&self, deleted: &Deleted<C>) {
        self.enqueue(deleted.object(), DEFAULT_PRIORITY);
    }
}

/// A [`Controller::watches`](super::Controller::watches) mapper.
pub(crate) type Mapper<C> = Arc<dyn Fn(&C) -> Vec<String> + Send + Sync>;

/// Queues the keys a mapper gives for each added, changed (old and new state) or deleted
/// object (controller-runtime's `EnqueueRequestsFromMapFunc`).
pub(crate) struct EnqueueMapped<C> {
    pub(crate) queue: WorkQueue<String>,
    pub(crate) mapper: Mapper<C>,
}

impl<C> EnqueueMapped<C> {
    fn enqueue(&self, object: &C, priority: i32) {
        for key in (self.mapper)(object) {
            self.queue.add_with_priority(key, priority);
        }
    }
}

impl<C: Resource + Send + Sync + 'static> EventHandler<C> for EnqueueMapped<C> {
    fn on_add(&self, object: &Arc<C>, in_initial_list: bool) {
        self.enqueue(object, super::priority::of_add(in_initial_list));
    }
    fn on_update(&self, old: &Arc<C>, new: &Arc<C>) {
        if old.meta().resource_version != new.meta().resource_version {
            self.enqueue(old, DEFAULT_PRIORITY);
            self.enqueue(new, DEFAULT_PRIORITY);
        }
    }
    fn on_delete(&self, deleted: &Deleted<C>) {
        self.enqueue(deleted.object(), DEFAULT_PRIORITY);
    }
}
