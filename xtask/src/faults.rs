//! `cargo xtask faults`: many randomized fault schedules against the informer (the test
//! `crates/kube-codegen-runtime/tests/cache_faults.rs`, which CI runs with a few dozen seeds),
//! built in release so a thousand take minutes.

use std::process::{Command, ExitCode};

use anyhow::{Context, Result};

use crate::paths;

#[derive(clap::Args)]
pub struct Args {
    /// How many schedules to run.
    #[arg(long, default_value_t = 1000)]
    pub schedules: u64,
    /// Seed of the first schedule; the others take the seeds after it.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Schedules run at once (each has its own in-memory server).
    #[arg(long, default_value_t = 4)]
    pub parallel: u64,
}

pub fn run(args: &Args) -> Result<ExitCode> {
    let status = Command::new(paths::cargo())
        .current_dir(paths::repo_root())
        .args([
            "test",
            "--release",
            "-p",
            "kube-codegen-runtime",
            "--all-features",
            "--test",
            "all",
            "--",
            "cache_faults::",
            "--nocapture",
        ])
        .env("FAULT_SCHEDULES", args.schedules.to_string())
        .env("FAULT_SEED", args.seed.to_string())
        .env("FAULT_PARALLEL", args.parallel.max(1).to_string())
        .status()
        .context("running the fault-schedule test")?;
    Ok(if status.success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
