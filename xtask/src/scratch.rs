//! Scratch cargo workspaces holding generated corpus code, split into crates of bounded size (one rustc per crate
//! keeps memory bounded and lets cargo build them in parallel).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use kube_codegen::ResourceInfo;

use crate::paths::{self, write_if_changed};

/// The single-file output for one CRD file, placed as one module of a scratch crate.
pub struct Unit {
    pub project: String,
    pub file: PathBuf,
    /// Module name inside its scratch crate (unique across the corpus).
    pub module: String,
    pub code: String,
    pub lines: usize,
    pub resources: Vec<ResourceInfo>,
}

impl Unit {
    /// Rust path of a resource's root type inside its scratch crate.
    pub fn type_path(&self, res: &ResourceInfo) -> String {
        format!("{}::{}", self.module, res.rust_path)
    }
}

/// One scratch crate: a name and the indices of the units it holds.
pub struct CrateSpec {
    pub name: String,
    pub units: Vec<usize>,
    /// Without the generated code's dependencies: for self-tests whose units need none, so
    /// they do not build kube and k8s-openapi from scratch (minutes of CI).
    pub bare: bool,
}

impl CrateSpec {
    pub fn lib_name(&self) -> String {
        self.name.replace('-', "_")
    }
}

/// A module name for `project`/`file`, unique among `taken`.
pub fn module_name(project: &str, file: &Path, taken: &mut BTreeSet<String>) -> String {
    let raw = format!("{project}_{}", paths::stem(file));
    let mut base: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    while base.contains("__") {
        base = base.replace("__", "_");
    }
    let base = format!("m_{}", base.trim_matches('_'));
    let mut name = base.clone();
    let mut n = 2;
    while !taken.insert(name.clone()) {
        name = format!("{base}_{n}");
        n += 1;
    }
    name
}

/// Splits each group of units (indices, in order) into crates of at most `max_lines` lines; a crate never mixes
/// groups, and a unit bigger than the bound gets a crate of its own.
pub fn pack(units: &[Unit], groups: &[Vec<usize>], max_lines: usize) -> Vec<CrateSpec> {
    let mut crates: Vec<CrateSpec> = Vec::new();
    for group in groups {
        let mut lines = 0;
        let mut fresh = true;
        for &u in group {
            if fresh || lines + units[u].lines > max_lines {
                crates.push(CrateSpec {
                    name: format!("corpus-c{:02}", crates.len()),
                    units: Vec::new(),
                    bare: false,
                });
                lines = 0;
                fresh = false;
            }
            lines += units[u].lines;
            crates.last_mut().expect("pushed above").units.push(u);
        }
    }
    crates
}

/// Dependency lines for the scratch crates, taken verbatim from the repository's `[workspace.dependencies]` so
/// generated code is compiled against the same versions and features as the project.
fn dependency_lines() -> Result<String> {
    const NEEDED: [&str; 4] = ["serde", "serde_json", "k8s-openapi", "kube"];
    let manifest = std::fs::read_to_string(paths::repo_root().join("Cargo.toml"))?;
    let mut out = String::new();
    for name in NEEDED {
        let line = manifest
            .lines()
            .find(|l| l.split('=').next().is_some_and(|k| k.trim() == name))
            .with_context(|| format!("{name} missing from the root [workspace.dependencies]"))?;
        out.push_str(line.trim());
        out.push('\n');
    }
    // The runtime the clients, listers and informers link against: this repository's.
    let runtime = paths::repo_root().join("crates/kube-codegen-runtime");
    out.push_str(&format!(
        "kube-codegen-runtime = {{ path = {:?} }}\n",
        runtime.display().to_string()
    ));
    Ok(out)
}

/// What to write besides the libraries.
pub struct Extras<'a> {
    /// Per crate index: the type paths the round-trip runner binary dispatches to (no runner when absent).
    pub runners: &'a BTreeMap<usize, BTreeSet<String>>,
    /// Type path -> path of its kind's generated conversion (checked by the runner on every sample).
    pub conversions: &'a BTreeMap<String, String>,
    /// A `deps` crate that only links the dependencies, so they can be built before timing.
    pub warmup: bool,
}

/// Writes (only changed files) the scratch workspace at `root`; removes crates and modules from earlier runs.
pub fn write_workspace(
    root: &Path,
    units: &[Unit],
    crates: &[CrateSpec],
    extras: &Extras<'_>,
) -> Result<()> {
    std::fs::create_dir_all(root)?;
    let mut members: Vec<String> = crates.iter().map(|c| format!("\"{}\"", c.name)).collect();
    if extras.warmup {
        members.push("\"deps\"".into());
    }
    let deps = dependency_lines()?;
    write_if_changed(
        &root.join("Cargo.toml"),
        &format!(
            "# Scratch workspace written by `cargo xtask`; not part of the project.\n[workspace]\nresolver = \"3\"\n\
             members = [{}]\n\n[workspace.dependencies]\n{deps}\n[profile.dev]\ndebug = 0\nincremental = false\n\n\
             [profile.release]\ndebug = 0\nincremental = false\n",
            members.join(", ")
        ),
    )?;
    // Same lock file as the project: same versions, no registry resolution.
    let lock = std::fs::read_to_string(paths::repo_root().join("Cargo.lock"))?;
    write_if_changed(&root.join("Cargo.lock"), &lock)?;

    let wanted: BTreeSet<String> = crates.iter().map(|c| c.name.clone()).collect();
    for dir in paths::subdirs(root)? {
        let name = paths::stem(&dir);
        if name.starts_with("corpus-c") && !wanted.contains(&name) {
            std::fs::remove_dir_all(&dir)?;
        }
    }

    if extras.warmup {
        write_if_changed(&root.join("deps/Cargo.toml"), &package_toml("deps", false))?;
        write_if_changed(
            &root.join("deps/src/lib.rs"),
            "//! Links the scratch crates' dependencies so they build before the timed phase.\n\
             pub use k8s_openapi;\npub use kube;\npub use kube_codegen_runtime;\npub use serde;\npub use serde_json;\n",
        )?;
    }

    for (index, spec) in crates.iter().enumerate() {
        let dir = root.join(&spec.name);
        write_if_changed(
            &dir.join("Cargo.toml"),
            &package_toml(&spec.name, spec.bare),
        )?;
        let mut lib = String::from(
            "//! Generated corpus code (scratch crate written by `cargo xtask`).\n#![deny(warnings)]\n",
        );
        let mut modules = BTreeSet::new();
        for &u in &spec.units {
            let unit = &units[u];
            lib.push_str(&format!(
                "\n/// From `{}/{}`.\n#[path = \"gen/{}.rs\"]\npub mod {};\n",
                unit.project,
                unit.file.file_name().unwrap_or_default().to_string_lossy(),
                unit.module,
                unit.module
            ));
            write_if_changed(&dir.join(format!("src/gen/{}.rs", unit.module)), &unit.code)?;
            modules.insert(format!("{}.rs", unit.module));
        }
        write_if_changed(&dir.join("src/lib.rs"), &lib)?;
        if let Ok(entries) = std::fs::read_dir(dir.join("src/gen")) {
            for entry in entries {
                let path = entry?.path();
                if !modules.contains(
                    &path
                        .file_name()
                        .unwrap_or_default()
                        .to_string_lossy()
                        .into_owned(),
                ) {
                    std::fs::remove_file(&path)?;
                }
            }
        }
        let main = dir.join("src/main.rs");
        match extras.runners.get(&index) {
            Some(types) => {
                write_if_changed(
                    &main,
                    &runner_source(&spec.lib_name(), types, extras.conversions),
                )?;
            }
            None if main.exists() => std::fs::remove_file(&main)?,
            None => {}
        }
    }
    Ok(())
}

fn package_toml(name: &str, bare: bool) -> String {
    let deps = if bare {
        ""
    } else {
        "k8s-openapi.workspace = true\nkube.workspace = true\nkube-codegen-runtime.workspace = true\n\
         serde.workspace = true\nserde_json.workspace = true\n"
    };
    format!(
        "[package]\nname = \"{name}\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\n[dependencies]\n{deps}"
    )
}

/// A binary that reads `[[type, object], ...]` from the file named by its argument and prints, per case and in
/// order, one line `{"ok": <object after the typed round trip>, "causes": [[reason, field, message], ...]}`
/// (what the generated `validate()` says of the object) or `{"err": "<message>"}`.
///
/// For a kind with generated conversions the line also has `"conversion": {"<version>": null or
/// "<what went wrong>"}`: the object converted to every version and back, compared whole with
/// the typed round trip's result (its metadata as given, no conversion annotation left).
fn runner_source(
    lib: &str,
    types: &BTreeSet<String>,
    conversions: &BTreeMap<String, String>,
) -> String {
    let mut arms = String::new();
    for ty in types {
        match conversions.get(ty) {
            Some(conv) => arms.push_str(&format!(
                "            {ty:?} => rt::<{lib}::{ty}>(value.clone(), |t| causes(t.validate())).map(|(v, c, _)| {{ let k = convert_all(&{lib}::{conv}::new(), &value, &v); (v, c, Some(k)) }}),\n"
            )),
            None => arms.push_str(&format!(
                "            {ty:?} => rt::<{lib}::{ty}>(value, |t| causes(t.validate())),\n"
            )),
        }
    }
    format!(
        r#"//! Round-trip runner (scratch, written by `cargo xtask corpus`).
#![allow(deprecated)]

use std::io::Write;

type Line = (serde_json::Value, Vec<[String; 3]>, Option<serde_json::Value>);

fn rt<T: serde::de::DeserializeOwned + serde::Serialize>(
    value: serde_json::Value,
    validate: fn(&T) -> Vec<[String; 3]>,
) -> Result<Line, String> {{
    let typed: T = serde_json::from_value(value).map_err(|e| format!("deserialize: {{e}}"))?;
    let causes = validate(&typed);
    let back = serde_json::to_value(&typed).map_err(|e| format!("serialize: {{e}}"))?;
    Ok((back, causes, None))
}}

/// The object to every version and back: `null` per version when it came back whole.
fn convert_all<C: kube_codegen_runtime::conversion::KindConversion>(
    c: &C,
    value: &serde_json::Value,
    typed: &serde_json::Value,
) -> serde_json::Value {{
    use kube_codegen_runtime::conversion::KindConversion as _;
    let mut want = typed.clone();
    if let (Some(w), Some(m)) = (want.as_object_mut(), value.get("metadata")) {{
        w.insert("metadata".into(), m.clone());
    }}
    let from = value["apiVersion"].as_str().unwrap_or_default().rsplit('/').next().unwrap_or_default().to_owned();
    let mut out = serde_json::Map::new();
    for v in c.versions() {{
        let r = c.convert(value.clone(), v).and_then(|there| {{
            let back = c.convert(there.clone(), &from)?;
            Ok((there, back))
        }});
        let verdict = match r {{
            Ok((there, _)) if there["apiVersion"] != serde_json::json!(format!("{{}}/{{}}", c.group(), v)) => {{
                serde_json::json!(format!("converted to {{}}", there["apiVersion"]))
            }}
            Ok((there, back)) if back == want => match text_path(c, value, &from, v, &there) {{
                None => serde_json::Value::Null,
                Some(differs) => serde_json::json!(differs),
            }},
            Ok((there, back)) => serde_json::json!(format!("lost: came back as {{back}} through {{there}}")),
            Err(e) => serde_json::json!(e.to_string()),
        }};
        out.insert((*v).to_owned(), verdict);
    }}
    serde_json::Value::Object(out)
}}

/// What the webhook's text path (`convert_text`, used for reviews decoded from bytes) gives
/// where it differs from `convert`'s `there` (metadata compared as `ObjectMeta` reads it).
fn text_path<C: kube_codegen_runtime::conversion::KindConversion>(
    c: &C,
    value: &serde_json::Value,
    from: &str,
    to: &str,
    there: &serde_json::Value,
) -> Option<String> {{
    let norm = |mut v: serde_json::Value| {{
        if let Some(m) = v.get_mut("metadata") {{
            let typed: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta> =
                serde_json::from_value(m.take()).ok();
            *m = serde_json::to_value(typed).unwrap_or_default();
        }}
        v
    }};
    let got = match c.convert_text(&value.to_string(), from, to)? {{
        Ok(raw) => serde_json::from_str(raw.get()).unwrap_or_default(),
        Err(e) => return Some(format!("the text path failed where convert did not: {{e}}")),
    }};
    let (got, want) = (norm(got), norm(there.clone()));
    (got != want).then(|| format!("the text path gave {{got}}, convert gave {{want}}"))
}}

fn causes(result: Result<(), kube_codegen_runtime::ValidationErrors>) -> Vec<[String; 3]> {{
    match result {{
        Ok(()) => Vec::new(),
        Err(e) => e
            .causes()
            .iter()
            .map(|c| [c.reason.clone(), c.field.clone(), c.message.clone()])
            .collect(),
    }}
}}

fn run() {{
    let path = std::env::args().nth(1).expect("usage: runner CASES.json");
    let text = std::fs::read_to_string(&path).expect("reading the cases file");
    let cases: Vec<(String, serde_json::Value)> = serde_json::from_str(&text).expect("parsing the cases file");
    let mut out = std::io::stdout().lock();
    for (ty, value) in cases {{
        let result = match ty.as_str() {{
{arms}            other => Err(format!("no type {{other}} in this crate")),
        }};
        let line = match result {{
            Ok((v, causes, Some(conversion))) => serde_json::json!({{ "ok": v, "causes": causes, "conversion": conversion }}),
            Ok((v, causes, None)) => serde_json::json!({{ "ok": v, "causes": causes }}),
            Err(e) => serde_json::json!({{ "err": e }}),
        }};
        writeln!(out, "{{line}}").expect("writing a result");
        out.flush().expect("flushing a result");
    }}
}}

fn main() {{
    // Unoptimised serde code for large CRD types needs more stack than the main thread has.
    std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(run)
        .expect("spawning the runner thread")
        .join()
        .expect("runner thread panicked");
}}
"#
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(lines: usize) -> Unit {
        Unit {
            project: "p".into(),
            file: PathBuf::from("f.yaml"),
            module: "m".into(),
            code: String::new(),
            lines,
            resources: Vec::new(),
        }
    }

    #[test]
    fn packs_groups_apart_and_within_the_line_bound() {
        let units: Vec<Unit> = [10, 20, 15, 50, 5, 5].into_iter().map(unit).collect();
        let crates = pack(&units, &[vec![0, 1, 2, 3], vec![4, 5]], 30);
        let layout: Vec<Vec<usize>> = crates.iter().map(|c| c.units.clone()).collect();
        assert_eq!(layout, [vec![0, 1], vec![2], vec![3], vec![4, 5]]);
        assert_eq!(crates[3].name, "corpus-c03");
        assert_eq!(crates[3].lib_name(), "corpus_c03");
    }

    #[test]
    fn module_names_are_idents_and_unique() {
        let mut taken = BTreeSet::new();
        let a = module_name("gateway-api", Path::new("x/v1.2__std.yaml"), &mut taken);
        let b = module_name("gateway-api", Path::new("y/v1.2__std.yml"), &mut taken);
        assert_eq!(a, "m_gateway_api_v1_2_std");
        assert_eq!(b, "m_gateway_api_v1_2_std_2");
    }
}
