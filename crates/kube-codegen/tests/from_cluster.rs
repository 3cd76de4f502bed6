//! `gen --from-cluster NAME... | --all-crds`: CRDs read from an API server (kube-fake-apiserver on
//! 127.0.0.1) generate the same files as the same CRDs read from disk.
#![cfg(feature = "cli")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use kube_codegen::{Builder, ClusterSource};
use kube_fake_apiserver::FakeApiServer;
use predicates::prelude::*;

const FOO: &str = "foos.samplecontroller.k8s.io";
const TENANT: &str = "tenants.cluster.example.com";

fn foo_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/foo.yaml")
}

fn tenant_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/crds/cluster-scoped.yaml")
}

/// The first YAML document of a file (the CRD) as JSON.
fn crd_json(path: &Path) -> serde_json::Value {
    let docs = kube_codegen_crd::read::read_documents(path).unwrap();
    docs.into_iter().next().unwrap().value
}

/// A server serving the two CRDs and a kubeconfig for it in `dir`.
async fn server_with_crds(dir: &Path) -> (FakeApiServer, PathBuf) {
    let server = FakeApiServer::start().await.unwrap();
    server.register_crd(crd_json(&foo_file())).unwrap();
    server.register_crd(crd_json(&tenant_file())).unwrap();
    let kubeconfig = dir.join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).unwrap();
    (server, kubeconfig)
}

fn gen_cmd() -> Command {
    let mut c = Command::cargo_bin("kube-codegen").unwrap();
    c.arg("gen");
    c
}

/// Every file under `dir`, by relative path.
fn tree(dir: &Path) -> BTreeMap<PathBuf, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let text = std::fs::read_to_string(&p).unwrap();
                out.insert(p.strip_prefix(root).unwrap().to_path_buf(), text);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// What `gen <file>` writes.
fn from_file(file: &Path, out: &Path) -> BTreeMap<PathBuf, String> {
    gen_cmd().arg(file).arg("-o").arg(out).assert().success();
    tree(out)
}

// Multi-threaded: the server's tasks keep running while the test blocks on the binary.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn named_crd_generates_the_same_files_as_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let (_server, kubeconfig) = server_with_crds(tmp.path()).await;
    let out = tmp.path().join("cluster");
    gen_cmd()
        .args(["--from-cluster", FOO, "--kubeconfig"])
        .arg(&kubeconfig)
        .arg("-o")
        .arg(&out)
        .assert()
        .success()
        // The file has a ConfigMap document too; the cluster input is the CRD alone.
        .stderr(predicate::str::contains("warning").not());
    let cluster = tree(&out);
    let file = from_file(&foo_file(), &tmp.path().join("file"));
    let kind = Path::new("samplecontroller/v1alpha1/foo.rs");
    assert!(cluster.contains_key(kind), "{:?}", cluster.keys());
    assert_eq!(cluster[kind], file[kind]);
    assert_eq!(
        cluster, file,
        "the whole tree matches, not just the kind file"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_crds_generates_every_crd_and_mixes_with_files() {
    let tmp = tempfile::tempdir().unwrap();
    let (_server, kubeconfig) = server_with_crds(tmp.path()).await;
    let out = tmp.path().join("all");
    gen_cmd()
        .args(["--all-crds", "--kubeconfig"])
        .arg(&kubeconfig)
        .arg("-o")
        .arg(&out)
        .assert()
        .success()
        .stderr(predicate::str::contains("2 resource version(s)"));
    let all = tree(&out);
    let foo = from_file(&foo_file(), &tmp.path().join("foo"));
    let tenant = from_file(&tenant_file(), &tmp.path().join("tenant"));
    for (files, kind) in [
        (&foo, "samplecontroller/v1alpha1/foo.rs"),
        (&tenant, "cluster/v1/tenant.rs"),
    ] {
        let kind = Path::new(kind);
        assert!(all.contains_key(kind), "{kind:?} in {:?}", all.keys());
        assert_eq!(all[kind], files[kind], "{kind:?}");
    }

    // A file input plus one CRD from the cluster: both are generated, as from two files.
    let mixed = tmp.path().join("mixed");
    gen_cmd()
        .arg(foo_file())
        .args(["--from-cluster", TENANT, "--kubeconfig"])
        .arg(&kubeconfig)
        .arg("-o")
        .arg(&mixed)
        .assert()
        .success();
    let both = tmp.path().join("both");
    gen_cmd()
        .arg(foo_file())
        .arg(tenant_file())
        .arg("-o")
        .arg(&both)
        .assert()
        .success();
    assert_eq!(tree(&mixed), tree(&both));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn builder_names_the_source_cluster_crd_name() {
    let tmp = tempfile::tempdir().unwrap();
    let (_server, kubeconfig) = server_with_crds(tmp.path()).await;
    // Called from inside a Tokio runtime: the library must not try to nest runtimes.
    let g = Builder::new()
        .from_cluster(&ClusterSource::named([TENANT, TENANT]).kubeconfig(&kubeconfig))
        .unwrap()
        .render()
        .unwrap();
    let sources: Vec<_> = g.resources.iter().map(|r| r.source.clone()).collect();
    assert_eq!(sources, [PathBuf::from(format!("cluster:{TENANT}"))]);
    assert_eq!(g.resources[0].kind, "Tenant");
    assert!(!g.resources[0].namespaced);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_crd_fails_naming_it_and_the_server() {
    let tmp = tempfile::tempdir().unwrap();
    let (server, kubeconfig) = server_with_crds(tmp.path()).await;
    let out = tmp.path().join("out");
    gen_cmd()
        .args([
            "--from-cluster",
            FOO,
            "bars.example.com",
            "bazs.example.com",
            "--kubeconfig",
        ])
        .arg(&kubeconfig)
        .arg("-o")
        .arg(&out)
        .assert()
        .code(1)
        .stderr(
            predicate::str::contains("CustomResourceDefinition not found")
                .and(predicate::str::contains(server.url()))
                .and(predicate::str::contains("context kube-fake-apiserver"))
                // Both missing names, each with the server's own message.
                .and(predicate::str::contains(
                    "\"bars.example.com\" (customresourcedefinitions.apiextensions.k8s.io \"bars.example.com\" not found)",
                ))
                .and(predicate::str::contains("\"bazs.example.com\""))
                .and(predicate::str::contains(FOO).not())
                .and(predicate::str::contains("panicked").not()),
        );
    assert!(!out.exists(), "nothing is written on error");
}

#[test]
fn unreachable_server_fails_with_a_clear_message() {
    let tmp = tempfile::tempdir().unwrap();
    // A port that was free a moment ago and has nothing listening now.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let kubeconfig = tmp.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        kubeconfig_for(&format!("http://127.0.0.1:{port}")),
    )
    .unwrap();
    gen_cmd()
        .args(["--all-crds", "--kubeconfig"])
        .arg(&kubeconfig)
        .arg("-o")
        .arg(tmp.path().join("out"))
        .assert()
        .code(1)
        .stderr(
            predicate::str::starts_with("error: listing CRDs: cannot reach the API server at ")
                .and(predicate::str::contains(format!(
                    "http://127.0.0.1:{port}/"
                )))
                .and(predicate::str::contains("(context c)"))
                .and(predicate::str::contains("onnection refused"))
                .and(predicate::str::contains("panicked").not()),
        );
}

#[test]
fn bad_kubeconfig_and_context_fail_with_clear_messages() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("no-such-kubeconfig");
    gen_cmd()
        .args(["--from-cluster", FOO, "--kubeconfig"])
        .arg(&missing)
        .arg("-o")
        .arg(tmp.path().join("out"))
        .assert()
        .code(1)
        .stderr(predicate::str::starts_with(format!(
            "error: cannot read kubeconfig {}: No such file or directory",
            missing.display()
        )));

    let kubeconfig = tmp.path().join("kubeconfig");
    std::fs::write(&kubeconfig, kubeconfig_for("http://127.0.0.1:1")).unwrap();
    gen_cmd()
        .args(["--all-crds", "--context", "nope", "--kubeconfig"])
        .arg(&kubeconfig)
        .arg("-o")
        .arg(tmp.path().join("out"))
        .assert()
        .code(1)
        .stderr(
            predicate::str::starts_with(format!("error: kubeconfig {}: ", kubeconfig.display()))
                .and(predicate::str::contains("nope")),
        );
}

/// A kubeconfig with one context `c` for `url`.
fn kubeconfig_for(url: &str) -> String {
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: {url}
contexts:
- name: c
  context:
    cluster: c
    user: u
current-context: c
users:
- name: u
  user:
    token: t
"
    )
}

#[test]
fn usage_errors_exit_2() {
    let out = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let mut c = gen_cmd();
        c.args(args).arg("-o").arg(out.path());
        c.assert().code(2)
    };
    // No inputs at all: files are required unless the cluster is asked.
    run(&[]).stderr(
        predicate::str::contains("error: no inputs: give CRD files").and(predicate::str::contains(
            "--from-cluster <CRD-NAME>... or --all-crds",
        )),
    );
    // --kubeconfig/--context only mean something with a cluster source.
    run(&[foo_file().to_str().unwrap(), "--kubeconfig", "kc"]).stderr(
        predicate::str::contains("--kubeconfig <PATH>")
            .and(predicate::str::contains("--from-cluster")),
    );
    run(&[foo_file().to_str().unwrap(), "--context", "c"])
        .stderr(predicate::str::contains("--context <NAME>"));
    // Both sources at once.
    run(&["--all-crds", "--from-cluster", FOO])
        .stderr(predicate::str::contains("cannot be used with"));
    // A path after --from-cluster is not taken for a CRD name.
    run(&["--from-cluster", FOO, "crds/"]).stderr(predicate::str::contains(
        "not a CRD name (expected <plural>.<group>",
    ));
    assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 0);
}
