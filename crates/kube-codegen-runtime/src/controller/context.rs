//! [`Context`]: what a reconcile gets besides the object.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use crate::SharedInformerFactory;
use crate::cache::Lister;
use crate::events::Recorder;

/// What every reconcile of one controller shares.
pub(crate) struct Shared {
    pub(crate) name: String,
    pub(crate) client: kube::Client,
    pub(crate) recorder: Recorder,
    pub(crate) factory: SharedInformerFactory,
    /// `Lister<C>` of every kind the controller watches, by `TypeId::of::<C>()`.
    pub(crate) listers: HashMap<TypeId, Box<dyn Any + Send + Sync>>,
}

/// The controller's client, listers, recorder and name, and what this reconcile is about.
#[derive(Clone)]
pub struct Context {
    pub(crate) shared: Arc<Shared>,
    pub(crate) key: String,
    pub(crate) deleted: bool,
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("controller", &self.shared.name)
            .field("key", &self.key)
            .field("deleted", &self.deleted)
            .finish_non_exhaustive()
    }
}

impl Context {
    /// The controller's name (metrics label, queue name, default event reporter).
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// The client the factory was built over.
    pub fn client(&self) -> &kube::Client {
        &self.shared.client
    }

    /// The event recorder.
    pub fn recorder(&self) -> &Recorder {
        &self.shared.recorder
    }

    /// The informer factory the controller runs on.
    pub fn factory(&self) -> &SharedInformerFactory {
        &self.shared.factory
    }

    /// The lister of a kind the controller watches (the primary kind, `owns` and `watches`
    /// kinds); `None` for any other kind.
    pub fn lister<C: 'static>(&self) -> Option<&Lister<C>> {
        self.shared
            .listers
            .get(&TypeId::of::<C>())
            .and_then(|l| l.downcast_ref::<Lister<C>>())
    }

    /// The key (`namespace/name`, or `name`) being reconciled.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// True when the object is gone from the cache: the reconcile got its last known state
    /// (the delete event's object, or the cache's state for a delete seen only at a relist).
    pub fn is_deleted(&self) -> bool {
        self.deleted
    }
}
