//! Event handlers: what a shared informer tells its subscribers (client-go's
//! `ResourceEventHandler` and the notifications behind it).

use std::fmt;
use std::sync::Arc;

/// The last state of a deleted object.
#[derive(Debug)]
pub enum Deleted<K> {
    /// The delete was seen as a watch event: the object as the server last showed it.
    Object(Arc<K>),
    /// The object vanished between two lists (its delete event was missed, e.g. while
    /// disconnected): client-go's `DeletedFinalStateUnknown`. `object` is the cached state,
    /// which may be stale.
    FinalStateUnknown {
        /// The cache key of the object.
        key: String,
        /// What the cache last held for the key.
        object: Arc<K>,
    },
}

// By hand: a derive would ask `K: Clone`, and only `Arc`s are cloned.
impl<K> Clone for Deleted<K> {
    fn clone(&self) -> Self {
        match self {
            Deleted::Object(o) => Deleted::Object(o.clone()),
            Deleted::FinalStateUnknown { key, object } => Deleted::FinalStateUnknown {
                key: key.clone(),
                object: object.clone(),
            },
        }
    }
}

impl<K> Deleted<K> {
    /// The object, from the delete event or from the cache.
    pub fn object(&self) -> &Arc<K> {
        match self {
            Deleted::Object(o) | Deleted::FinalStateUnknown { object: o, .. } => o,
        }
    }
}

/// Receives an informer's events, one at a time and in order for each object. Calls for one
/// handler never overlap; different handlers run independently, so a slow one delays only
/// itself (up to the informer's backlog bound), unless it was added
/// [inline](super::SharedIndexInformer::add_inline_event_handler): then it runs on the
/// reflector's task and the cache waits for it. A panic in a handler is logged and the
/// handler goes on with the next event.
pub trait EventHandler<K>: Send + Sync + 'static {
    /// An object appeared. `in_initial_list` is true while the informer delivers the list
    /// it started with (or, for a handler added later, the cache as it was then).
    fn on_add(&self, object: &Arc<K>, in_initial_list: bool);
    /// An object changed (or, on a resync, `old` and `new` are the same object).
    fn on_update(&self, old: &Arc<K>, new: &Arc<K>);
    /// An object was deleted.
    fn on_delete(&self, deleted: &Deleted<K>);
}

type AddFn<K> = Box<dyn Fn(&Arc<K>, bool) + Send + Sync>;
type UpdateFn<K> = Box<dyn Fn(&Arc<K>, &Arc<K>) + Send + Sync>;
type DeleteFn<K> = Box<dyn Fn(&Deleted<K>) + Send + Sync>;

/// An [`EventHandler`] from closures; events without one are ignored (client-go's
/// `ResourceEventHandlerFuncs`).
pub struct EventHandlerFns<K> {
    add: Option<AddFn<K>>,
    update: Option<UpdateFn<K>>,
    delete: Option<DeleteFn<K>>,
}

impl<K> Default for EventHandlerFns<K> {
    fn default() -> Self {
        EventHandlerFns {
            add: None,
            update: None,
            delete: None,
        }
    }
}

impl<K> fmt::Debug for EventHandlerFns<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventHandlerFns")
            .field("add", &self.add.is_some())
            .field("update", &self.update.is_some())
            .field("delete", &self.delete.is_some())
            .finish()
    }
}

impl<K> EventHandlerFns<K> {
    /// A handler that ignores every event until given closures.
    pub fn new() -> Self {
        Self::default()
    }

    /// Called with each added object and whether it belongs to the initial list.
    pub fn on_add(mut self, f: impl Fn(&Arc<K>, bool) + Send + Sync + 'static) -> Self {
        self.add = Some(Box::new(f));
        self
    }

    /// Called with the old and new state of each changed object.
    pub fn on_update(mut self, f: impl Fn(&Arc<K>, &Arc<K>) + Send + Sync + 'static) -> Self {
        self.update = Some(Box::new(f));
        self
    }

    /// Called with each deleted object.
    pub fn on_delete(mut self, f: impl Fn(&Deleted<K>) + Send + Sync + 'static) -> Self {
        self.delete = Some(Box::new(f));
        self
    }
}

impl<K: Send + Sync + 'static> EventHandler<K> for EventHandlerFns<K> {
    fn on_add(&self, object: &Arc<K>, in_initial_list: bool) {
        if let Some(f) = &self.add {
            f(object, in_initial_list);
        }
    }
    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        if let Some(f) = &self.update {
            f(old, new);
        }
    }
    fn on_delete(&self, deleted: &Deleted<K>) {
        if let Some(f) = &self.delete {
            f(deleted);
        }
    }
}

/// One event queued for one handler.
#[derive(Debug)]
pub(crate) enum Notification<K> {
    Add(Arc<K>, bool),
    Update(Arc<K>, Arc<K>),
    Delete(Deleted<K>),
}

impl<K> Clone for Notification<K> {
    fn clone(&self) -> Self {
        match self {
            Notification::Add(o, initial) => Notification::Add(o.clone(), *initial),
            Notification::Update(a, b) => Notification::Update(a.clone(), b.clone()),
            Notification::Delete(d) => Notification::Delete(d.clone()),
        }
    }
}

impl<K: 'static> Notification<K> {
    /// Delivers to `handler`.
    pub(crate) fn deliver(&self, handler: &dyn EventHandler<K>) {
        match self {
            Notification::Add(o, initial) => handler.on_add(o, *initial),
            Notification::Update(old, new) => handler.on_update(old, new),
            Notification::Delete(d) => handler.on_delete(d),
        }
    }
}
