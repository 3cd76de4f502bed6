//! The deployment manifests (`artifacts/deploy/`) applied to kube-fake-apiserver with RBAC
//! enforced, and the built `sample-controller` run as their ServiceAccount (a token from the
//! TokenRequest API, as the kubelet mounts it): it reconciles a Foo with exactly the derived
//! permissions of `rbac.yaml` (which must be `--print-rbac`'s output), and with any one derived
//! rule removed fails with kube-apiserver's 403 naming that permission, in its log.

// The kind is called Foo, so `foo` is the natural name, not a placeholder.
#![allow(clippy::disallowed_names)]

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::api::{Api, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube_fake_apiserver::FakeApiServer;
use serde_json::{Value, json};

/// How long any single wait may take (generous: the machine may be busy building).
const DEADLINE: Duration = Duration::from_secs(40);
const SA: &str = "system:serviceaccount:sample-controller:sample-controller";

fn manifests(file: &str) -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("artifacts/deploy")
        .join(file);
    let text = std::fs::read_to_string(&path).expect("manifest reads");
    text.split("\n---\n")
        .map(|doc| serde_saphyr::from_str::<Value>(doc).expect("manifest parses"))
        .collect()
}

/// The container's arguments in deployment.yaml.
fn deployment_args() -> Vec<String> {
    let d = &manifests("deployment.yaml")[0];
    d["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .expect("args")
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn rbac_yaml_is_what_the_controller_derives() {
    let out = Command::new(env!("CARGO_BIN_EXE_sample-controller"))
        .args(deployment_args())
        .args(["--print-rbac", "sample-controller/sample-controller"])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list: Value = serde_json::from_slice(&out.stdout).expect("a JSON List");
    assert_eq!(json!(manifests("rbac.yaml")), list["items"]);
}

#[test]
fn deployment_probes_and_metrics_service_use_the_flags_ports() {
    let args = deployment_args();
    assert!(args.contains(&"--metrics-bind-address=:8080".to_string()));
    assert!(args.contains(&"--health-probe-bind-address=:8081".to_string()));
    let d = &manifests("deployment.yaml")[0];
    let spec = &d["spec"]["template"]["spec"];
    assert_eq!(spec["serviceAccountName"], "sample-controller");
    let c = &spec["containers"][0];
    assert_eq!(
        c["livenessProbe"]["httpGet"],
        json!({"path": "/healthz", "port": "probes"})
    );
    assert_eq!(
        c["readinessProbe"]["httpGet"],
        json!({"path": "/readyz", "port": "probes"})
    );
    assert_eq!(
        c["ports"],
        json!([{"name": "metrics", "containerPort": 8080}, {"name": "probes", "containerPort": 8081}])
    );
    let svc = &manifests("metrics-service.yaml")[0];
    assert_eq!(svc["spec"]["ports"][0]["targetPort"], "metrics");
    assert_eq!(
        svc["spec"]["selector"],
        d["spec"]["selector"]["matchLabels"]
    );
}

/// The running binary and its log (stderr), read live.
struct Program {
    child: Child,
    log: Arc<parking_lot::Mutex<String>>,
}

impl Drop for Program {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Program {
    fn spawn(kubeconfig: &Path, args: &[String]) -> Program {
        let mut child = Command::new(env!("CARGO_BIN_EXE_sample-controller"))
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(["--backoff-initial-ms", "20", "--backoff-max-ms", "200"])
            .args(args)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn sample-controller");
        let log = Arc::new(parking_lot::Mutex::new(String::new()));
        let mut pipe = child.stderr.take().expect("piped stderr");
        let sink = log.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n @ 1..) = pipe.read(&mut buf) {
                sink.lock().push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Program { child, log }
    }

    fn log(&self) -> String {
        self.log.lock().clone()
    }
}

/// Polls `check` every 20 ms until it returns `Some`; panics naming `what` with the log.
async fn eventually<T, F, Fut>(what: &str, program: &Program, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + DEADLINE;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {DEADLINE:?} waiting for {what}\nlog:\n{}",
            program.log()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Creates `obj` as the admin (its kind's plural from the kind, as kubectl's mapper guesses).
async fn apply(client: &kube::Client, obj: &Value) {
    let (group, version) = match obj["apiVersion"].as_str().unwrap().split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", obj["apiVersion"].as_str().unwrap()),
    };
    let gvk = GroupVersionKind::gvk(group, version, obj["kind"].as_str().unwrap());
    let ar = ApiResource::from_gvk(&gvk);
    let api: Api<DynamicObject> = match obj["metadata"]["namespace"].as_str() {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
        None => Api::all_with(client.clone(), &ar),
    };
    let o: DynamicObject = serde_json::from_value(obj.clone()).unwrap();
    api.create(&PostParams::default(), &o)
        .await
        .unwrap_or_else(|e| panic!("creating {obj}: {e}"));
}

/// A free port on 127.0.0.1 for the controller's endpoints.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `GET path` on 127.0.0.1:port: (status, body); `None` while nothing listens.
fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    let code = out.split_whitespace().nth(1)?.parse().ok()?;
    Some((code, out.split_once("\r\n\r\n")?.1.to_string()))
}

/// A server with RBAC on, the CRD and every manifest applied (`rbac` in place of rbac.yaml's
/// objects), a kubeconfig holding the ServiceAccount's token, and the controller started with
/// deployment.yaml's arguments on free ports. Returns the server, the program and its ports.
async fn deploy(rbac: Vec<Value>, dir: &Path) -> (FakeApiServer, Program, u16, u16) {
    let server = FakeApiServer::builder()
        .rbac(true)
        .require_namespaces(true)
        .deployments_become_available(Some(Duration::from_millis(50)))
        .start()
        .await
        .expect("server starts");
    let crd: Value =
        serde_saphyr::from_str(include_str!("../artifacts/crd.yaml")).expect("CRD parses");
    server.register_crd(crd).expect("CRD registers");
    let admin = server.client();
    for file in ["namespace.yaml", "serviceaccount.yaml"] {
        for o in manifests(file) {
            apply(&admin, &o).await;
        }
    }
    for o in rbac
        .iter()
        .chain(&manifests("metrics-service.yaml"))
        .chain(&manifests("deployment.yaml"))
    {
        apply(&admin, o).await;
    }
    let sas: Api<DynamicObject> = Api::namespaced_with(
        admin.clone(),
        "sample-controller",
        &ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", "ServiceAccount")),
    );
    let body =
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}});
    let tr: Value = sas
        .create_subresource("token", "sample-controller", &PostParams::default(), &body)
        .await
        .expect("TokenRequest");
    let token = tr["status"]["token"].as_str().expect("a token");
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {}\n\
             contexts:\n- name: c\n  context:\n    cluster: c\n    user: sa\n\
             current-context: c\nusers:\n- name: sa\n  user:\n    token: {token}\n",
            server.url()
        ),
    )
    .unwrap();
    let (metrics, probes) = (free_port(), free_port());
    let args: Vec<String> = deployment_args()
        .into_iter()
        .map(|a| match a.split_once('=') {
            Some(("--metrics-bind-address", _)) => {
                format!("--metrics-bind-address=127.0.0.1:{metrics}")
            }
            Some(("--health-probe-bind-address", _)) => {
                format!("--health-probe-bind-address=127.0.0.1:{probes}")
            }
            _ => a,
        })
        .collect();
    let program = Program::spawn(&kubeconfig, &args);
    (server, program, metrics, probes)
}

async fn create_foo(server: &FakeApiServer) {
    let foo: Value = serde_saphyr::from_str(include_str!("../artifacts/example-foo.yaml")).unwrap();
    let mut foo = foo;
    foo["metadata"]["namespace"] = json!("default");
    apply(&server.client(), &foo).await;
}

/// `controller_runtime_reconcile_<what>{controller="sample-controller"...}` summed.
fn metric(body: &str, name: &str) -> f64 {
    body.lines()
        .filter(|l| l.starts_with(name) && l.contains("controller=\"sample-controller\""))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[tokio::test]
async fn runs_as_its_service_account_with_the_derived_permissions() {
    let dir = tempfile::tempdir().unwrap();
    let (server, program, metrics, probes) = deploy(manifests("rbac.yaml"), dir.path()).await;
    eventually(
        "/readyz to answer 200 once the caches synced",
        &program,
        || async {
            (tokio::task::spawn_blocking(move || http_get(probes, "/readyz"))
                .await
                .ok()??
                .0
                == 200)
                .then_some(())
        },
    )
    .await;
    create_foo(&server).await;
    let foos: Api<DynamicObject> = Api::namespaced_with(
        server.client(),
        "default",
        &ApiResource::from_gvk(&GroupVersionKind::gvk(
            "samplecontroller.k8s.io",
            "v1alpha1",
            "Foo",
        )),
    );
    eventually(
        "the Foo's status to report 1 available replica",
        &program,
        || async {
            let f = foos.get("example-foo").await.ok()?;
            (f.data["status"]["availableReplicas"] == 1).then_some(())
        },
    )
    .await;
    let body = tokio::task::spawn_blocking(move || http_get(metrics, "/metrics"))
        .await
        .unwrap()
        .expect("metrics served")
        .1;
    assert!(
        metric(&body, "controller_runtime_reconcile_total") >= 1.0,
        "{body}"
    );
    // The only errors allowed are the 409s of a cache that does not show the controller's own
    // last write yet, mended by the retry as upstream's controller mends them: a status update
    // racing its previous one (`Conflict`), or a reconcile that does not see the Deployment it
    // just created (`AlreadyExists`; seen once in a CI-like run).
    let log = program.log();
    let failed: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("reconcile failed"))
        .collect();
    assert!(
        failed
            .iter()
            .all(|l| l.contains("Conflict") || l.contains("AlreadyExists")),
        "a reconcile failed for another reason than a stale cache's 409:\n{log}"
    );
    assert!(!log.contains("forbidden"), "{log}");
}

/// Each derived rule removed in turn: the 403 the controller meets names that permission.
#[tokio::test]
async fn any_rule_removed_fails_with_the_403_naming_it() {
    let full = manifests("rbac.yaml");
    let rules = full[0]["rules"].as_array().unwrap().clone();
    for (i, rule) in rules.iter().enumerate() {
        let group = rule["apiGroups"][0].as_str().unwrap();
        let resource = rule["resources"][0].as_str().unwrap();
        // What the controller does first with the kind.
        let (verb, scope) = match resource {
            "foos" | "deployments" => ("list", "at the cluster scope".to_string()),
            "foos/status" => ("update", "in the namespace \"default\"".to_string()),
            _ => ("create", "in the namespace \"default\"".to_string()),
        };
        let expected = format!(
            "User \"{SA}\" cannot {verb} resource \"{resource}\" in API group \"{group}\" {scope}"
        );
        let mut rbac = full.clone();
        rbac[0]["rules"].as_array_mut().unwrap().remove(i);
        let dir = tempfile::tempdir().unwrap();
        let (server, program, metrics, _) = deploy(rbac, dir.path()).await;
        create_foo(&server).await;
        eventually(
            &format!("the log to show the 403: {expected}"),
            &program,
            || async { program.log().contains(&expected).then_some(()) },
        )
        .await;
        if resource == "foos/status" {
            let body = eventually("a reconcile error in /metrics", &program, || async {
                let (_, body) = tokio::task::spawn_blocking(move || http_get(metrics, "/metrics"))
                    .await
                    .ok()??;
                (metric(&body, "controller_runtime_reconcile_errors_total") >= 1.0).then_some(body)
            })
            .await;
            assert!(body.contains("controller_runtime_reconcile_errors_total"));
            // The whole message, with the object's name, as kube-apiserver words it.
            let log = program.log();
            assert!(
                log.lines()
                    .any(|l| l.contains("foos.samplecontroller.k8s.io")
                        && l.contains("example-foo")
                        && l.contains("is forbidden")),
                "{log}"
            );
        }
        drop(program);
        server.shutdown().await;
    }
}
