//! The table of CRDs kube-apiserver refuses (`testdata/invalid-crds/`, one rule each; the same
//! files drive the validator's and the in-memory API server's tests): `gen` exits 1 naming the
//! file and the CRD, lists every cause in the server's words, and writes nothing. A CRD refused
//! only for parts the generated code does not reflect (`# generated: true`: conversion, the
//! approval annotation, selectable fields) generates, with the causes as warnings, unless
//! `--strict`. Under `--lenient`, every CRD whose types can be built generates, with the causes
//! as warnings; the others are refused with every cause and the reason no types can be built.
#![cfg(feature = "cli")]

use std::path::{Path, PathBuf};

use assert_cmd::Command;

fn cases() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/invalid-crds");
    let files = kube_codegen_crd::cases::case_files(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    assert!(files.len() >= 40, "{} cases", files.len());
    files
}

struct Case {
    expect: Vec<String>,
    generated: bool,
    crd_name: String,
}

fn case(path: &Path) -> Case {
    let text = std::fs::read_to_string(path).unwrap();
    let doc = kube_codegen_crd::read::parse_documents(path, &text).unwrap();
    let header = kube_codegen_crd::cases::parse_invalid_case(&text);
    Case {
        expect: header.expect,
        generated: header.generated,
        crd_name: doc[0].value["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    }
}

fn gen_cmd(input: &Path, out: &Path, flag: Option<&str>) -> std::process::Output {
    let mut cmd = Command::cargo_bin("kube-codegen").unwrap();
    cmd.arg("gen").arg(input).arg("-o").arg(out);
    cmd.args(flag);
    cmd.output().unwrap()
}

#[test]
fn every_invalid_crd_is_refused_with_the_servers_words() {
    let mut generated = 0;
    for path in cases() {
        let c = case(&path);
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        assert!(!c.expect.is_empty(), "{name}: no # expect: line");
        let out_dir = tempfile::tempdir().unwrap();
        let out = gen_cmd(&path, out_dir.path(), None);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if c.generated {
            generated += 1;
            assert_eq!(out.status.code(), Some(0), "{name}: {stderr}");
            for want in &c.expect {
                assert!(
                    stderr.contains(&format!(
                        "warning: {}: document 0: CRD {:?}: {want} (",
                        path.display(),
                        c.crd_name
                    )),
                    "{name}: warning {want:?} missing\n{stderr}"
                );
            }
            assert!(stderr.contains("--strict"), "{name}: {stderr}");
            assert!(
                std::fs::read_dir(out_dir.path()).unwrap().count() > 0,
                "{name}: nothing written"
            );
            continue;
        }
        assert_eq!(out.status.code(), Some(1), "{name}: {stderr}");
        assert!(
            stderr.contains(&*path.to_string_lossy()),
            "{name}: {stderr}"
        );
        assert!(
            stderr.contains(&format!(
                "The CustomResourceDefinition {:?} is invalid",
                c.crd_name
            )),
            "{name}: {stderr}"
        );
        for want in &c.expect {
            assert!(
                stderr.contains(want),
                "{name}: {want:?} missing from\n{stderr}"
            );
        }
        assert_eq!(
            std::fs::read_dir(out_dir.path()).unwrap().count(),
            0,
            "{name}: files written"
        );
    }
    assert!(generated >= 8, "only {generated} cases generate");
}

#[test]
fn strict_refuses_every_invalid_crd() {
    for path in cases() {
        let c = case(&path);
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let out_dir = tempfile::tempdir().unwrap();
        let out = gen_cmd(&path, out_dir.path(), Some("--strict"));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "The CustomResourceDefinition {:?} is invalid",
                c.crd_name
            )),
            "{name}: {stderr}"
        );
        for want in &c.expect {
            assert!(
                stderr.contains(want) && !stderr.contains("warning:"),
                "{name}: {want:?} missing, or a warning\n{stderr}"
            );
        }
        assert_eq!(
            std::fs::read_dir(out_dir.path()).unwrap().count(),
            0,
            "{name}: files written"
        );
    }
}

/// The cases whose types cannot be built, so `--lenient` refuses them too: the generator cannot
/// read them (no name, plural or kind, a scope that is neither, a printer column without a
/// name, a field of the wrong JSON type) or map their schema (a `type` outside the server's list).
const UNBUILDABLE: &[&str] = &[
    "02-name-missing.yaml",
    "06-scope-unsupported.yaml",
    "07-plural-missing.yaml",
    "09-kind-missing.yaml",
    "33-type-null.yaml",
    "34-type-unsupported.yaml",
    "71-column-name-required.yaml",
    "75-unreadable-field-type.yaml",
];

#[test]
fn lenient_generates_every_crd_whose_types_can_be_built_with_warnings() {
    let mut warned = 0;
    for path in cases() {
        let c = case(&path);
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let out_dir = tempfile::tempdir().unwrap();
        let out = gen_cmd(&path, out_dir.path(), Some("--lenient"));
        let stderr = String::from_utf8_lossy(&out.stderr);
        let written = std::fs::read_dir(out_dir.path()).unwrap().count();
        if UNBUILDABLE.contains(&name.as_str()) {
            assert_eq!(out.status.code(), Some(1), "{name}: {stderr}");
            assert!(
                stderr.contains(&format!(
                    "The CustomResourceDefinition {:?} is invalid",
                    c.crd_name
                )) && stderr.contains("so no types can be built from it, even under --lenient"),
                "{name}: {stderr}"
            );
            for want in &c.expect {
                assert!(stderr.contains(want), "{name}: {want:?} missing\n{stderr}");
            }
            assert_eq!(written, 0, "{name}: files written");
            continue;
        }
        assert_eq!(out.status.code(), Some(0), "{name}: {stderr}");
        assert!(written > 0, "{name}: nothing written");
        // Each violation is a warning naming the file, the CRD and the server's message.
        for want in &c.expect {
            let warning = stderr.lines().find(|l| {
                l.starts_with(&format!(
                    "warning: {}: document 0: CRD {:?}: ",
                    path.display(),
                    c.crd_name
                )) && l.contains(want.lines().next().unwrap_or(want))
            });
            assert!(
                warning.is_some(),
                "{name}: warning {want:?} missing\n{stderr}"
            );
        }
        if !c.generated {
            warned += 1;
            assert!(stderr.contains("under --lenient"), "{name}: {stderr}");
        }
    }
    assert!(warned >= 60, "only {warned} cases generate under --lenient");
}
