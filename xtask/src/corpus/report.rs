//! The per-project table, totals and failure details of a corpus run.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use kube_fake_apiserver::structural::{Cause, validate};
use xtask::roundtrip::Verdict;

use super::Generation;
use super::cargo::BuildOutcome;
use super::cases::Samples;
use crate::scratch::CrateSpec;

#[derive(Default, Clone)]
struct Row {
    files: usize,
    gen_errors: usize,
    versions: usize,
    compile_failed: usize,
    docs: usize,
    matched: usize,
    cases: usize,
    ok: usize,
    pruned: usize,
    defaulted: usize,
    rejected: usize,
    failed: usize,
}

/// Prints the report; returns whether everything passed. Full compiler output goes to `errors_file`.
pub fn print(
    generation: &Generation,
    crates: &[CrateSpec],
    build: &BuildOutcome,
    samples: &Samples,
    verdicts: &[Verdict],
    generated: &[Option<Vec<Cause>>],
    errors_file: &std::path::Path,
) -> bool {
    let (text, ok) = render(
        generation,
        crates,
        build,
        samples,
        verdicts,
        generated,
        errors_file,
    );
    print!("{text}");
    ok
}

/// The report as text, and whether everything passed.
pub fn render(
    generation: &Generation,
    crates: &[CrateSpec],
    build: &BuildOutcome,
    samples: &Samples,
    verdicts: &[Verdict],
    generated: &[Option<Vec<Cause>>],
    errors_file: &std::path::Path,
) -> (String, bool) {
    let mut out = String::new();
    let mut rows: BTreeMap<String, Row> = BTreeMap::new();
    for (project, files) in &generation.files {
        rows.entry(project.clone()).or_default().files = *files;
    }
    for failure in &generation.failures {
        rows.entry(failure.project.clone()).or_default().gen_errors += 1;
    }
    // A file fails to compile when an error points into it, or its crate failed with errors elsewhere.
    for (c, spec) in crates.iter().enumerate() {
        let unattributed = build
            .errors
            .iter()
            .any(|e| e.krate == c && e.file.is_none());
        for &u in &spec.units {
            let unit = &generation.units[u];
            let row = rows.entry(unit.project.clone()).or_default();
            row.versions += unit.resources.len();
            let own = build
                .errors
                .iter()
                .any(|e| e.krate == c && e.is_in_module(&unit.module));
            if own || (!build.crate_ok[c] && unattributed) {
                row.compile_failed += 1;
            }
        }
    }
    // Files taken out of their crates after failing to compile.
    for &u in build.failed_units.keys() {
        let unit = &generation.units[u];
        let row = rows.entry(unit.project.clone()).or_default();
        row.versions += unit.resources.len();
        row.compile_failed += 1;
    }
    for (project, stats) in &samples.stats {
        let row = rows.entry(project.clone()).or_default();
        row.docs = stats.docs;
        row.matched = stats.matched;
        row.pruned = stats.pruned;
        row.defaulted = stats.defaulted;
    }
    // A failed round trip of a sample the server's validation would reject (so it is never stored) is excused,
    // and listed with the server's reasons; a sample that round-trips counts whatever validation says.
    // What the server's validation says of every stored sample (the same validator generated
    // `validate()` calls, reached through the server's module).
    let server: Vec<Vec<Cause>> = samples
        .cases
        .iter()
        .map(|case| {
            validate(
                &generation.units[case.unit].resources[case.resource].schema,
                &case.stored.value,
            )
        })
        .collect();
    let rejections: Vec<Vec<Cause>> = server
        .iter()
        .zip(verdicts)
        .map(|(causes, verdict)| match verdict {
            Verdict::Match => Vec::new(),
            _ => causes.clone(),
        })
        .collect();
    for ((case, verdict), causes) in samples.cases.iter().zip(verdicts).zip(&rejections) {
        let row = rows.entry(case.project.clone()).or_default();
        row.cases += 1;
        match verdict {
            Verdict::Match => row.ok += 1,
            _ if !causes.is_empty() => row.rejected += 1,
            _ => row.failed += 1,
        }
    }

    let _ = writeln!(
        out,
        "{:<28} {:>5} {:>6} {:>8} {:>8} {:>5} {:>7} {:>5} {:>5} {:>6} {:>9} {:>8} {:>6}",
        "project",
        "files",
        "generr",
        "versions",
        "compile",
        "docs",
        "matched",
        "cases",
        "ok",
        "pruned",
        "defaulted",
        "rejected",
        "failed"
    );
    let mut total = Row::default();
    for (project, row) in &rows {
        print_row(&mut out, project, row);
        total.files += row.files;
        total.gen_errors += row.gen_errors;
        total.versions += row.versions;
        total.compile_failed += row.compile_failed;
        total.docs += row.docs;
        total.matched += row.matched;
        total.cases += row.cases;
        total.ok += row.ok;
        total.pruned += row.pruned;
        total.defaulted += row.defaulted;
        total.rejected += row.rejected;
        total.failed += row.failed;
    }
    print_row(&mut out, "TOTAL", &total);
    let compiled = total.files - total.gen_errors - total.compile_failed;
    let _ = writeln!(
        out,
        "corpus: {compiled}/{} CRD files generated and compiled, {} versions; {}/{} round trips ok, {} more \
         excused as samples a server rejects ({} sample objects matched of {}, {} needed pruning, {} got defaults)",
        total.files,
        total.versions,
        total.ok,
        total.cases,
        total.rejected,
        total.matched,
        total.docs,
        total.pruned,
        total.defaulted
    );

    for failure in &generation.failures {
        let _ = writeln!(
            out,
            "GENERATION ERROR {}: {}",
            failure.file.display(),
            failure.error
        );
    }
    for (&u, first_error) in &build.failed_units {
        let first_line = first_error.lines().next().unwrap_or_default();
        let _ = writeln!(
            out,
            "COMPILE FAILED {}: {first_line}",
            generation.units[u].file.display()
        );
    }
    if !build.errors.is_empty() {
        let mut all = String::new();
        for e in &build.errors {
            let _ = writeln!(all, "[{}] {}", crates[e.krate].name, e.rendered);
        }
        let _ = std::fs::write(errors_file, &all);
        let _ = writeln!(
            out,
            "COMPILE ERRORS: {} (all of them in {})",
            build.errors.len(),
            errors_file.display()
        );
        for e in build.errors.iter().take(15) {
            let _ = writeln!(out, "[{}] {}", crates[e.krate].name, e.rendered.trim_end());
        }
    }
    for unreadable in samples.stats.values().flat_map(|s| &s.unreadable) {
        let _ = writeln!(out, "UNREADABLE SAMPLE (skipped) {unreadable}");
    }
    for ((case, verdict), causes) in samples.cases.iter().zip(verdicts).zip(&rejections) {
        let why = match verdict {
            Verdict::Match => continue,
            Verdict::Mismatch(d) => format!("mismatch {d}"),
            Verdict::DecodeError(e) => e.clone(),
        };
        let unit = &generation.units[case.unit];
        let label = if causes.is_empty() {
            "ROUND TRIP FAILED"
        } else {
            "REJECTED SAMPLE (a server refuses it)"
        };
        let _ = writeln!(
            out,
            "{label} {}#{} ({}) as {} [{}]: {why}",
            case.sample.display(),
            case.doc,
            case.name,
            case.type_path,
            unit.file.file_name().unwrap_or_default().to_string_lossy()
        );
        for cause in causes.iter().take(5) {
            let _ = writeln!(
                out,
                "    {} {}: {}",
                cause.reason, cause.field, cause.message
            );
        }
    }
    // Generated `validate()` beside the server, on every sample both judged.
    let (mut compared, mut refused) = (0, 0);
    let mut disagreements = 0;
    for ((case, theirs), ours) in samples.cases.iter().zip(&server).zip(generated) {
        let Some(ours) = ours else { continue };
        compared += 1;
        let sorted = |c: &[Cause]| {
            let mut v: Vec<String> = c.iter().map(|c| format!("{} {c}", c.reason)).collect();
            v.sort();
            v
        };
        if sorted(ours) == sorted(theirs) {
            if let Some(first) = ours.first() {
                refused += 1;
                let _ = writeln!(
                    out,
                    "REFUSED BY VALIDATION {}#{} ({}): {} {first} ({} causes)",
                    case.sample.display(),
                    case.doc,
                    case.name,
                    first.reason,
                    ours.len()
                );
            }
            continue;
        }
        disagreements += 1;
        let _ = writeln!(
            out,
            "VALIDATION DISAGREES {}#{} ({}) as {}: generated validate() {:?}, server {:?}",
            case.sample.display(),
            case.doc,
            case.name,
            case.type_path,
            sorted(ours),
            sorted(theirs)
        );
    }
    let not_judged = samples.cases.len() - compared;
    let _ = writeln!(
        out,
        "corpus: validation of {compared} samples: generated validate() and the server agree on {} \
         ({refused} refused by both, listed above); {not_judged} not judged by validate() (their \
         type did not decode or compile, see above)",
        compared - disagreements
    );
    let ok =
        total.gen_errors == 0 && build.errors.is_empty() && total.failed == 0 && disagreements == 0;
    (out, ok)
}

fn print_row(out: &mut String, project: &str, row: &Row) {
    let compile = if row.compile_failed == 0 {
        "ok".to_string()
    } else {
        format!("FAIL {}", row.compile_failed)
    };
    let _ = writeln!(
        out,
        "{:<28} {:>5} {:>6} {:>8} {:>8} {:>5} {:>7} {:>5} {:>5} {:>6} {:>9} {:>8} {:>6}",
        project,
        row.files,
        row.gen_errors,
        row.versions,
        compile,
        row.docs,
        row.matched,
        row.cases,
        row.ok,
        row.pruned,
        row.defaulted,
        row.rejected,
        row.failed
    );
}

/// The generated conversions: how many multi-version CRDs got one and compiled, and every
/// sample of such a kind converted to each of its versions and back (`cases::run`). Any loss
/// or error fails the run.
pub fn conversions(
    generation: &Generation,
    crates: &[crate::scratch::CrateSpec],
    build: &BuildOutcome,
    samples: &Samples,
    results: &[Option<serde_json::Map<String, serde_json::Value>>],
    verdicts: &[Verdict],
) -> bool {
    // A unit did not compile when it was taken out of its crate, or its crate failed anyway.
    let crate_failed: std::collections::BTreeSet<usize> = crates
        .iter()
        .enumerate()
        .filter(|(c, _)| !build.crate_ok.get(*c).copied().unwrap_or(true))
        .flat_map(|(_, spec)| spec.units.iter().copied())
        .collect();
    let mut kinds = std::collections::BTreeSet::new();
    let mut failed_kinds = 0;
    for (u, unit) in generation.units.iter().enumerate() {
        for r in &unit.resources {
            if let Some(c) = &r.conversion
                && kinds.insert((u, c.clone()))
                && (build.failed_units.contains_key(&u) || crate_failed.contains(&u))
            {
                failed_kinds += 1;
            }
        }
    }
    let (mut cases, mut trips, mut unchecked) = (0, 0, Vec::new());
    let mut problems = Vec::new();
    for (i, (case, result)) in samples.cases.iter().zip(results).enumerate() {
        let unit = &generation.units[case.unit];
        if unit.resources[case.resource].conversion.is_none() {
            continue;
        }
        cases += 1;
        let Some(result) = result else {
            match &verdicts[i] {
                // Not decodable as its type: the round-trip report counts it (and the corpus
                // check already knows which of those a real server refuses too).
                Verdict::DecodeError(reason) => unchecked.push(reason.as_str()),
                // Decoded, yet the runner gave no conversion result: a check that did not run.
                _ => problems.push(format!(
                    "{} {} #{} ({}): decoded but not converted",
                    case.project,
                    case.sample.display(),
                    case.doc,
                    case.name
                )),
            }
            continue;
        };
        for (version, verdict) in result {
            trips += 1;
            if !verdict.is_null() {
                let text = verdict
                    .as_str()
                    .map_or_else(|| verdict.to_string(), str::to_owned);
                problems.push(format!(
                    "{} {} #{} ({}) -> {version}: {text}",
                    case.project,
                    case.sample.display(),
                    case.doc,
                    case.name
                ));
            }
        }
    }
    println!(
        "conversion: {} multi-version CRDs with generated conversions, {} compiled; {} samples of their kinds, {} checked ({} round trips), {} problems, {} not checked (the sample did not decode as its type)",
        kinds.len(),
        kinds.len() - failed_kinds,
        cases,
        cases - unchecked.len(),
        trips,
        problems.len(),
        unchecked.len()
    );
    for reason in unchecked.iter().take(5) {
        let reason: String = reason.chars().take(200).collect();
        println!("  conversion: not checked: {reason}");
    }
    for p in problems.iter().take(20) {
        let p: String = p.chars().take(600).collect();
        println!("  conversion: {p}");
    }
    if problems.len() > 20 {
        println!("  conversion: ... and {} more", problems.len() - 20);
    }
    problems.is_empty() && failed_kinds == 0
}
