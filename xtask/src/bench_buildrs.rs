//! `cargo xtask bench buildrs --kopium <PATH> [CORPUS]` (G3): the types of a corpus generated
//! through the `build.rs` path, beside kopium's release binary, same run.
//!
//! Cargo builds build scripts and their dependencies with the `build-override` profile
//! (unoptimised by default), so the only faithful measure of `Builder` in `build.rs` is a build
//! script. For each variant (no profile override, or one of the overrides the README
//! documents) a scratch crate outside the workspace (`target/bench-buildrs/<variant>/`, its own
//! target directory, the workspace's `Cargo.lock`) has a `build.rs` that times
//! `Builder::generate` of the corpus's types (`--emit types --versions all`) and writes the figure to a file; a
//! run is `cargo build` with a new `KCG_BENCH_RUN` value, which reruns only the build script.
//! kopium generates the same corpus one process per CRD version (it takes one CRD and one
//! version per call), sequentially, output discarded; versions it refuses are left out after a
//! first pass. Runs alternate kopium and the variants; each figure's min, median and max are
//! printed, and with `--clean` the first, from-scratch build of each variant is timed too (what
//! the override costs a clean build).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};

use crate::bench::figure;
use crate::paths;

#[derive(clap::Args)]
pub struct Args {
    /// The kopium binary (e.g. from `cargo install kopium --root /tmp/kopium`).
    #[arg(long)]
    pub kopium: PathBuf,
    /// Corpus directory holding `crds/` (default: ../shared/corpus/public beside the repository).
    pub dir: Option<PathBuf>,
    /// Timed runs of each; min, median and max are reported.
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// Profile variants of the scratch crate: `default` (no override), `o1`/`o2`/`o3`
    /// (`[profile.dev.build-override] opt-level = N`).
    #[arg(long, value_delimiter = ',', default_value = "default,o1,o3")]
    pub variants: Vec<String>,
    /// Remove each variant's target directory first and time its clean build.
    #[arg(long)]
    pub clean: bool,
    /// Where the scratch crates and their target directories go (default:
    /// `target/bench-buildrs` in the repository).
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
}

/// The scratch crate's `Cargo.toml` profile section for a variant.
fn profile(variant: &str) -> Result<&'static str> {
    Ok(match variant {
        "default" => "",
        "o1" => "[profile.dev.build-override]\nopt-level = 1\n",
        "o2" => "[profile.dev.build-override]\nopt-level = 2\n",
        "o3" => "[profile.dev.build-override]\nopt-level = 3\n",
        other => bail!("unknown variant {other:?} (default, o1, o2, o3)"),
    })
}

const BUILD_RS: &str = r#"fn main() {
    println!("cargo:rerun-if-env-changed=KCG_BENCH_RUN");
    println!("cargo:rerun-if-env-changed=KCG_BENCH_CORPUS");
    let corpus = std::env::var("KCG_BENCH_CORPUS").expect("KCG_BENCH_CORPUS");
    let report = std::env::var("KCG_BENCH_OUT").expect("KCG_BENCH_OUT");
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("gen");
    // Every run writes every file, as a first build does.
    let _ = std::fs::remove_dir_all(&out);
    // Every version, as kopium is given every version.
    let options = kube_codegen::Options::from_args(&["--emit", "types", "--versions", "all"])
        .expect("options");
    let start = std::time::Instant::now();
    let generated = kube_codegen::Builder::new()
        .input(&corpus)
        .out_dir(&out)
        .options(options)
        .generate()
        .expect("generate");
    let ms = start.elapsed().as_secs_f64() * 1000.0;
    std::fs::write(report, format!("{ms} {}", generated.resources.len())).expect("report");
}
"#;

/// Writes the scratch crate of `variant` in `work`; returns its directory.
fn scratch_crate(work: &Path, variant: &str) -> Result<PathBuf> {
    let root = paths::repo_root();
    let dir = work.join(variant);
    let manifest = format!(
        "[package]\nname = \"bench-buildrs-{variant}\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\n\
         [build-dependencies]\nkube-codegen = {{ path = {:?}, default-features = false }}\n\n\
         [workspace]\n\n{}",
        root.join("crates/kube-codegen").display().to_string(),
        profile(variant)?
    );
    paths::write_if_changed(&dir.join("Cargo.toml"), &manifest)?;
    paths::write_if_changed(&dir.join("build.rs"), BUILD_RS)?;
    paths::write_if_changed(&dir.join("src/lib.rs"), "")?;
    // The workspace's versions, so the generator is built from the same dependencies.
    if !dir.join("Cargo.lock").exists() {
        std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock"))?;
    }
    Ok(dir)
}

/// One `cargo build` of the scratch crate: (generation ms measured in build.rs, resources,
/// whole cargo wall ms).
fn build(dir: &Path, corpus: &Path, run: &str) -> Result<(f64, usize, f64)> {
    let report = dir.join("report.txt");
    let _ = std::fs::remove_file(&report);
    let start = Instant::now();
    let out = Command::new(paths::cargo())
        .current_dir(dir)
        .args(["build", "--quiet"])
        .env("CARGO_TARGET_DIR", dir.join("target"))
        .env("KCG_BENCH_RUN", run)
        .env("KCG_BENCH_CORPUS", corpus)
        .env("KCG_BENCH_OUT", &report)
        .env_remove("RUSTFLAGS")
        .output()
        .context("running cargo build")?;
    let wall = start.elapsed().as_secs_f64() * 1000.0;
    if !out.status.success() {
        bail!(
            "cargo build in {} failed:\n{}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let text = std::fs::read_to_string(&report)
        .with_context(|| format!("{}: the build script did not run", report.display()))?;
    let (ms, n) = text.split_once(' ').context("report format")?;
    Ok((ms.parse()?, n.trim().parse()?, wall))
}

/// (CRD file as JSON, version) for every version of every CRD in `crds`, one file per CRD.
fn kopium_jobs(crds: &Path, scratch: &Path) -> Result<Vec<(PathBuf, String)>> {
    std::fs::create_dir_all(scratch)?;
    let files = kube_codegen_crd::read::expand_inputs(&[crds.to_path_buf()])?;
    let mut jobs = Vec::new();
    for f in files {
        for doc in kube_codegen_crd::read::flatten(kube_codegen_crd::read::read_documents(&f)?) {
            if !matches!(
                kube_codegen_crd::classify(&doc.value),
                kube_codegen_crd::Classified::Crd
            ) {
                continue;
            }
            let path = scratch.join(format!("{}.yaml", jobs.len()));
            std::fs::write(&path, serde_json::to_string(&doc.value)?)?;
            let versions = doc
                .value
                .pointer("/spec/versions")
                .and_then(|v| v.as_array())
                .map(|l| {
                    l.iter()
                        .filter_map(|v| v.get("name")?.as_str().map(str::to_string))
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default();
            for v in versions {
                jobs.push((path.clone(), v));
            }
        }
    }
    Ok(jobs)
}

fn kopium(bin: &Path, file: &Path, version: &str) -> Result<bool> {
    let status = Command::new(bin)
        .arg("-f")
        .arg(file)
        .args(["--api-version", version])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .with_context(|| format!("running {}", bin.display()))?;
    Ok(status.success())
}

/// Reports the median, least and most of `xs` as `name`'s figures; returns the median.
fn stats(name: &str, mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    let median = xs[xs.len() / 2];
    figure(&format!("{name}_median"), format!("{median:.0}"), "ms");
    figure(
        &format!("{name}_min"),
        format!("{:.0}", xs.first().copied().unwrap_or(0.0)),
        "ms",
    );
    figure(
        &format!("{name}_max"),
        format!("{:.0}", xs.last().copied().unwrap_or(0.0)),
        "ms",
    );
    median
}

pub fn run(args: &Args) -> Result<()> {
    let corpus = args.dir.clone().unwrap_or_else(crate::default_corpus);
    let crds = corpus.join("crds");
    if !crds.is_dir() {
        bail!("{}: no crds/ directory", corpus.display());
    }
    let crds = crds.canonicalize()?;
    let work = args
        .work_dir
        .clone()
        .unwrap_or_else(|| paths::repo_root().join("target/bench-buildrs"));
    let kopium_dir = work.join("kopium-inputs");
    let _ = std::fs::remove_dir_all(&kopium_dir);
    let all = kopium_jobs(&crds, &kopium_dir)?;
    let mut jobs = Vec::new();
    for (f, v) in all {
        if kopium(&args.kopium, &f, &v)? {
            jobs.push((f, v));
        }
    }
    figure("g3_kopium_versions", jobs.len(), "versions");

    let mut dirs = Vec::new();
    for variant in &args.variants {
        let dir = scratch_crate(&work, variant)?;
        if args.clean {
            let _ = std::fs::remove_dir_all(dir.join("target"));
        }
        // The first build compiles the generator with the variant's profile.
        let (_, n, wall_ms) = build(&dir, &crds, "warm-up")?;
        if args.clean {
            figure(
                &format!("g3_{variant}_clean_build_s"),
                format!("{:.0}", wall_ms / 1000.0),
                "s",
            );
        }
        figure("g3_resources", n, "versions");
        dirs.push((variant.clone(), dir));
    }

    let mut kopium_ms = Vec::new();
    let mut ours: Vec<Vec<f64>> = vec![Vec::new(); dirs.len()];
    for run in 0..args.runs.max(1) {
        let start = Instant::now();
        for (f, v) in &jobs {
            kopium(&args.kopium, f, v)?;
        }
        kopium_ms.push(start.elapsed().as_secs_f64() * 1000.0);
        for (i, (_, dir)) in dirs.iter().enumerate() {
            let (ms, _, _) = build(dir, &crds, &run.to_string())?;
            ours[i].push(ms);
        }
    }
    let kopium_median = stats("g3_kopium_wall", kopium_ms);
    for ((variant, _), xs) in dirs.iter().zip(ours) {
        let median = stats(&format!("g3_buildrs_{variant}_wall"), xs);
        figure(
            &format!("g3_buildrs_{variant}_over_kopium"),
            format!("{:.2}", median / kopium_median),
            "x",
        );
    }
    Ok(())
}
