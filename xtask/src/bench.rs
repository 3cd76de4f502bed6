//! `cargo xtask bench <group>`: benchmark figures as `name value unit` lines (see shared BENCHMARKS.md).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Subcommand;

use crate::corpus;
use crate::paths;
use crate::scratch::{self, Extras};

#[derive(Subcommand)]
pub enum Group {
    /// `cargo bench -p kube-codegen-runtime-bench --bench workqueue -- [ARGS]` (W1, W2): each
    /// figure's median, min and max; W1 over 10 runs unless `--runs N` says otherwise, with
    /// every run's adds/s, processed/s, CPU and context switches.
    Workqueue {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// `cargo bench -p kube-codegen-runtime-bench --bench cache -- [ARGS]` (W4: lookups on the
    /// informer's cache beside a directly filled Store and kube-runtime's).
    Cache {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// `cargo bench -p kube-codegen-runtime-bench --bench informer -- [ARGS]` (W3: ours, kube-runtime's
    /// reflector and the decode floor, each variant in its own process).
    Informer {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// `cargo bench -p kube-codegen-runtime-bench --bench conversion -- [ARGS]` (C1: objects
    /// converted per second through the conversion webhook's handler beside the decode/encode
    /// floor, and p99 latency of a single-object review over HTTPS).
    Conversion {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// `cargo bench -p kube-codegen-runtime-bench --bench admission -- [ARGS]` (A1: defaulting
    /// reviews per second through the admission webhook's handler beside decoding and encoding
    /// the review, and p99 latency of one over HTTPS).
    Admission {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// `cargo bench -p kube-codegen-runtime-bench --bench controller -- [ARGS]` (R1: our
    /// controller runtime beside kube-runtime's `Controller` on 10,000 Foos, the informers
    /// alone as the memory baseline, and Deployment watches of two controllers of each).
    R1 {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// `cargo bench -p kube-codegen-runtime-bench --bench priority -- [ARGS]` (P1: a restart
    /// over 10,000 Foos with 5 ms reconciles, 100 changed during the initial pass: their latency
    /// and the pass, with the queue's priorities and with client-go's FIFO, same run).
    P1 {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// `cargo bench -p kube-codegen-runtime-bench --bench restart -- [ARGS]` (O1: our informer
    /// and kube-runtime's watcher back after two API server outages, same run).
    O1 {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// `cargo bench -p kube-codegen-runtime-bench --bench shard_converge -- [ARGS]` (S1 from
    /// convergence: three ring-mode replicas from an unformed ring, a kill, 3 -> 4 -> 2; shares
    /// in objects, failover, objects moved; fails on an overlapping or a missing reconcile).
    S1Converge {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// `cargo bench -p sample-controller --bench controller`: reconciles per CPU-second on 1,000
    /// Foos against the in-process server, beside the Foo informer alone.
    Controller {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// G1 (generation speed) and G2 (compile cost of the generated code) on a corpus.
    Gen(GenArgs),
    /// G3: the corpus's types generated from `build.rs` (a scratch crate per profile variant)
    /// beside kopium's binary, same run.
    Buildrs(crate::bench_buildrs::Args),
    /// V1: rule compile time per CRD and objects validated per second over the corpus samples.
    Validate {
        /// Corpus directory (default: ../shared/corpus/public beside the repository).
        dir: Option<PathBuf>,
        /// Rounds; the median is reported.
        #[arg(long, default_value_t = 5)]
        rounds: usize,
    },
}

#[derive(clap::Args)]
pub struct GenArgs {
    /// Corpus directory (default: ../shared/corpus/public beside the repository).
    pub dir: Option<PathBuf>,
    /// G1 repetitions; the median is reported.
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// G2 repetitions of `cargo check` and `cargo build --release`; the median is reported.
    #[arg(long, default_value_t = 1)]
    pub compile_runs: usize,
    /// Only G1.
    #[arg(long)]
    pub skip_compile: bool,
    /// G2 without `cargo build --release`.
    #[arg(long)]
    pub skip_release: bool,
    /// Upper bound of generated lines per scratch crate.
    #[arg(long, default_value_t = 40_000)]
    pub max_lines: usize,
}

pub fn run(group: Group) -> Result<ExitCode> {
    match group {
        Group::Workqueue { args } => runtime_bench("workqueue", &args),
        Group::Cache { args } => runtime_bench("cache", &args),
        Group::Informer { args } => runtime_bench("informer", &args),
        Group::Conversion { args } => runtime_bench("conversion", &args),
        Group::Admission { args } => runtime_bench("admission", &args),
        Group::R1 { args } => runtime_bench("controller", &args),
        Group::P1 { args } => runtime_bench("priority", &args),
        Group::O1 { args } => runtime_bench("restart", &args),
        Group::S1Converge { args } => runtime_bench("shard_converge", &args),
        Group::Controller { args } => package_bench("sample-controller", "controller", &args),
        Group::Buildrs(args) => {
            crate::bench_buildrs::run(&args)?;
            Ok(ExitCode::SUCCESS)
        }
        Group::Gen(_) | Group::Validate { .. } if cfg!(debug_assertions) => {
            // G1 and V1 time work in this process: an unoptimised build would measure the wrong thing.
            let status = Command::new(paths::cargo())
                .current_dir(paths::repo_root())
                .args(["run", "--release", "--quiet", "-p", "xtask", "--"])
                .args(std::env::args_os().skip(1))
                .status()
                .context("re-running the benchmark from a release build of xtask")?;
            Ok(exit_code(status))
        }
        Group::Validate { dir, rounds } => {
            let dir = dir.unwrap_or_else(crate::default_corpus);
            crate::bench_validate::run(&dir, rounds.max(1))?;
            Ok(ExitCode::SUCCESS)
        }
        Group::Gen(args) => {
            let dir = args.dir.clone().unwrap_or_else(crate::default_corpus);
            g1(&dir, args.runs)?;
            if !args.skip_compile {
                g2(&dir, &args)?;
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Runs one benchmark binary of `kube-codegen-runtime-bench` with `args`.
fn runtime_bench(name: &str, args: &[String]) -> Result<ExitCode> {
    package_bench("kube-codegen-runtime-bench", name, args)
}

fn package_bench(package: &str, name: &str, args: &[String]) -> Result<ExitCode> {
    let status = Command::new(paths::cargo())
        .current_dir(paths::repo_root())
        .args(["bench", "-p", package, "--bench", name, "--"])
        .args(args)
        .status()
        .context("running cargo bench")?;
    Ok(exit_code(status))
}

/// A child's success as this process's exit code.
fn exit_code(status: std::process::ExitStatus) -> ExitCode {
    if status.success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

pub(crate) fn figure(name: &str, value: impl std::fmt::Display, unit: &str) {
    println!("{name} {value} {unit}");
}

pub(crate) fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// User+system CPU seconds of this process so far.
fn self_cpu_s() -> f64 {
    // SAFETY: getrusage only writes into the zeroed struct we pass.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    tv_s(usage.ru_utime) + tv_s(usage.ru_stime)
}

fn tv_s(tv: libc::timeval) -> f64 {
    tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6
}

/// The two output sets G1 and G2 compare in one run: today's types-only output, and everything.
const OUTPUTS: [(&str, kube_codegen::Emit); 2] = [
    ("types", kube_codegen::Emit::TYPES),
    ("all", kube_codegen::Emit::ALL),
];

/// G1: render every CRD file in process, types only and all outputs alternately (same run, same
/// machine state), and report both and their ratio.
fn g1(dir: &Path, runs: usize) -> Result<()> {
    let mut files = Vec::new();
    for project in
        paths::subdirs(&dir.join("crds")).with_context(|| format!("listing {}", dir.display()))?
    {
        files.extend(paths::crd_files(&project)?);
    }
    if files.is_empty() {
        bail!("no CRD files under {}/crds", dir.display());
    }
    let files: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    figure("g1_crds", files.len(), "files");
    figure("g1_threads", corpus::available_threads(), "threads");
    let mut wall_by_output = Vec::new();
    let mut samples: Vec<[Vec<f64>; 3]> = vec![Default::default(), Default::default()];
    let mut counts = [(0, 0, 0); 2];
    for _ in 0..runs.max(1) {
        for (i, (_, emit)) in OUTPUTS.iter().enumerate() {
            // BENCHMARKS.md counts every version (407 on the public corpus), served or not.
            let options = kube_codegen::Options {
                versions: kube_codegen::VersionSelection::All,
                emit: *emit,
                ..Default::default()
            };
            let (cpu0, t0) = (self_cpu_s(), Instant::now());
            let results = corpus::render_all(&files, &options, corpus::available_threads());
            samples[i][0].push(t0.elapsed().as_secs_f64() * 1e3);
            samples[i][1].push(self_cpu_s() - cpu0);
            let (mut versions, mut lines, mut errors) = (0, 0, 0);
            for result in results {
                match result {
                    Ok(generated) => {
                        versions += generated.resources.len();
                        lines += generated
                            .files
                            .values()
                            .map(|f| f.lines().count())
                            .sum::<usize>();
                    }
                    Err(_) => errors += 1,
                }
            }
            counts[i] = (versions, lines, errors);
            let t1 = Instant::now();
            corpus::render_all(&files, &options, 1);
            samples[i][2].push(t1.elapsed().as_secs_f64() * 1e3);
        }
    }
    for (i, (name, _)) in OUTPUTS.iter().enumerate() {
        let [walls, cpus, walls_1t] = std::mem::take(&mut samples[i]);
        let (versions, lines, errors) = counts[i];
        let p = format!("g1_{name}");
        figure(&format!("{p}_errors"), errors, "files");
        figure(&format!("{p}_versions"), versions, "versions");
        figure(&format!("{p}_output_lines"), lines, "lines");
        let wall = median(walls);
        wall_by_output.push(wall);
        figure(&format!("{p}_wall_ms"), format!("{wall:.1}"), "ms");
        figure(
            &format!("{p}_wall_1thread_ms"),
            format!("{:.1}", median(walls_1t)),
            "ms",
        );
        let cpu = median(cpus);
        figure(&format!("{p}_cpu_s"), format!("{cpu:.3}"), "s");
        figure(
            &format!("{p}_versions_per_cpu_sec"),
            format!("{:.0}", versions as f64 / cpu.max(1e-9)),
            "versions/s",
        );
    }
    figure(
        "g1_all_over_types_wall",
        format!("{:.2}", wall_by_output[1] / wall_by_output[0].max(1e-9)),
        "x",
    );
    Ok(())
}

/// G2: compile the single-file corpus output in scratch crates, types only and then all outputs
/// (same run); dependencies are built first, untimed. Reports both and their ratios.
fn g2(dir: &Path, args: &GenArgs) -> Result<()> {
    let mut checks = Vec::new();
    for (name, emit) in OUTPUTS {
        checks.push(g2_one(dir, args, name, emit)?);
    }
    figure(
        "g2_all_over_types_check_wall",
        format!("{:.2}", checks[1].0 / checks[0].0.max(1e-9)),
        "x",
    );
    figure(
        "g2_all_over_types_peak_rss",
        format!("{:.2}", checks[1].1 as f64 / (checks[0].1 as f64).max(1.0)),
        "x",
    );
    Ok(())
}

/// One G2 measurement; returns the `cargo check` wall seconds and peak RSS (KiB).
fn g2_one(
    dir: &Path,
    args: &GenArgs,
    output: &str,
    emit: kube_codegen::Emit,
) -> Result<(f64, u64)> {
    let generation = corpus::generate(dir, &[], emit)?;
    let all: Vec<usize> = (0..generation.units.len()).collect();
    let crates = scratch::pack(&generation.units, &[all], args.max_lines);
    let root = paths::repo_root().join("target/corpus-bench");
    let no_runners = Default::default();
    let no_conversions = Default::default();
    scratch::write_workspace(
        &root,
        &generation.units,
        &crates,
        &Extras {
            runners: &no_runners,
            conversions: &no_conversions,
            warmup: true,
        },
    )?;
    let lines: usize = generation.units.iter().map(|u| u.lines).sum();
    let target = root.join("target");
    let cargo_in = |args: &[&str]| {
        let mut cmd = Command::new(paths::cargo());
        cmd.current_dir(&root)
            .env("CARGO_TARGET_DIR", &target)
            .args(args);
        cmd
    };
    let mut clean = cargo_in(&["clean", "--quiet"]);
    for spec in &crates {
        clean.args(["-p", &spec.name]);
    }

    eprintln!("g2 ({output}): building dependencies (untimed)...");
    for warm in [
        &["check", "-p", "deps"][..],
        &["build", "--release", "-p", "deps"][..],
    ] {
        if !args.skip_release || warm[0] == "check" {
            measured(&mut cargo_in(warm))?;
        }
    }
    let mut phases = vec![("check", &["check", "--workspace"][..])];
    if !args.skip_release {
        phases.push(("build", &["build", "--release", "--workspace"][..]));
    }
    let p = format!("g2_{output}");
    figure(&format!("{p}_crates"), crates.len(), "crates");
    figure(&format!("{p}_lines"), lines, "lines");
    let mut check = (0.0, 0);
    for (name, cmd) in phases {
        let (mut walls, mut cpus, mut rss) = (Vec::new(), Vec::new(), 0);
        for _ in 0..args.compile_runs.max(1) {
            measured(&mut clean)?;
            let m = measured(&mut cargo_in(cmd))?;
            if !m.success {
                bail!(
                    "cargo {} failed on the generated corpus ({output}; run `cargo xtask corpus` for details)",
                    cmd.join(" ")
                );
            }
            walls.push(m.wall.as_secs_f64());
            cpus.push(m.cpu_s);
            rss = rss.max(m.max_rss_kb);
        }
        let wall = median(walls);
        figure(&format!("{p}_{name}_s"), format!("{wall:.1}"), "s");
        figure(
            &format!("{p}_{name}_cpu_s"),
            format!("{:.1}", median(cpus)),
            "s",
        );
        figure(&format!("{p}_{name}_peak_rss_mb"), rss / 1024, "MiB");
        if name == "check" {
            check = (wall, rss);
        }
    }
    Ok(check)
}

struct Measured {
    wall: Duration,
    cpu_s: f64,
    /// Largest resident set of any process in the command's tree (Linux wait4 semantics).
    max_rss_kb: u64,
    success: bool,
}

/// Runs `cmd` and reaps it with `wait4`, whose rusage covers the process and its waited-for descendants.
fn measured(cmd: &mut Command) -> Result<Measured> {
    let started = Instant::now();
    let child = cmd.spawn().context("starting cargo")?;
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: wait4 writes only into the status int and the zeroed rusage we pass; the pid is our child, reaped
    // here exactly once (std's Child is dropped without waiting).
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        if libc::wait4(pid, &mut status, 0, &mut usage) < 0 {
            bail!("wait4 failed: {}", std::io::Error::last_os_error());
        }
        usage
    };
    drop(child);
    Ok(Measured {
        wall: started.elapsed(),
        cpu_s: tv_s(usage.ru_utime) + tv_s(usage.ru_stime),
        max_rss_kb: u64::try_from(usage.ru_maxrss).unwrap_or(0),
        success: libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
    })
}
