//! [`Manager`]: several controllers on one factory, with leader election, cache-sync
//! readiness and graceful shutdown (controller-runtime's `manager.Manager`).

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::ControllerError;
use super::builder::Runnable;
use crate::cache::Registration;
use crate::factory::SharedInformerFactory;
use crate::leaderelection::{
    LeaderCallbacks, LeaderElectionConfig, LeaderElector, Leadership, LeaseLock, RunOutcome,
};

/// Default [`Manager::sync_timeout`]: controller-runtime's `CacheSyncTimeout`.
pub const DEFAULT_SYNC_TIMEOUT: Duration = Duration::from_secs(120);
/// Default [`Manager::shutdown_timeout`].
pub const DEFAULT_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(30);
/// After a shutdown's drain deadline, how long aborted workers get to reach an await point.
const ABORTED_GRACE: Duration = Duration::from_secs(5);

/// Reconcile only while holding a Lease.
#[derive(Debug, Clone)]
pub struct LeaderElection {
    /// The Lease and this candidate's identity.
    pub lock: LeaseLock,
    /// Its timing.
    pub config: LeaderElectionConfig,
    /// Run the informers while standing by (the default, as controller-runtime): a new leader
    /// starts reconciling from a warm cache at once, at the price of every replica watching.
    /// `false`: informers start only on becoming leader.
    pub warm_standby: bool,
}

impl LeaderElection {
    /// An election for `lock` with `config`, informers warm while standing by.
    pub fn new(lock: LeaseLock, config: LeaderElectionConfig) -> Self {
        LeaderElection {
            lock,
            config,
            warm_standby: true,
        }
    }

    /// Informers start only on becoming leader (one watch per kind in the whole deployment).
    pub fn cold_standby(mut self) -> Self {
        self.warm_standby = false;
        self
    }
}

/// Runs controllers on one [`SharedInformerFactory`]: each kind is listed and watched once in
/// the process, however many controllers own or watch it.
pub struct Manager {
    factory: SharedInformerFactory,
    controllers: Vec<Runnable>,
    leader_election: Option<LeaderElection>,
    sync_timeout: Option<Duration>,
    shutdown_timeout: Duration,
    ready: watch::Sender<bool>,
    shard: Option<super::sharded::Gate>,
    #[cfg(feature = "webhook")]
    endpoints: super::endpoints::Endpoints,
}

impl std::fmt::Debug for Manager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Manager")
            .field("controllers", &self.controllers)
            .field("leader_election", &self.leader_election)
            .field("sync_timeout", &self.sync_timeout)
            .field("shutdown_timeout", &self.shutdown_timeout)
            .finish_non_exhaustive()
    }
}

/// Why the work ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Shutdown,
    LeadershipLost,
}

struct Inner {
    factory: SharedInformerFactory,
    controllers: Vec<Runnable>,
    /// The controllers' handlers: workers start once each has been handed its informer's
    /// initial list, so every key of it is queued (once) before the first reconcile.
    registrations: Vec<Registration>,
    sync_timeout: Option<Duration>,
    shutdown_timeout: Duration,
    ready: watch::Sender<bool>,
    informers_started: AtomicBool,
    stop: watch::Receiver<bool>,
    /// Some worker could not be stopped within its deadline: the Lease (leader election) or
    /// ring membership is then left to expire rather than handed over at once.
    abandoned: AtomicBool,
}

/// Resolves once `stop` is set (or its sender is gone, which only happens at exit).
async fn stopped(mut stop: watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

impl Manager {
    /// A manager of controllers on `factory`.
    pub fn new(factory: &SharedInformerFactory) -> Self {
        Manager {
            factory: factory.clone(),
            controllers: Vec::new(),
            leader_election: None,
            sync_timeout: Some(DEFAULT_SYNC_TIMEOUT),
            shutdown_timeout: DEFAULT_SHUTDOWN_TIMEOUT,
            ready: watch::channel(false).0,
            shard: None,
            #[cfg(feature = "webhook")]
            endpoints: super::endpoints::Endpoints::default(),
        }
    }

    /// Adds a controller ([`Controller::build`](super::Controller::build)) built on the same
    /// factory.
    #[allow(clippy::should_implement_trait)] // controller-runtime's `Add`; not arithmetic
    pub fn add(mut self, controller: Runnable) -> Self {
        // A controller in ring mode puts the manager in ring mode (one ring per manager).
        if self.shard.is_none() {
            self.shard = controller.shard.clone();
        }
        self.controllers.push(controller);
        self
    }

    /// Reconcile only while holding the lease (every controller of the manager).
    pub fn leader_election(mut self, election: LeaderElection) -> Self {
        self.leader_election = Some(election);
        self
    }

    /// [`run`](Self::run) fails with [`ControllerError::SyncTimeout`] when the caches have not
    /// synced this long after starting; `None`: wait forever.
    pub fn sync_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.sync_timeout = timeout;
        self
    }

    /// On shutdown, how long queued and running reconciles may take before they are abandoned;
    /// on a lost lease, how long an aborted reconcile may take to reach its next await point
    /// before `run` returns without it (and says so).
    pub fn shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.shutdown_timeout = timeout;
        self
    }

    /// Serve `/metrics` at `addr` while running (controller-runtime's `--metrics-bind-address`;
    /// `None`: not served). The text is the [`metrics_registry`](Self::metrics_registry)'s.
    #[cfg(feature = "webhook")]
    pub fn metrics_bind_address(mut self, addr: Option<std::net::SocketAddr>) -> Self {
        self.endpoints.metrics_addr = addr;
        self
    }

    /// The registry `/metrics` encodes (the one the `PrometheusMetricsProvider` registered in).
    #[cfg(all(feature = "webhook", feature = "prometheus"))]
    pub fn metrics_registry(
        mut self,
        registry: Arc<prometheus_client::registry::Registry>,
    ) -> Self {
        self.endpoints.registry = Some(registry);
        self
    }

    /// Serve `/healthz` and `/readyz` at `addr` while running (controller-runtime's
    /// `--health-probe-bind-address`; `None`: not served). Built in: the readiness check
    /// `caches` ([`ready`](Self::ready)) and the health check `reflectors` (failing while an
    /// informer's reflector has failed
    /// [`REFLECTOR_FAILURES_UNHEALTHY`](super::endpoints::REFLECTOR_FAILURES_UNHEALTHY) rounds in
    /// a row).
    #[cfg(feature = "webhook")]
    pub fn health_probe_bind_address(mut self, addr: Option<std::net::SocketAddr>) -> Self {
        self.endpoints.probe_addr = addr;
        self
    }

    /// Adds a named liveness check to `/healthz` (controller-runtime's `AddHealthzCheck`).
    #[cfg(feature = "webhook")]
    pub fn add_healthz_check(
        mut self,
        name: impl Into<String>,
        check: impl Fn() -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.endpoints.healthz.push((name.into(), Arc::new(check)));
        self
    }

    /// Adds a named readiness check to `/readyz` (controller-runtime's `AddReadyzCheck`).
    #[cfg(feature = "webhook")]
    pub fn add_readyz_check(
        mut self,
        name: impl Into<String>,
        check: impl Fn() -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.endpoints.readyz.push((name.into(), Arc::new(check)));
        self
    }

    /// What every controller added so far needs to be allowed, with the Leases of leader
    /// election (get, create, update in its namespace, as client-go's lock) or of the shard
    /// ring (list too, and delete on leaving); see
    /// [`Permissions::manifests`](super::rbac::Permissions::manifests) for the RBAC objects.
    pub fn permissions(&self) -> super::rbac::Permissions {
        let mut p = super::rbac::Permissions::default();
        for c in &self.controllers {
            p.merge(&c.permissions);
        }
        lease_permissions(&mut p, self.leader_election.as_ref(), self.shard.as_ref());
        p
    }

    /// The RBAC objects granting [`permissions`](Self::permissions) to the ServiceAccount
    /// `sa_namespace/sa_name`, named `name`, namespaced where the factory is.
    pub fn rbac_manifests(
        &self,
        name: &str,
        sa_namespace: &str,
        sa_name: &str,
    ) -> Vec<serde_json::Value> {
        self.permissions()
            .manifests(name, sa_namespace, sa_name, self.factory.namespace())
    }

    /// Readiness: true once every cache has synced (and, with leader election, this replica
    /// leads or stands by warm). For a readiness probe.
    pub fn ready(&self) -> watch::Receiver<bool> {
        self.ready.subscribe()
    }

    /// Runs every controller until `shutdown` resolves: starts the informers, waits for their
    /// caches, then runs the workers. On shutdown, the informers stop, the queues take no new
    /// keys and what is queued or running is finished within the shutdown timeout, then the
    /// future returns `Ok`. With leader election, workers run only while leading; a lost lease
    /// aborts them at once (mid-reconcile, at its next await: another replica may lead soon)
    /// and returns [`ControllerError::LostLeadership`] only after every reconcile has ended, or
    /// after the shutdown timeout for one that blocks its thread (logged as abandoned). The
    /// factory's informers are stopped when this returns.
    pub async fn run(
        mut self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ControllerError> {
        let mut registrations = Vec::new();
        for c in &mut self.controllers {
            for register in c.registrars.drain(..) {
                registrations.push(register(&c.queue).map_err(ControllerError::Handler)?);
            }
        }
        #[cfg(feature = "webhook")]
        let mut servers = {
            let mut servers = tokio::task::JoinSet::new();
            self.builtin_checks().serve(&mut servers).await?;
            servers
        };
        let (stop_tx, stop_rx) = watch::channel(false);
        let watcher = tokio::spawn(async move {
            shutdown.await;
            stop_tx.send_replace(true);
            // Keep the sender: receivers see the stop, never a closed channel.
            std::future::pending::<()>().await;
        });
        let inner = Arc::new(Inner {
            factory: self.factory.clone(),
            controllers: self.controllers,
            registrations,
            sync_timeout: self.sync_timeout,
            shutdown_timeout: self.shutdown_timeout,
            ready: self.ready,
            informers_started: AtomicBool::new(false),
            stop: stop_rx,
            abandoned: AtomicBool::new(false),
        });
        let result = match (self.shard, self.leader_election) {
            (None, None) => inner.work(None).await,
            (None, Some(election)) => inner.clone().elect(election).await,
            (Some(ring), election) => {
                if election.is_some() {
                    tracing::warn!(
                        "ring mode: every replica works on its share; leader election is not used"
                    );
                }
                let leave = || !inner.abandoned.load(Ordering::Acquire);
                super::sharded::in_ring(ring, inner.work(None), leave).await
            }
        };
        watcher.abort();
        inner.factory.shutdown();
        #[cfg(feature = "webhook")]
        servers.abort_all();
        result
    }

    /// The endpoints with the built-in checks added.
    #[cfg(feature = "webhook")]
    fn builtin_checks(&self) -> super::endpoints::Endpoints {
        let mut e = self.endpoints.clone();
        let ready = self.ready.subscribe();
        e.readyz.push((
            "caches".into(),
            Arc::new(move || match *ready.borrow() {
                true => Ok(()),
                false => Err("the informers' caches have not synced".into()),
            }),
        ));
        let factory = self.factory.clone();
        e.healthz.push((
            "reflectors".into(),
            Arc::new(move || {
                let failing: Vec<String> = factory
                    .reflector_errors()
                    .into_iter()
                    .filter(|(_, err)| {
                        err.consecutive >= super::endpoints::REFLECTOR_FAILURES_UNHEALTHY
                    })
                    .map(|(resource, err)| format!("{resource}: {err}"))
                    .collect();
                match failing.is_empty() {
                    true => Ok(()),
                    false => Err(failing.join("; ")),
                }
            }),
        ));
        e
    }
}

/// The Leases of leader election (get, create, update in its namespace, as client-go's lock)
/// or of a shard ring (list too, and delete on leaving).
pub(crate) fn lease_permissions(
    p: &mut super::rbac::Permissions,
    election: Option<&LeaderElection>,
    ring: Option<&super::sharded::Gate>,
) {
    const LEASES: (&str, &str) = ("coordination.k8s.io", "leases");
    if let Some(e) = election {
        p.allow_in(
            &e.lock.namespace,
            LEASES.0,
            LEASES.1,
            &["get", "create", "update"],
        );
    }
    #[cfg(feature = "sharding")]
    if let Some(ring) = ring {
        let ns = &ring.membership().config().namespace;
        p.allow_in(
            ns,
            LEASES.0,
            LEASES.1,
            &["get", "list", "watch", "create", "update", "delete"],
        );
    }
    #[cfg(not(feature = "sharding"))]
    let _ = ring;
}

impl Inner {
    fn start_informers(&self) {
        if !self.informers_started.swap(true, Ordering::AcqRel) {
            tracing::info!("starting informers");
            self.factory.start();
        }
    }

    /// Informers, sync, workers, until stopped (or, with `leadership`, until it ends).
    async fn work(&self, leadership: Option<Leadership>) -> Result<(), ControllerError> {
        let stop_rx = self.stop.clone();
        let stop = async move {
            match leadership {
                None => {
                    stopped(stop_rx).await;
                    Stop::Shutdown
                }
                Some(l) => {
                    l.cancelled().await;
                    // Shutdown cancels the leadership too, after setting the flag.
                    if *stop_rx.borrow() {
                        Stop::Shutdown
                    } else {
                        Stop::LeadershipLost
                    }
                }
            }
        };
        let mut stop = pin!(stop);
        self.start_informers();
        let sync = async {
            self.factory.wait_for_cache_sync().await;
            // A handler gets the initial list after its informer synced (on its own queue, or
            // inline); starting workers before it has would reconcile a primary and then again
            // for each owned object's initial add.
            futures::future::join_all(self.registrations.iter().map(Registration::wait_for_sync))
                .await;
        };
        tokio::select! {
            synced = async {
                match self.sync_timeout {
                    Some(t) => tokio::time::timeout(t, sync).await.map_err(|_| ControllerError::SyncTimeout(t)),
                    None => {
                        sync.await;
                        Ok(())
                    }
                }
            } => synced?,
            _ = &mut stop => return Ok(()),
        }
        self.ready.send_replace(true);
        let workers: usize = self.controllers.iter().map(|c| c.workers).sum();
        tracing::info!(workers, "caches synced; starting workers");
        let mut workers = JoinSet::new();
        for c in &self.controllers {
            (c.spawn)(&mut workers);
        }
        match stop.await {
            Stop::Shutdown => {
                // No new work (the informers stop; the listers keep answering from the cache),
                // then what is queued or in flight is finished.
                self.factory.shutdown();
                let queued: usize = self.controllers.iter().map(|c| c.queue.len()).sum();
                let in_flight: usize = self
                    .controllers
                    .iter()
                    .map(|c| c.queue.len_in_flight())
                    .sum();
                tracing::info!(queued, in_flight, "draining the work queue");
                let drains = self
                    .controllers
                    .iter()
                    .map(|c| c.queue.shutdown_with_drain());
                let drained =
                    tokio::time::timeout(self.shutdown_timeout, futures::future::join_all(drains))
                        .await;
                if drained.is_err() {
                    tracing::warn!(
                        "the work queue did not drain within {:?}; abandoning it",
                        self.shutdown_timeout
                    );
                    self.abort(&mut workers);
                } else {
                    // Workers return once the drained queue hands out nothing more.
                    self.close_queues();
                }
                // Past the deadline only aborted tasks are left, which end at their next await.
                self.join_workers(&mut workers, ABORTED_GRACE).await;
                tracing::info!("workers stopped");
            }
            Stop::LeadershipLost => {
                // Another replica may lead soon: stop writing at once, mid-reconcile if need
                // be, and return only once no reconcile of this leadership runs any more.
                tracing::error!("leadership lost; stopping workers");
                self.abort(&mut workers);
                self.factory.shutdown();
                self.join_workers(&mut workers, self.shutdown_timeout).await;
            }
        }
        Ok(())
    }

    fn close_queues(&self) {
        for c in &self.controllers {
            c.queue.shutdown();
        }
    }

    fn abort(&self, workers: &mut JoinSet<()>) {
        self.close_queues();
        workers.abort_all();
    }

    /// Waits for every worker task to end (an aborted one ends at its next await point, once
    /// its reconcile future is dropped) up to `deadline`; what is still running then (a
    /// reconcile blocking its thread) is abandoned, and said so.
    async fn join_workers(&self, workers: &mut JoinSet<()>, deadline: Duration) {
        let joined = tokio::time::timeout(deadline, async {
            while let Some(ended) = workers.join_next().await {
                if let Err(e) = ended
                    && e.is_panic()
                {
                    tracing::error!("a worker panicked outside its reconcile: {e}");
                }
            }
        })
        .await;
        if joined.is_err() {
            tracing::error!(
                running = workers.len(),
                "workers did not stop within {deadline:?} (a reconcile blocking its thread?); \
                 abandoning them: they may still be writing"
            );
            workers.abort_all();
            workers.detach_all();
            self.abandoned.store(true, Ordering::Release);
        }
    }

    async fn elect(self: Arc<Self>, election: LeaderElection) -> Result<(), ControllerError> {
        let elector = LeaderElector::new(
            self.factory.client().clone(),
            election.lock,
            election.config,
        )
        .map_err(ControllerError::LeaderElection)?;
        if election.warm_standby {
            // A warm standby is ready once its caches are (it can take over at once).
            self.start_informers();
            let (factory, ready) = (self.factory.clone(), self.ready.clone());
            tokio::spawn(async move {
                factory.wait_for_cache_sync().await;
                ready.send_replace(true);
            });
        } else {
            // A cold standby has nothing to warm: ready while it waits.
            self.ready.send_replace(true);
        }
        let shutdown = tokio::spawn({
            let (elector, stop) = (elector.clone(), self.stop.clone());
            async move {
                stopped(stop).await;
                elector.shutdown();
            }
        });
        let failure: Arc<Mutex<Option<ControllerError>>> = Arc::default();
        // Set once the leader's work has stopped: on a lost lease the elector returns without
        // waiting for it.
        let (work_stopped_tx, mut work_stopped) = watch::channel(None::<()>);
        let callbacks = LeaderCallbacks::new({
            let (inner, elector, failure) = (self.clone(), elector.clone(), failure.clone());
            move |leadership| async move {
                tracing::info!("started leading");
                work_stopped_tx.send_replace(Some(()));
                let result = inner.work(Some(leadership)).await;
                if inner.abandoned.load(Ordering::Acquire) {
                    tracing::error!(
                        "a reconcile could not be stopped: keeping the lease until it expires"
                    );
                    elector.keep_lease();
                }
                work_stopped_tx.send_replace(None);
                if let Err(e) = result {
                    *failure.lock() = Some(e);
                    elector.shutdown();
                }
            }
        })
        .on_new_leader(|holder| tracing::info!(holder, "new leader"));
        let outcome = elector.run(callbacks).await;
        shutdown.abort();
        let outcome = outcome.map_err(ControllerError::LeaderElection)?;
        if let Some(e) = failure.lock().take() {
            return Err(e);
        }
        match outcome {
            RunOutcome::Shutdown => Ok(()),
            RunOutcome::LostLeadership => {
                // The work sees its leadership cancelled at once and aborts its workers; wait
                // for that (Some while it runs; the sender dropping also ends the wait).
                let _ = work_stopped.wait_for(Option::is_none).await;
                Err(ControllerError::LostLeadership)
            }
        }
    }
}
