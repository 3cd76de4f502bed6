//! The manager's metrics and probe endpoints on the in-memory API server: `/readyz` once the
//! caches synced (for a warm standby too, which does not lead), `/healthz`, a named check
//! added in code, `/metrics` in Prometheus's text format with the controller's and the
//! workqueue's series, read by kubectl's `get --raw` too; and both gone after `run` returns.
#![cfg(all(feature = "webhook", feature = "prometheus"))]

use crate::support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use kube_codegen_runtime::controller::{
    Action, Context, Controller, ControllerError, LeaderElection, Reconciler,
};
use kube_codegen_runtime::workqueue::PrometheusMetricsProvider;
use kube_codegen_runtime::{LeaderElectionConfig, LeaseLock, SharedInformerFactory};
use kube_fake_apiserver::FakeApiServer;
use support::{client, cm, eventually, fast_reflector, within};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

struct Done;

impl Reconciler<ConfigMap> for Done {
    type Error = String;
    async fn reconcile(&self, _: Arc<ConfigMap>, _: &Context) -> Result<Action, String> {
        Ok(Action::done())
    }
}

/// A port nothing listens on now.
async fn free_addr() -> SocketAddr {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    l.local_addr().unwrap()
}

/// `GET path` over HTTP/1.0: the status code and the body (`None` when nothing listens).
async fn get(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    let mut s = tokio::net::TcpStream::connect(addr).await.ok()?;
    s.write_all(format!("GET {path} HTTP/1.0\r\nHost: x\r\n\r\n").as_bytes())
        .await
        .ok()?;
    let mut raw = String::new();
    s.read_to_string(&mut raw).await.ok()?;
    let code = raw.split(' ').nth(1)?.parse().ok()?;
    let body = raw.split_once("\r\n\r\n")?.1.to_owned();
    Some((code, body))
}

fn factory(server: &FakeApiServer) -> SharedInformerFactory {
    SharedInformerFactory::builder(client(server))
        .namespace("default")
        .reflector(fast_reflector())
        .build()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_and_probes_are_served_while_running() {
    let server = FakeApiServer::start().await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client(&server), "default");
    cms.create(&PostParams::default(), &cm("one", "v"))
        .await
        .unwrap();
    let mut registry = prometheus_client::registry::Registry::default();
    let provider = Arc::new(PrometheusMetricsProvider::new(&mut registry));
    let (metrics, probes) = (free_addr().await, free_addr().await);
    let f = factory(&server);
    let controller = Controller::<ConfigMap>::for_kind(&f)
        .name("cms")
        .metrics(provider)
        .metrics_registry(Arc::new(registry))
        .metrics_bind_address(Some(metrics))
        .health_probe_bind_address(Some(probes))
        .add_healthz_check("disk", || Err("disk full".to_owned()));
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let run = tokio::spawn(controller.run(Done, async move {
        let _ = rx.await;
    }));

    eventually("ready", || async {
        get(probes, "/readyz").await == Some((200, "ok".into()))
    })
    .await;
    assert_eq!(
        get(probes, "/readyz?verbose").await.unwrap(),
        (200, "[+]caches ok\nreadyz check passed\n".into())
    );
    // The failing check added in code fails the aggregate, its reason shown only at its path.
    assert_eq!(
        get(probes, "/healthz").await.unwrap(),
        (
            500,
            "[-]disk failed: reason withheld\n[+]reflectors ok\nhealthz check failed\n".into()
        )
    );
    assert_eq!(
        get(probes, "/healthz/disk").await.unwrap(),
        (500, "internal server error: disk full\n".into())
    );
    assert_eq!(
        get(probes, "/healthz?exclude=disk").await.unwrap(),
        (200, "ok".into())
    );
    assert_eq!(get(probes, "/metrics").await.unwrap().0, 404);

    let want = "controller_runtime_reconcile_total{controller=\"cms\",result=\"success\"} 1";
    eventually("the reconcile counted", || async {
        get(metrics, "/metrics")
            .await
            .is_some_and(|(_, body)| body.contains(want))
    })
    .await;
    let (code, body) = get(metrics, "/metrics").await.unwrap();
    assert_eq!(code, 200);
    assert!(
        body.contains("# TYPE controller_runtime_reconcile_total counter\n"),
        "{body}"
    );
    assert!(
        body.contains("# TYPE workqueue_adds_total counter\n"),
        "{body}"
    );
    assert!(!body.contains("# EOF"), "classic text format: {body}");

    // kubectl reads it as it reads a server's /metrics.
    if std::path::Path::new("/usr/bin/kubectl").exists() {
        let out = tokio::process::Command::new("/usr/bin/kubectl")
            .args(["get", "--raw", "/metrics", "--kubeconfig", "/dev/null"])
            .args(["--server", &format!("http://{metrics}")])
            .output()
            .await
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.contains(want), "{text}");
    }

    tx.send(()).unwrap();
    within("run returns", run).await.unwrap().unwrap();
    assert!(
        get(probes, "/healthz").await.is_none(),
        "probes stop with run"
    );
    assert!(
        get(metrics, "/metrics").await.is_none(),
        "metrics stop with run"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_standby_is_ready_once_synced_and_a_taken_port_fails_run() {
    let server = FakeApiServer::start().await.unwrap();
    let election = |id: &str| {
        let lock = LeaseLock {
            namespace: "default".into(),
            name: "endpoints".into(),
            identity: id.into(),
        };
        let config = LeaderElectionConfig {
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_millis(100),
            release_on_cancel: true,
        };
        LeaderElection::new(lock, config)
    };
    let (pa, pb) = (free_addr().await, free_addr().await);
    let start = |id: &'static str, probes: SocketAddr| {
        let c = Controller::<ConfigMap>::for_kind(&factory(&server))
            .leader_election(election(id))
            .health_probe_bind_address(Some(probes));
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let run = tokio::spawn(c.run(Done, async move {
            let _ = rx.await;
        }));
        (tx, run)
    };
    let (stop_a, run_a) = start("a", pa);
    eventually("a ready", || async {
        get(pa, "/readyz").await == Some((200, "ok".into()))
    })
    .await;
    let (stop_b, run_b) = start("b", pb);
    eventually("b, standing by warm, ready", || async {
        get(pb, "/readyz").await == Some((200, "ok".into()))
    })
    .await;

    // A third on a's probe port cannot serve: run fails at once, naming the address.
    let taken = Controller::<ConfigMap>::for_kind(&factory(&server))
        .health_probe_bind_address(Some(pa))
        .run(Done, std::future::pending());
    let err = within("a taken port fails run", taken).await.unwrap_err();
    assert!(
        matches!(&err, ControllerError::Endpoint(m) if m.contains(&pa.to_string())),
        "{err}"
    );

    stop_a.send(()).unwrap();
    stop_b.send(()).unwrap();
    within("a stops", run_a).await.unwrap().unwrap();
    within("b stops", run_b).await.unwrap().unwrap();
}
