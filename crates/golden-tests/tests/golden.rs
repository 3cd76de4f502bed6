//! Every `testdata/crds/<stem>.*` renders (`kube_codegen::render_golden`) to exactly `testdata/golden/<stem>.rs`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata")
}

fn files(dir: &Path, exts: &[&str]) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| {
            p.extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| exts.contains(&e))
        })
        .collect();
    files.sort();
    files
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .expect("file name")
        .to_string_lossy()
        .into_owned()
}

/// The difference between a golden and the generator's output, or `None` when they are identical.
fn golden_problem(crd: &Path) -> Option<String> {
    let golden = testdata().join("golden").join(format!("{}.rs", stem(crd)));
    let rendered = match kube_codegen::render_golden(crd) {
        Ok(text) => text,
        Err(e) => return Some(format!("{}: generation failed: {e}", crd.display())),
    };
    let Ok(expected) = std::fs::read_to_string(&golden) else {
        return Some(format!(
            "{}: no golden file {}",
            crd.display(),
            golden.display()
        ));
    };
    if expected == rendered {
        return None;
    }
    let diff = similar::TextDiff::from_lines(&expected, &rendered);
    let unified = diff
        .unified_diff()
        .context_radius(3)
        .header(&format!("testdata/golden/{}.rs", stem(crd)), "generated")
        .to_string();
    Some(format!(
        "{} differs from its golden:\n{unified}",
        crd.display()
    ))
}

#[test]
fn every_golden_matches_the_generator() {
    let crds = files(&testdata().join("crds"), &["yaml", "yml", "json"]);
    assert!(
        crds.len() >= 20,
        "expected the testdata CRDs, found {}",
        crds.len()
    );
    let problems: Vec<String> = crds.iter().filter_map(|c| golden_problem(c)).collect();
    assert!(
        problems.is_empty(),
        "{} of {} goldens are out of date:\n\n{}\n\nrun `cargo xtask bless` and review the diff",
        problems.len(),
        crds.len(),
        problems.join("\n")
    );
}

#[test]
fn every_golden_has_a_crd_and_every_crd_a_golden() {
    let crds: BTreeSet<String> = files(&testdata().join("crds"), &["yaml", "yml", "json"])
        .iter()
        .map(|p| stem(p))
        .collect();
    let goldens: BTreeSet<String> = files(&testdata().join("golden"), &["rs"])
        .iter()
        .map(|p| stem(p))
        .collect();
    let orphans: Vec<_> = goldens.difference(&crds).collect();
    let missing: Vec<_> = crds.difference(&goldens).collect();
    assert!(
        orphans.is_empty() && missing.is_empty(),
        "goldens without a CRD: {orphans:?}; CRDs without a golden: {missing:?}; run `cargo xtask bless`"
    );
}

#[test]
fn a_changed_golden_is_reported_with_a_diff() {
    // The check above must be able to fail: render one CRD, alter a line, and diff it the same way.
    let crd = testdata().join("crds/basic-v1.yaml");
    let rendered = kube_codegen::render_golden(&crd).expect("basic-v1 renders");
    let altered = rendered.replacen("pub struct", "pub struct Changed", 1);
    let diff = similar::TextDiff::from_lines(&rendered, &altered)
        .unified_diff()
        .to_string();
    assert!(
        diff.contains("-") && diff.contains("+") && diff.contains("Changed"),
        "{diff}"
    );
}
