//! One `cargo build` over every scratch crate, with compiler errors attributed to crates and generated files.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, Result};
use serde_json::Value;

use crate::scratch::CrateSpec;

pub struct CompileError {
    pub krate: usize,
    /// The generated file (`src/gen/<module>.rs`) the primary span points into, when it does.
    pub file: Option<String>,
    pub rendered: String,
}

pub struct BuildOutcome {
    /// Per crate: every target of it built.
    pub crate_ok: Vec<bool>,
    pub errors: Vec<CompileError>,
}

/// `cargo build --workspace --keep-going` in the scratch workspace at `root`, its own target dir inside it.
pub fn build(root: &Path, crates: &[CrateSpec], jobs: Option<usize>) -> Result<BuildOutcome> {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(root)
        .env("CARGO_TARGET_DIR", root.join("target"))
        .args([
            "build",
            "--workspace",
            "--keep-going",
            "--message-format=json",
        ])
        .stdout(Stdio::piped());
    if let Some(jobs) = jobs {
        cmd.arg(format!("--jobs={jobs}"));
    }
    let mut child = cmd
        .spawn()
        .context("starting cargo build in the scratch workspace")?;
    let stdout = child.stdout.take().context("cargo stdout")?;

    // Target names: the lib is `corpus_cNN`, the runner binary `corpus-cNN`.
    let mut by_target = BTreeMap::new();
    for (i, spec) in crates.iter().enumerate() {
        by_target.insert(spec.lib_name(), i);
        by_target.insert(spec.name.clone(), i);
    }
    let mut errors = Vec::new();
    let mut failed = vec![false; crates.len()];
    for line in BufReader::new(stdout).lines() {
        let line = line?;
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if msg["reason"] != "compiler-message" || msg["message"]["level"] != "error" {
            continue;
        }
        let Some(&krate) = msg["target"]["name"]
            .as_str()
            .and_then(|t| by_target.get(t))
        else {
            continue;
        };
        failed[krate] = true;
        let file = msg["message"]["spans"]
            .as_array()
            .and_then(|spans| spans.iter().find(|s| s["is_primary"] == true))
            .and_then(|s| s["file_name"].as_str())
            .map(str::to_string);
        let rendered = msg["message"]["rendered"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        errors.push(CompileError {
            krate,
            file,
            rendered,
        });
    }
    let status = child.wait()?;
    if !status.success() && errors.is_empty() {
        // Failed without a compiler error of ours (dependency, manifest, ...): nothing compiled for sure.
        failed.iter_mut().for_each(|f| *f = true);
        errors.push(CompileError {
            krate: 0,
            file: None,
            rendered: format!(
                "cargo build failed ({status}) without a compiler error; see its output above"
            ),
        });
    }
    Ok(BuildOutcome {
        crate_ok: failed.iter().map(|f| !f).collect(),
        errors,
    })
}
