//! `cargo xtask first-user`: what the first user gets after a release, from the `.crate` files
//! `cargo package` makes, outside this repository.
//!
//! 1. `cargo package` the published crates (`PUBLISHED`; `--verify` also builds each package as
//!    `cargo publish` would; the steps below build every one of them from its `.crate` anyway).
//! 2. Unpack the `.crate` files into a scratch directory outside the repository (files whose bytes
//!    did not change keep their modification time, so a second run rebuilds nothing), and check
//!    that each package holds its README and the repository's LICENSE.
//! 3. `cargo install --path <unpacked kube-codegen>` (a release build, with the package's own
//!    manifest: no workspace profile applies), then check the binary: `--version` names the
//!    generator and the Kubernetes rules, and it carries no debug info.
//! 4. Run it as a user would on `testdata/crds/subresources.yaml` (copied into the scratch
//!    directory): a module tree into an application crate and a `--crate` library beside it.
//! 5. Build both in a workspace of their own whose manifests are what a user writes after the
//!    release (`kube-codegen-runtime = "0.1"`, `k8s-openapi = { version = "0.29", features =
//!    ["v1_35"] }`, ...), with `[patch.crates-io]` pointing the unpublished crates at their
//!    unpacked packages, and run the application's test: the generated clientset, apply
//!    configurations, status and scale verbs, informer and lister against `kube-fake-apiserver`
//!    (also from its package), and the `--crate` library's types over the same server.
//!
//! Every build shares the target directory (`CARGO_TARGET_DIR`, or the repository's `target/`),
//! so dependencies compiled by the workspace's own builds are reused. The scratch workspace
//! starts from the repository's `Cargo.lock`: CI builds the versions the repository tested (a
//! user resolving afresh may get newer semver-compatible releases).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use anyhow::{Context, Result, bail, ensure};

use crate::paths;

/// The crates users depend on, in dependency order.
pub const PUBLISHED: [&str; 4] = [
    "kube-codegen-crd",
    "kube-codegen",
    "kube-codegen-runtime",
    "kube-fake-apiserver",
];

/// The example CRD the README's quick start generates from.
const EXAMPLE_CRD: &str = "subresources.yaml";

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Let `cargo package` verify each package (a debug build of each, as `cargo publish` does).
    #[arg(long)]
    pub verify: bool,
    /// Scratch directory (default: `first-user` in the target directory when that is outside the
    /// repository, otherwise in the system's temporary directory). Must be outside the repository.
    #[arg(long)]
    pub scratch: Option<PathBuf>,
}

/// Prints how long each step took.
struct Clock {
    start: Instant,
    step: Instant,
}

impl Clock {
    fn new() -> Self {
        let now = Instant::now();
        Clock {
            start: now,
            step: now,
        }
    }
    fn done(&mut self, what: &str) {
        println!(
            "first-user: {what} in {:.1}s",
            self.step.elapsed().as_secs_f64()
        );
        self.step = Instant::now();
    }
}

pub fn run(args: &Args) -> Result<ExitCode> {
    let repo = paths::repo_root();
    let target = target_dir(&repo);
    let scratch = match &args.scratch {
        Some(s) => absolute(s)?,
        None => default_scratch(&repo, &target),
    };
    ensure!(
        !scratch.starts_with(&repo),
        "the scratch directory {} is inside the repository: Cargo would take the repository's \
         workspace and .cargo/config.toml for the user's",
        scratch.display()
    );
    // The published crates share the workspace's version, which the generator carries.
    let version = kube_codegen::VERSION;
    let mut clock = Clock::new();
    println!("first-user: {version}, scratch {}", scratch.display());

    // 1. Package.
    let mut package = cargo(&repo, &target);
    package.args(["package", "--allow-dirty", "--quiet"]);
    if !args.verify {
        package.arg("--no-verify");
    }
    for p in PUBLISHED {
        package.args(["-p", p]);
    }
    run_quiet(&mut package, "cargo package")?;
    clock.done(if args.verify {
        "cargo package (verified)"
    } else {
        "cargo package"
    });

    // 2. Unpack.
    let crates_dir = scratch.join("crates");
    let license = std::fs::read(repo.join("LICENSE")).context("reading LICENSE")?;
    let mut unpacked = Vec::new();
    for p in PUBLISHED {
        let file = target.join("package").join(format!("{p}-{version}.crate"));
        let dir = unpack(&file, &crates_dir, &format!("{p}-{version}"))?;
        let packaged = std::fs::read(dir.join("LICENSE"))
            .with_context(|| format!("{p}'s package has no LICENSE"))?;
        ensure!(
            packaged == license,
            "{p}'s packaged LICENSE differs from the repository's"
        );
        ensure!(
            dir.join("README.md").is_file(),
            "{p}'s package has no README.md"
        );
        unpacked.push((p, dir));
    }
    let dir_of = |name: &str| -> &Path {
        &unpacked
            .iter()
            .find(|(p, _)| *p == name)
            .expect("a published crate")
            .1
    };
    clock.done("unpacked (LICENSE and README in every package)");

    // 3. Install.
    let root = scratch.join("root");
    let mut install = cargo(&scratch, &target);
    install
        .args(["install", "--quiet", "--force", "--path"])
        .arg(dir_of("kube-codegen"))
        .arg("--root")
        .arg(&root)
        .arg("--config")
        .arg(patch_config("kube-codegen-crd", dir_of("kube-codegen-crd")));
    run_quiet(&mut install, "cargo install kube-codegen")?;
    let bin = root
        .join("bin")
        .join(format!("kube-codegen{}", std::env::consts::EXE_SUFFIX));
    let out = output(
        Command::new(&bin).arg("--version"),
        "kube-codegen --version",
    )?;
    let expected = format!(
        "kube-codegen {version} (Kubernetes {} rules)\n",
        kube_codegen::KUBERNETES_VERSION
    );
    ensure!(
        out == expected,
        "kube-codegen --version printed {out:?}, expected {expected:?}"
    );
    let binary = std::fs::read(&bin)?;
    ensure!(
        !has_debug_info(&binary),
        "the installed kube-codegen carries debug info ({} bytes)",
        binary.len()
    );
    clock.done(&format!(
        "cargo install kube-codegen (release, no debug info, {:.1} MiB): {}",
        binary.len() as f64 / (1024.0 * 1024.0),
        out.trim_end()
    ));

    // 4. Generate.
    let user = scratch.join("user");
    let crd = user.join("crds").join(EXAMPLE_CRD);
    paths::write_if_changed(
        &crd,
        &std::fs::read_to_string(paths::testdata().join("crds").join(EXAMPLE_CRD))?,
    )?;
    // The test registers the CRD with the server as JSON (no YAML parser in the user's crate).
    let docs = kube_codegen_crd::read::read_documents(&crd)
        .map_err(|e| anyhow::anyhow!("reading {}: {e}", crd.display()))?;
    let json = serde_json::to_string_pretty(&docs[0].value)?;
    paths::write_if_changed(&user.join("crds/crd.json"), &json)?;
    run_quiet(
        Command::new(&bin).current_dir(&user).args([
            "gen",
            "-q",
            "crds/subresources.yaml",
            "-o",
            "app/src/generated",
        ]),
        "kube-codegen gen (module tree)",
    )?;
    run_quiet(
        Command::new(&bin).current_dir(&user).args([
            "gen",
            "-q",
            "crds/subresources.yaml",
            "--crate",
            "first-user-api",
            "-o",
            "api",
        ]),
        "kube-codegen gen --crate",
    )?;
    let generated = std::fs::read_to_string(user.join("api/src/lib.rs"))?;
    let has_validate = generated.contains("pub fn validate(&self)");
    clock.done("kube-codegen gen (module tree and --crate)");

    // 5. Build and run as the user.
    write_user_workspace(&user, &repo, &unpacked, has_validate)?;
    let mut metadata = cargo(&user, &target);
    metadata.args(["metadata", "--quiet", "--format-version", "1"]);
    let metadata: serde_json::Value = serde_json::from_str(&output(
        &mut metadata,
        "cargo metadata (the user's workspace)",
    )?)?;
    let pins = version_pins(&metadata);
    ensure!(
        pins.is_empty(),
        "libraries pick no Kubernetes version, but: {}",
        pins.join("; ")
    );
    let mut build = cargo(&user, &target);
    build.args(["build", "--quiet", "--workspace", "--all-targets"]);
    run_quiet(&mut build, "cargo build (the user's workspace)")?;
    clock.done("built the user's crates (module tree, --crate library, test)");
    let mut test = cargo(&user, &target);
    test.args([
        "test",
        "--quiet",
        "-p",
        "first-user-app",
        "--test",
        "first_user",
    ]);
    let out = output(&mut test, "cargo test (the user's test)")?;
    let summary = out
        .lines()
        .find(|l| l.starts_with("test result:"))
        .unwrap_or("no test result line")
        .to_string();
    clock.done(&format!(
        "ran the user's test against kube-fake-apiserver ({summary})"
    ));
    println!(
        "first-user: ok in {:.1}s{}",
        clock.start.elapsed().as_secs_f64(),
        if has_validate {
            " (validate() used)"
        } else {
            ""
        }
    );
    Ok(ExitCode::SUCCESS)
}

/// `CARGO_TARGET_DIR` (absolute), or the repository's `target/`.
fn target_dir(repo: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(t) if !t.is_empty() => repo.join(t),
        _ => repo.join("target"),
    }
}

fn default_scratch(repo: &Path, target: &Path) -> PathBuf {
    if target.starts_with(repo) {
        std::env::temp_dir().join("kube-codegen-first-user")
    } else {
        target.join("first-user")
    }
}

fn absolute(p: &Path) -> Result<PathBuf> {
    Ok(std::env::current_dir()?.join(p))
}

/// A cargo command run in `dir` as a user's would be: the repository's fallback Kubernetes
/// version (`.cargo/config.toml`, inherited through `cargo xtask`) must not leak into it.
fn cargo(dir: &Path, target: &Path) -> Command {
    let mut c = Command::new(paths::cargo());
    c.current_dir(dir)
        .env("CARGO_TARGET_DIR", target)
        .env_remove("K8S_OPENAPI_ENABLED_VERSION")
        // The user's workspace has no profile of its own, so without this every dependency is
        // built a second time with full debug info beside the repository's (which carry none):
        // on CI that filled the disk. Debug info changes nothing this check looks at.
        .env("CARGO_PROFILE_DEV_DEBUG", "false");
    c
}

/// `--config` text patching `name` from crates.io to an unpacked package.
fn patch_config(name: &str, dir: &Path) -> String {
    format!(
        "patch.crates-io.{name}.path={}",
        toml_string(&dir.display().to_string())
    )
}

/// A TOML basic string.
fn toml_string(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// Runs `cmd`, printing its output only when it fails.
fn run_quiet(cmd: &mut Command, what: &str) -> Result<()> {
    output(cmd, what).map(|_| ())
}

/// Runs `cmd` and returns its stdout; on failure the error carries both streams.
fn output(cmd: &mut Command, what: &str) -> Result<String> {
    let out = cmd.output().with_context(|| format!("starting {what}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        bail!(
            "{what} failed ({}):\n{}\n{}",
            out.status,
            tail(&stdout, 60),
            tail(&stderr, 80)
        );
    }
    Ok(stdout)
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Unpacks `file` (a `.crate`: a gzipped tar of `<name>-<version>/...`) into `into/<dir>`,
/// rewriting only files whose bytes changed and removing files the package no longer has.
fn unpack(file: &Path, into: &Path, dir: &str) -> Result<PathBuf> {
    let staging = into.join(".staging");
    if staging.exists() {
        std::fs::remove_dir_all(&staging)?;
    }
    std::fs::create_dir_all(&staging)?;
    run_quiet(
        Command::new("tar")
            .arg("-xzf")
            .arg(file)
            .arg("-C")
            .arg(&staging),
        &format!("unpacking {}", file.display()),
    )?;
    let from = staging.join(dir);
    let to = into.join(dir);
    sync_tree(&from, &to)?;
    std::fs::remove_dir_all(&staging)?;
    Ok(to)
}

/// Makes `to` hold exactly the files of `from`, writing only what differs.
fn sync_tree(from: &Path, to: &Path) -> Result<()> {
    let wanted = files_under(from)?;
    if to.exists() {
        for rel in files_under(to)? {
            if !wanted.contains(&rel) {
                std::fs::remove_file(to.join(&rel))?;
            }
        }
    }
    for rel in &wanted {
        let bytes = std::fs::read(from.join(rel))?;
        let dest = to.join(rel);
        if std::fs::read(&dest).is_ok_and(|old| old == bytes) {
            continue;
        }
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&dest, bytes)?;
    }
    Ok(())
}

/// Files under `dir`, as paths relative to it, sorted.
fn files_under(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).with_context(|| format!("reading {}", d.display()))? {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path.strip_prefix(dir)?.to_path_buf());
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Where a library in the user's graph picks a k8s-openapi version feature: in its normal
/// dependency on k8s-openapi, or in a feature other than the binary's `cli`. The application
/// (`first-user-app`) picks one, and `kube-codegen` is a tool (a build-dependency or a binary,
/// resolved apart from the application's dependencies).
fn version_pins(metadata: &serde_json::Value) -> Vec<String> {
    let mut pins = Vec::new();
    let empty = Vec::new();
    for package in metadata["packages"].as_array().unwrap_or(&empty) {
        let name = package["name"].as_str().unwrap_or("");
        if matches!(name, "first-user-app" | "kube-codegen")
            || !(PUBLISHED.contains(&name) || name == "first-user-api")
        {
            continue;
        }
        for dep in package["dependencies"].as_array().unwrap_or(&empty) {
            let features = dep["features"].as_array().unwrap_or(&empty);
            if dep["name"] == "k8s-openapi" && dep["kind"].is_null() && !features.is_empty() {
                pins.push(format!("{name} depends on k8s-openapi with {features:?}"));
            }
        }
        if let Some(map) = package["features"].as_object() {
            for (feature, enables) in map {
                let picks = enables.as_array().unwrap_or(&empty).iter().any(|e| {
                    e.as_str().is_some_and(|e| {
                        e.starts_with("k8s-openapi/v1_") || e == "k8s-openapi/latest"
                    })
                });
                if picks && feature != "cli" {
                    pins.push(format!("{name}'s feature {feature:?} enables {enables}"));
                }
            }
        }
    }
    pins
}

/// Whether an executable has DWARF debug info: an ELF or Mach-O section table names
/// `.debug_info`/`__debug_info` only when the section is there (Cargo's release profile without
/// `debug` strips it).
fn has_debug_info(binary: &[u8]) -> bool {
    [&b".debug_info\0"[..], &b"__debug_info"[..]]
        .iter()
        .any(|needle| binary.windows(needle.len()).any(|w| w == *needle))
}

/// The user's workspace: `app` (the module tree, and a test driving it) and `api` (the
/// `--crate` output), with the unpublished crates patched to their unpacked packages.
fn write_user_workspace(
    user: &Path,
    repo: &Path,
    unpacked: &[(&str, PathBuf)],
    has_validate: bool,
) -> Result<()> {
    let mut patches = String::new();
    for (name, dir) in unpacked {
        patches.push_str(&format!(
            "{name} = {{ path = {} }}\n",
            toml_string(&dir.display().to_string())
        ));
    }
    paths::write_if_changed(
        &user.join("Cargo.toml"),
        &format!(
            "# A user's workspace after the release (written by `cargo xtask first-user`).\n\
             [workspace]\nresolver = \"3\"\nmembers = [\"app\", \"api\"]\n\n\
             # Until the crates are on crates.io: their packages, unpacked.\n\
             [patch.crates-io]\n{patches}"
        ),
    )?;
    paths::write_if_changed(&user.join("app/Cargo.toml"), APP_MANIFEST)?;
    paths::write_if_changed(&user.join("app/src/lib.rs"), APP_LIB)?;
    let mut test = APP_TEST.to_string();
    if has_validate {
        test.push_str(VALIDATE_TEST);
    }
    paths::write_if_changed(&user.join("app/tests/first_user.rs"), &test)?;
    // Start from the versions the repository tested; Cargo adds and drops what differs. Copied
    // again only when the repository's lock file changed since the last copy.
    let lock = std::fs::read_to_string(repo.join("Cargo.lock"))?;
    if paths::write_if_changed(&user.join("Cargo.lock.repository"), &lock)? {
        std::fs::write(user.join("Cargo.lock"), &lock)?;
    }
    Ok(())
}

/// The application's manifest: what the README tells a user to write.
const APP_MANIFEST: &str = r#"[package]
name = "first-user-app"
version = "0.1.0"
edition = "2024"
publish = false

[dependencies]
serde = { version = "1", features = ["derive"] }
serde_json = "1"
k8s-openapi = { version = "0.29", features = ["v1_35"] }
kube = "5"
kube-codegen-runtime = "0.1"
first-user-api = { path = "../api" }

[dev-dependencies]
kube-fake-apiserver = { version = "0.1", default-features = false }
tokio = { version = "1", features = ["macros", "rt-multi-thread", "time"] }
"#;

const APP_LIB: &str = r#"//! A user's crate: the module tree `kube-codegen gen` wrote into `src/generated`.
#![deny(warnings)]

pub mod generated;
"#;

/// The user's test: every generated piece over the in-memory API server.
const APP_TEST: &str = r#"//! The generated clientset, apply configurations, status and scale verbs, informer and lister,
//! and the `--crate` library's types, against kube-fake-apiserver.

use std::time::Duration;

use first_user_app::generated::scaling::v1::{
    WorkerPool, WorkerPoolApply, WorkerPoolSpec, WorkerPoolSpecApply, WorkerPoolStatus,
};
use first_user_app::generated::{Clientset, InformerFactoryExt};
use kube::api::{ListParams, PatchParams, PostParams};
use kube::core::Selector;
use kube_codegen_runtime::SharedInformerFactory;
use kube_fake_apiserver::FakeApiServer;

const DEADLINE: Duration = Duration::from_secs(20);

#[tokio::test]
async fn generated_code_drives_the_api_server() {
    let server = FakeApiServer::start().await.expect("server starts");
    let crd = serde_json::from_str(include_str!("../../crds/crd.json")).expect("CRD JSON");
    server.register_crd(crd).expect("CRD registers");
    let cs = Clientset::new(server.client());
    let pools = cs.scaling_v1().workerpools("default");

    // Create from the generated type, then read it back.
    let mut pool = WorkerPool {
        spec: Some(WorkerPoolSpec {
            replicas: Some(2),
            machine_type: Some("m5.large".into()),
        }),
        ..WorkerPool::default()
    };
    pool.metadata.name = Some("created".into());
    let created = pools.create(&PostParams::default(), &pool).await.expect("create");
    assert_eq!(created.spec, pool.spec);
    assert_eq!(pools.get("created").await.expect("get").spec, pool.spec);

    // Server-side apply through the apply configuration.
    let apply = WorkerPoolApply::new("applied", "default")
        .spec(WorkerPoolSpecApply::new().replicas(3).machine_type("m5.xlarge"));
    let applied = pools
        .apply(&apply, &PatchParams::apply("first-user"))
        .await
        .expect("apply");
    assert_eq!(applied.spec.as_ref().and_then(|s| s.replicas), Some(3));

    // The status and scale subresources.
    let mut with_status = applied.clone();
    with_status.status = Some(WorkerPoolStatus {
        replicas: Some(3),
        ready_replicas: Some(1),
        selector: Some("app=applied".into()),
        ..WorkerPoolStatus::default()
    });
    pools
        .update_status(&PostParams::default(), &with_status)
        .await
        .expect("update_status");
    let scale = pools.get_scale("applied").await.expect("get_scale");
    assert_eq!(scale.spec.and_then(|s| s.replicas), Some(3));
    assert_eq!(scale.status.map(|s| s.replicas), Some(3));

    // The informer and lister.
    let factory = SharedInformerFactory::builder(cs.clone())
        .namespace("default")
        .build();
    let informer = factory.scaling().v1().workerpools();
    factory.start();
    tokio::time::timeout(DEADLINE, factory.wait_for_cache_sync())
        .await
        .expect("caches sync");
    let lister = informer.lister();
    let mut names: Vec<String> = lister
        .workerpools("default")
        .list(&Selector::default())
        .expect("synced")
        .iter()
        .filter_map(|p| p.metadata.name.clone())
        .collect();
    names.sort();
    assert_eq!(names, ["applied", "created"]);
    let cached = lister
        .workerpools("default")
        .get("applied")
        .expect("synced")
        .expect("cached");
    assert_eq!(
        cached.status.as_ref().and_then(|s| s.ready_replicas),
        Some(1)
    );
    factory.shutdown();

    // The --crate library: its own clientset and types over the same objects.
    let api = first_user_api::Clientset::new(server.client());
    let list = api
        .scaling_v1()
        .workerpools("default")
        .list(&ListParams::default())
        .await
        .expect("list through the --crate library");
    let crate_view: Vec<first_user_api::scaling::v1::WorkerPool> = list.items;
    assert_eq!(crate_view.len(), 2);
    assert_eq!(
        serde_json::to_value(&crate_view[0]).unwrap(),
        serde_json::to_value(pools.get("applied").await.expect("get")).unwrap()
    );
    server.shutdown().await;
}
"#;

/// Added when the generated code has `validate()` (the object validator behind it).
const VALIDATE_TEST: &str = r#"
#[test]
fn generated_validate_accepts_a_valid_object() {
    let mut pool = WorkerPool::default();
    pool.metadata.name = Some("valid".into());
    let _ = pool.validate();
}
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_info_is_found_by_its_section_name() {
        assert!(has_debug_info(
            b"\x7fELF....\0.text\0.debug_info\0.debug_line\0"
        ));
        assert!(!has_debug_info(b"\x7fELF....\0.text\0.rodata\0.symtab\0"));
    }

    #[test]
    fn a_library_picking_a_version_is_found() {
        let metadata = serde_json::json!({"packages": [
            {"name": "kube-codegen-runtime", "features": {},
             "dependencies": [{"name": "k8s-openapi", "kind": null, "features": ["v1_35"]}]},
            {"name": "kube-fake-apiserver", "features": {"cli": ["k8s-openapi/v1_35"]},
             "dependencies": [{"name": "k8s-openapi", "kind": null, "features": []},
                              {"name": "k8s-openapi", "kind": "dev", "features": ["v1_35"]}]},
            {"name": "first-user-api", "features": {"docs": ["k8s-openapi/latest"]},
             "dependencies": []},
            {"name": "first-user-app", "features": {},
             "dependencies": [{"name": "k8s-openapi", "kind": null, "features": ["v1_35"]}]},
        ]});
        assert_eq!(
            version_pins(&metadata),
            [
                r#"kube-codegen-runtime depends on k8s-openapi with [String("v1_35")]"#,
                r#"first-user-api's feature "docs" enables ["k8s-openapi/latest"]"#,
            ]
        );
    }

    #[test]
    fn patches_are_toml() {
        assert_eq!(
            patch_config("kube-codegen-crd", Path::new("/tmp/a \"b\"")),
            r#"patch.crates-io.kube-codegen-crd.path="/tmp/a \"b\"""#
        );
    }

    #[test]
    fn sync_tree_rewrites_only_what_changed() {
        let dir = tempfile_dir();
        let (from, to) = (dir.join("from"), dir.join("to"));
        for (rel, text) in [("a.rs", "a"), ("src/b.rs", "b")] {
            paths::write_if_changed(&from.join(rel), text).unwrap();
        }
        paths::write_if_changed(&to.join("stale.rs"), "old").unwrap();
        sync_tree(&from, &to).unwrap();
        assert_eq!(
            files_under(&to).unwrap(),
            [PathBuf::from("a.rs"), PathBuf::from("src/b.rs")]
        );
        let before = std::fs::metadata(to.join("a.rs"))
            .unwrap()
            .modified()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        paths::write_if_changed(&from.join("src/b.rs"), "b2").unwrap();
        sync_tree(&from, &to).unwrap();
        assert_eq!(std::fs::read_to_string(to.join("src/b.rs")).unwrap(), "b2");
        let after = std::fs::metadata(to.join("a.rs"))
            .unwrap()
            .modified()
            .unwrap();
        assert_eq!(
            before, after,
            "an unchanged file keeps its modification time"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn tempfile_dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "xtask-first-user-test-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
