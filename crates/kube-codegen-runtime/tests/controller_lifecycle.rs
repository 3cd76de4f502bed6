//! The controller runtime's lifecycle end to end on the in-memory API server: leader election
//! gating the workers (and a standby taking over when the leader stops renewing), shutdown
//! waiting for a running reconcile up to its deadline, a key failing forever beside others,
//! the generation-changed predicate, the `watches` mapper, and a failing finalizer cleanup
//! retried with backoff. Only lower bounds of time are asserted (a busy machine only delays).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube_codegen_runtime::controller::{
    Action, Context, Controller, ControllerError, FinalizerEvent, LeaderElection, Reconciler,
    finalizer,
};
use kube_codegen_runtime::{LeaderElectionConfig, LeaseLock, SharedInformerFactory};
use kube_fake_apiserver::FakeApiServer;
use parking_lot::Mutex;
use serde_json::json;

use crate::support;
use support::{client, cm, eventually, fast_reflector, within};

type Stop = tokio::sync::oneshot::Sender<()>;
type Running = tokio::task::JoinHandle<Result<(), ControllerError>>;

fn factory_of(client: kube::Client) -> SharedInformerFactory {
    SharedInformerFactory::builder(client)
        .namespace("default")
        .reflector(fast_reflector())
        .build()
}

/// Runs `controller` with `r` in the background; the sender stops it.
fn spawn<K, R>(controller: Controller<K>, r: R) -> (Stop, Running)
where
    K: kube_codegen_runtime::controller::Watched,
    R: Reconciler<K>,
{
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(controller.run(r, async move {
        let _ = rx.await;
    }));
    (tx, task)
}

fn name_of<K: kube::Resource>(o: &K) -> String {
    o.meta().name.clone().unwrap_or_default()
}

/// Counts a reconcile in flight until dropped (finished or abandoned).
struct InFlight(Arc<AtomicUsize>);

impl InFlight {
    fn new(n: &Arc<AtomicUsize>) -> Self {
        n.fetch_add(1, Ordering::SeqCst);
        InFlight(n.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A gate a reconcile blocks its thread on (as a synchronous write would) until released.
#[derive(Default)]
struct Hold {
    released: Mutex<bool>,
    changed: parking_lot::Condvar,
}

impl Hold {
    fn wait(&self) {
        let mut released = self.released.lock();
        while !*released {
            self.changed.wait(&mut released);
        }
    }
    fn release(&self) {
        *self.released.lock() = true;
        self.changed.notify_all();
    }
}

/// Records reconciles by name; `slow-*` first blocks on `hold` (when set), then sleeps for
/// `slow`; `err` always fails.
#[derive(Clone, Default)]
struct Rec {
    seen: Arc<Mutex<Vec<String>>>,
    finished: Arc<Mutex<Vec<String>>>,
    in_flight: Arc<AtomicUsize>,
    slow: Duration,
    hold: Option<Arc<Hold>>,
}

impl Rec {
    fn slow(slow: Duration) -> Self {
        Rec {
            slow,
            ..Rec::default()
        }
    }
    fn count(&self, name: &str) -> usize {
        self.seen.lock().iter().filter(|n| *n == name).count()
    }
    fn total(&self) -> usize {
        self.seen.lock().len()
    }
}

impl<K: kube::Resource + Send + Sync + 'static> Reconciler<K> for Rec {
    type Error = String;

    async fn reconcile(&self, obj: Arc<K>, _: &Context) -> Result<Action, String> {
        let name = name_of(&*obj);
        self.seen.lock().push(name.clone());
        let _guard = InFlight::new(&self.in_flight);
        if name.starts_with("slow") {
            if let Some(hold) = &self.hold {
                // No await point here: aborting the task cannot stop it until released.
                tokio::task::block_in_place(|| hold.wait());
            }
            tokio::time::sleep(self.slow).await;
        }
        if name == "err" {
            return Err("always failing".to_owned());
        }
        self.finished.lock().push(name);
        Ok(Action::done())
    }
}

/// A client whose Lease requests fail once `cut` is set (the leader stops renewing), all other
/// requests going to `inner`.
fn cuttable(inner: kube::Client, cut: Arc<AtomicBool>) -> kube::Client {
    type BoxError = Box<dyn std::error::Error + Send + Sync>;
    let service = tower::service_fn(move |req: http::Request<kube::client::Body>| {
        let (inner, cut) = (inner.clone(), cut.clone());
        async move {
            if cut.load(Ordering::SeqCst) && req.uri().path().contains("/leases") {
                return Err::<http::Response<kube::client::Body>, BoxError>("lease cut".into());
            }
            inner.send(req).await.map_err(BoxError::from)
        }
    });
    kube::Client::new(service, "default")
}

fn election(identity: &str) -> LeaderElection {
    let lock = LeaseLock {
        namespace: "default".into(),
        name: "cm-controller".into(),
        identity: identity.into(),
    };
    let config = LeaderElectionConfig {
        lease_duration: Duration::from_millis(1500),
        renew_deadline: Duration::from_millis(1000),
        retry_period: Duration::from_millis(100),
        release_on_cancel: true,
    };
    LeaderElection::new(lock, config)
}

async fn holder(server: &FakeApiServer) -> Option<String> {
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> =
        Api::namespaced(client(server), "default");
    let lease = leases.get_opt("cm-controller").await.ok()??;
    lease.spec?.holder_identity
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_leader_reconciles_and_a_standby_takes_over_when_it_stops_renewing() {
    let server = FakeApiServer::start().await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client(&server), "default");
    let cut = Arc::new(AtomicBool::new(false));
    let hold = Arc::new(Hold::default());
    let a = Rec {
        hold: Some(hold.clone()),
        ..Rec::slow(Duration::from_secs(60))
    };
    let b = Rec::default();

    let fa = factory_of(cuttable(client(&server), cut.clone()));
    let ca = Controller::<ConfigMap>::for_kind(&fa).workers(2);
    let (_stop_a, mut run_a) = spawn(ca.leader_election(election("a")), a.clone());
    eventually("a leads", || async {
        holder(&server).await.as_deref() == Some("a")
    })
    .await;
    let fb = factory_of(client(&server));
    let cb = Controller::<ConfigMap>::for_kind(&fb).workers(2);
    let (stop_b, run_b) = spawn(cb.leader_election(election("b")), b.clone());

    for i in 0..5 {
        cms.create(&PostParams::default(), &cm(&format!("c{i}"), "v"))
            .await
            .unwrap();
    }
    cms.create(&PostParams::default(), &cm("slow-1", "v"))
        .await
        .unwrap();
    eventually("the leader reconciled everything", || async {
        (0..5).all(|i| a.count(&format!("c{i}")) == 1) && a.count("slow-1") == 1
    })
    .await;
    // b stands by warm: its informers have seen everything (it leads nothing yet).
    eventually("b's cache has every object", || async {
        fb.informer_for::<ConfigMap>().store().len() >= 6
    })
    .await;
    assert_eq!(b.total(), 0, "the standby reconciled: {:?}", b.seen.lock());
    assert_eq!(
        a.in_flight.load(Ordering::SeqCst),
        1,
        "slow-1 still running"
    );

    // The leader's Lease requests fail from now on: within its renew deadline it stops. slow-1
    // blocks its thread, so aborting its worker cannot end it: `run` must wait for it. The
    // hold is released only once the lease has moved to b (long after a stopped leading), or
    // as soon as `run` returned without waiting (which fails below whatever the timing).
    let cut_at = Instant::now();
    cut.store(true, Ordering::SeqCst);
    let returned_while_held = tokio::select! {
        result = &mut run_a => Some(result),
        () = async {
            eventually("b leads", || async {
                holder(&server).await.as_deref() == Some("b")
            })
            .await;
        } => None,
    };
    let in_flight_at_return = returned_while_held
        .as_ref()
        .map(|_| a.in_flight.load(Ordering::SeqCst));
    hold.release();
    assert_eq!(
        in_flight_at_return, None,
        "the old leader's run returned while its reconcile still ran"
    );
    let result = within("the leader's run returns", run_a).await.unwrap();
    assert!(
        matches!(result, Err(ControllerError::LostLeadership)),
        "{result:?}"
    );
    assert_eq!(
        a.in_flight.load(Ordering::SeqCst),
        0,
        "a reconcile outlived the lost lease"
    );
    assert!(
        cut_at.elapsed() >= Duration::from_millis(100),
        "stopped before any renewal failed"
    );
    assert!(
        !a.finished.lock().iter().any(|n| n == "slow-1"),
        "slow-1 was aborted at its next await, not finished: {:?}",
        a.finished.lock()
    );
    let a_total = a.total();

    // b leads (see above) and reconciles what is queued and what is new.
    cms.create(&PostParams::default(), &cm("after", "v"))
        .await
        .unwrap();
    eventually("b reconciles a new object and every old one", || async {
        b.count("after") == 1 && (0..5).all(|i| b.count(&format!("c{i}")) == 1)
    })
    .await;
    assert_eq!(
        a.total(),
        a_total,
        "the old leader reconciled after it stopped"
    );
    stop_b.send(()).unwrap();
    within("b stops", run_b).await.unwrap().unwrap();
}

/// Ring mode: a shutdown past its drain deadline aborts the workers, but `run` returns (and the
/// replica leaves the ring, handing its ranges over) only once the reconcile that blocks its
/// thread has ended.
#[cfg(feature = "sharding")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ring_mode_stops_only_after_a_running_reconcile_ended() {
    use kube_codegen_runtime::shard::{MembershipConfig, ShardRing};
    let server = FakeApiServer::start().await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client(&server), "default");
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> =
        Api::namespaced(client(&server), "default");
    let hold = Arc::new(Hold::default());
    let rec = Rec {
        hold: Some(hold.clone()),
        ..Rec::slow(Duration::from_secs(60))
    };
    let config = MembershipConfig::new("cms", "r1", "default").timing(
        Duration::from_millis(1500),
        Duration::from_millis(1000),
        Duration::from_millis(100),
    );
    let lease_name = config.lease_name();
    let ring = ShardRing::new(client(&server), config);
    let f = SharedInformerFactory::builder(client(&server))
        .namespace("default")
        .reflector(fast_reflector())
        .sharded(ring.scope())
        .build();
    let controller = Controller::<ConfigMap>::for_kind(&f)
        .shard_ring(ring)
        .shutdown_timeout(Duration::from_millis(100));
    let (stop, mut run) = spawn(controller, rec.clone());
    cms.create(&PostParams::default(), &cm("slow-1", "v"))
        .await
        .unwrap();
    eventually("slow-1 running", || async {
        rec.in_flight.load(Ordering::SeqCst) == 1
    })
    .await;
    stop.send(()).unwrap();
    // The drain deadline passes at once; the blocked reconcile keeps `run` from returning until
    // it is released, however long that takes (here: until the test has looked).
    let early = tokio::time::timeout(Duration::from_millis(1500), &mut run).await;
    let in_flight_at_return = early.is_ok().then(|| rec.in_flight.load(Ordering::SeqCst));
    let lease_while_held = leases.get_opt(&lease_name).await.unwrap();
    hold.release();
    assert_eq!(
        in_flight_at_return, None,
        "run returned while a reconcile still ran"
    );
    assert!(
        lease_while_held.is_some(),
        "the ring was left while a reconcile still ran"
    );
    within("run returns", run).await.unwrap().unwrap();
    assert_eq!(rec.in_flight.load(Ordering::SeqCst), 0);
    assert!(
        leases.get_opt(&lease_name).await.unwrap().is_none(),
        "the ring is left once the workers stopped"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_waits_for_a_running_reconcile_up_to_the_deadline() {
    let server = FakeApiServer::start().await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client(&server), "default");

    // Within the deadline: the running reconcile finishes before `run` returns.
    let f = factory_of(client(&server));
    let rec = Rec::slow(Duration::from_millis(500));
    let controller = Controller::<ConfigMap>::for_kind(&f).shutdown_timeout(Duration::from_secs(8));
    let (stop, run) = spawn(controller, rec.clone());
    cms.create(&PostParams::default(), &cm("slow-a", "v"))
        .await
        .unwrap();
    eventually("slow-a running", || async {
        rec.in_flight.load(Ordering::SeqCst) == 1
    })
    .await;
    stop.send(()).unwrap();
    within("run returns after the drain", run)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        *rec.finished.lock(),
        ["slow-a"],
        "the running reconcile was finished"
    );
    assert_eq!(rec.in_flight.load(Ordering::SeqCst), 0);

    // Past the deadline: the reconcile is abandoned (its future dropped) and `run` returns.
    let f = factory_of(client(&server));
    let rec = Rec::slow(Duration::from_secs(120));
    let deadline = Duration::from_millis(300);
    let controller = Controller::<ConfigMap>::for_kind(&f).shutdown_timeout(deadline);
    let (stop, run) = spawn(controller, rec.clone());
    eventually("slow-a running again", || async {
        rec.in_flight.load(Ordering::SeqCst) == 1
    })
    .await;
    let stopped_at = Instant::now();
    stop.send(()).unwrap();
    within("run returns after abandoning", run)
        .await
        .unwrap()
        .unwrap();
    assert!(
        stopped_at.elapsed() >= deadline,
        "returned before the deadline"
    );
    assert!(rec.finished.lock().is_empty(), "{:?}", rec.finished.lock());
    assert_eq!(
        rec.in_flight.load(Ordering::SeqCst),
        0,
        "abandoned, not left running"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_failing_forever_never_starves_the_others() {
    let server = FakeApiServer::start().await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client(&server), "default");
    let f = factory_of(client(&server));
    let rec = Rec::default();
    // One worker: a failing key that held it, or came back first, would starve every other.
    let (stop, run) = spawn(
        Controller::<ConfigMap>::for_kind(&f).workers(1),
        rec.clone(),
    );
    cms.create(&PostParams::default(), &cm("err", "v"))
        .await
        .unwrap();
    eventually("err retried", || async { rec.count("err") >= 3 }).await;
    for i in 0..30 {
        cms.create(&PostParams::default(), &cm(&format!("ok{i}"), "v"))
            .await
            .unwrap();
    }
    eventually("every other key reconciled", || async {
        (0..30).all(|i| rec.count(&format!("ok{i}")) == 1)
    })
    .await;
    let tries = rec.count("err");
    eventually("err still retried", || async { rec.count("err") > tries }).await;
    stop.send(()).unwrap();
    within("run returns", run).await.unwrap().unwrap();
}

fn deployment(name: &str, replicas: i32) -> Deployment {
    let labels = BTreeMap::from([("app".to_owned(), name.to_owned())]);
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generation_changed_skips_status_only_updates_and_reconciles_spec_changes() {
    let server = FakeApiServer::start().await.unwrap();
    let deployments: Api<Deployment> = Api::namespaced(client(&server), "default");
    let f = factory_of(client(&server));
    // Two controllers on one informer: `all` sees every update, so once it has seen one,
    // `filtered` has been offered it too.
    let (filtered, all) = (Rec::default(), Rec::default());
    let c1 = Controller::<Deployment>::for_kind(&f)
        .name("filtered")
        .generation_changed();
    let c2 = Controller::<Deployment>::for_kind(&f).name("all");
    let m = kube_codegen_runtime::controller::Manager::new(&f)
        .add(c1.build(filtered.clone()))
        .add(c2.build(all.clone()));
    let (stop, rx) = tokio::sync::oneshot::channel::<()>();
    let run = tokio::spawn(m.run(async move {
        let _ = rx.await;
    }));

    let created = deployments
        .create(&PostParams::default(), &deployment("web", 1))
        .await
        .unwrap();
    eventually("both reconciled the create", || async {
        filtered.count("web") >= 1 && all.count("web") >= 1
    })
    .await;
    let (f0, a0) = (filtered.count("web"), all.count("web"));
    // A valid status (kube-apiserver refuses availableReplicas above readyReplicas).
    let status = Patch::Merge(json!({"status": {
        "availableReplicas": 1, "readyReplicas": 1, "replicas": 1}}));
    let after_status = deployments
        .patch_status("web", &PatchParams::default(), &status)
        .await
        .unwrap();
    assert_eq!(
        after_status.metadata.generation,
        created.metadata.generation
    );
    eventually("the unfiltered controller saw the status write", || async {
        all.count("web") > a0
    })
    .await;
    // Both handlers were offered the update together; give a wrongly queued key time to run.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        filtered.count("web"),
        f0,
        "a status-only update was reconciled"
    );

    let spec = Patch::Merge(json!({"spec": {"replicas": 3}}));
    let after_spec = deployments
        .patch("web", &PatchParams::default(), &spec)
        .await
        .unwrap();
    assert!(after_spec.metadata.generation > created.metadata.generation);
    eventually("a spec change is reconciled", || async {
        filtered.count("web") > f0
    })
    .await;
    stop.send(()).unwrap();
    within("run returns", run).await.unwrap().unwrap();
}

/// Maps a Secret to the ConfigMap its `for` annotation names.
fn target_of(s: &Secret) -> Vec<String> {
    let target = s.metadata.annotations.as_ref().and_then(|a| a.get("for"));
    target.map(|t| format!("default/{t}")).into_iter().collect()
}

fn secret(name: &str, target: &str) -> Secret {
    serde_json::from_value(json!({
        "metadata": {"name": name, "annotations": {"for": target}},
        "stringData": {"k": "v"},
    }))
    .unwrap()
}

/// Records reconciles, and that the watched kind's lister is in the context.
#[derive(Clone, Default)]
struct Watching(Rec);

impl Reconciler<ConfigMap> for Watching {
    type Error = String;
    async fn reconcile(&self, obj: Arc<ConfigMap>, ctx: &Context) -> Result<Action, String> {
        if ctx.lister::<Secret>().is_none() {
            return Err("no Secret lister in the context".to_owned());
        }
        Reconciler::<ConfigMap>::reconcile(&self.0, obj, ctx).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_maps_another_kind_to_primary_keys() {
    let server = FakeApiServer::start().await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client(&server), "default");
    let secrets: Api<Secret> = Api::namespaced(client(&server), "default");
    let f = factory_of(client(&server));
    let rec = Watching::default();
    let controller =
        Controller::<ConfigMap>::for_kind(&f).watches(&f.informer_for::<Secret>(), target_of);
    let (stop, run) = spawn(controller, rec.clone());
    let seen = |name: &str| rec.0.count(name);

    cms.create(&PostParams::default(), &cm("target", "v"))
        .await
        .unwrap();
    eventually("target reconciled", || async { seen("target") == 1 }).await;
    secrets
        .create(&PostParams::default(), &secret("s", "target"))
        .await
        .unwrap();
    eventually("a Secret create maps to target", || async {
        seen("target") == 2
    })
    .await;
    let note = Patch::Merge(json!({"metadata": {"labels": {"touched": "yes"}}}));
    secrets
        .patch("s", &PatchParams::default(), &note)
        .await
        .unwrap();
    eventually("a Secret update maps to target", || async {
        seen("target") == 3
    })
    .await;
    secrets.delete("s", &DeleteParams::default()).await.unwrap();
    eventually("a Secret delete maps to target", || async {
        seen("target") == 4
    })
    .await;
    // A Secret naming a ConfigMap that does not exist queues a key with nothing to reconcile.
    secrets
        .create(&PostParams::default(), &secret("stray", "missing"))
        .await
        .unwrap();
    cms.create(&PostParams::default(), &cm("later", "v"))
        .await
        .unwrap();
    eventually("a later object is reconciled", || async {
        seen("later") == 1
    })
    .await;
    assert_eq!(seen("missing"), 0);
    assert_eq!(
        rec.0.finished.lock().len(),
        rec.0.total(),
        "every reconcile had the lister"
    );
    stop.send(()).unwrap();
    within("run returns", run).await.unwrap().unwrap();
}

/// A finalizer whose cleanup fails `failures` times, recording when each cleanup ran.
#[derive(Clone)]
struct FailingCleanup {
    api: Api<ConfigMap>,
    failures: usize,
    cleanups: Arc<Mutex<Vec<Instant>>>,
}

impl Reconciler<ConfigMap> for FailingCleanup {
    type Error = String;
    async fn reconcile(&self, obj: Arc<ConfigMap>, ctx: &Context) -> Result<Action, String> {
        if ctx.is_deleted() {
            return Ok(Action::done());
        }
        let outcome = finalizer(
            &self.api,
            "example.com/cleanup",
            obj,
            async |event| match event {
                FinalizerEvent::Apply(_) => Ok(Action::done()),
                FinalizerEvent::Cleanup(_) => {
                    let mut cleanups = self.cleanups.lock();
                    cleanups.push(Instant::now());
                    match cleanups.len() <= self.failures {
                        true => Err("cleanup failed".to_owned()),
                        false => Ok(Action::done()),
                    }
                }
            },
        );
        outcome.await.map_err(|e| e.to_string())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_finalizer_cleanup_keeps_the_object_and_is_retried_with_backoff() {
    let server = FakeApiServer::start().await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client(&server), "default");
    let f = factory_of(client(&server));
    let rec = FailingCleanup {
        api: cms.clone(),
        failures: 6,
        cleanups: Arc::default(),
    };
    // Every watch event for the object, when delivered: an event queues the key at once even
    // while a rate-limited retry waits (client-go's `Add` beside `AddAfter`), so each one
    // delivered during the series may cut a backoff short.
    let events: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let on_event = {
        let events = events.clone();
        move |o: &Arc<ConfigMap>| {
            if o.metadata.name.as_deref() == Some("guarded") {
                events.lock().push(Instant::now());
            }
        }
    };
    let on_update = on_event.clone();
    f.informer_for::<ConfigMap>()
        .add_event_handler(
            kube_codegen_runtime::cache::EventHandlerFns::new()
                .on_add(move |o, _| on_event(o))
                .on_update(move |_, o| on_update(o)),
        )
        .unwrap();
    let (stop, run) = spawn(Controller::<ConfigMap>::for_kind(&f), rec.clone());
    cms.create(&PostParams::default(), &cm("guarded", "v"))
        .await
        .unwrap();
    eventually("finalizer added", || async {
        let c = cms.get("guarded").await.unwrap();
        c.metadata.finalizers.unwrap_or_default() == ["example.com/cleanup"]
    })
    .await;
    let delete_sent = Instant::now();
    cms.delete("guarded", &DeleteParams::default())
        .await
        .unwrap();
    eventually("four failed cleanups", || async {
        rec.cleanups.lock().len() >= 4
    })
    .await;
    let kept = cms.get_opt("guarded").await.unwrap();
    let kept = kept.expect("the object stays while its cleanup fails");
    assert!(kept.metadata.deletion_timestamp.is_some());
    assert_eq!(
        kept.metadata.finalizers.unwrap_or_default(),
        ["example.com/cleanup"]
    );

    eventually("object gone after the cleanup succeeds", || async {
        cms.get_opt("guarded").await.unwrap().is_none()
    })
    .await;
    let at = rec.cleanups.lock().clone();
    assert_eq!(at.len(), 7, "six failures, then success");
    // The controller rate limiter's per-key backoff: 5 ms doubling; the n-th retry waits at
    // least 5 ms * 2^(n-1). The delete's own event starts the series; each further event
    // delivered before the last cleanup (a late one, or the finalizer's own update still on
    // its way) queues the key at once, and the retry timers it leaves pending run one step
    // ahead from then on: every bound halves per such event. Only lower bounds are asserted.
    let extra = events
        .lock()
        .iter()
        .filter(|t| **t >= delete_sent && **t <= at[6])
        .count()
        .saturating_sub(1) as u32;
    let bound = |ms: u64| Duration::from_millis(ms) / 2u32.pow(extra.min(8));
    let gap = |i: usize| at[i + 1].duration_since(at[i]);
    let gaps: Vec<Duration> = (0..6).map(gap).collect();
    assert!(gap(4) >= bound(80), "extra events {extra}, gaps {gaps:?}");
    assert!(gap(5) >= bound(160), "extra events {extra}, gaps {gaps:?}");
    assert!(
        at[6].duration_since(at[0]) >= bound(315),
        "extra events {extra}, gaps {gaps:?}"
    );
    stop.send(()).unwrap();
    within("run returns", run).await.unwrap().unwrap();
}
