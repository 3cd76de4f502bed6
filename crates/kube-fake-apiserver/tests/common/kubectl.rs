//! kubectl (a real client nobody here wrote) bound to one server: its kubeconfig, HOME and caches in a
//! temp dir. When kubectl is not installed a test prints a `SKIPPED` line and passes, except under
//! `CI=true`, where a missing kubectl fails the run.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use kube_fake_apiserver::FakeApiServer;
use tokio::process::Command;

/// Bound for one kubectl invocation (kubectl's own `--request-timeout` is shorter).
pub const CALL_TIMEOUT: Duration = Duration::from_secs(60);

pub fn find_kubectl() -> Option<PathBuf> {
    let fixed = PathBuf::from("/usr/bin/kubectl");
    if fixed.is_file() {
        return Some(fixed);
    }
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join("kubectl"))
        .find(|p| p.is_file())
}

/// The kubectl to run, or `None` after saying the test did not run: a `SKIPPED` line written
/// straight to stderr (the test harness captures `eprintln!` of passing tests, so a skip would
/// otherwise look like a pass). Under `CI=true` a missing kubectl fails the test instead.
pub fn kubectl_or_skip(test: &str) -> Option<PathBuf> {
    if let Some(bin) = find_kubectl() {
        return Some(bin);
    }
    let why = "kubectl is not installed (looked for /usr/bin/kubectl and on PATH)";
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{test}: {why}; CI=true requires it");
    }
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {why}");
    None
}

/// A kubectl bound to the server's kubeconfig, with its HOME and caches inside a temp dir.
pub struct Kubectl {
    pub bin: PathBuf,
    pub dir: tempfile::TempDir,
}

pub struct Out {
    pub ok: bool,
    pub stdout: String,
    pub stderr: String,
}

impl Kubectl {
    pub fn new(bin: PathBuf, srv: &FakeApiServer) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        srv.write_kubeconfig(&dir.path().join("kubeconfig"))
            .expect("kubeconfig written");
        Kubectl { bin, dir }
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(&self.bin);
        c.arg("--kubeconfig")
            .arg(self.dir.path().join("kubeconfig"))
            .arg("--cache-dir")
            .arg(self.dir.path().join("cache"))
            .arg("--request-timeout=20s")
            .args(args)
            .env("HOME", self.dir.path())
            .env_remove("KUBECONFIG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        c
    }

    pub async fn run(&self, args: &[&str], stdin: Option<&str>) -> Out {
        let mut child = self.command(args).spawn().expect("kubectl starts");
        let mut input = child.stdin.take();
        if let (Some(pipe), Some(text)) = (input.as_mut(), stdin) {
            use tokio::io::AsyncWriteExt;
            pipe.write_all(text.as_bytes())
                .await
                .expect("stdin written");
        }
        drop(input);
        let out = tokio::time::timeout(CALL_TIMEOUT, child.wait_with_output())
            .await
            .unwrap_or_else(|_| panic!("kubectl {args:?} did not finish within {CALL_TIMEOUT:?}"))
            .expect("kubectl ran");
        Out {
            ok: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Runs kubectl and returns stdout; fails the test with kubectl's stderr otherwise.
    pub async fn ok(&self, args: &[&str]) -> String {
        self.ok_stdin(args, None).await
    }

    pub async fn ok_stdin(&self, args: &[&str], stdin: Option<&str>) -> String {
        let out = self.run(args, stdin).await;
        assert!(
            out.ok,
            "kubectl {args:?} failed:\n{}\n{}",
            out.stderr, out.stdout
        );
        out.stdout
    }

    /// Runs kubectl, expects it to fail and returns its stderr.
    pub async fn fails(&self, args: &[&str], stdin: Option<&str>) -> String {
        let out = self.run(args, stdin).await;
        assert!(!out.ok, "kubectl {args:?} succeeded:\n{}", out.stdout);
        out.stderr
    }

    /// `kubectl apply -f -` of `manifest`; returns stdout.
    pub async fn apply(&self, manifest: &str) -> String {
        self.ok_stdin(&["apply", "-f", "-"], Some(manifest)).await
    }

    /// `kubectl create -f -` of `manifest`; returns stdout.
    pub async fn create(&self, manifest: &str) -> String {
        self.ok_stdin(&["create", "-f", "-"], Some(manifest)).await
    }

    /// Runs kubectl; fails the test unless it succeeds without a word on stderr (a warning
    /// there is how kubectl reports a patch it could not compute from the schemas).
    pub async fn clean(&self, args: &[&str], stdin: Option<&str>) -> String {
        let out = self.run(args, stdin).await;
        assert!(
            out.ok && out.stderr.trim().is_empty(),
            "kubectl {args:?}: ok={}\nstderr:\n{}\nstdout:\n{}",
            out.ok,
            out.stderr,
            out.stdout
        );
        out.stdout
    }
}
