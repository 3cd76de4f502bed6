//! `cargo xtask corpus <DIR>`: the real-world acceptance bar. Generates single-file output for every CRD file of
//! `DIR/crds/<project>/`, compiles it (warnings denied) in scratch crates under `target/corpus/`, and round-trips
//! every `DIR/samples/<project>/` object whose apiVersion/kind a file of the same project generated.

mod cargo;
mod cases;
mod report;
mod standalone;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result};

use crate::paths;
use crate::scratch::{self, Extras, Unit};

#[derive(clap::Args)]
pub struct Args {
    /// Corpus directory laid out as `crds/<project>/*.yaml` and `samples/<project>/*.yaml`.
    pub dir: PathBuf,
    /// Upper bound of generated lines per scratch crate (bounds rustc's memory).
    #[arg(long, default_value_t = 40_000)]
    pub max_lines: usize,
    /// Only these projects (repeatable).
    #[arg(long = "project")]
    pub projects: Vec<String>,
    /// Passed to cargo as `--jobs`.
    #[arg(long)]
    pub jobs: Option<usize>,
}

/// A CRD file the generator rejected.
pub struct GenFailure {
    pub project: String,
    pub file: PathBuf,
    pub error: String,
}

/// The generated corpus, in memory.
pub struct Generation {
    pub units: Vec<Unit>,
    pub failures: Vec<GenFailure>,
    pub warnings: Vec<String>,
    /// Project -> number of CRD files.
    pub files: BTreeMap<String, usize>,
}

/// Renders every CRD file of `dir/crds/<project>/` in single-file mode, one unit per file, with
/// the outputs `emit` asks for.
pub fn generate(dir: &Path, only: &[String], emit: kube_codegen::Emit) -> Result<Generation> {
    let crds = dir.join("crds");
    let mut generation = Generation {
        units: Vec::new(),
        failures: Vec::new(),
        warnings: Vec::new(),
        files: BTreeMap::new(),
    };
    let mut jobs = Vec::new();
    for project_dir in
        paths::subdirs(&crds).with_context(|| format!("listing {}", crds.display()))?
    {
        let project = paths::stem(&project_dir);
        if !only.is_empty() && !only.contains(&project) {
            continue;
        }
        let files = paths::crd_files(&project_dir)?;
        generation.files.insert(project.clone(), files.len());
        jobs.extend(files.into_iter().map(|file| (project.clone(), file)));
    }
    let files: Vec<&Path> = jobs.iter().map(|(_, f)| f.as_path()).collect();
    let options = kube_codegen::Options {
        single_file: Some("lib.rs".into()),
        emit,
        ..Default::default()
    };
    let rendered = render_all(&files, &options, available_threads());
    let mut taken = BTreeSet::new();
    for ((project, file), result) in jobs.into_iter().zip(rendered) {
        match result.and_then(single_file_code) {
            Ok((code, generated)) => {
                generation.warnings.extend(generated.warnings);
                let module = scratch::module_name(&project, &file, &mut taken);
                generation.units.push(Unit {
                    project,
                    lines: code.lines().count(),
                    code,
                    file,
                    module,
                    resources: generated.resources,
                });
            }
            Err(error) => generation.failures.push(GenFailure {
                project,
                file,
                error,
            }),
        }
    }
    Ok(generation)
}

pub fn available_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

type Rendered = Result<kube_codegen::Generated, String>;

/// Renders every file with `options` on up to `threads` threads; results in input order. A generator panic is
/// that file's generation error, not the end of the run.
pub fn render_all(
    files: &[&Path],
    options: &kube_codegen::Options,
    threads: usize,
) -> Vec<Rendered> {
    let threads = threads.clamp(1, files.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut results: Vec<(usize, Rendered)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(file) = files.get(i) else { break done };
                        let result = std::panic::catch_unwind(|| {
                            kube_codegen::Builder::new()
                                .input(file)
                                .options(options.clone())
                                .render()
                                .map_err(|e| e.to_string())
                        })
                        .unwrap_or_else(|p| {
                            Err(format!("generator panicked: {}", panic_text(&*p)))
                        });
                        done.push((i, result));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, r)| r).collect()
}

/// The round-trip runner of each crate: the type paths its samples decode into, leaving out the
/// units in `failed`.
fn runners_for(
    samples: &cases::Samples,
    unit_crate: &BTreeMap<usize, usize>,
    failed: &BTreeMap<usize, String>,
) -> BTreeMap<usize, BTreeSet<String>> {
    let mut runners: BTreeMap<usize, BTreeSet<String>> = BTreeMap::new();
    for case in samples
        .cases
        .iter()
        .filter(|c| !failed.contains_key(&c.unit))
    {
        runners
            .entry(unit_crate[&case.unit])
            .or_default()
            .insert(case.type_path.clone());
    }
    runners
}

/// Compiles the scratch crates; when errors point into generated files, takes those files out
/// of their crates and compiles again, so one bad file costs only its own compile and round
/// trips, not those of every file packed beside it.
fn compile_isolating_failures(
    root: &Path,
    units: &[Unit],
    conversions: &BTreeMap<String, String>,
    crates: &mut [scratch::CrateSpec],
    samples: &cases::Samples,
    unit_crate: &BTreeMap<usize, usize>,
    jobs: Option<usize>,
) -> Result<cargo::BuildOutcome> {
    let runners = runners_for(samples, unit_crate, &BTreeMap::new());
    let first = cargo::compile(root, crates, &runners, jobs)?;
    let mut failed: BTreeMap<usize, String> = BTreeMap::new();
    for e in &first.errors {
        if let Some(u) = crates[e.krate]
            .units
            .iter()
            .copied()
            .find(|&u| e.is_in_module(&units[u].module))
        {
            failed.entry(u).or_insert_with(|| e.rendered.clone());
        }
    }
    if failed.is_empty() {
        return Ok(first);
    }
    eprintln!(
        "corpus: {} generated file(s) failed to compile; compiling their crates again without them",
        failed.len()
    );
    for spec in crates.iter_mut() {
        spec.units.retain(|u| !failed.contains_key(u));
    }
    let runners = runners_for(samples, unit_crate, &failed);
    scratch::write_workspace(
        root,
        units,
        crates,
        &Extras {
            runners: &runners,
            conversions,
            warmup: false,
        },
    )?;
    let mut second = cargo::compile(root, crates, &runners, jobs)?;
    // The report lists the errors of the taken-out files from the first pass, then whatever
    // the second pass still found.
    let mut errors: Vec<cargo::CompileError> = first
        .errors
        .into_iter()
        .filter(|e| failed.keys().any(|&u| e.is_in_module(&units[u].module)))
        .collect();
    errors.append(&mut second.errors);
    second.errors = errors;
    second.failed_units = failed;
    Ok(second)
}

/// Type path of every resource with a generated conversion -> the conversion's path.
fn conversion_paths(units: &[Unit]) -> BTreeMap<String, String> {
    units
        .iter()
        .flat_map(|u| {
            u.resources.iter().filter_map(move |r| {
                let c = r.conversion.as_ref()?;
                Some((u.type_path(r), format!("{}::{c}", u.module)))
            })
        })
        .collect()
}

fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "<non-string panic>".into())
}

/// The one file of a single-file render.
fn single_file_code(
    mut generated: kube_codegen::Generated,
) -> Result<(String, kube_codegen::Generated), String> {
    let files = std::mem::take(&mut generated.files);
    if files.len() != 1 {
        return Err(format!(
            "single-file mode produced {} files instead of one",
            files.len()
        ));
    }
    let code = files.into_values().next().unwrap_or_default();
    Ok((code, generated))
}

pub fn run(args: &Args) -> Result<ExitCode> {
    let started = Instant::now();
    let root = paths::repo_root().join("target/corpus");

    let generation = generate(&args.dir, &args.projects, kube_codegen::Emit::ALL)?;
    let gen_time = started.elapsed();
    let samples = cases::collect(&args.dir, &generation.units, &args.projects)?;
    // Units some sample round-trips through are built (a runner links them); the rest only need `cargo check`,
    // so they are packed into crates of their own.
    let sampled: BTreeSet<usize> = samples.cases.iter().map(|c| c.unit).collect();
    let (with, without): (Vec<usize>, Vec<usize>) =
        (0..generation.units.len()).partition(|u| sampled.contains(u));
    let mut crates = scratch::pack(&generation.units, &[with, without], args.max_lines);
    let unit_crate: BTreeMap<usize, usize> = crates
        .iter()
        .enumerate()
        .flat_map(|(c, spec)| spec.units.iter().map(move |&u| (u, c)))
        .collect();
    let runners = runners_for(&samples, &unit_crate, &BTreeMap::new());
    let conversions = conversion_paths(&generation.units);
    scratch::write_workspace(
        &root,
        &generation.units,
        &crates,
        &Extras {
            runners: &runners,
            conversions: &conversions,
            warmup: false,
        },
    )?;
    let lines: usize = generation.units.iter().map(|u| u.lines).sum();
    eprintln!(
        "corpus: generated {} files ({} lines) in {:.1}s into {} crates ({} with round-trip runners); compiling...",
        generation.units.len(),
        lines,
        gen_time.as_secs_f64(),
        crates.len(),
        runners.len()
    );

    let compile_started = Instant::now();
    let build = compile_isolating_failures(
        &root,
        &generation.units,
        &conversions,
        &mut crates,
        &samples,
        &unit_crate,
        args.jobs,
    )?;
    let compile_time = compile_started.elapsed();

    let run_started = Instant::now();
    let results = cases::run(&root, &crates, &unit_crate, &samples, &build)?;
    let run_time = run_started.elapsed();

    let report_ok = report::print(
        &generation,
        &crates,
        &build,
        &samples,
        &results.verdicts,
        &results.generated,
        &root.join("compile-errors.txt"),
    );
    println!(
        "corpus: wall {:.1}s (generate {:.1}s, compile {:.1}s, round trips {:.1}s)",
        started.elapsed().as_secs_f64(),
        gen_time.as_secs_f64(),
        compile_time.as_secs_f64(),
        run_time.as_secs_f64()
    );
    let conversion_ok = report::conversions(
        &generation,
        &crates,
        &build,
        &samples,
        &results.conversions,
        &results.verdicts,
    );
    let standalone_ok = standalone::check(&args.dir, &args.projects)?;
    Ok(if report_ok && standalone_ok && conversion_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(module: &str, code: &str) -> Unit {
        Unit {
            project: "demo".into(),
            file: PathBuf::from(format!("crds/demo/{module}.yaml")),
            module: module.into(),
            code: code.into(),
            lines: code.lines().count(),
            resources: Vec::new(),
        }
    }

    /// One generated file that does not compile, packed into a crate beside good ones: it is
    /// reported as failed (file and first error), the project's compile column says so, and
    /// the other files of the crate still compile. The scratch workspace is its own, not the
    /// corpus run's: CI runs the corpus check beside the tests.
    #[test]
    fn a_file_that_fails_to_compile_is_reported_and_isolated() {
        let root = paths::repo_root().join("target/corpus-selftest");
        let units = vec![
            unit("demo_good_a", "pub struct A;\n"),
            unit("demo_broken", "pub struct B(pub NoSuchType);\n"),
            unit("demo_good_c", "pub struct C;\n"),
        ];
        let mut crates = scratch::pack(&units, &[vec![0, 1, 2]], 40_000);
        assert_eq!(crates.len(), 1, "all three share one crate");
        // The units use nothing: building kube and k8s-openapi for them took CI 150 s.
        crates[0].bare = true;
        let samples = cases::Samples {
            cases: Vec::new(),
            stats: BTreeMap::new(),
        };
        let unit_crate: BTreeMap<usize, usize> = (0..3).map(|u| (u, 0)).collect();
        scratch::write_workspace(
            &root,
            &units,
            &crates,
            &Extras {
                conversions: &BTreeMap::new(),
                runners: &BTreeMap::new(),
                warmup: false,
            },
        )
        .unwrap();
        let build = compile_isolating_failures(
            &root,
            &units,
            &BTreeMap::new(),
            &mut crates,
            &samples,
            &unit_crate,
            None,
        )
        .unwrap();
        assert_eq!(build.failed_units.keys().copied().collect::<Vec<_>>(), [1]);
        assert!(
            build.failed_units[&1].contains("NoSuchType"),
            "{:?}",
            build.failed_units
        );
        assert_eq!(
            build.crate_ok,
            [true],
            "the good files compiled on their own"
        );
        assert_eq!(crates[0].units, [0, 2]);

        let generation = Generation {
            units,
            failures: Vec::new(),
            warnings: Vec::new(),
            files: BTreeMap::from([("demo".to_string(), 3)]),
        };
        let (text, ok) = report::render(
            &generation,
            &crates,
            &build,
            &samples,
            &[],
            &[],
            &root.join("selftest-errors.txt"),
        );
        assert!(!ok, "{text}");
        let row = text
            .lines()
            .find(|l| l.starts_with("demo "))
            .unwrap_or_else(|| panic!("{text}"));
        assert!(row.contains("FAIL 1"), "{row}");
        assert!(
            text.contains("corpus: 2/3 CRD files generated and compiled"),
            "{text}"
        );
        assert!(
            text.lines().any(
                |l| l.starts_with("COMPILE FAILED crds/demo/demo_broken.yaml: error")
                    && l.contains("NoSuchType")
            ),
            "{text}"
        );
    }
}
