//! Every `testdata/samples/<stem>/*.yaml` object deserializes into the generated type for its apiVersion/kind
//! (from `testdata/golden/<stem>.rs`) and serializes back to the JSON a real API server would store (the sample
//! pruned by that version's schema). Same checks as `cargo xtask corpus`, from `xtask::roundtrip`.
#![allow(deprecated)] // deprecated CRD versions are generated as #[deprecated] types and tested all the same

use std::path::{Path, PathBuf};

use serde_json::Value;
use xtask::documents;
use xtask::roundtrip::{self, Verdict};

mod testdata;
use testdata::{sorted, testdata};

type RoundTrip = fn(Value) -> Result<Value, String>;

include!(concat!(env!("OUT_DIR"), "/dispatch.rs"));

/// The CRD file for a samples directory.
fn crd_for(stem: &str) -> Option<PathBuf> {
    ["yaml", "yml", "json"]
        .iter()
        .map(|e| testdata().join(format!("crds/{stem}.{e}")))
        .find(|p| p.is_file())
}

/// Round-trips every sample of one CRD; returns (objects round-tripped, of which pruned) or the failures.
fn check_samples(dir: &Path) -> Result<(usize, usize), Vec<String>> {
    let stem = dir
        .file_name()
        .expect("dir name")
        .to_string_lossy()
        .into_owned();
    let crd = crd_for(&stem)
        .ok_or_else(|| vec![format!("samples/{stem} has no testdata/crds/{stem}.*")])?;
    if STALE.contains(&stem.as_str()) {
        return Err(vec![format!(
            "golden of {stem} is missing or stale; run `cargo xtask bless`"
        )]);
    }
    let text = std::fs::read_to_string(&crd).expect("reading the CRD");
    let mut options = kube_codegen::Options::from_args(&golden_tests::header::flags(&text))
        .expect("header flags");
    options.single_file = Some("golden.rs".into());
    let generated = kube_codegen::Builder::new()
        .input(&crd)
        .options(options)
        .render()
        .expect("the CRD renders");
    let groups: Vec<&str> = generated
        .resources
        .iter()
        .map(|r| r.group.as_str())
        .collect();

    let (mut done, mut pruned, mut failures) = (0, 0, Vec::new());
    for file in sorted(dir) {
        let docs = documents::load(&file).map_err(|e| vec![format!("{e:#}")])?;
        for (i, doc) in docs.iter().enumerate() {
            let place = format!("{}#{i} ({})", file.display(), documents::object_name(doc));
            let Some((api_version, kind)) = documents::api_version_kind(doc) else {
                failures.push(format!("{place}: no apiVersion/kind"));
                continue;
            };
            let resource = generated
                .resources
                .iter()
                .find(|r| format!("{}/{}", r.group, r.version) == api_version && r.kind == kind);
            let Some(resource) = resource else {
                // Objects of other groups (a ConfigMap beside the custom resources) are not ours to check.
                if groups
                    .iter()
                    .any(|g| api_version.starts_with(&format!("{g}/")))
                {
                    failures.push(format!(
                        "{place}: no generated type for {api_version} {kind}"
                    ));
                }
                continue;
            };
            let Some(typed) = RESOURCES
                .iter()
                .find(|r| r.0 == stem && r.1 == api_version && r.2 == kind)
                .map(|r| r.3)
            else {
                failures.push(format!(
                    "{place}: {api_version} {kind} missing from the dispatch table"
                ));
                continue;
            };
            let stored = roundtrip::stored_form(&resource.schema, doc);
            pruned += usize::from(stored.pruned);
            match roundtrip::judge(&stored.value, typed(stored.value.clone())) {
                Verdict::Match => done += 1,
                Verdict::Mismatch(d) => {
                    failures.push(format!("{place}: round trip changed the object {d}"))
                }
                Verdict::DecodeError(e) => failures.push(format!("{place}: {e}")),
            }
        }
    }
    if done == 0 && failures.is_empty() {
        failures.push(format!("samples/{stem} holds no object of its CRD"));
    }
    if failures.is_empty() {
        Ok((done, pruned))
    } else {
        Err(failures)
    }
}

#[test]
fn every_sample_round_trips() {
    let dirs: Vec<PathBuf> = sorted(&testdata().join("samples"))
        .into_iter()
        .filter(|p| p.is_dir())
        .collect();
    assert!(
        dirs.len() >= 20,
        "expected samples for the testdata CRDs, found {}",
        dirs.len()
    );
    let (mut objects, mut pruned, mut failures) = (0, 0, Vec::new());
    for dir in &dirs {
        match check_samples(dir) {
            Ok((n, p)) => {
                objects += n;
                pruned += p;
            }
            Err(f) => failures.extend(f),
        }
    }
    println!(
        "{objects} objects in {} sample directories round-tripped ({pruned} needed pruning)",
        dirs.len()
    );
    assert!(
        failures.is_empty(),
        "{} round-trip failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_resource_of_a_fresh_golden_is_dispatchable() {
    // The table comes from the generator's ResourceInfo; an empty one would make the round trip vacuous.
    assert!(
        RESOURCES.len() >= 20,
        "only {} resources in the dispatch table",
        RESOURCES.len()
    );
}

#[test]
fn a_changed_object_is_caught() {
    let (_, _, _, typed) = RESOURCES
        .iter()
        .find(|r| r.2 == "Widget")
        .expect("basic-v1 Widget");
    let sample = serde_json::json!({
        "apiVersion": "basics.example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
        "spec": {"image": "x", "replicas": 1}
    });
    let mut expected = sample.clone();
    expected["spec"]["replicas"] = 2.into();
    assert!(matches!(
        roundtrip::judge(&expected, typed(sample.clone())),
        Verdict::Mismatch(_)
    ));
    let mut wrong_type = sample;
    wrong_type["spec"]["replicas"] = "one".into();
    assert!(typed(wrong_type).is_err());
}
