//! `--crate` output built where users build it: outside this repository. One crate from the first CRD file of
//! every project, checked with all targets (its dev-dependency picks the Kubernetes version whose rules generated
//! it; `cargo xtask first-user` checks that no library in a user's dependency graph picks one). The runtime is not published,
//! so the crate's `.cargo/config.toml` patches it to this checkout, as the README tells users to.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result};

use crate::paths;

/// Generates and checks the standalone crate; prints one summary line and returns whether it built.
pub fn check(dir: &Path, only: &[String]) -> Result<bool> {
    let started = Instant::now();
    let mut builder = kube_codegen::Builder::new();
    let mut inputs = 0;
    for project in paths::subdirs(&dir.join("crds"))? {
        if !only.is_empty() && !only.contains(&paths::stem(&project)) {
            continue;
        }
        if let Some(first) = paths::crd_files(&project)?.into_iter().next() {
            builder = builder.input(first);
            inputs += 1;
        }
    }
    let out = std::env::temp_dir().join("kube-codegen-standalone-crate");
    let options = kube_codegen::Options {
        crate_name: Some("corpus-standalone".into()),
        ..Default::default()
    };
    let generated = builder
        .options(options)
        .out_dir(&out)
        .generate()
        .map_err(|e| anyhow::anyhow!("generating the standalone crate: {e}"))?;
    let runtime = paths::repo_root().join("crates/kube-codegen-runtime");
    paths::write_if_changed(
        &out.join(".cargo/config.toml"),
        &format!(
            "[patch.crates-io]\nkube-codegen-runtime = {{ path = {:?} }}\n",
            runtime.display().to_string()
        ),
    )?;
    // The project's versions, so the build reuses what the corpus run compiled.
    std::fs::copy(
        paths::repo_root().join("Cargo.lock"),
        out.join("Cargo.lock"),
    )?;
    let output = Command::new(paths::cargo())
        .current_dir(&out)
        .env(
            "CARGO_TARGET_DIR",
            paths::repo_root().join("target/standalone"),
        )
        // This repository's fallback version must not leak into a user's build.
        .env_remove("K8S_OPENAPI_ENABLED_VERSION")
        .args([
            "check",
            "--all-targets",
            "--quiet",
            "--message-format",
            "short",
        ])
        .output()
        .context("running cargo in the standalone crate")?;
    let ok = output.status.success();
    println!(
        "standalone crate: {} ({} CRD files, {} versions, outside the repository in {}) in {:.1}s",
        if ok { "built" } else { "FAILED" },
        inputs,
        generated.resources.len(),
        out.display(),
        started.elapsed().as_secs_f64()
    );
    if !ok {
        let stderr = String::from_utf8_lossy(&output.stderr);
        for line in stderr.lines().filter(|l| l.contains("error")).take(40) {
            println!("  {line}");
        }
    }
    Ok(ok)
}
