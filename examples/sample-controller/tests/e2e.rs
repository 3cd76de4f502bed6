//! The built `sample-controller` binary against kube-fake-apiserver, driven only through the
//! API as a user would: Foos in, Deployments, Foo status and events out.
//!
//! - `reconciles_foos_end_to_end`: create -> Deployment with owner reference and labels;
//!   replicas change -> Deployment updated; Deployment status -> Foo status; an unowned
//!   Deployment -> Warning `ErrResourceExists` and no takeover; an invalid Foo -> one Warning;
//!   a deleted Foo -> nothing more happens for it; SIGTERM -> drained, exit 0.
//! - `converges_through_dropped_watches_5xx_429_410_and_restarts`: the same while the server
//!   keeps ending watches, fails requests, forgets its history and drops every connection.
//! - `with_leader_election_exactly_one_replica_acts`: two replicas, one Lease.
//! - startup errors exit 1 with a message and no panic.
//!
//! The test's own reads go to paths the injected faults never match (namespaced gets, the
//! all-namespaces event list), so every injected failure is the controller's. Every wait has a
//! deadline and says what it waited for, with the program's log.

// The kind is called Foo, so `foo` is the natural name, not a placeholder.
#![allow(clippy::disallowed_names)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use kube::Api;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube_fake_apiserver::{FakeApiServer, RecordedRequest};
use sample_controller::Clientset;
use sample_controller::samplecontroller::v1alpha1::{Foo, FooSpec};
use serde_json::{Value, json};

/// How long any single wait may take (generous: the machine may be busy building).
const DEADLINE: Duration = Duration::from_secs(40);

const FOOS_ALL: &str = "/apis/samplecontroller.k8s.io/v1alpha1/foos";
const DEPLOYMENTS_ALL: &str = "/apis/apps/v1/deployments";

/// The running binary and its log (stderr), read live.
struct Program {
    child: Child,
    log: Arc<parking_lot::Mutex<String>>,
}

impl Drop for Program {
    fn drop(&mut self) {
        // Only matters when a test failed midway: don't leave the child running.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Program {
    fn spawn(kubeconfig: &Path, extra: &[&str]) -> Program {
        let mut child = Command::new(env!("CARGO_BIN_EXE_sample-controller"))
            .arg("--kubeconfig")
            .arg(kubeconfig)
            // Fast informer retries, so a phase converges soon after a fault ends.
            .args(["--backoff-initial-ms", "20", "--backoff-max-ms", "200"])
            .args(extra)
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

    fn signal(&self, signal: libc::c_int) {
        let pid = libc::pid_t::try_from(self.child.id()).expect("pid fits pid_t");
        // SAFETY: kill(2) on our own child's pid, which has not been reaped yet.
        assert_eq!(unsafe { libc::kill(pid, signal) }, 0, "kill({pid})");
    }

    /// Sends `signal` and waits for the exit.
    async fn stop(&mut self, signal: libc::c_int) -> ExitStatus {
        self.signal(signal);
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("wait for the child") {
                return status;
            }
            assert!(
                started.elapsed() < DEADLINE,
                "the program did not exit within {DEADLINE:?} of the signal; log:\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// The last part of each log, for failure messages.
fn logs(programs: &[&Program]) -> String {
    programs
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let log = p.log();
            let tail: String = log
                .chars()
                .rev()
                .take(6000)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            format!("--- program {i} log (tail) ---\n{tail}")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Polls `check` every 20 ms until it returns `Some`; panics naming `what` (with the
/// programs' logs) after [`DEADLINE`].
async fn eventually<T, F, Fut>(what: &str, programs: &[&Program], mut check: F) -> T
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
            "timed out after {DEADLINE:?} waiting for {what}\n{}",
            logs(programs)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A server serving the Foo CRD, a kubeconfig for it, and an in-process client for the
/// test's own requests (not cut by a simulated restart).
struct Env {
    server: FakeApiServer,
    client: kube::Client,
    _dir: tempfile::TempDir,
    kubeconfig: PathBuf,
}

impl Env {
    async fn start() -> Env {
        let server = FakeApiServer::start().await.expect("server starts");
        let crd: Value =
            serde_saphyr::from_str(include_str!("../artifacts/crd.yaml")).expect("CRD parses");
        server.register_crd(crd).expect("CRD registers");
        let dir = tempfile::tempdir().expect("tempdir");
        let kubeconfig = dir.path().join("kubeconfig");
        server.write_kubeconfig(&kubeconfig).expect("kubeconfig");
        Env {
            client: server.in_process_client(),
            server,
            _dir: dir,
            kubeconfig,
        }
    }

    fn foos(&self, ns: &str) -> kube_codegen_runtime::ResourceClient<Foo> {
        Clientset::new(self.client.clone())
            .samplecontroller_v1alpha1()
            .foos(ns)
    }

    fn deployments(&self, ns: &str) -> Api<Deployment> {
        Api::namespaced(self.client.clone(), ns)
    }

    async fn create_foo(
        &self,
        ns: &str,
        name: &str,
        deployment: Option<&str>,
        replicas: i32,
    ) -> Foo {
        let foo = Foo {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            spec: Some(FooSpec {
                deployment_name: deployment.map(Into::into),
                replicas: Some(replicas),
            }),
            ..Foo::default()
        };
        self.foos(ns)
            .create(&PostParams::default(), &foo)
            .await
            .unwrap_or_else(|e| panic!("create foo {ns}/{name}: {e}"))
    }

    async fn foo(&self, ns: &str, name: &str) -> Option<Foo> {
        self.foos(ns).get_opt(name).await.ok().flatten()
    }

    async fn deployment(&self, ns: &str, name: &str) -> Option<Deployment> {
        self.deployments(ns).get_opt(name).await.ok().flatten()
    }

    async fn set_available(&self, ns: &str, deployment: &str, available: i32) {
        self.deployments(ns)
            .patch_status(
                deployment,
                &PatchParams::default(),
                // As kube-controller-manager writes it (kube-apiserver refuses more available
                // than ready, or ready than replicas).
                &Patch::Merge(json!({"status": {"availableReplicas": available,
                    "readyReplicas": available, "replicas": available}})),
            )
            .await
            .unwrap_or_else(|e| panic!("patch status of deployment {ns}/{deployment}: {e}"));
    }

    /// Events about the Foo `ns/name`, through the all-namespaces list.
    async fn events_about(&self, ns: &str, name: &str) -> Vec<Event> {
        let Ok(list) = Api::<Event>::all(self.client.clone())
            .list(&ListParams::default())
            .await
        else {
            return Vec::new();
        };
        list.items
            .into_iter()
            .filter(|e| {
                e.regarding.as_ref().is_some_and(|r| {
                    r.kind.as_deref() == Some("Foo")
                        && r.namespace.as_deref() == Some(ns)
                        && r.name.as_deref() == Some(name)
                })
            })
            .collect()
    }

    fn requests(&self) -> Vec<RecordedRequest> {
        self.server.requests()
    }
}

fn available_of(foo: &Foo) -> Option<i32> {
    foo.status.as_ref().and_then(|s| s.available_replicas)
}

fn replicas_of(d: &Deployment) -> Option<i32> {
    d.spec.as_ref().and_then(|s| s.replicas)
}

fn reason(e: &Event) -> &str {
    e.reason.as_deref().unwrap_or_default()
}

/// Total occurrences of an event (1, or its series count).
fn occurrences(e: &Event) -> i32 {
    e.series.as_ref().map_or(1, |s| s.count)
}

/// The scenario's first steps in `ns`: create, replicas, status, conflict, invalid.
async fn reconcile_steps(env: &Env, program: &Program, ns: &str) {
    let progs = [program];
    let (a, a_dep) = ("a", "a-web");

    // 1. A new Foo gets its Deployment, owned by it, and a status.
    let foo_a = env.create_foo(ns, a, Some(a_dep), 1).await;
    let uid = foo_a.metadata.uid.clone().expect("the server sets a uid");
    let dep = eventually(&format!("deployment {ns}/{a_dep}"), &progs, || async move {
        env.deployment(ns, a_dep).await
    })
    .await;
    assert_eq!(
        dep.metadata.owner_references,
        Some(vec![OwnerReference {
            api_version: "samplecontroller.k8s.io/v1alpha1".into(),
            kind: "Foo".into(),
            name: a.into(),
            uid,
            controller: Some(true),
            block_owner_deletion: Some(true),
        }])
    );
    let labels = [("app", "nginx"), ("controller", a)]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    assert_eq!(dep.metadata.labels, Some(labels));
    assert_eq!(replicas_of(&dep), Some(1));
    let pod = dep
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .expect("pod spec");
    assert_eq!(pod.containers[0].image.as_deref(), Some("nginx:latest"));
    eventually(
        &format!("{ns}/{a} status.availableReplicas 0"),
        &progs,
        || async move { env.foo(ns, a).await.filter(|f| available_of(f) == Some(0)) },
    )
    .await;
    eventually(
        &format!("a Synced event about {ns}/{a}"),
        &progs,
        || async move {
            let events = env.events_about(ns, a).await;
            events.into_iter().find(|e| {
                reason(e) == "Synced"
                    && e.type_.as_deref() == Some("Normal")
                    && e.note.as_deref() == Some("Foo synced successfully")
                    && e.reporting_controller.as_deref() == Some("sample-controller")
            })
        },
    )
    .await;

    // 2. Replicas follow the Foo.
    env.foos(ns)
        .patch(
            a,
            &PatchParams::default(),
            &kube_codegen_runtime::Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await
        .expect("patch foo replicas");
    eventually(
        &format!("{ns}/{a_dep} scaled to 3"),
        &progs,
        || async move {
            env.deployment(ns, a_dep)
                .await
                .filter(|d| replicas_of(d) == Some(3))
        },
    )
    .await;

    // 3. The Foo's status follows the Deployment's.
    env.set_available(ns, a_dep, 2).await;
    eventually(
        &format!("{ns}/{a} status.availableReplicas 2"),
        &progs,
        || async move { env.foo(ns, a).await.filter(|f| available_of(f) == Some(2)) },
    )
    .await;

    // 4. A Deployment someone else made is reported and left alone, retried with backoff.
    let (b, b_dep) = ("b", "b-web");
    let theirs = env
        .deployments(ns)
        .create(&PostParams::default(), &unowned_deployment(b_dep))
        .await
        .expect("create the unowned deployment");
    env.create_foo(ns, b, Some(b_dep), 1).await;
    let note = format!("Resource \"{b_dep}\" already exists and is not managed by Foo");
    let note = note.as_str();
    let warning = eventually(
        &format!("a repeated ErrResourceExists warning about {ns}/{b}"),
        &progs,
        || async move {
            let events = env.events_about(ns, b).await;
            events.into_iter().find(|e| {
                reason(e) == "ErrResourceExists"
                    && e.type_.as_deref() == Some("Warning")
                    && e.note.as_deref() == Some(note)
                    && occurrences(e) >= 2
            })
        },
    )
    .await;
    assert_eq!(warning.action.as_deref(), Some("Sync"));
    let now = env
        .deployment(ns, b_dep)
        .await
        .expect("the unowned deployment");
    // Its generation, not its resourceVersion: the server's deployment stand-in writes
    // `status.observedGeneration`, as the real deployment controller does.
    assert_eq!(
        now.metadata.generation, theirs.metadata.generation,
        "the unowned deployment's spec was written to"
    );
    assert_eq!(now.metadata.owner_references, None);
    assert_eq!(replicas_of(&now), Some(2));
    let foo_b = env.foo(ns, b).await.expect("foo b");
    assert_eq!(
        foo_b.status, None,
        "no status for a Foo whose Deployment is not its own"
    );
    assert!(
        env.events_about(ns, b)
            .await
            .iter()
            .all(|e| reason(e) != "Synced"),
        "an unowned deployment is never Synced"
    );

    // 5. A Foo without a deployment name is reported, once.
    let c = "c";
    env.create_foo(ns, c, None, 1).await;
    eventually(
        &format!("an InvalidSpec warning about {ns}/{c}"),
        &progs,
        || async move {
            let events = env.events_about(ns, c).await;
            events.into_iter().find(|e| reason(e) == "InvalidSpec")
        },
    )
    .await;
}

/// Someone else's Deployment: no owner, 2 replicas.
fn unowned_deployment(name: &str) -> Deployment {
    let labels: std::collections::BTreeMap<String, String> =
        [("app".to_owned(), "theirs".to_owned())].into();
    Deployment {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(labels.clone()),
            ..ObjectMeta::default()
        },
        spec: Some(DeploymentSpec {
            replicas: Some(2),
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                match_expressions: None,
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "theirs".into(),
                        image: Some("busybox".into()),
                        ..Container::default()
                    }],
                    ..PodSpec::default()
                }),
            },
            ..DeploymentSpec::default()
        }),
        status: None,
    }
}

/// Deletes Foo `a` and checks that nothing more happens for it, even when its Deployment
/// changes; a marker Foo `m` shows that the controller has seen everything after the delete.
/// Also checks that the invalid Foo `c` was reported exactly once.
async fn delete_steps(env: &Env, program: &Program, ns: &str) {
    let progs = [program];
    let (a, a_dep, m, m_dep, c) = ("a", "a-web", "m", "m-web", "c");
    env.create_foo(ns, m, Some(m_dep), 1).await;
    eventually(&format!("deployment {ns}/{m_dep}"), &progs, || async move {
        env.deployment(ns, m_dep).await
    })
    .await;

    // Orphan: the server's garbage collector would otherwise delete a's Deployment, and the
    // point below is that changes to it no longer reach a deleted Foo.
    env.foos(ns)
        .delete(a, &DeleteParams::orphan())
        .await
        .expect("delete foo a");
    // The delete reaches the controller's cache: its sync of the key finds nothing to do. A
    // key is never synced twice at once, so every earlier sync of it has finished by then.
    let gone = format!("{ns}/{a}");
    let gone = gone.as_str();
    eventually(
        &format!("the controller to see {gone} deleted"),
        &progs,
        || async move {
            program
                .log()
                .lines()
                .any(|l| l.contains("foo no longer exists") && l.contains(gone))
                .then_some(())
        },
    )
    .await;
    let mark = env.requests().len();
    let before = env.events_about(ns, a).await;
    let dep_before = env.deployment(ns, a_dep).await.expect("a's deployment");
    // Its Deployment changes (orphaned, so it stays); then the marker's, which
    // the same watch delivers later: once the marker's Foo follows, the first was handled.
    env.set_available(ns, a_dep, 3).await;
    env.set_available(ns, m_dep, 1).await;
    eventually(
        &format!("{ns}/{m} status.availableReplicas 1"),
        &progs,
        || async move { env.foo(ns, m).await.filter(|f| available_of(f) == Some(1)) },
    )
    .await;

    let after = env.events_about(ns, a).await;
    let summary = |events: &[Event]| {
        let mut s: Vec<(String, i32)> = events
            .iter()
            .map(|e| (e.metadata.name.clone().unwrap_or_default(), occurrences(e)))
            .collect();
        s.sort();
        s
    };
    assert_eq!(
        summary(&after),
        summary(&before),
        "events about {gone} after its delete"
    );
    // The controller's writes for it would be: its status, an update of its Deployment, or
    // a create of it (the test's own write after the mark is the PATCH of .../status).
    let status_path = format!("/foos/{a}/status");
    let deployment_path = format!("/deployments/{a_dep}");
    let create_body = format!("\"name\":\"{a_dep}\"");
    let requests = env.requests();
    let writes: Vec<&RecordedRequest> = requests[mark..]
        .iter()
        .filter(|r| {
            r.path.contains(&status_path)
                || (r.method == "PUT" && r.path.ends_with(&deployment_path))
                || (r.method == "POST"
                    && r.path.ends_with("/deployments")
                    && r.body.contains(&create_body))
        })
        .collect();
    assert!(
        writes.is_empty(),
        "writes for {gone} after its delete: {writes:#?}"
    );
    let dep_after = env.deployment(ns, a_dep).await.expect("a's deployment");
    assert_eq!(dep_after.spec, dep_before.spec);

    let invalid: Vec<Event> = env
        .events_about(ns, c)
        .await
        .into_iter()
        .filter(|e| reason(e) == "InvalidSpec")
        .collect();
    assert_eq!(invalid.len(), 1, "{invalid:#?}");
    assert_eq!(occurrences(&invalid[0]), 1, "reported once: {invalid:#?}");
    assert_eq!(invalid[0].type_.as_deref(), Some("Warning"));
}

fn assert_clean_exit(status: ExitStatus, program: &Program) {
    let log = program.log();
    assert!(status.success(), "exit status {status:?}; log:\n{log}");
    assert!(!log.contains("panicked"), "log:\n{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconciles_foos_end_to_end() {
    let started = Instant::now();
    let env = Env::start().await;
    let mut program = Program::spawn(&env.kubeconfig, &["--resync-period", "0s"]);
    reconcile_steps(&env, &program, "default").await;
    let reconciled = started.elapsed();
    delete_steps(&env, &program, "default").await;

    let status = program.stop(libc::SIGTERM).await;
    assert_clean_exit(status, &program);
    let log = program.log();
    for line in ["draining the work queue", "workers stopped"] {
        assert!(log.contains(line), "no {line:?} in the log:\n{log}");
    }
    eprintln!(
        "reconciled in {reconciled:?}, total {:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn converges_through_dropped_watches_5xx_429_410_and_restarts() {
    let started = Instant::now();
    let env = Env::start().await;
    let ns = "chaos";
    let mut program = Program::spawn(&env.kubeconfig, &["--resync-period", "0s"]);
    // Let it start cleanly (its probe and first lists), then break things.
    let p = &program;
    eventually("the workers to start", &[p], || async move {
        p.log().contains("starting workers").then_some(())
    })
    .await;

    let faults = env.server.faults();
    // One-shot failures on paths only the controller uses: its status writes and its events.
    let status_path =
        format!("/apis/samplecontroller.k8s.io/v1alpha1/namespaces/{ns}/foos/a/status");
    let events_path = format!("/apis/events.k8s.io/v1/namespaces/{ns}/");
    let mark = env.requests().len();
    faults.fail_next_matching(2, 500, &status_path);
    faults.fail_next_matching(1, 429, &status_path);
    faults.fail_next_matching(2, 500, &events_path);
    faults.fail_next_matching(1, 503, &events_path);
    // And all along: watches end, lists and watches fail, the server forgets its history
    // (410 on the next watch) and restarts (every connection dropped).
    let chaos = Arc::new(AtomicBool::new(true));
    let chaos_task = tokio::spawn({
        let (faults, chaos) = (faults.clone(), chaos.clone());
        async move {
            let mut round = 0u32;
            while chaos.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(150)).await;
                round += 1;
                faults.drop_watches();
                if round.is_multiple_of(3) {
                    faults.fail_next_matching(1, 500, FOOS_ALL);
                }
                // A 429 carries `Retry-After: 1`, which kube's client honours: more than one a
                // second or so would keep the list failing for good.
                if round.is_multiple_of(16) {
                    faults.fail_next_matching(1, 429, DEPLOYMENTS_ALL);
                }
                if round.is_multiple_of(7) {
                    faults.restart(true);
                }
            }
        }
    });

    reconcile_steps(&env, &program, ns).await;
    chaos.store(false, Ordering::SeqCst);
    chaos_task.await.expect("chaos task");
    faults.clear_failures();
    let reconciled = started.elapsed();

    // The faults were met by the controller: every one-shot failure was consumed, watches were
    // re-established many times, and it listed again after a 410.
    let requests = env.requests();
    let since = &requests[mark..];
    let count = |prefix: &str| since.iter().filter(|r| r.path.starts_with(prefix)).count();
    assert!(
        count(&status_path) >= 4,
        "status writes: {}",
        count(&status_path)
    );
    assert!(
        count(&events_path) >= 4,
        "event writes: {}",
        count(&events_path)
    );
    let verbs = |path: &str, verb: &str| {
        since
            .iter()
            .filter(|r| r.path == path && r.verb == verb)
            .count()
    };
    assert!(
        verbs(FOOS_ALL, "watch") >= 5,
        "foo watches: {}",
        verbs(FOOS_ALL, "watch")
    );
    // A relist is a LIST, or a watch-list (the informers' default: a watch asking for the
    // initial events).
    let relists = |path: &str| {
        since
            .iter()
            .filter(|r| {
                r.path == path
                    && (r.verb == "list"
                        || (r.verb == "watch" && r.query.contains("sendInitialEvents=true")))
            })
            .count()
    };
    // The first read of each is before `mark`, so any here is a relist.
    assert!(relists(FOOS_ALL) >= 1, "no foo relist");
    assert!(relists(DEPLOYMENTS_ALL) >= 1, "no deployment relist");

    // In calm again: deletes, and the invalid Foo was still reported only once despite the
    // relists re-delivering it.
    delete_steps(&env, &program, ns).await;
    let status = program.stop(libc::SIGINT).await;
    assert_clean_exit(status, &program);
    eprintln!(
        "converged under faults in {reconciled:?}, total {:?}",
        started.elapsed()
    );
}

/// The Lease's holder, if any.
async fn holder(env: &Env) -> Option<String> {
    let lease = Api::<Lease>::namespaced(env.client.clone(), "default")
        .get_opt("sample-controller")
        .await
        .ok()
        .flatten()?;
    lease
        .spec
        .and_then(|s| s.holder_identity)
        .filter(|h| !h.is_empty())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_leader_election_exactly_one_replica_acts() {
    let env = &Env::start().await;
    let flags = [
        "--leader-elect",
        "--leader-elect-lease-duration",
        "3s",
        "--leader-elect-renew-deadline",
        "2s",
        "--leader-elect-retry-period",
        "500ms",
    ];
    let first = Program::spawn(&env.kubeconfig, &flags);
    let second = Program::spawn(&env.kubeconfig, &flags);
    let both = [&first, &second];
    let leader = eventually("a lease holder", &both, || async move { holder(env).await }).await;
    // Each replica logs its own identity at startup (`identity=...`; the standby also names
    // the leader, as `holder=...`), read from its pipe a little later than it was written.
    let (f, own) = (&first, format!("identity={leader}"));
    let own = own.as_str();
    let first_leads = eventually("the leader's identity in its log", &both, || async move {
        let second_has = both[1].log().contains(own);
        (f.log().contains(own) || second_has).then(|| f.log().contains(own))
    })
    .await;
    let (mut leader_p, mut standby) = if first_leads {
        (first, second)
    } else {
        (second, first)
    };
    let s = &standby;
    let standby_id = eventually("the standby's identity in its log", &[s], || async move {
        let log = s.log();
        let at = log.find("identity=")? + "identity=".len();
        // Only a whole word: the line may still be arriving.
        let len = log[at..].find(char::is_whitespace)?;
        (len > 0).then(|| log[at..at + len].to_owned())
    })
    .await;
    assert_ne!(leader, standby_id);

    env.create_foo("default", "x", Some("x-web"), 1).await;
    let progs = [&leader_p, &standby];
    eventually("deployment x-web", &progs, || async move {
        env.deployment("default", "x-web").await
    })
    .await;
    let synced = eventually("a Synced event about x", &progs, || async move {
        let events = env.events_about("default", "x").await;
        events.into_iter().find(|e| reason(e) == "Synced")
    })
    .await;
    assert_eq!(synced.reporting_instance.as_deref(), Some(leader.as_str()));
    // Only the leader runs informers: one watch per kind, both the leader's.
    let watches = |path: &str| {
        env.requests()
            .iter()
            .filter(|r| r.path == path && r.verb == "watch")
            .count()
    };
    assert_eq!(watches(FOOS_ALL), 1, "foo watches while one replica leads");
    assert_eq!(watches(DEPLOYMENTS_ALL), 1);
    let standby_log = standby.log();
    assert!(
        !standby_log.contains("started leading") && !standby_log.contains("starting informers"),
        "the standby acted:\n{standby_log}"
    );
    // Every event so far is the leader's.
    for e in env.events_about("default", "x").await {
        assert_eq!(e.reporting_instance.as_ref(), Some(&leader), "{e:#?}");
    }

    // The leader stops: it releases the Lease and the standby takes over at once.
    let released_at = Instant::now();
    let status = leader_p.stop(libc::SIGTERM).await;
    assert_clean_exit(status, &leader_p);
    let progs = [&standby];
    let id = standby_id.as_str();
    eventually("the standby to hold the lease", &progs, || async move {
        (holder(env).await.as_deref() == Some(id)).then_some(())
    })
    .await;
    let takeover = released_at.elapsed();
    env.create_foo("default", "y", Some("y-web"), 2).await;
    let dep = eventually("deployment y-web", &progs, || async move {
        env.deployment("default", "y-web").await
    })
    .await;
    assert_eq!(replicas_of(&dep), Some(2));
    let synced = eventually("a Synced event about y", &progs, || async move {
        let events = env.events_about("default", "y").await;
        events.into_iter().find(|e| reason(e) == "Synced")
    })
    .await;
    assert_eq!(
        synced.reporting_instance.as_deref(),
        Some(standby_id.as_str())
    );
    // y was made after the first replica stopped: every event about it is the new leader's.
    for e in env.events_about("default", "y").await {
        assert_eq!(e.reporting_instance.as_ref(), Some(&standby_id), "{e:#?}");
    }

    let status = standby.stop(libc::SIGINT).await;
    assert_clean_exit(status, &standby);
    assert_eq!(holder(env).await, None, "the lease is released on shutdown");
    eprintln!("takeover after release in {takeover:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_that_cannot_renew_stops_acting_and_exits_1() {
    let env = &Env::start().await;
    let mut program = Program::spawn(
        &env.kubeconfig,
        &[
            "--leader-elect",
            "--leader-elect-lease-duration",
            "3s",
            "--leader-elect-renew-deadline",
            "2s",
            "--leader-elect-retry-period",
            "500ms",
        ],
    );
    let p = &program;
    eventually("the workers to start", &[p], || async move {
        p.log().contains("starting workers").then_some(())
    })
    .await;
    // Every Lease request fails from now on: within the renew deadline it must stop.
    let lost_at = Instant::now();
    env.server.faults().fail_next_matching(
        1_000_000,
        500,
        "/apis/coordination.k8s.io/v1/namespaces/default/leases",
    );
    let status = loop {
        if let Some(status) = program.child.try_wait().expect("wait for the child") {
            break status;
        }
        assert!(
            lost_at.elapsed() < DEADLINE,
            "still running {DEADLINE:?} after its Lease became unwritable; log:\n{}",
            program.log()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let log = program.log();
    assert_eq!(status.code(), Some(1), "log:\n{log}");
    assert!(
        log.contains("leadership lost; stopping workers"),
        "log:\n{log}"
    );
    assert!(log.contains("leader election lost"), "log:\n{log}");
    assert!(!log.contains("panicked"), "log:\n{log}");
    eprintln!(
        "stopped {:?} after the lease became unwritable",
        lost_at.elapsed()
    );
}

/// Runs the binary to completion with `args`; returns (status, stderr).
async fn run_to_exit(args: &[&str]) -> (ExitStatus, String) {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_sample-controller"));
    cmd.args(args)
        .stdin(Stdio::null())
        .env("RUST_LOG", "info")
        .kill_on_drop(true);
    let out = tokio::time::timeout(DEADLINE, cmd.output())
        .await
        .expect("the program exits in time")
        .expect("run sample-controller");
    (
        out.status,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn assert_failed(status: ExitStatus, stderr: &str, mentions: &str) {
    assert_eq!(status.code(), Some(1), "stderr:\n{stderr}");
    assert!(
        stderr.contains(mentions),
        "stderr should mention {mentions:?}:\n{stderr}"
    );
    assert!(!stderr.contains("panicked"), "stderr:\n{stderr}");
}

#[tokio::test]
async fn a_missing_kubeconfig_exits_1() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("absent");
    let path = path.to_str().expect("utf-8 temp path");
    let (status, stderr) = run_to_exit(&["--kubeconfig", path]).await;
    assert_failed(status, &stderr, path);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_the_crd_exits_1() {
    let server = FakeApiServer::start().await.expect("server starts");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("kubeconfig");
    server.write_kubeconfig(&path).expect("kubeconfig");
    let (status, stderr) = run_to_exit(&["--kubeconfig", path.to_str().expect("utf-8")]).await;
    assert_failed(status, &stderr, "foos.samplecontroller.k8s.io");
}

#[tokio::test]
async fn an_unreachable_server_exits_1() {
    // A port nothing listens on: bound, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("kubeconfig");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: c\n\
             clusters: [{{name: s, cluster: {{server: 'http://127.0.0.1:{port}'}}}}]\n\
             users: [{{name: u, user: {{}}}}]\n\
             contexts: [{{name: c, context: {{cluster: s, user: u}}}}]\n"
        ),
    )
    .expect("write");
    let (status, stderr) = run_to_exit(&["--kubeconfig", path.to_str().expect("utf-8")]).await;
    assert_failed(status, &stderr, &format!("127.0.0.1:{port}"));
}

#[tokio::test]
async fn bad_flags_exit_2() {
    for args in [
        &["--workers", "0"][..],
        &["--leader-elect-lease-duration", "15"],
        &["--no-such-flag"],
    ] {
        let (status, stderr) = run_to_exit(args).await;
        assert_eq!(status.code(), Some(2), "{args:?}: {stderr}");
    }
}
