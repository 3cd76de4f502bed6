//! [`Controller`]: the builder (controller-runtime's `builder.ControllerManagedBy(mgr).For(..)
//! .Owns(..).Watches(..)`, kube-runtime's `Controller::new(..).owns(..).watches(..)`).

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use kube::Resource;
use serde::de::DeserializeOwned;
use tokio::task::JoinSet;

use super::context::Shared;
use super::manager::{LeaderElection, Manager};
use super::metrics::{ControllerMetrics, ControllerMetricsProvider};
use super::owners::{EnqueueMapped, EnqueueRequestForOwner};
use super::predicate::UpdatePredicate;
use super::rbac::{OWN, Permissions, READ};
use super::run::{Reconciler, Tombstones, Worker};
use super::{ControllerError, DEFAULT_RECONCILE_TIMEOUT};
use crate::cache::{
    CacheError, Deleted, EventHandler, Lister, Registration, SharedIndexInformer, key_of,
};
use crate::events::Recorder;
use crate::factory::{FactoryScope, SharedInformerFactory};
use crate::workqueue::{MetricsProvider, WorkQueue};

/// Adds one event handler to one informer once the queue exists.
type Registrar =
    Box<dyn FnOnce(&WorkQueue<String>) -> Result<Registration, CacheError> + Send + Sync>;

/// What a controller needs of its kinds: what the factory's informers need.
pub trait Watched:
    Resource<DynamicType = ()> + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static
{
}
impl<T> Watched for T where
    T: Resource<DynamicType = ()> + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static
{
}

/// A controller of the primary kind `K` being set up. Build it from the factory and `K`'s
/// informer (generated `factory.group().version().kinds().informer()` or
/// [`SharedInformerFactory::informer_for`]), add what it owns and watches, then
/// [`run`](Self::run) it with a [`Reconciler`], or [`build`](Self::build) it for a
/// [`Manager`] that runs several on one factory.
///
/// Every kind is read through the factory's one informer per kind, so a controller adds
/// handlers, never watches of its own; namespace, selectors and resync are the factory's.
pub struct Controller<K> {
    factory: SharedInformerFactory,
    primary: SharedIndexInformer<K>,
    name: String,
    workers: usize,
    registrars: Vec<Registrar>,
    listers: HashMap<TypeId, Box<dyn Any + Send + Sync>>,
    predicate: Option<Arc<UpdatePredicate<K>>>,
    reconcile_timeout: Duration,
    recorder: Option<Recorder>,
    queue_metrics: Option<Arc<dyn MetricsProvider>>,
    priority_queue: bool,
    metrics: Option<Arc<dyn ControllerMetricsProvider>>,
    manager: Manager,
    shard: Option<super::sharded::Gate>,
    permissions: Permissions,
}

/// `verbs` on `T`'s resource (or its `subresource`) in `p`.
fn allow<T: Resource<DynamicType = ()>>(
    p: &mut Permissions,
    subresource: Option<&str>,
    verbs: &[&str],
) where
    T::Scope: FactoryScope,
{
    let plural = T::plural(&());
    let resource = match subresource {
        Some(sub) => format!("{plural}/{sub}"),
        None => plural.into_owned(),
    };
    p.allow(
        &T::group(&()),
        &resource,
        <T::Scope as FactoryScope>::NAMESPACED,
        verbs,
    );
}

impl<K> fmt::Debug for Controller<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Controller")
            .field("name", &self.name)
            .field("workers", &self.workers)
            .field("watches", &self.registrars.len())
            .finish_non_exhaustive()
    }
}

impl<K: Watched> Controller<K> {
    /// A controller of `primary`'s objects (an informer of `factory`). Its name defaults to
    /// the kind in lower case; one worker.
    pub fn new(factory: &SharedInformerFactory, primary: &SharedIndexInformer<K>) -> Self
    where
        K::Scope: FactoryScope,
    {
        let mut listers: HashMap<TypeId, Box<dyn Any + Send + Sync>> = HashMap::new();
        listers.insert(TypeId::of::<K>(), Box::new(primary.lister()));
        let mut permissions = Permissions::default();
        allow::<K>(&mut permissions, None, READ);
        permissions.events();
        Controller {
            permissions,
            factory: factory.clone(),
            primary: primary.clone(),
            name: K::kind(&()).to_lowercase(),
            workers: 1,
            registrars: Vec::new(),
            listers,
            predicate: None,
            reconcile_timeout: DEFAULT_RECONCILE_TIMEOUT,
            recorder: None,
            queue_metrics: None,
            priority_queue: true,
            metrics: None,
            manager: Manager::new(factory),
            shard: None,
        }
    }

    /// [`new`](Self::new) with the factory's informer of `K`.
    pub fn for_kind(factory: &SharedInformerFactory) -> Self
    where
        K::Scope: FactoryScope,
    {
        Self::new(factory, &factory.informer_for::<K>())
    }

    /// The controller's name: queue name, metrics label, event reporter, log field.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Whether the queue orders keys by priority (default: yes, controller-runtime's
    /// `UsePriorityQueue`, its default since 0.23): keys from the informers' initial lists and
    /// resyncs go behind live changes, so after a start or a failover with many objects a
    /// user's change is reconciled first (see `workqueue::LOW_PRIORITY`). `false`: client-go's
    /// plain FIFO.
    pub fn priority_queue(mut self, on: bool) -> Self {
        self.priority_queue = on;
        self
    }

    /// How many keys are reconciled at once (at least one; controller-runtime's
    /// `MaxConcurrentReconciles`). One key is never reconciled by two workers at once.
    pub fn workers(mut self, workers: usize) -> Self {
        self.workers = workers.max(1);
        self
    }

    /// Reconciles the controlling `K` of every `C` that changes: the `C`'s owner reference with
    /// `controller: true` naming `K`'s kind in `K`'s group (any version). `C` is read through
    /// the factory's informer, and its lister is in the [`Context`](super::Context).
    pub fn owns<C: Watched>(mut self) -> Self
    where
        C::Scope: FactoryScope,
    {
        let informer = self.factory.informer_for::<C>();
        self.listers
            .insert(TypeId::of::<C>(), Box::new(informer.lister()));
        // A controller creates, changes and deletes what it owns.
        allow::<C>(&mut self.permissions, None, OWN);
        let owners: Lister<K> = self.primary.lister();
        self.registrars.push(Box::new(move |queue| {
            let handler = EnqueueRequestForOwner::<K, C>::new(queue.clone(), owners);
            informer.add_inline_event_handler(handler)
        }));
        self
    }

    /// Reconciles the keys (`namespace/name` of `K` objects, see
    /// [`key_of`](crate::cache::key_of)) that `mapper` gives for every `C` that changes (for
    /// an update, for its old and new state). `informer` should be the factory's, so that it
    /// runs; its lister is in the [`Context`](super::Context). The mapper runs on the
    /// informer's task: keep it to lookups.
    pub fn watches<C, I>(
        mut self,
        informer: &SharedIndexInformer<C>,
        mapper: impl Fn(&C) -> I + Send + Sync + 'static,
    ) -> Self
    where
        C: Watched,
        C::Scope: FactoryScope,
        I: IntoIterator<Item = String>,
    {
        allow::<C>(&mut self.permissions, None, READ);
        let informer = informer.clone();
        self.listers
            .insert(TypeId::of::<C>(), Box::new(informer.lister()));
        let mapper = Arc::new(move |c: &C| mapper(c).into_iter().collect::<Vec<_>>());
        self.registrars.push(Box::new(move |queue| {
            let handler = EnqueueMapped {
                queue: queue.clone(),
                mapper,
            };
            informer.add_inline_event_handler(handler)
        }));
        self
    }

    /// Declares writes the reconciler makes beyond what the builder implies (reading every
    /// kind it watches, writing the kinds it owns, Events): `verbs` on `T` (for example the
    /// primary's `update` and `patch` to add a finalizer), for the derived
    /// [`permissions`](Self::permissions).
    pub fn writes<T>(mut self, verbs: &[&str]) -> Self
    where
        T: Resource<DynamicType = ()>,
        T::Scope: FactoryScope,
    {
        allow::<T>(&mut self.permissions, None, verbs);
        self
    }

    /// Declares writes to a subresource of `T` (`status`, `scale`); see [`writes`](Self::writes).
    pub fn writes_subresource<T>(mut self, subresource: &str, verbs: &[&str]) -> Self
    where
        T: Resource<DynamicType = ()>,
        T::Scope: FactoryScope,
    {
        allow::<T>(&mut self.permissions, Some(subresource), verbs);
        self
    }

    /// What the controller, run as built, needs to be allowed (with its manager's Leases):
    /// see [`Permissions::manifests`].
    pub fn permissions(&self) -> Permissions {
        let mut p = self.manager.permissions();
        p.merge(&self.permissions);
        // A ring set on the controller joins the manager only when it is added.
        super::manager::lease_permissions(&mut p, None, self.shard.as_ref());
        p
    }

    /// Queues an update of a `K` only when `predicate(old, new)` holds (adds and deletes
    /// always queue); e.g. [`generation_changed`](super::predicate::generation_changed).
    pub fn predicate(mut self, predicate: impl Fn(&K, &K) -> bool + Send + Sync + 'static) -> Self {
        self.predicate = Some(Arc::new(predicate));
        self
    }

    /// Skips updates that change neither generation, labels, annotations nor the deletion
    /// timestamp (status writes, resyncs).
    pub fn generation_changed(self) -> Self {
        self.predicate(super::predicate::generation_changed::<K>)
    }

    /// A reconcile running longer is abandoned (its future dropped) and handled as an error
    /// (default [`DEFAULT_RECONCILE_TIMEOUT`]). A reconcile that blocks its thread without
    /// awaiting cannot be abandoned: use `spawn_blocking` for such work.
    pub fn reconcile_timeout(mut self, timeout: Duration) -> Self {
        self.reconcile_timeout = timeout;
        self
    }

    /// The event recorder in the [`Context`](super::Context) (default: one reporting as the
    /// controller's name, with the hostname as instance).
    pub fn recorder(mut self, recorder: Recorder) -> Self {
        self.recorder = Some(recorder);
        self
    }

    /// Records the controller's metrics (controller-runtime's names) and its queue's
    /// (client-go's) through `provider`, e.g. the `prometheus` feature's
    /// `PrometheusMetricsProvider`.
    pub fn metrics<P>(mut self, provider: Arc<P>) -> Self
    where
        P: MetricsProvider + ControllerMetricsProvider + 'static,
    {
        self.queue_metrics = Some(provider.clone());
        self.metrics = Some(provider);
        self
    }

    /// [`run`](Self::run) reconciles only while holding the lease; see [`LeaderElection`].
    /// (In a [`Manager`], set it on the manager.)
    pub fn leader_election(mut self, election: LeaderElection) -> Self {
        self.manager = self.manager.leader_election(election);
        self
    }

    /// Ring mode, instead of leader election: this replica reconciles only the objects whose
    /// hash (uid or namespace, [`ShardRing::key`](crate::shard::ShardRing::key)) the ring
    /// allows it now, and every replica of the ring runs. Build the factory with
    /// `.sharded(ring.scope())` so its informers cache only this replica's share. The ring
    /// runs with the controller (or its [`Manager`]), which leaves it on shutdown.
    #[cfg(feature = "sharding")]
    pub fn shard_ring(mut self, ring: crate::shard::ShardRing) -> Self {
        self.shard = Some(ring);
        self
    }

    /// [`run`](Self::run) fails when the caches have not synced this long after starting
    /// (default 2 minutes, controller-runtime's `CacheSyncTimeout`); `None`: wait forever.
    pub fn sync_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.manager = self.manager.sync_timeout(timeout);
        self
    }

    /// On shutdown, how long [`run`](Self::run) waits for queued and running reconciles before
    /// abandoning them (default 30 s).
    pub fn shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.manager = self.manager.shutdown_timeout(timeout);
        self
    }

    /// See [`Manager::metrics_bind_address`].
    #[cfg(feature = "webhook")]
    pub fn metrics_bind_address(mut self, addr: Option<std::net::SocketAddr>) -> Self {
        self.manager = self.manager.metrics_bind_address(addr);
        self
    }

    /// See [`Manager::metrics_registry`].
    #[cfg(all(feature = "webhook", feature = "prometheus"))]
    pub fn metrics_registry(
        mut self,
        registry: Arc<prometheus_client::registry::Registry>,
    ) -> Self {
        self.manager = self.manager.metrics_registry(registry);
        self
    }

    /// See [`Manager::health_probe_bind_address`].
    #[cfg(feature = "webhook")]
    pub fn health_probe_bind_address(mut self, addr: Option<std::net::SocketAddr>) -> Self {
        self.manager = self.manager.health_probe_bind_address(addr);
        self
    }

    /// See [`Manager::add_healthz_check`].
    #[cfg(feature = "webhook")]
    pub fn add_healthz_check(
        mut self,
        name: impl Into<String>,
        check: impl Fn() -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.manager = self.manager.add_healthz_check(name, check);
        self
    }

    /// See [`Manager::add_readyz_check`].
    #[cfg(feature = "webhook")]
    pub fn add_readyz_check(
        mut self,
        name: impl Into<String>,
        check: impl Fn() -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.manager = self.manager.add_readyz_check(name, check);
        self
    }

    /// Runs the controller with `reconciler` until `shutdown` resolves (then it drains) or,
    /// with leader election, the lease is lost; stops the factory's informers when it returns.
    /// See [`Manager::run`].
    pub async fn run<R>(
        mut self,
        reconciler: R,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ControllerError>
    where
        R: Reconciler<K>,
    {
        let manager = std::mem::replace(&mut self.manager, Manager::new(&self.factory));
        manager.add(self.build(reconciler)).run(shutdown).await
    }

    /// The controller with its reconciler, for [`Manager::add`].
    pub fn build<R: Reconciler<K>>(self, reconciler: R) -> Runnable {
        let mut queue = WorkQueue::builder()
            .name(self.name.clone())
            .priorities(self.priority_queue);
        if let Some(m) = self.queue_metrics {
            queue = queue.metrics(m);
        }
        let queue = queue.build();
        let tombstones: Tombstones<K> = Arc::default();
        let mut registrars = self.registrars;
        let (primary, t, p) = (self.primary.clone(), tombstones.clone(), self.predicate);
        registrars.insert(
            0,
            Box::new(move |queue| {
                let handler = EnqueuePrimary {
                    queue: queue.clone(),
                    tombstones: t,
                    predicate: p,
                };
                primary.add_inline_event_handler(handler)
            }),
        );
        let client = self.factory.client().clone();
        let recorder = self
            .recorder
            .unwrap_or_else(|| Recorder::new(client.clone(), self.name.as_str()));
        let worker = Arc::new(Worker {
            queue: queue.clone(),
            store: self.primary.store(),
            tombstones,
            reconciler,
            shared: Arc::new(Shared {
                name: self.name.clone(),
                client,
                recorder,
                factory: self.factory.clone(),
                listers: self.listers,
            }),
            timeout: self.reconcile_timeout,
            metrics: self
                .metrics
                .map(|p| ControllerMetrics::new(&*p, &self.name, self.workers)),
            shard: self.shard.clone(),
        });
        if let Some(gate) = &self.shard {
            super::sharded::queue_gains(
                gate,
                self.primary.store(),
                worker.tombstones.clone(),
                queue.clone(),
            );
        }
        let workers = self.workers;
        Runnable {
            name: self.name,
            workers,
            queue,
            permissions: self.permissions,
            shard: self.shard,
            registrars,
            spawn: Box::new(move |set: &mut JoinSet<()>| {
                // Into the manager's set: stopping waits for each worker's task to end, so no
                // reconcile runs on after `run` returns.
                for _ in 0..workers {
                    set.spawn(worker.clone().run());
                }
            }),
        }
    }
}

/// Spawns a controller's workers into the manager's set.
pub(crate) type SpawnWorkers = dyn Fn(&mut JoinSet<()>) + Send + Sync;

/// A built controller, for [`Manager::add`].
pub struct Runnable {
    pub(crate) name: String,
    pub(crate) workers: usize,
    pub(crate) queue: WorkQueue<String>,
    /// What it needs to be allowed.
    pub(crate) permissions: Permissions,
    /// Ring mode: the manager runs and leaves the ring.
    pub(crate) shard: Option<super::sharded::Gate>,
    pub(crate) registrars: Vec<Registrar>,
    /// Spawns the workers into the manager's set.
    pub(crate) spawn: Box<SpawnWorkers>,
}

impl fmt::Debug for Runnable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runnable")
            .field("name", &self.name)
            .field("workers", &self.workers)
            .finish_non_exhaustive()
    }
}

impl Runnable {
    /// The controller's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The controller's queue (to look at its length, or add keys by hand).
    pub fn queue(&self) -> &WorkQueue<String> {
        &self.queue
    }
}

/// Queues the primary's keys; keeps the last state of deleted objects for their reconcile.
struct EnqueuePrimary<K> {
    queue: WorkQueue<String>,
    tombstones: Tombstones<K>,
    predicate: Option<Arc<UpdatePredicate<K>>>,
}

impl<K: Resource> EnqueuePrimary<K> {
    fn key(&self, object: &K) -> Option<String> {
        key_of(object)
            .inspect_err(|e| {
                tracing::error!(queue = self.queue.name(), "object without a key: {e}")
            })
            .ok()
    }
}

impl<K: Resource + Send + Sync + 'static> EventHandler<K> for EnqueuePrimary<K> {
    fn on_add(&self, object: &Arc<K>, in_initial_list: bool) {
        if let Some(key) = self.key(object) {
            self.queue
                .add_with_priority(key, super::priority::of_add(in_initial_list));
        }
    }
    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        if self.predicate.as_ref().is_some_and(|p| !p(old, new)) {
            return;
        }
        if let Some(key) = self.key(new) {
            self.queue
                .add_with_priority(key, super::priority::of_update(&**old, &**new));
        }
    }
    fn on_delete(&self, deleted: &Deleted<K>) {
        let object = deleted.object();
        let key = match deleted {
            Deleted::FinalStateUnknown { key, .. } => Some(key.clone()),
            Deleted::Object(o) => self.key(o),
        };
        if let Some(key) = key {
            self.tombstones.lock().insert(key.clone(), object.clone());
            self.queue.add(key);
        }
    }
}
