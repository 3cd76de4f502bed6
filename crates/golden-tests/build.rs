//! Writes, from `testdata/crds/`, the golden module list (`goldens.rs`) and the apiVersion/kind -> type table of
//! the round-trip test (`dispatch.rs`), so no table is maintained by hand. Shared by the edition-2021 crate.

#[path = "src/header.rs"]
mod header;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    let manifest =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let root = manifest
        .ancestors()
        .find(|p| p.join("testdata/crds").is_dir())
        .expect("golden-tests lives below the repository's testdata/crds");
    let crds = root.join("testdata/crds");
    let golden_dir = root.join("testdata/golden");
    println!("cargo:rerun-if-changed={}", crds.display());
    println!("cargo:rerun-if-changed={}", golden_dir.display());

    let mut modules = String::new();
    let mut dispatch = String::from(
        "/// (CRD file stem, apiVersion, kind, typed round trip) for every resource of every up-to-date golden.\n\
         pub static RESOURCES: &[(&str, &str, &str, RoundTrip)] = &[\n",
    );
    // Goldens with the generated `SchemaChecks` (`--emit validation`): the typed defaults are
    // checked against the JSON path on their samples (`tests/typed_defaults.rs`).
    let mut defaults = String::from(
        "/// (CRD file stem, apiVersion, kind, typed-against-JSON defaults check) for every resource with generated defaulting.\n\
         static DEFAULTED: &[(&str, &str, &str, DefaultsCheck)] = &[\n",
    );
    let mut stale = String::from(
        "/// CRD file stems whose golden is missing or differs from the generator's output.\npub static STALE: &[&str] = &[\n",
    );
    for crd in crd_files(&crds) {
        println!("cargo:rerun-if-changed={}", crd.display());
        let stem = crd
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let module = header::module_name(&stem);
        let golden = golden_dir.join(format!("{stem}.rs"));
        let Ok(golden_text) = std::fs::read_to_string(&golden) else {
            let _ = writeln!(stale, "    {stem:?},");
            continue;
        };
        let _ = writeln!(
            modules,
            "/// Golden output for `testdata/crds/{}`.\n#[path = {:?}]\npub mod {module};",
            crd.file_name().unwrap_or_default().to_string_lossy(),
            golden.display().to_string()
        );
        match render(&crd) {
            Some((text, resources)) if text == golden_text => {
                for r in resources {
                    let api_version = if r.group.is_empty() {
                        r.version.clone()
                    } else {
                        format!("{}/{}", r.group, r.version)
                    };
                    let _ = writeln!(
                        dispatch,
                        "    ({stem:?}, {api_version:?}, {:?}, ::xtask::roundtrip::typed_round_trip::<::golden_tests::{module}::{}>),",
                        r.kind, r.rust_path
                    );
                    if text.contains("fn typed_schema_defaults") {
                        let _ = writeln!(
                            defaults,
                            "    ({stem:?}, {api_version:?}, {:?}, check::<::golden_tests::{module}::{}>),",
                            r.kind, r.rust_path
                        );
                    }
                }
            }
            _ => {
                let _ = writeln!(stale, "    {stem:?},");
            }
        }
    }
    dispatch.push_str("];\n");
    stale.push_str("];\n");
    write_if_changed(&out.join("goldens.rs"), &modules);
    write_if_changed(&out.join("dispatch.rs"), &(dispatch + &stale));
    defaults.push_str("];\n");
    write_if_changed(&out.join("defaults_dispatch.rs"), &defaults);
}

/// The single-file output and resources for one CRD with its header flags, as `render_golden` makes them.
fn render(crd: &Path) -> Option<(String, Vec<kube_codegen::ResourceInfo>)> {
    let text = std::fs::read_to_string(crd).ok()?;
    let mut options = kube_codegen::Options::from_args(&header::flags(&text)).ok()?;
    options.single_file = Some("golden.rs".into());
    let mut generated = kube_codegen::Builder::new()
        .input(crd)
        .options(options)
        .render()
        .ok()?;
    let file = generated.files.remove(Path::new("golden.rs"))?;
    Some((file, generated.resources))
}

fn crd_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("reading testdata/crds")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension()
                .is_some_and(|e| e == "yaml" || e == "yml" || e == "json")
        })
        .collect();
    files.sort();
    files
}

fn write_if_changed(path: &Path, contents: &str) {
    if std::fs::read_to_string(path).ok().as_deref() != Some(contents) {
        std::fs::write(path, contents).expect("writing into OUT_DIR");
    }
}
