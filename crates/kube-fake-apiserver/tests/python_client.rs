//! The official Kubernetes Python client (PyPI `kubernetes`, pinned in `tests/python/requirements.txt`)
//! at its defaults against the in-memory server: each test starts a server, writes its kubeconfig
//! and runs one script of `tests/python/`, which loads it with `config.load_kube_config(path)` and
//! asserts what kube-apiserver 1.35 answers. A script checks every step, prints each mismatch and
//! exits 1 when there was one.
//!
//! The client lives in a venv under the target directory that `scripts/python-client-venv.sh`
//! creates (`.ci/run` runs it first; a test runs it when the venv is missing). When it cannot be
//! installed (no python3, no network) a test prints a `SKIPPED` line and passes, except under
//! `CI=true`, where that fails the run.
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::Duration;

use kube_fake_apiserver::FakeApiServer;
use tokio::process::Command;

/// Bound for one script (each takes a few seconds; most of it is importing the client).
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(180);

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `<target>/python-client`: `CARGO_TARGET_TMPDIR` is `<target>/tmp`.
fn venv_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the target tmp dir has a parent")
        .join("python-client")
}

/// The venv's python, installing the venv once per test binary when it is missing or stale.
fn venv_python() -> &'static Result<PathBuf, String> {
    static PYTHON: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let venv = venv_dir();
        let script = crate_dir().join("../../scripts/python-client-venv.sh");
        let out = std::process::Command::new("bash")
            .arg(&script)
            .arg(&venv)
            .output()
            .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
        if !out.status.success() {
            return Err(format!(
                "{} failed ({}): {}",
                script.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(venv.join("bin/python"))
    })
}

/// The python to run, or `None` after a `SKIPPED` line on stderr (written straight to it: the
/// harness captures `eprintln!` of passing tests). Under `CI=true` a missing client fails.
fn python_or_skip(test: &str) -> Option<PathBuf> {
    match venv_python() {
        Ok(p) => Some(p.clone()),
        Err(why) => {
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                panic!("{test}: the Python client is not installed: {why}; CI=true requires it");
            }
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED {test}: the Python client is not installed: {why}"
            );
            None
        }
    }
}

/// Runs `tests/python/<script>` against `srv`; fails the test with the script's output unless
/// it exits 0.
async fn run_script(python: &Path, srv: &FakeApiServer, script: &str) {
    let dir = tempfile::tempdir().expect("temp dir");
    let kubeconfig = dir.path().join("kubeconfig");
    srv.write_kubeconfig(&kubeconfig)
        .expect("kubeconfig written");
    let scripts = crate_dir().join("tests/python");
    let child = Command::new(python)
        .arg(scripts.join(script))
        .arg(&kubeconfig)
        .env("HOME", dir.path())
        .env("PYTHONPATH", &scripts)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env_remove("KUBECONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("python starts");
    let out = tokio::time::timeout(SCRIPT_TIMEOUT, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("{script} did not finish within {SCRIPT_TIMEOUT:?}"))
        .expect("python ran");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{script} failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        out.status
    );
    // A script that ran no check proves nothing.
    assert!(
        stdout.contains("checks passed"),
        "{script} did not report its checks:\n{stdout}\n{stderr}"
    );
}

/// One test per script, each with its own server.
macro_rules! python_test {
    ($name:ident, $script:literal) => {
        python_test!($name, $script, FakeApiServer::builder());
    };
    ($name:ident, $script:literal, $builder:expr) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            let Some(python) = python_or_skip(stringify!($name)) else {
                return;
            };
            // A real server refuses objects in namespaces that do not exist.
            let srv = $builder
                .require_namespaces(true)
                .start()
                .await
                .expect("server starts");
            run_script(&python, &srv, $script).await;
        }
    };
}

python_test!(core_v1_objects, "core.py");
python_test!(apps_and_batch_workloads, "workloads.py");
python_test!(rbac_v1, "rbac.py");
// 20 events of history, so the script can watch from a compacted resource version.
python_test!(
    watch_stream,
    "watch.py",
    FakeApiServer::builder().history_limit(20)
);
python_test!(custom_resources, "crd.py");
python_test!(leases_and_leader_election, "leases.py");
python_test!(errors, "errors.py");
python_test!(table_apply_and_dry_run, "extras.py");
