//! Samples -> round-trip cases (every generated type whose apiVersion/kind matches), and running them through the
//! scratch crates' runner binaries.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};
use kube_fake_apiserver::structural::Cause;
use serde_json::Value;
use xtask::documents;
use xtask::roundtrip::{self, Stored, Verdict};

use super::cargo::BuildOutcome;
use crate::paths;
use crate::scratch::{CrateSpec, Unit};

pub struct Case {
    pub project: String,
    pub sample: PathBuf,
    /// Index of the object within its sample file (after flattening lists).
    pub doc: usize,
    pub name: String,
    pub unit: usize,
    /// Index into the unit's resources.
    pub resource: usize,
    pub type_path: String,
    pub stored: Stored,
}

#[derive(Default)]
pub struct SampleStats {
    pub files: usize,
    pub docs: usize,
    pub matched: usize,
    pub pruned: usize,
    pub defaulted: usize,
    pub unreadable: Vec<String>,
}

pub struct Samples {
    pub cases: Vec<Case>,
    pub stats: BTreeMap<String, SampleStats>,
}

pub fn collect(dir: &Path, units: &[Unit], only: &[String]) -> Result<Samples> {
    let mut samples = Samples {
        cases: Vec::new(),
        stats: BTreeMap::new(),
    };
    let root = dir.join("samples");
    if !root.is_dir() {
        return Ok(samples);
    }
    for project_dir in paths::subdirs(&root)? {
        let project = paths::stem(&project_dir);
        if !only.is_empty() && !only.contains(&project) {
            continue;
        }
        let stats = samples.stats.entry(project.clone()).or_default();
        for file in paths::crd_files(&project_dir)? {
            stats.files += 1;
            let docs = match documents::load(&file) {
                Ok(docs) => docs,
                Err(e) => {
                    stats.unreadable.push(format!("{}: {e:#}", file.display()));
                    continue;
                }
            };
            for (doc_index, doc) in docs.into_iter().enumerate() {
                stats.docs += 1;
                let Some((api_version, kind)) = documents::api_version_kind(&doc) else {
                    continue;
                };
                let mut matched = false;
                let (mut pruned, mut defaulted) = (false, false);
                for (u, unit) in units
                    .iter()
                    .enumerate()
                    .filter(|(_, u)| u.project == project)
                {
                    for (r, res) in unit.resources.iter().enumerate() {
                        if res.kind != kind || api_version_of(res) != api_version {
                            continue;
                        }
                        let stored = roundtrip::stored_form(&res.schema, &doc);
                        matched = true;
                        pruned |= stored.pruned;
                        defaulted |= stored.defaulted;
                        samples.cases.push(Case {
                            project: project.clone(),
                            sample: file.clone(),
                            doc: doc_index,
                            name: documents::object_name(&doc),
                            unit: u,
                            resource: r,
                            type_path: unit.type_path(res),
                            stored,
                        });
                    }
                }
                stats.matched += usize::from(matched);
                stats.pruned += usize::from(pruned);
                stats.defaulted += usize::from(defaulted);
            }
        }
    }
    Ok(samples)
}

fn api_version_of(res: &kube_codegen::ResourceInfo) -> String {
    if res.group.is_empty() {
        res.version.clone()
    } else {
        format!("{}/{}", res.group, res.version)
    }
}

/// What the runners said of the cases, in case order.
pub struct Results {
    /// The round trip's verdict per case.
    pub verdicts: Vec<Verdict>,
    /// The causes the generated `validate()` gave per case (`None`: the case did not run).
    pub generated: Vec<Option<Vec<Cause>>>,
    /// Per case of a kind with generated conversions: version -> `null` (converted there and
    /// back with nothing lost) or what went wrong.
    pub conversions: Vec<Option<serde_json::Map<String, Value>>>,
}

/// Runs every case through its crate's runner and judges the output, in case order.
pub fn run(
    root: &Path,
    crates: &[CrateSpec],
    unit_crate: &BTreeMap<usize, usize>,
    samples: &Samples,
    build: &BuildOutcome,
) -> Result<Results> {
    let mut verdicts: Vec<Option<Verdict>> = vec![None; samples.cases.len()];
    let mut generated: Vec<Option<Vec<Cause>>> = vec![None; samples.cases.len()];
    let mut conversions: Vec<Option<serde_json::Map<String, Value>>> =
        vec![None; samples.cases.len()];
    let mut by_crate: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (i, case) in samples.cases.iter().enumerate() {
        by_crate.entry(unit_crate[&case.unit]).or_default().push(i);
    }
    std::fs::create_dir_all(root.join("cases"))?;
    for (krate, mut indices) in by_crate {
        let spec = &crates[krate];
        indices.retain(|&i| {
            let unit = samples.cases[i].unit;
            if build.failed_units.contains_key(&unit) {
                verdicts[i] = Some(Verdict::DecodeError(
                    "its generated file did not compile".into(),
                ));
                return false;
            }
            true
        });
        if indices.is_empty() {
            continue;
        }
        if !build.crate_ok[krate] {
            for i in indices {
                verdicts[i] = Some(Verdict::DecodeError(format!(
                    "{} did not compile",
                    spec.name
                )));
            }
            continue;
        }
        let input: Vec<(&str, &Value)> = indices
            .iter()
            .map(|&i| {
                (
                    samples.cases[i].type_path.as_str(),
                    &samples.cases[i].stored.value,
                )
            })
            .collect();
        let cases_file = root.join("cases").join(format!("{}.json", spec.name));
        std::fs::write(&cases_file, serde_json::to_vec(&input)?)?;
        let output = Command::new(root.join("target/debug").join(&spec.name))
            .arg(&cases_file)
            .output()
            .with_context(|| format!("running the {} round-trip runner", spec.name))?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        let mut lines = stdout.lines();
        for i in indices {
            let verdict = match lines.next().map(serde_json::from_str::<Value>) {
                Some(Ok(mut line)) => {
                    if let Some(Value::Object(c)) = line.get_mut("conversion").map(Value::take) {
                        conversions[i] = Some(c);
                    }
                    generated[i] = line.get("causes").and_then(Value::as_array).map(|list| {
                        list.iter()
                            .map(|c| {
                                let part = |k: usize| c[k].as_str().unwrap_or_default();
                                Cause::new(part(0), part(1), part(2))
                            })
                            .collect()
                    });
                    let result = match (line.get_mut("ok").map(Value::take), line.get("err")) {
                        (Some(v), _) => Ok(v),
                        (None, Some(e)) => Err(e.as_str().unwrap_or_default().to_string()),
                        (None, None) => Err(format!("runner printed {line}")),
                    };
                    roundtrip::judge(&samples.cases[i].stored.value, result)
                }
                Some(Err(e)) => Verdict::DecodeError(format!("unreadable runner output: {e}")),
                None => Verdict::DecodeError(format!(
                    "runner stopped ({}): {}",
                    output.status,
                    String::from_utf8_lossy(&output.stderr)
                        .lines()
                        .last()
                        .unwrap_or_default()
                )),
            };
            verdicts[i] = Some(verdict);
        }
    }
    Ok(Results {
        verdicts: verdicts
            .into_iter()
            .map(|v| v.unwrap_or_else(|| Verdict::DecodeError("not run".into())))
            .collect(),
        generated,
        conversions,
    })
}
