//! Compiling the scratch crates: `cargo build` for the crates with a round-trip runner, `cargo check` for the
//! rest (same errors, no code generation), with compiler errors attributed to crates and generated files.

use std::collections::{BTreeMap, BTreeSet};
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

impl CompileError {
    /// Whether the error points into the generated file of module `module`. Cargo names files
    /// relative to the scratch workspace (`corpus-c00/src/gen/<module>.rs`).
    pub fn is_in_module(&self, module: &str) -> bool {
        self.file
            .as_deref()
            .is_some_and(|f| f.ends_with(&format!("/src/gen/{module}.rs")))
    }
}

pub struct BuildOutcome {
    /// Per crate: it compiled without an error (after the files that failed were taken out).
    pub crate_ok: Vec<bool>,
    pub errors: Vec<CompileError>,
    /// Generated files (units) that failed to compile, with their first error; they were taken
    /// out of their crates so the other files of those crates still compile and round-trip.
    pub failed_units: BTreeMap<usize, String>,
}

/// Builds the crates in `runners` and checks the others, in the scratch workspace at `root` (its own target dir).
pub fn compile(
    root: &Path,
    crates: &[CrateSpec],
    runners: &BTreeMap<usize, BTreeSet<String>>,
    jobs: Option<usize>,
) -> Result<BuildOutcome> {
    let mut outcome = BuildOutcome {
        crate_ok: vec![true; crates.len()],
        errors: Vec::new(),
        failed_units: BTreeMap::new(),
    };
    let (build, check): (Vec<usize>, Vec<usize>) =
        (0..crates.len()).partition(|c| runners.contains_key(c));
    for (mode, members) in [("build", build), ("check", check)] {
        if !members.is_empty() {
            invoke(root, crates, mode, &members, jobs, &mut outcome)?;
        }
    }
    Ok(outcome)
}

fn invoke(
    root: &Path,
    crates: &[CrateSpec],
    mode: &str,
    members: &[usize],
    jobs: Option<usize>,
    outcome: &mut BuildOutcome,
) -> Result<()> {
    let mut cmd = Command::new(crate::paths::cargo());
    cmd.current_dir(root)
        .env("CARGO_TARGET_DIR", root.join("target"))
        .args([mode, "--keep-going", "--message-format=json"])
        .stdout(Stdio::piped());
    for &c in members {
        cmd.args(["-p", &crates[c].name]);
    }
    if let Some(jobs) = jobs {
        cmd.arg(format!("--jobs={jobs}"));
    }
    let mut child = cmd
        .spawn()
        .with_context(|| format!("starting cargo {mode} in the scratch workspace"))?;
    let stdout = child.stdout.take().context("cargo stdout")?;

    // Target names: the lib is `corpus_cNN`, the runner binary `corpus-cNN`.
    let mut by_target = BTreeMap::new();
    for &c in members {
        by_target.insert(crates[c].lib_name(), c);
        by_target.insert(crates[c].name.clone(), c);
    }
    let errors_before = outcome.errors.len();
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
        outcome.crate_ok[krate] = false;
        let file = msg["message"]["spans"]
            .as_array()
            .and_then(|spans| spans.iter().find(|s| s["is_primary"] == true))
            .and_then(|s| s["file_name"].as_str())
            .map(str::to_string);
        let rendered = msg["message"]["rendered"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        outcome.errors.push(CompileError {
            krate,
            file,
            rendered,
        });
    }
    let status = child.wait()?;
    if !status.success() && outcome.errors.len() == errors_before {
        // Failed without a compiler error of ours (dependency, manifest, ...): none of these crates is known good.
        for &c in members {
            outcome.crate_ok[c] = false;
        }
        outcome.errors.push(CompileError {
            krate: members[0],
            file: None,
            rendered: format!(
                "cargo {mode} failed ({status}) without a compiler error; see its output above"
            ),
        });
    }
    Ok(())
}
