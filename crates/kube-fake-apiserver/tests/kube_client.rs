//! `kube::Client` / `kube::Api` against the server unchanged (HTTP, in-process and TLS), every fault,
//! request recording, and the binary.
use crate::common;

use std::time::Duration;

use common::*;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube_fake_apiserver::FakeApiServer;
use serde_json::json;

fn widgets(c: &kube::Client) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("example.com", "v1", "Widget"));
    Api::namespaced_with(c.clone(), "default", &ar)
}

fn dyn_widget(name: &str, replicas: i64) -> DynamicObject {
    serde_json::from_value(widget(name, replicas)).unwrap()
}

/// Creates widget `name` with one replica; returns the resourceVersion it got.
async fn create_widget(api: &Api<DynamicObject>, name: &str) -> String {
    api.create(&PostParams::default(), &dyn_widget(name, 1))
        .await
        .expect("widget created")
        .metadata
        .resource_version
        .expect("resourceVersion set")
}

/// A watch with default parameters from resourceVersion `rv`.
async fn watch_from(
    api: &Api<DynamicObject>,
    rv: &str,
) -> futures::stream::BoxStream<'static, kube::Result<WatchEvent<DynamicObject>>> {
    api.watch(&WatchParams::default(), rv)
        .await
        .expect("watch starts")
        .boxed()
}

async fn next_event<K>(
    s: &mut (impl futures::Stream<Item = kube::Result<WatchEvent<K>>> + Unpin),
) -> Option<WatchEvent<K>> {
    tokio::time::timeout(Duration::from_secs(2), s.next())
        .await
        .expect("event in time")
        .map(|r| r.expect("event"))
}

#[tokio::test]
async fn dynamic_api_list_watch_patch_status() {
    let s = FakeApiServer::start().await.unwrap();
    s.register_crd(widget_crd()).unwrap();
    let api = widgets(&s.client());
    create_widget(&api, "a").await;
    let list = api
        .list(&ListParams::default().labels("app=w"))
        .await
        .unwrap();
    assert_eq!(list.items.len(), 1);
    let rv = list.metadata.resource_version.clone().unwrap();

    let mut stream = api
        .watch(
            &WatchParams {
                bookmarks: true,
                ..WatchParams::default()
            }
            .timeout(30),
            &rv,
        )
        .await
        .unwrap()
        .boxed();
    let patched = api
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"color": "blue"}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.data["spec"]["color"], "blue");
    match next_event(&mut stream).await {
        Some(WatchEvent::Modified(o)) => assert_eq!(o.data["spec"]["color"], "blue"),
        other => panic!("expected MODIFIED, got {other:?}"),
    }

    let mut cur = api.get("a").await.unwrap();
    cur.data["status"] = json!({"phase": "Ready", "replicas": 1});
    let st = api
        .replace_status("a", &PostParams::default(), &cur)
        .await
        .unwrap();
    assert_eq!(st.data["status"]["phase"], "Ready");
    let ssa = PatchParams::apply("test-manager").force();
    let applied = api
        .patch(
            "b",
            &ssa,
            &Patch::Apply(
                json!({"apiVersion": "example.com/v1", "kind": "Widget", "spec": {"replicas": 2}}),
            ),
        )
        .await
        .unwrap();
    assert_eq!(
        applied.metadata.managed_fields.unwrap()[0]
            .manager
            .as_deref(),
        Some("test-manager")
    );
    let scale = api.get_scale("b").await.unwrap();
    assert_eq!(scale.spec.unwrap().replicas, Some(2));

    // Streaming list through kube's own parameters: ADDED for both, then the initial-events-end bookmark.
    let mut sl = api
        .watch(&WatchParams::streaming_lists(), "0")
        .await
        .unwrap()
        .boxed();
    let mut added = 0;
    loop {
        match next_event(&mut sl).await {
            Some(WatchEvent::Added(_)) => added += 1,
            Some(WatchEvent::Bookmark(b)) => {
                assert_eq!(
                    b.metadata
                        .annotations
                        .get("k8s.io/initial-events-end")
                        .map(String::as_str),
                    Some("true")
                );
                break;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(added, 2);
    s.shutdown().await;
}

#[tokio::test]
async fn typed_configmap_and_deployment() {
    let s = FakeApiServer::start().await.unwrap();
    let c = s.in_process_client();
    let cms: Api<ConfigMap> = Api::default_namespaced(c.clone());
    let cm: ConfigMap = serde_json::from_value(
        json!({"metadata": {"name": "cm", "labels": {"k": "v"}}, "data": {"a": "1"}}),
    )
    .unwrap();
    cms.create(&PostParams::default(), &cm).await.unwrap();
    let got = cms.get("cm").await.unwrap();
    assert_eq!(got.data.unwrap()["a"], "1");
    let p = cms
        .patch(
            "cm",
            &PatchParams::default(),
            &Patch::Strategic(json!({"data": {"b": "2"}})),
        )
        .await
        .unwrap();
    assert_eq!(p.data.unwrap().len(), 2);
    assert_eq!(
        cms.list(&ListParams::default().labels("k=v"))
            .await
            .unwrap()
            .items
            .len(),
        1
    );
    assert_eq!(
        cms.list(&ListParams::default().labels("k!=v"))
            .await
            .unwrap()
            .items
            .len(),
        0
    );
    let err = cms.get("missing").await.unwrap_err();
    match err {
        kube::Error::Api(st) => {
            assert_eq!(st.code, 404);
            assert_eq!(st.reason, "NotFound");
        }
        other => panic!("{other}"),
    }
    assert!(
        cms.delete("cm", &DeleteParams::default())
            .await
            .unwrap()
            .is_right()
    );

    let deps: Api<Deployment> = Api::default_namespaced(c.clone());
    let d: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "d"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "d"}},
                 "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}
    }))
    .unwrap();
    let created = deps.create(&PostParams::default(), &d).await.unwrap();
    assert_eq!(created.metadata.generation, Some(1));
    let st = deps
        .patch_status(
            "d",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"replicas": 1, "readyReplicas": 1}})),
        )
        .await
        .unwrap();
    assert_eq!(st.status.unwrap().ready_replicas, Some(1));
    assert_eq!(st.metadata.generation, Some(1));
    let sc = deps
        .patch_scale(
            "d",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await
        .unwrap();
    assert_eq!(sc.spec.unwrap().replicas, Some(3));
    let after = deps.get("d").await.unwrap();
    assert_eq!(after.spec.unwrap().replicas, Some(3));
    assert_eq!(after.metadata.generation, Some(2));
}

#[tokio::test]
async fn compaction_gives_kube_a_410_error_event() {
    let (s, c) = with_widgets().await;
    let api = widgets(&c);
    let rv = create_widget(&api, "a").await;
    create_widget(&api, "b").await;
    s.faults().compact();
    let mut stream = watch_from(&api, &rv).await;
    match next_event(&mut stream).await {
        Some(WatchEvent::Error(st)) => {
            assert_eq!(st.code, 410);
            assert_eq!(st.reason, "Expired");
        }
        other => panic!("expected ERROR 410, got {other:?}"),
    }
    // Watching from the current resourceVersion is still fine.
    let cur = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut ok = watch_from(&api, &cur).await;
    api.delete("a", &DeleteParams::default()).await.unwrap();
    assert!(matches!(
        next_event(&mut ok).await,
        Some(WatchEvent::Deleted(_))
    ));
}

#[tokio::test]
async fn drop_watches_and_end_after_n_events() {
    let s = FakeApiServer::start().await.unwrap();
    s.register_crd(widget_crd()).unwrap();
    let api = widgets(&s.client());
    let mut stream = watch_from(&api, "0").await;
    create_widget(&api, "a").await;
    assert!(matches!(
        next_event(&mut stream).await,
        Some(WatchEvent::Added(_))
    ));
    s.faults().drop_watches();
    assert!(next_event(&mut stream).await.is_none(), "the watch ends");

    s.faults().end_watches_after(Some(2));
    for n in ["b", "c", "d"] {
        create_widget(&api, n).await;
    }
    let all: Vec<_> = tokio::time::timeout(
        Duration::from_secs(2),
        api.watch(&WatchParams::default(), "0")
            .await
            .unwrap()
            .try_collect::<Vec<_>>(),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(all.len(), 2);
    s.faults().end_watches_after(None);
    s.shutdown().await;
}

#[tokio::test]
async fn injected_failures() {
    let (s, c) = with_widgets().await;
    let f = s.faults();
    f.fail_next(1, 500);
    let r = get(&c, WIDGETS).await;
    assert_eq!(r.code, 500);
    assert_eq!(r.body["reason"], "InternalError");
    assert_eq!(get(&c, WIDGETS).await.code, 200);

    f.fail_next(2, 429);
    let r = get(&c, WIDGETS).await;
    assert_eq!(r.code, 429);
    assert_eq!(r.body["reason"], "TooManyRequests");
    assert_eq!(r.headers.get("retry-after").unwrap(), "1");
    assert_eq!(get(&c, "/version").await.code, 429);
    assert_eq!(get(&c, "/version").await.code, 200);

    f.fail_next_matching(1, 503, "/apis/example.com/");
    assert_eq!(get(&c, "/api/v1/namespaces").await.code, 200);
    let r = get(&c, WIDGETS).await;
    assert_eq!(r.code, 503);
    assert_eq!(r.body["reason"], "ServiceUnavailable");
    assert_eq!(get(&c, WIDGETS).await.code, 200);

    f.fail_next(5, 500);
    f.clear_failures();
    assert_eq!(get(&c, WIDGETS).await.code, 200);
}

#[tokio::test(start_paused = true)]
async fn latency_delays_every_request() {
    let (s, c) = with_widgets().await;
    s.faults().set_latency(Duration::from_secs(10));
    let start = tokio::time::Instant::now();
    assert_eq!(get(&c, WIDGETS).await.code, 200);
    // Virtual time under a paused clock: the request waited the configured latency.
    assert!(start.elapsed() >= Duration::from_secs(10));
    s.faults().set_latency(Duration::ZERO);
    let start = tokio::time::Instant::now();
    get(&c, WIDGETS).await;
    assert!(start.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn restart_keeps_data_drops_connections_and_optionally_history() {
    let s = FakeApiServer::start().await.unwrap();
    s.register_crd(widget_crd()).unwrap();
    let client = s.client();
    let api = widgets(&client);
    let rv = create_widget(&api, "a").await;
    let mut stream = watch_from(&api, &rv).await;
    s.faults().restart(false);
    assert!(
        next_event(&mut stream).await.is_none(),
        "open watches end on restart"
    );
    assert_eq!(api.get("a").await.unwrap().data["spec"]["replicas"], 1);
    create_widget(&api, "b").await;
    // History survived: replay from the old rv works.
    let mut again = watch_from(&api, &rv).await;
    assert!(matches!(
        next_event(&mut again).await,
        Some(WatchEvent::Added(_))
    ));

    s.faults().restart(true);
    let mut gone = watch_from(&api, &rv).await;
    assert!(matches!(next_event(&mut gone).await, Some(WatchEvent::Error(st)) if st.code == 410));
    s.shutdown().await;
}

#[tokio::test]
async fn requests_are_recorded() {
    let (s, c) = with_widgets().await;
    s.faults().clear_requests();
    post(&c, WIDGETS, widget("a", 1)).await;
    get(&c, &format!("{WIDGETS}?labelSelector=app%3Dw")).await;
    patch_replicas(&c, &format!("{WIDGETS}/a"), 2).await;
    get(&c, &format!("{WIDGETS}/a")).await;
    delete(&c, &format!("{WIDGETS}/a")).await;
    let reqs = s.requests();
    let verbs: Vec<&str> = reqs.iter().map(|r| r.verb.as_str()).collect();
    assert_eq!(verbs, ["create", "list", "patch", "get", "delete"]);
    assert_eq!(reqs[0].method, "POST");
    assert_eq!(reqs[0].path, WIDGETS);
    assert!(reqs[0].body.contains("\"replicas\":1"));
    assert_eq!(reqs[1].query, "labelSelector=app%3Dw");
    s.faults().clear_requests();
    assert!(s.requests().is_empty());
    s.faults().set_recording(false);
    get(&c, WIDGETS).await;
    assert!(s.requests().is_empty());
}

#[tokio::test]
async fn tls_server_with_kubeconfig() {
    let s = FakeApiServer::builder().tls(true).start().await.unwrap();
    assert!(s.url().starts_with("https://127.0.0.1:"));
    let cms: Api<ConfigMap> = Api::default_namespaced(s.client());
    assert!(
        cms.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    let yaml = s.kubeconfig_yaml();
    assert!(yaml.contains("certificate-authority-data:"));
    let kc = kube::config::Kubeconfig::from_yaml(&yaml).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .unwrap();
    let client = kube::Client::try_from(config).unwrap();
    let ns: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client);
    assert_eq!(
        ns.get("default").await.unwrap().metadata.name.as_deref(),
        Some("default")
    );
    s.shutdown().await;
}

#[tokio::test]
async fn binary_serves_until_terminated() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let kc = dir.path().join("kubeconfig");
    let crd_file = dir.path().join("crd.yaml");
    std::fs::write(&crd_file, serde_json::to_string(&widget_crd()).unwrap()).unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_kube-fake-apiserver"))
        .args(["--port", "0", "--kubeconfig"])
        .arg(&kc)
        .arg("--crd")
        .arg(&crd_file)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.starts_with("http://127.0.0.1:"), "{line}");
    let kcfg = kube::config::Kubeconfig::read_from(&kc).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kcfg, &Default::default())
        .await
        .unwrap();
    let api = widgets(&kube::Client::try_from(config).unwrap());
    create_widget(&api, "x").await;
    assert_eq!(
        api.list(&ListParams::default()).await.unwrap().items.len(),
        1
    );
    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    assert!(child.wait().unwrap().success(), "SIGTERM exits cleanly");
}

/// A `kube-fake-apiserver` child process, killed when dropped (a failing test leaves none).
struct Binary {
    child: std::process::Child,
    client: kube::Client,
    _dir: tempfile::TempDir,
}

impl Binary {
    async fn start(flags: &[&str], crd: Option<&serde_json::Value>) -> Binary {
        use std::io::BufRead;
        let dir = tempfile::tempdir().unwrap();
        let kc = dir.path().join("kubeconfig");
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_kube-fake-apiserver"));
        cmd.args(["--port", "0", "--kubeconfig"])
            .arg(&kc)
            .args(flags);
        if let Some(crd) = crd {
            let file = dir.path().join("crd.json");
            std::fs::write(&file, serde_json::to_string(crd).unwrap()).unwrap();
            cmd.arg("--crd").arg(file);
        }
        let mut child = cmd.stdout(std::process::Stdio::piped()).spawn().unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(line.starts_with("http://127.0.0.1:"), "{flags:?}: {line}");
        let kcfg = kube::config::Kubeconfig::read_from(&kc).unwrap();
        let config = kube::Config::from_custom_kubeconfig(kcfg, &Default::default())
            .await
            .unwrap();
        Binary {
            child,
            client: kube::Client::try_from(config).unwrap(),
            _dir: dir,
        }
    }
}

impl Drop for Binary {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `--feature-gates=ShardedListAndWatch=true` turns on `shardSelector`; an unknown gate stops
/// the binary with kube-apiserver's message.
#[tokio::test]
async fn feature_gates_turn_on_shard_selectors() {
    let path = "/api/v1/namespaces/default/configmaps?shardSelector=shardRange(object.metadata.uid,%20%270x0000000000000000%27,%20%270x8000000000000000%27)";
    let on = Binary::start(&["--feature-gates", "ShardedListAndWatch=true"], None).await;
    let r = get(&on.client, path).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert!(
        r.body["metadata"]["shardInfo"]["selector"].is_string(),
        "{}",
        r.body
    );
    let off = Binary::start(&[], None).await;
    let r = get(&off.client, path).await;
    assert_eq!(r.code, 200);
    assert!(r.body["metadata"].get("shardInfo").is_none(), "{}", r.body);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kube-fake-apiserver"))
        .args([
            "--feature-gates",
            "ShardedListAndWatch=true,NoSuchGate=false",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unrecognized feature gate: NoSuchGate"),
        "{err}"
    );
}

/// `--enable-garbage-collector`, `--crd-establish-delay`, `--deployments-available-after` and
/// `--builtins` reach the builder.
#[tokio::test]
async fn binary_flags_set_the_builder_options() {
    let b = Binary::start(
        &[
            "--enable-garbage-collector=false",
            "--crd-establish-delay",
            "1500ms",
            "--deployments-available-after",
            "200ms",
        ],
        Some(&widget_crd()),
    )
    .await;
    let c = &b.client;
    // The CRD waits out its delay before it is served.
    let crd = get(
        c,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com",
    )
    .await
    .body;
    let established = crd["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Established")
        .cloned()
        .unwrap();
    assert_eq!(
        (&established["status"], &established["reason"]),
        (&json!("False"), &json!("Installing")),
        "{crd}"
    );
    eventually("the widget CRD served after its delay", || async {
        (get(c, WIDGETS).await.code == 200).then_some(())
    })
    .await;
    // Without a collector, a foreground DELETE adds no finalizer: the object goes at once.
    let cms: Api<ConfigMap> = Api::default_namespaced(c.clone());
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "owner"}})).unwrap();
    cms.create(&PostParams::default(), &cm).await.unwrap();
    // (With one, the answer would be the object, kept with `foregroundDeletion`.)
    let r = cms
        .delete("owner", &DeleteParams::foreground())
        .await
        .unwrap();
    assert!(r.is_right(), "deleted at once: {r:?}");
    assert!(cms.get_opt("owner").await.unwrap().is_none());
    // Deployments become available.
    let deps: Api<Deployment> = Api::default_namespaced(c.clone());
    let d: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}
    }))
    .unwrap();
    deps.create(&PostParams::default(), &d).await.unwrap();
    eventually("2 replicas available", || async {
        let d = deps.get("web").await.unwrap();
        (d.status.and_then(|s| s.available_replicas) == Some(2)).then_some(())
    })
    .await;
    drop(b);

    let bare = Binary::start(&["--builtins=false"], None).await;
    assert_eq!(
        get(&bare.client, "/api/v1/namespaces/default").await.code,
        404
    );
    assert_eq!(
        get(
            &bare.client,
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
        )
        .await
        .code,
        200
    );
}

#[tokio::test]
async fn metadata_api_replace_and_delete_collection() {
    let (_s, c) = with_widgets().await;
    let api = widgets(&c);
    for n in ["a", "b"] {
        create_widget(&api, n).await;
    }
    let meta = api.get_metadata("a").await.unwrap();
    assert_eq!(meta.metadata.name.as_deref(), Some("a"));
    let metas = api.list_metadata(&ListParams::default()).await.unwrap();
    assert_eq!(metas.items.len(), 2);
    let mut mw = api
        .watch_metadata(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    assert!(matches!(
        next_event(&mut mw).await,
        Some(WatchEvent::Added(_))
    ));
    assert!(api.get_opt("zzz").await.unwrap().is_none());

    let mut cur = api.get("a").await.unwrap();
    cur.data["spec"]["color"] = json!("black");
    let replaced = api
        .replace("a", &PostParams::default(), &cur)
        .await
        .unwrap();
    assert_eq!(replaced.data["spec"]["color"], "black");
    // Replacing with the now stale object is a 409.
    match api
        .replace("a", &PostParams::default(), &cur)
        .await
        .unwrap_err()
    {
        kube::Error::Api(st) => assert_eq!((st.code, st.reason.as_str()), (409, "Conflict")),
        other => panic!("{other}"),
    }
    let gone = api
        .delete_collection(
            &DeleteParams::default(),
            &ListParams::default().labels("app=w"),
        )
        .await
        .unwrap();
    assert_eq!(gone.left().unwrap().items.len(), 2);
    assert!(
        api.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}
