//! [`SharedIndexInformer`]: one reflector and one cache per kind, shared by any number of event
//! handlers (client-go's `shared_informer.go`).
//!
//! The reflector's writes go through the informer: each one updates the [`Store`] and queues
//! the matching notification for every handler under one lock (client-go's `blockDeltas`), so
//! a handler added while events flow first receives the cache as it was, then every later
//! event, with nothing missed or doubled. Notifications follow the cache, not the watch event:
//! an `ADDED` for a cached key is an update, a relist turns vanished keys into deletes with a
//! [`Deleted::FinalStateUnknown`] tombstone, and a delete of an unknown key is dropped. Each
//! handler has its own queue and task, so a slow handler delays only itself, until it is
//! [`InformerOptions::max_handler_backlog`] notifications behind: then the reflector waits
//! for it to work through half of them, which keeps memory bounded (client-go's queues are
//! unbounded, and a handler that falls behind a busy watch holds every replaced object).
//!
//! A handler that returns at once (it puts a key in a workqueue, as a controller's does) can
//! be added [inline](SharedIndexInformer::add_inline_event_handler): the reflector then calls
//! it on its own task right after the cache write, whenever the handler has nothing queued,
//! as kube-runtime's reflector hands events to its consumer. That saves a task wake-up per
//! batch of events and, more, keeps each event's allocations and frees on one thread: in W3
//! (json) the queued handler's task cost 2.3x the CPU per event of the same work done inline,
//! and glibc's per-thread arenas let the resident set grow by 530 MiB while the bytes in use
//! stayed flat (see the bench README).

use std::fmt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use tokio::runtime::Handle;
use tokio::sync::{Notify, mpsc, watch};

use super::error::CacheError;
use super::handler::{Deleted, EventHandler, Notification};
use super::health::{Health, ReflectorError};
use super::keys::store_key;
use super::lister::Lister;
use super::metrics::InformerMetricsProvider;
use super::reader::StoreReader;
use super::reflector::{Reflector, ReflectorStore};
use super::reflector_options::ReflectorOptions;
use super::source::ListWatch;
use super::store::{Indexers, Key, NAMESPACE_INDEX, Store};
use crate::workqueue::SettableGaugeMetric;

/// Rewrites each object before it is cached (e.g. drops `managedFields` to save memory). It
/// runs on the ingest path, so it should be quick, and it sees every listed and watched object.
pub type Transform<K> = Arc<dyn Fn(K) -> K + Send + Sync>;

/// Drops `metadata.managedFields` (controller-runtime's `TransformStripManagedFields`):
/// server-side apply's bookkeeping, which few controllers read and which is often the largest
/// part of an object's metadata. Ready for
/// [`SharedInformerFactoryBuilder::transform`](crate::factory::SharedInformerFactoryBuilder::transform);
/// an informer of its own takes [`InformerOptions::strip_managed_fields`].
pub fn strip_managed_fields(meta: &mut ObjectMeta) {
    meta.managed_fields = None;
}

/// Settings of a [`SharedIndexInformer`].
#[non_exhaustive]
pub struct InformerOptions<K> {
    /// Re-deliver every cached object to every handler as an update this often (`None`: never).
    /// Periods under one second are raised to one second, as in client-go.
    pub resync: Option<Duration>,
    /// Indices besides the namespace index, which every informer cache has; added through
    /// [`indexer`](Self::indexer), which refuses a name already taken.
    pub(crate) indexers: Indexers<K>,
    /// Rewrites objects before they are cached.
    pub transform: Option<Transform<K>>,
    /// The reflector's settings (backoff, page size, watch timeout).
    pub reflector: ReflectorOptions,
    /// How many notifications a handler may have waiting before the reflector pauses until it
    /// has worked through half of them (default [`DEFAULT_MAX_HANDLER_BACKLOG`]; `None`:
    /// unbounded, as in client-go). Each waiting update holds the object it replaced, so an
    /// unbounded backlog behind a slow handler grows with the event rate; the price of the
    /// bound is that a handler that stops returning stops the cache from moving.
    pub max_handler_backlog: Option<usize>,
}

/// The default [`InformerOptions::max_handler_backlog`].
pub const DEFAULT_MAX_HANDLER_BACKLOG: usize = 10_000;

impl<K> Default for InformerOptions<K> {
    fn default() -> Self {
        InformerOptions {
            resync: None,
            indexers: Indexers::new(),
            transform: None,
            reflector: ReflectorOptions::default(),
            max_handler_backlog: Some(DEFAULT_MAX_HANDLER_BACKLOG),
        }
    }
}

impl<K> fmt::Debug for InformerOptions<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InformerOptions")
            .field("resync", &self.resync)
            .field("indexers", &self.indexers.keys().collect::<Vec<_>>())
            .field("transform", &self.transform.is_some())
            .field("reflector", &self.reflector)
            .field("max_handler_backlog", &self.max_handler_backlog)
            .finish()
    }
}

impl<K> InformerOptions<K> {
    /// Sets the resync period.
    pub fn resync(mut self, period: Duration) -> Self {
        self.resync = Some(period.max(Duration::from_secs(1)));
        self
    }

    /// Adds an index. A name already taken (the built-in [`NAMESPACE_INDEX`], or one added
    /// before) is [`CacheError::IndexConflict`]: replacing the namespace index would break the
    /// listers, and quietly keeping one of two indexers would lose the user's.
    pub fn indexer(
        mut self,
        name: impl Into<String>,
        index: super::store::IndexFn<K>,
    ) -> Result<Self, CacheError> {
        let name = name.into();
        if name == NAMESPACE_INDEX || self.indexers.contains_key(&name) {
            return Err(CacheError::IndexConflict(name));
        }
        self.indexers.insert(name, index);
        Ok(self)
    }

    /// Sets the transform (replacing one set before, and [`strip_managed_fields`](Self::strip_managed_fields)
    /// if called before this).
    pub fn transform(mut self, f: impl Fn(K) -> K + Send + Sync + 'static) -> Self {
        self.transform = Some(Arc::new(f));
        self
    }

    /// Sets the reflector's settings (replacing what [`watch_list`](Self::watch_list) and
    /// [`metrics`](Self::metrics) set before).
    pub fn reflector(mut self, options: ReflectorOptions) -> Self {
        self.reflector = options;
        self
    }

    /// Turns the reflector's streaming watch-list on (the default) or off
    /// ([`ReflectorOptions::watch_list`]).
    pub fn watch_list(mut self, on: bool) -> Self {
        self.reflector.watch_list = on;
        self
    }

    /// Records the reflector's metrics and each handler's backlog through `provider`,
    /// labelled `name` (see [`InformerMetricsProvider`]).
    pub fn metrics(
        mut self,
        provider: Arc<dyn InformerMetricsProvider>,
        name: impl Into<String>,
    ) -> Self {
        self.reflector = self.reflector.metrics(provider, name);
        self
    }

    /// Sets the handler backlog bound (`None`: unbounded; a bound is at least 2).
    pub fn max_handler_backlog(mut self, bound: Option<usize>) -> Self {
        self.max_handler_backlog = bound.map(|b| b.max(2));
        self
    }
}

impl<K: Resource + 'static> InformerOptions<K> {
    /// Drops every object's `managedFields` before it is cached ([`strip_managed_fields`]),
    /// then runs the transform set before, if any.
    pub fn strip_managed_fields(mut self) -> Self {
        let then = self.transform.take();
        self.transform = Some(Arc::new(move |mut k: K| {
            strip_managed_fields(k.meta_mut());
            match &then {
                Some(f) => f(k),
                None => k,
            }
        }));
        self
    }
}

/// Watches one kind and keeps an indexed cache of it for any number of event handlers. A cheap
/// handle: clones share the informer.
pub struct SharedIndexInformer<K> {
    inner: Arc<Inner<K>>,
}

impl<K> Clone for SharedIndexInformer<K> {
    fn clone(&self) -> Self {
        SharedIndexInformer {
            inner: self.inner.clone(),
        }
    }
}

impl<K> fmt::Debug for SharedIndexInformer<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedIndexInformer")
            .field("store", &self.inner.store)
            .field("synced", &*self.inner.synced.borrow())
            .finish_non_exhaustive()
    }
}

struct Inner<K> {
    api: Arc<dyn ListWatch<K>>,
    store: Arc<Store<K>>,
    resync: Option<Duration>,
    transform: Option<Transform<K>>,
    reflector_options: ReflectorOptions,
    /// Store writes and notification fan-out happen under this lock.
    dispatch: Mutex<Dispatch<K>>,
    /// The first list is cached (set under `dispatch`: adds after it are not part of the
    /// initial list).
    synced: watch::Sender<bool>,
    started: AtomicBool,
    runtime: Option<Handle>,
    next_id: AtomicU64,
    max_backlog: Option<usize>,
    /// Wakes the resync loop when a handler with a resync period is added or removed.
    resync_changed: Notify,
    /// The reflector's failures, across runs.
    health: Health,
}

struct Dispatch<K> {
    listeners: Vec<Listener<K>>,
    /// Inline deliveries decided under the lock, made by the writer once it has let go of it
    /// (so a handler may use the informer).
    calls: Vec<InlineCall<K>>,
}

/// One notification for an inline handler, to be delivered on the reflector's task.
struct InlineCall<K> {
    handler: Arc<dyn EventHandler<K>>,
    state: Arc<ListenerState>,
    notification: Notification<K>,
}

/// An inline handler call that returns after this long or longer moves the handler to its own
/// task for good (with a warning): a handler that blocks must not hold up the cache and every
/// other handler on each event. An enqueue takes well under a microsecond; the margin covers
/// a thread pre-empted mid-call on a busy machine.
pub const INLINE_CALL_LIMIT: Duration = Duration::from_millis(100);

/// Delivers inline notifications in order (after the dispatch lock is released).
fn call_inline<K: 'static>(calls: Vec<InlineCall<K>>) {
    for c in calls {
        if c.state.gone.load(Ordering::Acquire) {
            continue;
        }
        let started = std::time::Instant::now();
        let returned = deliver(&*c.handler, &c.notification);
        let took = started.elapsed();
        // A panic is reported as such (its hook may print a backtrace, which is slow). Calls
        // decided before this one was measured still run inline: they are in order.
        if returned && took >= INLINE_CALL_LIMIT && c.state.inline.swap(false, Ordering::AcqRel) {
            tracing::warn!(
                "informer: an inline event handler took {took:?} (limit {INLINE_CALL_LIMIT:?}); \
                 it runs on its own task from now on"
            );
        }
        if matches!(c.notification, Notification::Add(_, true)) {
            c.state.initial_listed();
        }
    }
}

/// Delivers `n` to `handler`; a panic is logged and the handler goes on with the next event.
/// False if it panicked.
fn deliver<K: 'static>(handler: &dyn EventHandler<K>, n: &Notification<K>) -> bool {
    let returned = std::panic::catch_unwind(AssertUnwindSafe(|| n.deliver(handler))).is_ok();
    if !returned {
        tracing::error!("informer: an event handler panicked; it keeps running");
    }
    returned
}

struct Listener<K> {
    id: u64,
    tx: mpsc::UnboundedSender<Vec<Notification<K>>>,
    /// Notifications not yet handed to the handler's task. They go as one batch when the
    /// reflector has no further event ready, or at [`BATCH`]: a handler faster than the watch
    /// would otherwise sleep after every notification, and waking its task for each one
    /// (a futex call and a task switch) costs more than handling it.
    pending: Vec<Notification<K>>,
    /// Set for an inline handler: the handler, called on the reflector's task whenever nothing
    /// is queued for it (its task then has nothing left to run, so calls cannot overlap and
    /// order is kept).
    inline: Option<Arc<dyn EventHandler<K>>>,
    state: Arc<ListenerState>,
    /// This handler's resync period (`None`: no resync) and when it is next due: each handler
    /// is resynced on its own clock, so only due handlers get the cache again (client-go's
    /// `AddEventHandlerWithResyncPeriod`).
    resync: Option<(Duration, tokio::time::Instant)>,
}

/// The shortest resync period a handler may ask for, as client-go's `minimumResyncPeriod`.
pub const MINIMUM_RESYNC_PERIOD: Duration = Duration::from_secs(1);

/// What a handler's queue, its task and its registration share: how far behind it is, and
/// whether it was removed.
#[derive(Default)]
struct ListenerState {
    /// Notifications queued and not yet handled.
    queued: AtomicUsize,
    /// Initial-list adds queued and not yet returned from.
    initial_pending: AtomicUsize,
    /// Added inline and not moved to its task since ([`INLINE_CALL_LIMIT`]).
    inline: AtomicBool,
    /// Wakes whoever waits for `queued` to fall.
    drained: Notify,
    /// The handler was removed: its queue is dropped and nobody waits for it.
    gone: AtomicBool,
    /// Reports `queued` (the informer's metrics provider's handler backlog).
    backlog_metric: Option<Box<dyn SettableGaugeMetric>>,
}

impl ListenerState {
    fn len(&self) -> usize {
        if self.gone.load(Ordering::Acquire) {
            0
        } else {
            self.queued.load(Ordering::Acquire)
        }
    }

    /// One initial-list add returned from; the last one wakes [`Registration::wait_for_sync`].
    fn initial_listed(&self) {
        if self.initial_pending.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.drained.notify_waiters();
        }
    }

    /// One notification handled; wakes waiters when the backlog reaches `low`.
    fn handled(&self, low: usize) {
        let left = self.queued.fetch_sub(1, Ordering::AcqRel) - 1;
        if let Some(m) = &self.backlog_metric {
            m.set(left as f64);
        }
        if left == low {
            self.drained.notify_waiters();
        }
    }

    /// Waits until at most `low` notifications are queued (or the handler is gone).
    async fn wait_until(self: Arc<Self>, low: usize) {
        loop {
            let drained = self.drained.notified();
            if self.len() <= low {
                return;
            }
            drained.await;
        }
    }
}

/// The most notifications a handler's task is handed at once.
const BATCH: usize = 256;

impl<K> Listener<K> {
    /// Queues `n`, or adds it to `calls` if this handler is inline and idle (`calls` is `None`
    /// where nothing runs inline calls: a new handler's initial list).
    fn send(&mut self, n: Notification<K>, calls: Option<&mut Vec<InlineCall<K>>>) {
        if matches!(n, Notification::Add(_, true)) {
            self.state.initial_pending.fetch_add(1, Ordering::AcqRel);
        }
        if let (Some(handler), Some(calls)) = (&self.inline, calls)
            && self.state.inline.load(Ordering::Acquire)
            && self.pending.is_empty()
            && self.state.queued.load(Ordering::Acquire) == 0
        {
            calls.push(InlineCall {
                handler: handler.clone(),
                state: self.state.clone(),
                notification: n,
            });
            return;
        }
        let queued = self.state.queued.fetch_add(1, Ordering::AcqRel) + 1;
        if let Some(m) = &self.state.backlog_metric {
            m.set(queued as f64);
        }
        self.pending.push(n);
        if self.pending.len() >= BATCH {
            self.flush();
        }
    }

    /// Hands the pending notifications to the handler's task.
    fn flush(&mut self) {
        if !self.pending.is_empty() {
            let batch = std::mem::replace(&mut self.pending, Vec::with_capacity(BATCH));
            // A closed queue means the handler was removed: nothing to deliver to.
            let _ = self.tx.send(batch);
        }
    }
}

impl<K> Dispatch<K> {
    /// Queues `n` for every handler (the last one gets `n` itself: one clone fewer per event).
    fn notify(&mut self, n: Notification<K>) {
        let Dispatch { listeners, calls } = self;
        if let Some((last, others)) = listeners.split_last_mut() {
            for l in others {
                l.send(n.clone(), Some(calls));
            }
            last.send(n, Some(calls));
        }
    }

    fn flush(&mut self) {
        for l in &mut self.listeners {
            l.flush();
        }
    }
}

/// A handler's registration: tells whether it has received the initial list, and removes it.
pub struct Registration {
    id: u64,
    informer_synced: watch::Receiver<bool>,
    state: Arc<ListenerState>,
}

impl fmt::Debug for Registration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registration")
            .field("id", &self.id)
            .field("has_synced", &self.has_synced())
            .field("backlog", &self.state.len())
            .finish()
    }
}

impl Registration {
    /// This handler's number within its informer (the label of its backlog metric).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Notifications queued for this handler and not yet handled (0 once it is removed).
    pub fn backlog(&self) -> usize {
        self.state.len()
    }

    /// Whether the reflector calls this handler on its own task: added with
    /// [`add_inline_event_handler`](SharedIndexInformer::add_inline_event_handler) and no call
    /// has taken [`INLINE_CALL_LIMIT`] or longer.
    pub fn runs_inline(&self) -> bool {
        self.state.inline.load(Ordering::Acquire)
    }

    /// True once the informer has listed and this handler has returned from every add of the
    /// initial list (client-go's per-registration `HasSynced`).
    pub fn has_synced(&self) -> bool {
        *self.informer_synced.borrow() && self.state.initial_pending.load(Ordering::Acquire) == 0
    }

    /// Waits until [`has_synced`](Self::has_synced), or the handler was removed, or its
    /// informer is gone.
    pub async fn wait_for_sync(&self) {
        let mut synced = self.informer_synced.clone();
        loop {
            // Registered before the checks, so a wake between a check and the await counts.
            let drained = self.state.drained.notified();
            if self.state.gone.load(Ordering::Acquire) || self.has_synced() {
                return;
            }
            if *synced.borrow_and_update() {
                drained.await;
            } else {
                tokio::select! {
                    informer = synced.changed() => {
                        if informer.is_err() {
                            return; // the informer is gone, and with it any sync to wait for
                        }
                    }
                    () = drained => {}
                }
            }
        }
    }
}

impl<K> SharedIndexInformer<K>
where
    K: Resource + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
{
    /// An informer over `source`: a `kube::Api` (`Api::all` for every namespace,
    /// `Api::namespaced` for one) or any other [`ListWatch`]. Call [`run`](Self::run) to start it.
    pub fn new(source: impl ListWatch<K>, options: InformerOptions<K>) -> Self {
        let store = Store::with_namespace_index();
        if !options.indexers.is_empty() {
            // `InformerOptions::indexer` refused every name the store already has, so this
            // cannot clash; were it to, the error says so instead of dropping indexers quietly.
            if let Err(e) = store.add_indexers(options.indexers) {
                tracing::error!("informer: {e}: the options' indexers were not added");
            }
        }
        SharedIndexInformer {
            inner: Arc::new(Inner {
                api: Arc::new(source),
                store: Arc::new(store),
                resync: options.resync,
                transform: options.transform,
                reflector_options: options.reflector,
                dispatch: Mutex::new(Dispatch {
                    listeners: Vec::new(),
                    calls: Vec::new(),
                }),
                synced: watch::channel(false).0,
                started: AtomicBool::new(false),
                runtime: Handle::try_current().ok(),
                next_id: AtomicU64::new(0),
                max_backlog: options.max_handler_backlog,
                resync_changed: Notify::new(),
                health: Health::default(),
            }),
        }
    }

    /// The cache, read-only: the informer is its only writer.
    pub fn store(&self) -> StoreReader<K> {
        StoreReader::new(self.inner.store.clone())
    }

    /// A lister over the cache; its reads fail with
    /// [`NotSynced`](super::NotSynced) until the first list is cached.
    pub fn lister(&self) -> Lister<K> {
        Lister::with_synced(self.inner.store.clone(), self.inner.synced.subscribe())
    }

    /// True once the first list is in the cache.
    pub fn has_synced(&self) -> bool {
        *self.inner.synced.borrow()
    }

    /// The reflector's last failure, while nothing has worked since (`None`: healthy); see
    /// [`ReflectorHealth::last_error`](super::ReflectorHealth::last_error).
    pub fn last_error(&self) -> Option<ReflectorError> {
        self.inner.health.last_error()
    }

    /// Waits until the first list is in the cache.
    pub async fn wait_for_sync(&self) {
        let mut rx = self.inner.synced.subscribe();
        // The sender lives in `inner`, which `self` keeps alive: this cannot fail.
        let _ = rx.wait_for(|s| *s).await;
    }

    /// Adds a handler. If the informer has already listed, the handler first receives every
    /// cached object as an initial-list add. Needs a Tokio runtime (the handler runs on its own
    /// task): the one current now, else the one current when the informer was built. The
    /// handler is resynced at the informer's period ([`InformerOptions::resync`]), if any.
    pub fn add_event_handler(
        &self,
        handler: impl EventHandler<K>,
    ) -> Result<Registration, CacheError> {
        self.add_handler(Arc::new(handler), self.inner.resync, false)
    }

    /// Adds a handler that the reflector calls on its own task, right after each cache write,
    /// whenever nothing is queued for the handler: for handlers that return at once, typically
    /// by putting a key in a [`WorkQueue`](crate::workqueue::WorkQueue). It saves a task
    /// wake-up per batch of events and keeps each event on one thread (2.3x less CPU per event
    /// in W3's json variant). The price: while it runs, the cache and every other handler
    /// wait, so a handler that blocks (I/O, a lock held elsewhere, a long computation) must use
    /// [`add_event_handler`](Self::add_event_handler). The initial list of a handler added
    /// after the informer listed, and resyncs, still go through its own queue, in order. A call
    /// that takes [`INLINE_CALL_LIMIT`] or longer moves the handler to its own task for good,
    /// with a warning ([`Registration::runs_inline`] tells).
    pub fn add_inline_event_handler(
        &self,
        handler: impl EventHandler<K>,
    ) -> Result<Registration, CacheError> {
        self.add_handler(Arc::new(handler), self.inner.resync, true)
    }

    /// [`add_event_handler`](Self::add_event_handler) with this handler's own resync period
    /// (client-go's `AddEventHandlerWithResyncPeriod`): `Duration::ZERO` for none, else at least
    /// [`MINIMUM_RESYNC_PERIOD`]. Resyncs go to the handlers that are due, not to every handler.
    pub fn add_event_handler_with_resync_period(
        &self,
        handler: impl EventHandler<K>,
        period: Duration,
    ) -> Result<Registration, CacheError> {
        let period = (!period.is_zero()).then(|| period.max(MINIMUM_RESYNC_PERIOD));
        self.add_handler(Arc::new(handler), period, false)
    }

    fn add_handler(
        &self,
        handler: Arc<dyn EventHandler<K>>,
        resync: Option<Duration>,
        inline: bool,
    ) -> Result<Registration, CacheError> {
        let runtime = Handle::try_current()
            .ok()
            .or_else(|| self.inner.runtime.clone())
            .ok_or(CacheError::NoRuntime)?;
        let (tx, mut rx) = mpsc::unbounded_channel::<Vec<Notification<K>>>();
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let state = Arc::new(ListenerState {
            backlog_metric: self
                .inner
                .reflector_options
                .metrics
                .as_ref()
                .map(|m| m.provider.new_handler_backlog_metric(&m.name, id)),
            inline: AtomicBool::new(inline),
            ..ListenerState::default()
        });
        let low = self.inner.max_backlog.map_or(0, |max| max / 2);
        let mut listener = Listener {
            id,
            tx,
            pending: Vec::new(),
            inline: inline.then(|| handler.clone()),
            state: state.clone(),
            resync: resync.map(|p| (p, tokio::time::Instant::now() + p)),
        };
        let registration = Registration {
            id: listener.id,
            informer_synced: self.inner.synced.subscribe(),
            state: state.clone(),
        };
        {
            let mut d = self.inner.dispatch.lock();
            if *self.inner.synced.borrow() {
                for obj in self.inner.store.list() {
                    listener.send(Notification::Add(obj, true), None);
                }
                listener.flush();
            }
            d.listeners.push(listener);
        }
        if resync.is_some() {
            self.inner.resync_changed.notify_one();
        }
        runtime.spawn(async move {
            while let Some(batch) = rx.recv().await {
                for n in batch {
                    if state.gone.load(Ordering::Acquire) {
                        return; // removed: pending notifications are dropped, as in client-go
                    }
                    deliver(&*handler, &n);
                    if matches!(n, Notification::Add(_, true)) {
                        state.initial_listed();
                    }
                    state.handled(low);
                }
            }
        });
        Ok(registration)
    }

    /// Removes a handler; notifications still queued for it are dropped. Idempotent.
    pub fn remove_event_handler(&self, registration: &Registration) {
        registration.state.gone.store(true, Ordering::Release);
        if let Some(m) = &registration.state.backlog_metric {
            m.set(0.0);
        }
        registration.state.drained.notify_waiters();
        self.inner
            .dispatch
            .lock()
            .listeners
            .retain(|l| l.id != registration.id);
    }

    /// Runs the informer (reflector and resync) until the future is dropped. A second call
    /// while one runs returns at once.
    pub async fn run(&self) {
        if self.inner.started.swap(true, Ordering::AcqRel) {
            tracing::warn!("informer: already running");
            return;
        }
        let sink: Arc<dyn ReflectorStore<K>> = Arc::new(Sink {
            inner: self.inner.clone(),
        });
        let reflector = Reflector::from_shared(self.inner.api.clone(), sink)
            .with_options(self.inner.reflector_options.clone())
            .with_health(self.inner.health.clone());
        let resync = async {
            loop {
                let next = self
                    .inner
                    .dispatch
                    .lock()
                    .listeners
                    .iter()
                    .filter_map(|l| l.resync.map(|(_, due)| due))
                    .min();
                let changed = self.inner.resync_changed.notified();
                match next {
                    None => changed.await,
                    Some(due) => {
                        tokio::select! {
                            _ = tokio::time::sleep_until(due) => {}
                            _ = changed => continue,
                        }
                    }
                }
                let mut d = self.inner.dispatch.lock();
                let now = tokio::time::Instant::now();
                let mut cached = None;
                for l in &mut d.listeners {
                    let Some((period, due)) = l.resync else {
                        continue;
                    };
                    if due > now {
                        continue;
                    }
                    let objects = cached.get_or_insert_with(|| self.inner.store.list());
                    for obj in objects.iter() {
                        l.send(Notification::Update(obj.clone(), obj.clone()), None);
                    }
                    l.flush();
                    l.resync = Some((period, now + period));
                }
            }
        };
        tokio::join!(reflector.run(), resync);
    }
}

/// The informer as the reflector's store: every write also notifies the handlers.
struct Sink<K> {
    inner: Arc<Inner<K>>,
}

impl<K> Sink<K> {
    fn transform(&self, obj: K) -> Arc<K> {
        Arc::new(match &self.inner.transform {
            Some(f) => f(obj),
            None => obj,
        })
    }
}

impl<K: Resource + Send + Sync + 'static> Sink<K> {
    fn upsert(&self, obj: K) {
        let obj = self.transform(obj);
        let key = match store_key(&*obj) {
            Ok(k) => k,
            Err(e) => return tracing::warn!("informer: event not cached: {e}"),
        };
        let mut d = self.inner.dispatch.lock();
        let old = self.inner.store.insert(&key, obj.clone());
        d.notify(match old {
            Some(old) => Notification::Update(old, obj),
            None => Notification::Add(obj, false),
        });
        self.unlock_and_call_inline(d);
    }

    /// Lets go of the dispatch lock, then makes the inline calls it decided on.
    fn unlock_and_call_inline(&self, mut d: parking_lot::MutexGuard<'_, Dispatch<K>>) {
        if d.calls.is_empty() {
            return;
        }
        let calls = std::mem::take(&mut d.calls);
        drop(d);
        call_inline(calls);
    }
}

impl<K: Resource + Send + Sync + 'static> ReflectorStore<K> for Sink<K> {
    fn replace(&self, objects: Vec<K>, _: &str) {
        let mut keyed = Vec::with_capacity(objects.len());
        for obj in objects {
            let obj = self.transform(obj);
            match store_key(&*obj) {
                Ok(key) => keyed.push((key, obj)),
                // As `Store::replace`: a list with an unkeyable object changes nothing.
                Err(e) => return tracing::warn!("informer: relist not cached: {e}"),
            }
        }
        let mut d = self.inner.dispatch.lock();
        let mut before = self.inner.store.replace_keyed(keyed.iter().cloned());
        let initial = !*self.inner.synced.borrow();
        let listed: Vec<Notification<K>> = keyed
            .into_iter()
            .map(|(key, obj)| match before.remove(&key) {
                Some(old) => Notification::Update(old, obj),
                None => Notification::Add(obj, initial),
            })
            .collect();
        // client-go's order: deletions first (what `before` still holds), then the listed
        // objects in list order.
        let mut gone: Vec<(Key, Arc<K>)> = before.into_iter().collect();
        gone.sort_by(|a, b| a.0.cmp(&b.0));
        for (key, object) in gone {
            d.notify(Notification::Delete(Deleted::FinalStateUnknown {
                key: key.to_string(),
                object,
            }));
        }
        for n in listed {
            d.notify(n);
        }
        d.flush();
        self.inner.synced.send_replace(true);
        self.unlock_and_call_inline(d);
    }

    fn add(&self, object: K) {
        self.upsert(object);
    }

    fn update(&self, object: K) {
        self.upsert(object);
    }

    fn ready(&self) -> Option<futures::future::BoxFuture<'static, ()>> {
        let max = self.inner.max_backlog?;
        let mut d = self.inner.dispatch.lock();
        let behind = d
            .listeners
            .iter()
            .find(|l| l.state.len() >= max)?
            .state
            .clone();
        // What it waits for must reach its task.
        d.flush();
        Some(Box::pin(behind.wait_until(max / 2)))
    }

    fn flush(&self) {
        self.inner.dispatch.lock().flush();
    }

    fn delete(&self, object: K) {
        let obj = self.transform(object);
        let key = match store_key(&*obj) {
            Ok(k) => k,
            Err(e) => return tracing::warn!("informer: delete not cached: {e}"),
        };
        let mut d = self.inner.dispatch.lock();
        // A delete for a key the cache never had tells the handlers nothing.
        if self.inner.store.delete_key(&key).is_some() {
            d.notify(Notification::Delete(Deleted::Object(obj)));
        }
        self.unlock_and_call_inline(d);
    }
}
