//! The built `crontab-events` binary against kube-fake-apiserver: churn interleaved with a
//! dropped watch, a forced 410, and a server restart with writes made while the program cannot
//! reach the server; then SIGTERM, and `FINAL` must equal the server's objects exactly.
//!
//! The test reads the program's stdout live and rebuilds the cache from the event lines
//! (add/update put `key -> resourceVersion`, delete removes), checking as it goes that no
//! object is added twice, updated or deleted unseen, or goes back in resourceVersion. Each phase
//! waits until that rebuilt state equals the server's. Every wait has a deadline and says what
//! it waited for.

use std::collections::BTreeMap;
use std::future::Future;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crontab_events::Clientset;
use crontab_events::stable::v1::{CronTab, CronTabSpec, CronTabStatus};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::{DeleteParams, ListParams, PostParams};
use kube_codegen_runtime::Patch;
use kube_fake_apiserver::{FakeApiServer, RecordedRequest};
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// How long any single wait may take (generous: the machine may be busy building).
const DEADLINE: Duration = Duration::from_secs(30);

/// The path the program lists and watches (all namespaces); the test writes through
/// namespaced paths, so faults injected on this prefix hit only the program.
const PROGRAM_PATH: &str = "/apis/stable.example.com/v1/crontabs";

/// `fut`, or a panic naming `what` once [`DEADLINE`] has passed.
async fn within<T>(what: &str, fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(DEADLINE, fut)
        .await
        .unwrap_or_else(|_| panic!("timed out after {DEADLINE:?} waiting for {what}"))
}

/// A server serving the example's CRD.
async fn start_server() -> FakeApiServer {
    let server = FakeApiServer::start().await.expect("server starts");
    let crd: Value =
        serde_saphyr::from_str(include_str!("../crd/crontab.yaml")).expect("CRD parses");
    server.register_crd(crd).expect("CRD registers");
    server
}

fn crontab(name: &str, replicas: i64) -> CronTab {
    CronTab {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        spec: Some(CronTabSpec {
            cron_spec: Some("*/5 * * * *".into()),
            image: Some("my-cron-image".into()),
            replicas: Some(replicas),
        }),
        ..CronTab::default()
    }
}

/// Writes through the generated clientset. It talks to the server in process, so a simulated
/// restart (which drops sockets) never breaks the test's own requests.
struct Writer(Clientset);

impl Writer {
    async fn create(&self, ns: &str, name: &str) -> String {
        let created = self
            .0
            .stable_v1()
            .crontabs(ns)
            .create(&PostParams::default(), &crontab(name, 1))
            .await
            .unwrap_or_else(|e| panic!("create {ns}/{name}: {e}"));
        rv_of(&created.metadata)
    }

    async fn set_replicas(&self, ns: &str, name: &str, replicas: i64) -> String {
        let patched = self
            .0
            .stable_v1()
            .crontabs(ns)
            .patch(
                name,
                &Default::default(),
                &Patch::Merge(json!({"spec": {"replicas": replicas}})),
            )
            .await
            .unwrap_or_else(|e| panic!("patch {ns}/{name}: {e}"));
        rv_of(&patched.metadata)
    }

    async fn set_status(&self, ns: &str, name: &str, active: i64) -> String {
        let client = self.0.stable_v1().crontabs(ns);
        let mut current = client
            .get(name)
            .await
            .unwrap_or_else(|e| panic!("get {ns}/{name}: {e}"));
        current.status = Some(CronTabStatus {
            active: Some(active),
            last_schedule_time: Some("2025-01-01T00:00:00Z".into()),
        });
        let updated = client
            .update_status(&PostParams::default(), &current)
            .await
            .unwrap_or_else(|e| panic!("update_status {ns}/{name}: {e}"));
        rv_of(&updated.metadata)
    }

    async fn delete(&self, ns: &str, name: &str) {
        self.0
            .stable_v1()
            .crontabs(ns)
            .delete(name, &DeleteParams::default())
            .await
            .unwrap_or_else(|e| panic!("delete {ns}/{name}: {e}"));
    }
}

fn rv_of(meta: &ObjectMeta) -> String {
    meta.resource_version
        .clone()
        .expect("the server sets resourceVersion")
}

/// `ns/name -> resourceVersion` of every CronTab on the server, through `kube::Api`.
async fn server_state(client: &kube::Client) -> BTreeMap<String, String> {
    let list = Api::<CronTab>::all(client.clone())
        .list(&ListParams::default())
        .await
        .expect("list crontabs");
    list.items
        .iter()
        .map(|c| {
            let ns = c.metadata.namespace.clone().unwrap_or_default();
            let name = c.metadata.name.clone().unwrap_or_default();
            (format!("{ns}/{name}"), rv_of(&c.metadata))
        })
        .collect()
}

fn rv_number(rv: &str) -> u64 {
    rv.parse()
        .unwrap_or_else(|_| panic!("resourceVersion {rv:?} is not a number"))
}

/// The program's list and watch requests so far.
fn program_requests(server: &FakeApiServer) -> Vec<RecordedRequest> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.path == PROGRAM_PATH)
        .collect()
}

/// The `resourceVersion` query parameter of a recorded request.
fn query_rv(r: &RecordedRequest) -> Option<u64> {
    r.query
        .split('&')
        .find_map(|kv| kv.strip_prefix("resourceVersion="))
        .and_then(|v| v.parse().ok())
}

/// Waits until the program has made more than `before` list/watch requests of `verb`.
async fn wait_for_program_request(server: &FakeApiServer, verb: &str, before: usize, what: &str) {
    within(what, async {
        while program_requests(server)
            .iter()
            .filter(|r| r.verb == verb)
            .count()
            <= before
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}

/// The program's full reads so far: LISTs, and watch-lists (watches asking for the initial
/// events, the informer's default way to list).
fn count_full_reads(server: &FakeApiServer) -> usize {
    program_requests(server)
        .iter()
        .filter(|r| {
            r.verb == "list" || (r.verb == "watch" && r.query.contains("sendInitialEvents=true"))
        })
        .count()
}

fn count_verb(server: &FakeApiServer, verb: &str) -> usize {
    program_requests(server)
        .iter()
        .filter(|r| r.verb == verb)
        .count()
}

/// One event line.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Event {
    kind: String,
    key: String,
    rv: String,
}

/// The running binary, its stdout read live, and the cache rebuilt from its event lines.
struct Program {
    child: Child,
    lines: mpsc::UnboundedReceiver<String>,
    stderr: Arc<Mutex<String>>,
    /// `key -> resourceVersion` as the event lines tell it.
    seen: BTreeMap<String, String>,
    /// Every event line, in order.
    events: Vec<Event>,
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
        let mut child = Command::new(env!("CARGO_BIN_EXE_crontab-events"))
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn crontab-events");
        let (tx, lines) = mpsc::unbounded_channel();
        let stdout = child.stdout.take().expect("piped stdout");
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut pipe = child.stderr.take().expect("piped stderr");
        let sink = stderr.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = pipe.read(&mut buf) {
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Program {
            child,
            lines,
            stderr,
            seen: BTreeMap::new(),
            events: Vec::new(),
        }
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// The next stdout line (`None` at EOF); panics naming `what` after the deadline.
    async fn next_line(&mut self, what: &str) -> Option<String> {
        match tokio::time::timeout(DEADLINE, self.lines.recv()).await {
            Ok(line) => line,
            Err(_) => panic!(
                "timed out after {DEADLINE:?} waiting for {what}\nrebuilt cache: {:?}\nstderr:\n{}",
                self.seen,
                self.stderr()
            ),
        }
    }

    /// Parses an event line (exactly the documented fields) and applies it to `seen`,
    /// checking the informer's promise: nothing doubled, nothing missed, never backwards.
    fn apply_event(&mut self, line: &str) {
        let v: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("not an event line ({e}): {line:?}"));
        let fields = v
            .as_object()
            .unwrap_or_else(|| panic!("not an object: {line}"));
        let mut names: Vec<&str> = fields.keys().map(String::as_str).collect();
        names.sort_unstable();
        assert_eq!(names, ["event", "key", "resourceVersion"], "{line}");
        let text = |f: &str| {
            fields[f]
                .as_str()
                .unwrap_or_else(|| panic!("{f} is not a string: {line}"))
                .to_owned()
        };
        let e = Event {
            kind: text("event"),
            key: text("key"),
            rv: text("resourceVersion"),
        };
        let (ns, name) = e
            .key
            .split_once('/')
            .unwrap_or_else(|| panic!("key is not ns/name: {line}"));
        assert!(!ns.is_empty() && !name.is_empty(), "{line}");
        let rv = rv_number(&e.rv);
        match (e.kind.as_str(), self.seen.get(&e.key)) {
            ("add", None) => {}
            ("add", Some(_)) => panic!("added twice: {line}"),
            ("update" | "delete", None) => panic!("{} of an object never added: {line}", e.kind),
            ("update" | "delete", Some(old)) => {
                assert!(rv >= rv_number(old), "went back from {old}: {line}")
            }
            (other, _) => panic!("unknown event {other:?}: {line}"),
        }
        if e.kind == "delete" {
            self.seen.remove(&e.key);
        } else {
            self.seen.insert(e.key.clone(), e.rv.clone());
        }
        self.events.push(e);
    }

    /// Reads the event lines before `SYNCED <n>`, and returns n.
    async fn read_until_synced(&mut self) -> usize {
        loop {
            let line = self.next_line("SYNCED").await.unwrap_or_else(|| {
                panic!("stdout ended before SYNCED; stderr:\n{}", self.stderr())
            });
            if let Some(n) = line.strip_prefix("SYNCED ") {
                return n.parse().unwrap_or_else(|_| panic!("bad line {line:?}"));
            }
            self.apply_event(&line);
        }
    }

    /// Reads event lines until the rebuilt cache equals `want`.
    async fn converge(&mut self, want: &BTreeMap<String, String>, what: &str) {
        while &self.seen != want {
            let line = self
                .next_line(&format!(
                    "{what}: the events to reach the server's {want:?}"
                ))
                .await
                .unwrap_or_else(|| {
                    panic!("stdout ended during {what}; stderr:\n{}", self.stderr())
                });
            self.apply_event(&line);
        }
    }

    /// Sends `signal`; returns the `FINAL` rows and the exit status.
    async fn stop(mut self, signal: libc::c_int) -> (BTreeMap<String, String>, ExitStatus) {
        let pid = libc::pid_t::try_from(self.child.id()).expect("pid fits pid_t");
        // SAFETY: kill(2) on our own child's pid, which has not been reaped yet.
        assert_eq!(unsafe { libc::kill(pid, signal) }, 0, "kill({pid})");
        loop {
            let line = self
                .next_line("FINAL")
                .await
                .unwrap_or_else(|| panic!("stdout ended before FINAL; stderr:\n{}", self.stderr()));
            if line == "FINAL" {
                break;
            }
            self.apply_event(&line);
        }
        let mut rows = BTreeMap::new();
        let mut last_key = String::new();
        while let Some(line) = self.next_line("the end of stdout after FINAL").await {
            let (key, rv) = line
                .split_once(' ')
                .unwrap_or_else(|| panic!("FINAL row is not `key resourceVersion`: {line:?}"));
            assert!(
                key > last_key.as_str(),
                "FINAL rows not sorted by key: {line:?}"
            );
            last_key = key.to_owned();
            rows.insert(key.to_owned(), rv.to_owned());
        }
        let status = within("the program to exit", async {
            loop {
                if let Some(status) = self.child.try_wait().expect("wait for the child") {
                    return status;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await;
        let stderr = self.stderr();
        assert!(!stderr.contains("panicked"), "stderr:\n{stderr}");
        (rows, status)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn final_equals_the_server_after_drops_410s_and_a_restart() {
    let started = Instant::now();
    let server = start_server().await;
    let client = server.in_process_client();
    let w = Writer(Clientset::new(client.clone()));
    for (ns, name) in [
        ("team-a", "a"),
        ("team-a", "b"),
        ("team-a", "c"),
        ("team-b", "x"),
        ("team-b", "y"),
    ] {
        w.create(ns, name).await;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    // Fast backoff so that a phase converges in well under a second after the fault ends.
    let mut program = Program::spawn(
        &kubeconfig,
        &["--backoff-initial-ms", "20", "--backoff-max-ms", "200"],
    );

    // The initial list arrives as handler calls (adds) before SYNCED, none lost.
    let n = program.read_until_synced().await;
    let want = server_state(&client).await;
    assert_eq!(n, 5);
    assert_eq!(program.seen, want, "initial adds before SYNCED");
    assert!(program.events.iter().all(|e| e.kind == "add"));

    // Phase 1: churn, then the server ends the watch; the program watches again from where it
    // was, and sees what happened since.
    w.create("team-a", "d").await;
    w.set_replicas("team-b", "x", 3).await;
    w.set_status("team-a", "a", 2).await;
    program
        .converge(&server_state(&client).await, "churn before the watch drop")
        .await;
    let watches = count_verb(&server, "watch");
    let b_rv = program.seen["team-a/b"].clone();
    server.faults().drop_watches();
    wait_for_program_request(&server, "watch", watches, "a new watch after the drop").await;
    w.delete("team-a", "b").await;
    w.create("team-b", "z").await;
    w.set_replicas("team-a", "c", 5).await;
    program
        .converge(&server_state(&client).await, "churn after the watch drop")
        .await;
    // A delete seen on the watch carries the server's deletion resourceVersion.
    let deleted_b = program
        .events
        .iter()
        .rfind(|e| e.key == "team-a/b")
        .expect("an event for team-a/b");
    assert_eq!(deleted_b.kind, "delete");
    assert!(rv_number(&deleted_b.rv) > rv_number(&b_rv), "{deleted_b:?}");
    let phase1 = started.elapsed();

    // Phase 2: a forced 410. A write the CronTab watch does not see moves the server past the
    // program's resourceVersion; compaction then makes that version too old, so the program's
    // next watch gets 410 Expired and it lists again.
    let cm = Api::<ConfigMap>::namespaced(client.clone(), "default")
        .create(
            &PostParams::default(),
            &ConfigMap {
                metadata: ObjectMeta {
                    name: Some("bump".into()),
                    ..ObjectMeta::default()
                },
                ..ConfigMap::default()
            },
        )
        .await
        .expect("create configmap");
    let floor = rv_number(&rv_of(&cm.metadata));
    let (lists, watches) = (count_full_reads(&server), count_verb(&server, "watch"));
    server.faults().compact();
    server.faults().drop_watches();
    within("a relist after the 410", async {
        while count_full_reads(&server) <= lists {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    let expired: Vec<RecordedRequest> = program_requests(&server)
        .into_iter()
        .filter(|r| r.verb == "watch")
        .skip(watches)
        .collect();
    assert!(
        expired
            .iter()
            .any(|r| query_rv(r).is_some_and(|rv| rv < floor)),
        "no watch from before the compaction at {floor}: {expired:?}"
    );
    w.set_replicas("team-a", "a", 7).await;
    w.delete("team-b", "x").await;
    w.create("team-a", "e").await;
    program
        .converge(&server_state(&client).await, "churn after the 410")
        .await;
    let phase2 = started.elapsed();

    // Phase 3: the server restarts (connections and watches dropped, history lost) and the
    // program cannot reach it for a while; meanwhile objects are deleted, updated and created.
    // Deletes it could not watch come from the relist as tombstones carrying the cached
    // resourceVersion.
    let faults = server.faults();
    faults.fail_next_matching(1_000_000, 500, PROGRAM_PATH);
    let requests = program_requests(&server).len();
    faults.restart(true);
    within("the program to try the server after the restart", async {
        while program_requests(&server).len() <= requests {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    let (c_rv, d_rv) = (
        program.seen["team-a/c"].clone(),
        program.seen["team-a/d"].clone(),
    );
    w.delete("team-a", "c").await;
    w.set_replicas("team-a", "d", 9).await;
    w.delete("team-a", "d").await;
    w.set_status("team-b", "z", 1).await;
    w.create("team-b", "w").await;
    w.create("team-a", "ghost").await;
    w.delete("team-a", "ghost").await;
    // Still cut off: nothing of this reached the program.
    tokio::time::sleep(Duration::from_millis(300)).await;
    if let Ok(line) = program.lines.try_recv() {
        panic!("output while cut off from the server: {line}");
    }
    faults.clear_failures();
    program
        .converge(&server_state(&client).await, "churn while disconnected")
        .await;
    for (key, cached_rv) in [("team-a/c", c_rv), ("team-a/d", d_rv)] {
        let last = program.events.iter().rfind(|e| e.key == key).expect(key);
        assert_eq!(
            (last.kind.as_str(), last.rv.as_str()),
            ("delete", cached_rv.as_str()),
            "tombstone of {key}"
        );
    }
    assert!(
        program.events.iter().all(|e| e.key != "team-a/ghost"),
        "an object created and deleted while disconnected was never cached"
    );
    let phase3 = started.elapsed();

    // SIGTERM: FINAL is the server's state exactly, and the exit is clean.
    let want = server_state(&client).await;
    assert_eq!(want.len(), 5, "{want:?}");
    let seen = program.seen.clone();
    let events = program.events.len();
    let (rows, status) = program.stop(libc::SIGTERM).await;
    assert_eq!(rows, want, "FINAL against the server");
    assert_eq!(rows, seen, "FINAL against the event lines");
    assert!(status.success(), "exit status {status:?}");
    eprintln!(
        "{events} event lines; phases done at {phase1:?}, {phase2:?}, {phase3:?}; total {:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_prints_final_and_exits_0() {
    let server = start_server().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    let mut program = Program::spawn(&kubeconfig, &[]);
    assert_eq!(program.read_until_synced().await, 0);
    // An object made after SYNCED is an add after it, and in FINAL.
    let rv = Writer(Clientset::new(server.in_process_client()))
        .create("default", "late")
        .await;
    let want = BTreeMap::from([("default/late".to_owned(), rv)]);
    program.converge(&want, "the add after SYNCED").await;
    let (rows, status) = program.stop(libc::SIGINT).await;
    assert_eq!(rows, want);
    assert!(status.success(), "exit status {status:?}");
}

/// Runs the binary to completion; returns (status, stdout, stderr).
async fn run_to_exit(args: &[&str]) -> (ExitStatus, String, String) {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_crontab-events"));
    cmd.args(args).stdin(Stdio::null()).kill_on_drop(true);
    let out = within("the program to exit", cmd.output())
        .await
        .expect("run crontab-events");
    (
        out.status,
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn assert_failed(status: ExitStatus, stdout: &str, stderr: &str, mentions: &str) {
    assert_eq!(status.code(), Some(1), "stderr:\n{stderr}");
    assert_eq!(stdout, "", "nothing on stdout");
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
    let (status, stdout, stderr) = run_to_exit(&["--kubeconfig", path]).await;
    assert_failed(status, &stdout, &stderr, path);
}

#[tokio::test]
async fn a_malformed_kubeconfig_exits_1() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("kubeconfig");
    std::fs::write(&path, "clusters: [ {{ not yaml").expect("write");
    let path = path.to_str().expect("utf-8 temp path");
    let (status, stdout, stderr) = run_to_exit(&["--kubeconfig", path]).await;
    assert_failed(status, &stdout, &stderr, path);
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
    let (status, stdout, stderr) =
        run_to_exit(&["--kubeconfig", path.to_str().expect("utf-8")]).await;
    assert_failed(status, &stdout, &stderr, &format!("127.0.0.1:{port}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_the_crd_exits_1() {
    let server = FakeApiServer::start().await.expect("server starts");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("kubeconfig");
    server.write_kubeconfig(&path).expect("kubeconfig");
    let (status, stdout, stderr) =
        run_to_exit(&["--kubeconfig", path.to_str().expect("utf-8")]).await;
    assert_failed(status, &stdout, &stderr, "crontabs.stable.example.com");
}
