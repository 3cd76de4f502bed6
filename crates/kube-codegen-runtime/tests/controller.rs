//! The controller runtime end to end on the in-memory API server: owns and watches mapping,
//! deleted objects, errors, panics and hangs, finalizers, one watch per kind for two
//! controllers, shutdown, metrics.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, PostParams};
use kube_codegen_runtime::SharedInformerFactory;
use kube_codegen_runtime::controller::owners::controller_ref;
use kube_codegen_runtime::controller::{
    Action, Context, Controller, FinalizerEvent, Manager, ReconcileError, Reconciler, finalizer,
};
use kube_fake_apiserver::FakeApiServer;
use parking_lot::Mutex;

use crate::support;
use support::{client, cm, eventually, fast_reflector};

/// Records every reconcile as `(name, deleted)`; behaves by the object's name.
#[derive(Default)]
struct Recording {
    seen: Mutex<Vec<(String, bool)>>,
    policy: Mutex<Vec<String>>,
}

impl Recording {
    fn count(&self, name: &str) -> usize {
        self.seen.lock().iter().filter(|(n, _)| n == name).count()
    }
    fn deleted(&self, name: &str) -> bool {
        self.seen.lock().iter().any(|(n, d)| n == name && *d)
    }
}

/// A local handle, so the test can implement the runtime's trait (orphan rule).
struct H<T>(Arc<T>);

impl<T> std::ops::Deref for H<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl Reconciler<ConfigMap> for H<Recording> {
    type Error = String;

    async fn reconcile(&self, obj: Arc<ConfigMap>, ctx: &Context) -> Result<Action, String> {
        let name = obj.metadata.name.clone().unwrap_or_default();
        self.seen.lock().push((name.clone(), ctx.is_deleted()));
        assert!(
            ctx.lister::<ConfigMap>().is_some(),
            "the primary's lister is in the context"
        );
        match name.as_str() {
            "panic" => panic!("boom"),
            "hang" => std::future::pending().await,
            "err" => Err("always failing".to_owned()),
            "later" => Ok(Action::requeue_after(Duration::from_millis(100))),
            _ => Ok(Action::done()),
        }
    }

    fn error_policy(
        &self,
        obj: &Arc<ConfigMap>,
        e: &ReconcileError<String>,
        _: &Context,
    ) -> Action {
        let kind = match e {
            ReconcileError::Reconciler(_) => "error",
            ReconcileError::Panic(_) => "panic",
            ReconcileError::Timeout(_) => "timeout",
        };
        self.policy.lock().push(format!(
            "{}:{kind}",
            obj.metadata.name.clone().unwrap_or_default()
        ));
        Action::requeue_after(Duration::from_millis(50))
    }
}

fn factory(server: &FakeApiServer) -> SharedInformerFactory {
    SharedInformerFactory::builder(client(server))
        .namespace("default")
        .reflector(fast_reflector())
        .build()
}

async fn create(api: &Api<ConfigMap>, name: &str) -> ConfigMap {
    api.create(&PostParams::default(), &cm(name, "v"))
        .await
        .unwrap()
}

/// Runs `controller` in the background; the returned sender stops it.
fn spawn<R: Reconciler<ConfigMap>>(
    controller: Controller<ConfigMap>,
    r: R,
) -> (
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<Result<(), kube_codegen_runtime::controller::ControllerError>>,
) {
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(controller.run(r, async move {
        let _ = rx.await;
    }));
    (tx, task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owns_maps_children_to_their_controller_and_deletes_keep_their_object() {
    let server = FakeApiServer::start().await.unwrap();
    let f = factory(&server);
    let rec = Arc::new(Recording::default());
    let (stop, task) = spawn(
        Controller::<ConfigMap>::for_kind(&f)
            .owns::<Secret>()
            .workers(2),
        H(rec.clone()),
    );
    let cms: Api<ConfigMap> = Api::namespaced(client(&server), "default");
    let owner = create(&cms, "owner").await;
    eventually("owner reconciled", || async { rec.count("owner") >= 1 }).await;
    let before = rec.count("owner");
    // A Secret controlled by the ConfigMap reconciles it; one merely owned (not controller)
    // or of another kind does not.
    let secrets: Api<Secret> = Api::namespaced(client(&server), "default");
    let mut s = Secret::default();
    s.metadata.name = Some("child".into());
    s.metadata.owner_references = Some(vec![controller_ref(&owner)]);
    secrets.create(&PostParams::default(), &s).await.unwrap();
    eventually("owner reconciled for its child", || async {
        rec.count("owner") > before
    })
    .await;
    let after_child = rec.count("owner");
    let mut other = Secret::default();
    other.metadata.name = Some("not-controlled".into());
    let mut r = controller_ref(&owner);
    r.controller = Some(false);
    other.metadata.owner_references = Some(vec![r]);
    secrets
        .create(&PostParams::default(), &other)
        .await
        .unwrap();
    // A marker after it: a child of another owner. Secret events reach the mapper in order,
    // so once the marker's owner is reconciled for it, the non-controller reference has been
    // mapped too (to nothing, or the owner would have been queued ahead of the marker's).
    let owner2 = create(&cms, "owner-2").await;
    eventually("owner-2 reconciled", || async { rec.count("owner-2") >= 1 }).await;
    let owner2_before = rec.count("owner-2");
    let mut marker = Secret::default();
    marker.metadata.name = Some("marker".into());
    marker.metadata.owner_references = Some(vec![controller_ref(&owner2)]);
    secrets
        .create(&PostParams::default(), &marker)
        .await
        .unwrap();
    eventually("owner-2 reconciled for the marker", || async {
        rec.count("owner-2") > owner2_before
    })
    .await;
    assert_eq!(
        rec.count("owner"),
        after_child,
        "a non-controller owner reference maps to nothing"
    );
    // Deleted: reconciled once more with its last state and `is_deleted`.
    cms.delete("owner", &DeleteParams::default()).await.unwrap();
    eventually("deleted owner reconciled", || async {
        rec.deleted("owner")
    })
    .await;
    // requeue_after comes back by itself.
    create(&cms, "later").await;
    eventually("requeued after the delay", || async {
        rec.count("later") >= 3
    })
    .await;
    stop.send(()).unwrap();
    task.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_panics_and_hangs_go_through_the_policy_and_others_keep_going() {
    let server = FakeApiServer::start().await.unwrap();
    let f = factory(&server);
    let rec = Arc::new(Recording::default());
    let controller = Controller::<ConfigMap>::for_kind(&f)
        .workers(2)
        .reconcile_timeout(Duration::from_millis(200));
    let (stop, task) = spawn(controller, H(rec.clone()));
    let cms: Api<ConfigMap> = Api::namespaced(client(&server), "default");
    for name in ["panic", "hang", "err"] {
        create(&cms, name).await;
    }
    for i in 0..20 {
        create(&cms, &format!("ok-{i}")).await;
    }
    eventually("every healthy key reconciled", || async {
        (0..20).all(|i| rec.count(&format!("ok-{i}")) >= 1)
    })
    .await;
    eventually("each failure retried through the policy", || async {
        let p = rec.policy.lock().clone();
        ["panic:panic", "hang:timeout", "err:error"]
            .iter()
            .all(|want| p.iter().filter(|x| x == want).count() >= 2)
    })
    .await;
    stop.send(()).unwrap();
    // Shutdown abandons the hanging reconcile within the shutdown timeout's bound.
    tokio::time::timeout(Duration::from_secs(40), task)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_controllers_share_one_watch_per_kind() {
    let server = FakeApiServer::start().await.unwrap();
    let f = factory(&server);
    let (a, b) = (
        Arc::new(Recording::default()),
        Arc::new(Recording::default()),
    );
    let first = Controller::<ConfigMap>::for_kind(&f)
        .name("first")
        .owns::<Secret>()
        .build(H(a.clone()));
    let second = Controller::<ConfigMap>::for_kind(&f)
        .name("second")
        .owns::<Secret>()
        .build(H(b.clone()));
    let manager = Manager::new(&f).add(first).add(second);
    let mut ready = manager.ready();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(manager.run(async move {
        let _ = rx.await;
    }));
    ready.wait_for(|r| *r).await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client(&server), "default");
    create(&cms, "shared").await;
    eventually("both reconciled", || async {
        a.count("shared") >= 1 && b.count("shared") >= 1
    })
    .await;
    let requests = server.requests();
    for path in [
        "/api/v1/namespaces/default/configmaps",
        "/api/v1/namespaces/default/secrets",
    ] {
        let reads = requests
            .iter()
            .filter(|r| r.path == path && (r.verb == "watch" || r.verb == "list"))
            .count();
        assert_eq!(reads, 1, "{path}: one watch(-list) for two controllers");
    }
    tx.send(()).unwrap();
    task.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relist_after_a_410_loses_no_key() {
    let server = FakeApiServer::start().await.unwrap();
    let f = factory(&server);
    let rec = Arc::new(Recording::default());
    let (stop, task) = spawn(Controller::<ConfigMap>::for_kind(&f), H(rec.clone()));
    let cms: Api<ConfigMap> = Api::namespaced(client(&server), "default");
    create(&cms, "before").await;
    eventually("first reconcile", || async { rec.count("before") >= 1 }).await;
    // The server forgets its history and drops every connection; changes made meanwhile
    // (a create and a delete) arrive through the relist.
    server.faults().restart(true);
    // The restart cuts this client's pooled connection too: a fresh client for the changes
    // (what is tested is the controller's relist, not this request).
    let cms: Api<ConfigMap> = Api::namespaced(client(&server), "default");
    create(&cms, "during").await;
    cms.delete("before", &DeleteParams::default())
        .await
        .unwrap();
    eventually("both changes reconciled", || async {
        rec.count("during") >= 1 && rec.deleted("before")
    })
    .await;
    stop.send(()).unwrap();
    task.await.unwrap().unwrap();
}

/// Adds a finalizer, cleans up on delete (failing the first time), then lets it go.
struct Finalizing {
    api: Api<ConfigMap>,
    cleanups: Mutex<usize>,
}

impl Reconciler<ConfigMap> for H<Finalizing> {
    type Error = String;
    async fn reconcile(&self, obj: Arc<ConfigMap>, ctx: &Context) -> Result<Action, String> {
        if ctx.is_deleted() {
            return Ok(Action::done());
        }
        finalizer(
            &self.api,
            "example.com/cleanup",
            obj,
            async |event| match event {
                FinalizerEvent::Apply(_) => Ok(Action::done()),
                FinalizerEvent::Cleanup(_) => {
                    let mut n = self.cleanups.lock();
                    *n += 1;
                    if *n == 1 {
                        Err("first cleanup fails".to_owned())
                    } else {
                        Ok(Action::done())
                    }
                }
            },
        )
        .await
        .map_err(|e| e.to_string())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finalizer_added_then_cleanup_retried_until_it_succeeds() {
    let server = FakeApiServer::start().await.unwrap();
    let f = factory(&server);
    let cms: Api<ConfigMap> = Api::namespaced(client(&server), "default");
    let rec = Arc::new(Finalizing {
        api: cms.clone(),
        cleanups: Mutex::new(0),
    });
    let (stop, task) = spawn(
        Controller::<ConfigMap>::for_kind(&f).generation_changed(),
        H(rec.clone()),
    );
    create(&cms, "guarded").await;
    eventually("finalizer added", || async {
        let c = cms.get("guarded").await.unwrap();
        c.metadata.finalizers.unwrap_or_default() == ["example.com/cleanup"]
    })
    .await;
    cms.delete("guarded", &DeleteParams::default())
        .await
        .unwrap();
    // The failed cleanup keeps the object; the retry removes the finalizer and it goes.
    eventually("object gone after a successful cleanup", || async {
        cms.get_opt("guarded").await.unwrap().is_none()
    })
    .await;
    assert_eq!(*rec.cleanups.lock(), 2, "one failed cleanup, one retried");
    stop.send(()).unwrap();
    task.await.unwrap().unwrap();
}

#[cfg(feature = "prometheus")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_have_controller_runtime_names() {
    use kube_codegen_runtime::workqueue::PrometheusMetricsProvider;
    let server = FakeApiServer::start().await.unwrap();
    let f = factory(&server);
    let mut registry = prometheus_client::registry::Registry::default();
    let provider = Arc::new(PrometheusMetricsProvider::new(&mut registry));
    let rec = Arc::new(Recording::default());
    let (stop, task) = spawn(
        Controller::<ConfigMap>::for_kind(&f)
            .name("cms")
            .workers(3)
            .metrics(provider),
        H(rec.clone()),
    );
    let cms: Api<ConfigMap> = Api::namespaced(client(&server), "default");
    create(&cms, "m").await;
    eventually("reconciled", || async { rec.count("m") >= 1 }).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    for want in [
        "controller_runtime_reconcile_total{controller=\"cms\",result=\"success\"} 1",
        "controller_runtime_reconcile_errors_total{controller=\"cms\"} 0",
        "controller_runtime_reconcile_time_seconds_bucket{le=\"0.005\",controller=\"cms\"}",
        "controller_runtime_active_workers{controller=\"cms\"} 0",
        "controller_runtime_max_concurrent_reconciles{controller=\"cms\"} 3",
        "workqueue_adds_total{name=\"cms\"}",
    ] {
        assert!(text.contains(want), "no {want:?} in:\n{text}");
    }
    stop.send(()).unwrap();
    task.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_pass_reconciles_each_primary_once_however_many_children_it_owns() {
    let server = FakeApiServer::start().await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client(&server), "default");
    let secrets: Api<Secret> = Api::namespaced(client(&server), "default");
    let names: Vec<String> = (0..200).map(|i| format!("p{i}")).collect();
    for name in &names {
        let owner = create(&cms, name).await;
        for c in 0..2 {
            let mut s = Secret::default();
            s.metadata.name = Some(format!("{name}-{c}"));
            s.metadata.owner_references = Some(vec![controller_ref(&owner)]);
            secrets.create(&PostParams::default(), &s).await.unwrap();
        }
    }
    let f = factory(&server);
    let rec = Arc::new(Recording::default());
    let (stop, task) = spawn(
        Controller::<ConfigMap>::for_kind(&f)
            .owns::<Secret>()
            .workers(2),
        H(rec.clone()),
    );
    eventually("every primary reconciled", || async {
        names.iter().all(|n| rec.count(n) >= 1)
    })
    .await;
    // Late owned-object adds would queue their owner again after its first reconcile.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let twice: Vec<&String> = names.iter().filter(|n| rec.count(n) != 1).collect();
    assert!(twice.is_empty(), "reconciled more than once: {twice:?}");
    stop.send(()).unwrap();
    task.await.unwrap().unwrap();
}

/// Records each reconcile's name; the first one waits for `release`.
struct Gated {
    seen: Mutex<Vec<String>>,
    release: tokio::sync::Semaphore,
}

impl Reconciler<ConfigMap> for H<Gated> {
    type Error = String;

    async fn reconcile(&self, obj: Arc<ConfigMap>, _: &Context) -> Result<Action, String> {
        let first = {
            let mut seen = self.seen.lock();
            seen.push(obj.metadata.name.clone().unwrap_or_default());
            seen.len() == 1
        };
        if first {
            let _held = self.release.acquire().await.map_err(|e| e.to_string())?;
        }
        Ok(Action::done())
    }
}

/// Where `name` was first reconciled, once every one of `names` has been.
async fn live_change_position(priority_queue: bool) -> usize {
    let server = FakeApiServer::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client(&server), "default");
    let names: Vec<String> = (0..30).map(|i| format!("cm-{i:02}")).collect();
    for n in &names {
        create(&api, n).await;
    }
    let factory = factory(&server);
    let store = factory.informer_for::<ConfigMap>().store();
    let r = Arc::new(Gated {
        seen: Mutex::default(),
        release: tokio::sync::Semaphore::new(0),
    });
    let controller = Controller::<ConfigMap>::for_kind(&factory)
        .workers(1)
        .priority_queue(priority_queue);
    let (stop, task) = spawn(controller, H(r.clone()));
    eventually("the first reconcile to start", || async {
        !r.seen.lock().is_empty()
    })
    .await;
    // Two changes of backlog keys while the only worker is busy. Events reach the handlers in
    // order, so once the second change is cached the first one's key has been queued.
    let held = r.seen.lock()[0].clone();
    let mut backlog = names.iter().rev().filter(|n| **n != held);
    let (changed, after) = (backlog.next().unwrap(), backlog.next().unwrap());
    for name in [changed, after] {
        let updated = api
            .replace(name, &PostParams::default(), &{
                let mut c = api.get(name).await.unwrap();
                c.data = Some([("k".to_owned(), "live".to_owned())].into());
                c
            })
            .await
            .unwrap();
        let rv = updated.metadata.resource_version.clone();
        eventually("the change to be cached", || async {
            store
                .get_by_key(&format!("default/{name}"))
                .is_some_and(|c| c.metadata.resource_version == rv)
        })
        .await;
    }
    r.release.add_permits(1);
    eventually("every ConfigMap to be reconciled", || async {
        let seen = r.seen.lock();
        names.iter().all(|n| seen.contains(n))
    })
    .await;
    let _ = stop.send(());
    task.await.unwrap().unwrap();
    let seen = r.seen.lock();
    seen.iter().position(|n| n == changed).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_change_is_reconciled_before_the_initial_list_backlog() {
    assert_eq!(
        live_change_position(true).await,
        1,
        "right after the reconcile that was running"
    );
    // client-go's FIFO: the changed key keeps its place in the backlog (at its end).
    assert!(live_change_position(false).await > 20);
}
