//! The shared informer against the in-memory API server: initial list, events, late handlers,
//! tombstones after a relist, slow and panicking handlers, resync, transform, removal, and
//! listers that refuse reads until the first list is cached.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::core::Selector;
use kube_codegen_runtime::cache::{
    Deleted, EventHandler, EventHandlerFns, InformerOptions, NotSynced, SharedIndexInformer, key_of,
};
use kube_fake_apiserver::FakeApiServer;

use crate::support;
use parking_lot::Mutex;
use support::{client, cm, eventually, fast_reflector, within};

fn options() -> InformerOptions<ConfigMap> {
    InformerOptions::default().reflector(fast_reflector())
}

/// Records every event as a line: `add <key> <initial>`, `update <key>`, `delete <key>`,
/// `tombstone <key>`.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<String>>>);

impl Recorder {
    fn lines(&self) -> Vec<String> {
        self.0.lock().clone()
    }

    /// Waits until the recorded lines include every one of `want`.
    async fn wait_for(&self, want: &[&str]) {
        eventually(
            &format!("events {want:?} in {:?}", self.lines()),
            || async {
                let lines = self.lines();
                want.iter().all(|w| lines.iter().any(|l| l == w))
            },
        )
        .await;
    }
}

impl EventHandler<ConfigMap> for Recorder {
    fn on_add(&self, o: &Arc<ConfigMap>, initial: bool) {
        self.0
            .lock()
            .push(format!("add {} {initial}", key_of(&**o).unwrap()));
    }
    fn on_update(&self, _: &Arc<ConfigMap>, new: &Arc<ConfigMap>) {
        self.0
            .lock()
            .push(format!("update {}", key_of(&**new).unwrap()));
    }
    fn on_delete(&self, d: &Deleted<ConfigMap>) {
        self.0.lock().push(match d {
            Deleted::Object(o) => format!("delete {}", key_of(&**o).unwrap()),
            Deleted::FinalStateUnknown { key, .. } => format!("tombstone {key}"),
        });
    }
}

async fn started(
    server: &FakeApiServer,
    options: InformerOptions<ConfigMap>,
) -> (SharedIndexInformer<ConfigMap>, tokio::task::JoinHandle<()>) {
    let informer = SharedIndexInformer::new(Api::<ConfigMap>::all(client(server)), options);
    let run = {
        let informer = informer.clone();
        tokio::spawn(async move { informer.run().await })
    };
    (informer, run)
}

#[tokio::test]
async fn handlers_get_the_initial_list_then_each_change() {
    let server = FakeApiServer::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client(&server), "default");
    for n in ["a", "b"] {
        api.create(&PostParams::default(), &cm(n, n)).await.unwrap();
    }
    let informer = SharedIndexInformer::new(Api::<ConfigMap>::all(client(&server)), options());
    let rec = Recorder::default();
    let reg = informer.add_event_handler(rec.clone()).unwrap();
    assert!(!reg.has_synced());
    let run = {
        let informer = informer.clone();
        tokio::spawn(async move { informer.run().await })
    };
    within("the informer's first list", informer.wait_for_sync()).await;
    rec.wait_for(&["add default/a true", "add default/b true"])
        .await;
    within("the handler's initial list", reg.wait_for_sync()).await;
    assert!(reg.has_synced(), "initial adds delivered");

    api.create(&PostParams::default(), &cm("c", "c"))
        .await
        .unwrap();
    let mut a = api.get("a").await.unwrap();
    a.data = Some([("k".to_owned(), "changed".to_owned())].into());
    api.replace("a", &PostParams::default(), &a).await.unwrap();
    api.delete("b", &DeleteParams::default()).await.unwrap();
    rec.wait_for(&[
        "add default/c false",
        "update default/a",
        "delete default/b",
    ])
    .await;
    assert_eq!(rec.lines().len(), 5, "nothing doubled: {:?}", rec.lines());
    let cached = informer
        .lister()
        .namespace("default")
        .get("a")
        .expect("synced")
        .expect("cached");
    assert_eq!(cached.data.as_ref().unwrap()["k"], "changed");
    run.abort();
}

#[tokio::test]
async fn waiting_for_a_removed_handlers_sync_ends() {
    let server = FakeApiServer::start().await.unwrap();
    // Never run: neither the informer nor the handler ever syncs.
    let informer = SharedIndexInformer::new(Api::<ConfigMap>::all(client(&server)), options());
    let reg = std::sync::Arc::new(informer.add_event_handler(Recorder::default()).unwrap());
    let waiting = tokio::spawn({
        let reg = reg.clone();
        async move { reg.wait_for_sync().await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        !waiting.is_finished(),
        "nothing synced, nothing removed yet"
    );
    informer.remove_event_handler(&reg);
    within("the wait after the removal", async {
        waiting.await.unwrap()
    })
    .await;
    assert!(!reg.has_synced());
}

#[tokio::test]
async fn a_handler_added_after_sync_first_sees_the_cache() {
    let server = FakeApiServer::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client(&server), "default");
    api.create(&PostParams::default(), &cm("a", "a"))
        .await
        .unwrap();
    let (informer, run) = started(&server, options()).await;
    within("the informer's first list", informer.wait_for_sync()).await;

    let late = Recorder::default();
    informer.add_event_handler(late.clone()).unwrap();
    late.wait_for(&["add default/a true"]).await;
    api.create(&PostParams::default(), &cm("b", "b"))
        .await
        .unwrap();
    late.wait_for(&["add default/b false"]).await;
    assert_eq!(late.lines(), ["add default/a true", "add default/b false"]);
    run.abort();
}

#[tokio::test]
async fn objects_deleted_while_cut_off_arrive_as_tombstones_after_the_relist() {
    let server = FakeApiServer::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client(&server), "default");
    for n in ["a", "b"] {
        api.create(&PostParams::default(), &cm(n, n)).await.unwrap();
    }
    let (informer, run) = started(&server, options()).await;
    let rec = Recorder::default();
    informer.add_event_handler(rec.clone()).unwrap();
    rec.wait_for(&["add default/a true", "add default/b true"])
        .await;

    let faults = server.faults();
    faults.fail_next_matching(usize::MAX, 503, "/api/v1/configmaps");
    faults.drop_watches();
    api.delete("b", &DeleteParams::default()).await.unwrap();
    api.create(&PostParams::default(), &cm("c", "c"))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    faults.clear_failures();

    rec.wait_for(&[
        "tombstone default/b",
        "add default/c false",
        "update default/a",
    ])
    .await;
    assert!(!rec.lines().iter().any(|l| l == "delete default/b"));
    assert!(informer.store().get_by_key("default/b").is_none());
    run.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stuck_or_panicking_handler_does_not_hold_up_the_others() {
    let server = FakeApiServer::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client(&server), "default");
    let (informer, run) = started(&server, options()).await;
    within("the informer's first list", informer.wait_for_sync()).await;

    // One handler blocks on its first event until released.
    let (release, gate) = std::sync::mpsc::channel::<()>();
    let gate = Mutex::new(gate);
    informer
        .add_event_handler(EventHandlerFns::new().on_add(move |_, _| {
            let _ = gate.lock().recv();
        }))
        .unwrap();
    // One panics on "boom".
    let after_panic = Recorder::default();
    let inner = after_panic.clone();
    informer
        .add_event_handler(EventHandlerFns::new().on_add(move |o: &Arc<ConfigMap>, i| {
            assert_ne!(o.metadata.name.as_deref(), Some("boom"), "handler panics");
            inner.on_add(o, i);
        }))
        .unwrap();
    let healthy = Recorder::default();
    informer.add_event_handler(healthy.clone()).unwrap();

    for n in ["boom", "x", "y"] {
        api.create(&PostParams::default(), &cm(n, n)).await.unwrap();
    }
    healthy
        .wait_for(&[
            "add default/boom false",
            "add default/x false",
            "add default/y false",
        ])
        .await;
    after_panic
        .wait_for(&["add default/x false", "add default/y false"])
        .await;
    release.send(()).unwrap();
    run.abort();
}

#[tokio::test]
async fn resync_redelivers_the_cache_as_updates_of_the_same_object() {
    let server = FakeApiServer::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client(&server), "default");
    api.create(&PostParams::default(), &cm("a", "a"))
        .await
        .unwrap();
    let same = Arc::new(Mutex::new(Vec::new()));
    let (informer, run) = started(&server, options().resync(Duration::from_secs(1))).await;
    let seen = same.clone();
    informer
        .add_event_handler(EventHandlerFns::new().on_update(move |old, new| {
            seen.lock().push(Arc::ptr_eq(old, new));
        }))
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while same.lock().is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no resync within 5 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        same.lock().iter().all(|s| *s),
        "a resync hands the cached object as both"
    );
    run.abort();
}

#[tokio::test]
async fn strip_managed_fields_drops_them_before_caching_and_keeps_the_earlier_transform() {
    let server = FakeApiServer::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client(&server), "default");
    // Server-side apply records who manages which field.
    let applied = cm("a", "a");
    let on_server = api
        .patch("a", &PatchParams::apply("test"), &Patch::Apply(&applied))
        .await
        .unwrap();
    assert!(
        on_server.metadata.managed_fields.is_some(),
        "the server records managedFields on apply (else this test proves nothing)"
    );
    let opts = options()
        .transform(|mut c: ConfigMap| {
            c.data = None;
            c
        })
        .strip_managed_fields();
    let (informer, run) = started(&server, opts).await;
    within("the informer's first list", informer.wait_for_sync()).await;
    let cached = informer.store().get_by_key("default/a").unwrap();
    assert_eq!(cached.metadata.managed_fields, None);
    assert_eq!(cached.data, None, "the transform set before still runs");
    assert_eq!(cached.metadata.name, on_server.metadata.name);
    run.abort();
}

#[tokio::test]
async fn transform_applies_before_caching_and_removed_handlers_hear_nothing_more() {
    let server = FakeApiServer::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client(&server), "default");
    api.create(&PostParams::default(), &cm("a", "a"))
        .await
        .unwrap();
    let opts = options().transform(|mut c: ConfigMap| {
        c.data = None; // e.g. drop what the controller never reads
        c.metadata.managed_fields = None;
        c
    });
    let (informer, run) = started(&server, opts).await;
    let rec = Recorder::default();
    let reg = informer.add_event_handler(rec.clone()).unwrap();
    rec.wait_for(&["add default/a true"]).await;
    assert!(
        informer
            .store()
            .get_by_key("default/a")
            .unwrap()
            .data
            .is_none()
    );

    informer.remove_event_handler(&reg);
    informer.remove_event_handler(&reg); // idempotent
    api.create(&PostParams::default(), &cm("b", "b"))
        .await
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while informer.store().get_by_key("default/b").is_none() {
        assert!(tokio::time::Instant::now() < deadline, "b never cached");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // A handler added now proves the event was dispatched; the removed one heard none of it.
    let watcher = Recorder::default();
    informer.add_event_handler(watcher.clone()).unwrap();
    watcher.wait_for(&["add default/b true"]).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(rec.lines(), ["add default/a true"]);
    run.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_too_far_behind_pauses_the_reflector_until_it_catches_up() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let server = FakeApiServer::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client(&server), "default");
    let (informer, run) = started(&server, options().max_handler_backlog(Some(10))).await;
    within("the informer's first list", informer.wait_for_sync()).await;

    let open = Arc::new(AtomicBool::new(false));
    let handled = Arc::new(AtomicUsize::new(0));
    let (gate, count) = (open.clone(), handled.clone());
    informer
        .add_event_handler(EventHandlerFns::new().on_add(move |_: &Arc<ConfigMap>, _| {
            while !gate.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(1)); // a handler stuck on something
            }
            count.fetch_add(1, Ordering::AcqRel);
        }))
        .unwrap();
    for i in 0..50 {
        let name = format!("cm-{i:02}");
        api.create(&PostParams::default(), &cm(&name, &name))
            .await
            .unwrap();
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let cached = informer.store().len();
    open.store(true, Ordering::Release); // before asserting: a stuck handler would hang the test
    assert!(
        cached <= 12,
        "the reflector paused at the bound of 10 queued notifications, but {cached} are cached"
    );

    eventually("every object cached and handled", || async {
        informer.store().len() == 50 && handled.load(Ordering::Acquire) == 50
    })
    .await;
    run.abort();
}

#[tokio::test]
async fn listers_refuse_reads_until_the_informer_has_listed() {
    let server = FakeApiServer::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client(&server), "default");
    api.create(&PostParams::default(), &cm("present", "1"))
        .await
        .unwrap();
    let informer = SharedIndexInformer::new(Api::<ConfigMap>::all(client(&server)), options());
    // Taken before the informer runs: the same handles must start answering once it has.
    let lister = informer.lister();
    let in_default = lister.namespace("default");
    let all = Selector::default();

    assert!(!lister.has_synced() && !in_default.has_synced());
    assert_eq!(lister.list(&all), Err(NotSynced));
    assert_eq!(lister.get("present"), Err(NotSynced));
    assert_eq!(in_default.list(&all), Err(NotSynced));
    assert_eq!(in_default.get("present"), Err(NotSynced));
    assert_eq!(in_default.get("missing"), Err(NotSynced));
    assert!(
        NotSynced.to_string().contains("wait_for_cache_sync"),
        "the error says what to do: {NotSynced}"
    );

    let run = {
        let informer = informer.clone();
        tokio::spawn(async move { informer.run().await })
    };
    tokio::time::timeout(Duration::from_secs(10), informer.wait_for_sync())
        .await
        .expect("timed out waiting for the informer's first list");

    assert!(lister.has_synced() && in_default.has_synced());
    assert_eq!(in_default.get("missing"), Ok(None), "synced and absent");
    let present = in_default
        .get("present")
        .expect("synced")
        .expect("the listed ConfigMap is cached");
    assert_eq!(present.data.as_ref().unwrap()["k"], "1");
    assert_eq!(lister.list(&all).map(|l| l.len()), Ok(1));
    assert_eq!(
        lister.namespace("other").list(&all).map(|l| l.len()),
        Ok(0),
        "an empty namespace is an empty answer once synced"
    );
    run.abort();
}

/// An index named like the built-in namespace index, or twice, is an error when it is added,
/// not a warning at start with the user's other indexers quietly dropped.
#[test]
fn an_index_name_already_taken_is_an_error() {
    use kube_codegen_runtime::cache::{CacheError, NAMESPACE_INDEX};
    let by_label: kube_codegen_runtime::cache::IndexFn<ConfigMap> = Arc::new(|cm: &ConfigMap| {
        cm.metadata
            .labels
            .iter()
            .flatten()
            .map(|(k, v)| format!("{k}={v}"))
            .collect()
    });
    let opts = InformerOptions::<ConfigMap>::default()
        .indexer("by-label", by_label.clone())
        .expect("a free name");
    assert_eq!(
        opts.indexer("by-label", by_label.clone()).err(),
        Some(CacheError::IndexConflict("by-label".into()))
    );
    assert_eq!(
        InformerOptions::<ConfigMap>::default()
            .indexer(NAMESPACE_INDEX, by_label)
            .err(),
        Some(CacheError::IndexConflict(NAMESPACE_INDEX.into()))
    );
}

/// The indexers an informer was given are all there besides the namespace index.
#[tokio::test]
async fn an_informer_keeps_every_indexer_it_was_given() {
    let by_name: kube_codegen_runtime::cache::IndexFn<ConfigMap> =
        Arc::new(|cm: &ConfigMap| cm.metadata.name.iter().cloned().collect());
    let by_ns: kube_codegen_runtime::cache::IndexFn<ConfigMap> =
        Arc::new(|cm: &ConfigMap| cm.metadata.namespace.iter().cloned().collect());
    let srv = FakeApiServer::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client(&srv), "default");
    let informer = SharedIndexInformer::new(
        api,
        options()
            .indexer("by-name", by_name)
            .unwrap()
            .indexer("by-ns", by_ns)
            .unwrap(),
    );
    let mut names = informer.store().index_names();
    names.sort();
    assert_eq!(names, ["by-name", "by-ns", "namespace"]);
}

/// Each handler is resynced on its own period (client-go's `AddEventHandlerWithResyncPeriod`):
/// a 1 s handler gets the cache about every second, a handler without resync never, and the
/// informer's own period (none here) does not matter to either.
#[tokio::test]
async fn per_handler_resync_goes_only_to_due_handlers() {
    let server = FakeApiServer::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client(&server), "default");
    api.create(&PostParams::default(), &cm("a", "a"))
        .await
        .unwrap();
    let (informer, run) = started(&server, options()).await;
    let counter = || {
        let n = Arc::new(Mutex::new(0usize));
        let seen = n.clone();
        let handler = EventHandlerFns::new().on_update(move |old: &Arc<ConfigMap>, new| {
            if Arc::ptr_eq(old, new) {
                *seen.lock() += 1;
            }
        });
        (n, handler)
    };
    let (fast, fast_handler) = counter();
    let (never, never_handler) = counter();
    informer
        .add_event_handler_with_resync_period(fast_handler, Duration::from_millis(10))
        .unwrap();
    informer
        .add_event_handler_with_resync_period(never_handler, Duration::ZERO)
        .unwrap();
    let added = tokio::time::Instant::now();
    let deadline = added + Duration::from_secs(20);
    while *fast.lock() < 2 {
        assert!(tokio::time::Instant::now() < deadline, "no second resync");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // 10 ms is raised to the 1 s minimum: the second resync comes no sooner than 2 s in.
    assert!(
        added.elapsed() >= Duration::from_millis(1_950),
        "{:?}",
        added.elapsed()
    );
    assert_eq!(*never.lock(), 0, "a handler without resync got one");
    run.abort();
}

/// An inline handler: records like [`Recorder`], holds the reflector at `update default/a`
/// until `gate` opens, panics on `add default/p false`, and on `add default/late false`
/// registers `late` (a handler may use its informer).
#[derive(Clone)]
struct Inline {
    rec: Recorder,
    gate: Arc<std::sync::atomic::AtomicBool>,
    informer: Arc<Mutex<Option<SharedIndexInformer<ConfigMap>>>>,
    late: Recorder,
}

impl EventHandler<ConfigMap> for Inline {
    fn on_add(&self, o: &Arc<ConfigMap>, initial: bool) {
        self.rec.on_add(o, initial);
        match (o.metadata.name.as_deref(), initial) {
            (Some("p"), false) => panic!("an inline handler panics"),
            (Some("late"), false) => {
                let informer = self.informer.lock().clone().expect("set");
                informer.add_event_handler(self.late.clone()).unwrap();
            }
            _ => {}
        }
    }
    fn on_update(&self, old: &Arc<ConfigMap>, new: &Arc<ConfigMap>) {
        self.rec.on_update(old, new);
        if new.metadata.name.as_deref() == Some("a") {
            // Blocks the reflector's task: a worker thread of this multi-thread runtime.
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            while !self.gate.load(std::sync::atomic::Ordering::Acquire) {
                assert!(
                    std::time::Instant::now() < deadline,
                    "the gate never opened"
                );
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }
    fn on_delete(&self, d: &Deleted<ConfigMap>) {
        self.rec.on_delete(d);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inline_handler_runs_before_the_next_write_in_order_and_may_use_the_informer() {
    let server = FakeApiServer::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client(&server), "default");
    api.create(&PostParams::default(), &cm("a", "a"))
        .await
        .unwrap();
    let informer = SharedIndexInformer::new(Api::<ConfigMap>::all(client(&server)), options());
    let handler = Inline {
        rec: Recorder::default(),
        gate: Arc::default(),
        informer: Arc::new(Mutex::new(Some(informer.clone()))),
        late: Recorder::default(),
    };
    let reg = informer.add_inline_event_handler(handler.clone()).unwrap();
    let queued = Recorder::default();
    informer.add_event_handler(queued.clone()).unwrap();
    let run = {
        let informer = informer.clone();
        tokio::spawn(async move { informer.run().await })
    };
    within("the informer's first list", informer.wait_for_sync()).await;
    eventually("the inline handler's initial list", || async {
        reg.has_synced()
    })
    .await;
    assert_eq!(handler.rec.lines(), ["add default/a true"]);

    // A panic is contained; the handler goes on, and may register another handler.
    for n in ["p", "late", "z"] {
        api.create(&PostParams::default(), &cm(n, n)).await.unwrap();
    }
    handler.rec.wait_for(&["add default/z false"]).await;
    handler
        .late
        .wait_for(&[
            "add default/a true",
            "add default/p true",
            "add default/late true",
        ])
        .await;
    assert!(reg.runs_inline(), "quick calls keep the handler inline");

    // While the inline handler holds the update of a, the reflector writes nothing more.
    let mut a = api.get("a").await.unwrap();
    a.data = Some([("k".to_owned(), "changed".to_owned())].into());
    api.replace("a", &PostParams::default(), &a).await.unwrap();
    handler.rec.wait_for(&["update default/a"]).await;
    api.create(&PostParams::default(), &cm("b", "b"))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        informer.store().get_by_key("default/b").is_none(),
        "the cache waits for the inline handler"
    );
    handler
        .gate
        .store(true, std::sync::atomic::Ordering::Release);
    handler.rec.wait_for(&["add default/b false"]).await;
    // That call took 200 ms and more: the handler now runs on its own task, in order.
    assert!(!reg.runs_inline(), "a blocking call moves the handler off");
    api.create(&PostParams::default(), &cm("c", "c"))
        .await
        .unwrap();
    handler.rec.wait_for(&["add default/c false"]).await;
    assert_eq!(
        handler.rec.lines(),
        [
            "add default/a true",
            "add default/p false",
            "add default/late false",
            "add default/z false",
            "update default/a",
            "add default/b false",
            "add default/c false",
        ],
        "in order, nothing doubled"
    );
    queued
        .wait_for(&["add default/z false", "update default/a"])
        .await;
    run.abort();
}
