//! The table of CRDs kube-apiserver refuses (`testdata/invalid-crds/`, one rule each; the same
//! files drive the validator's and the in-memory API server's tests): `gen` exits 1 naming the
//! file and the CRD, lists every cause in the server's words, and writes nothing. A CRD refused
//! only for parts the generated code does not reflect (`# generated: true`: conversion, the
//! approval annotation, selectable fields) generates, with the causes as warnings, unless
//! `--strict`. Under `--lenient`, a CRD refused only for a non-structural schema generates, with
//! the causes as warnings.
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
    structural: bool,
    generated: bool,
    crd_name: String,
}

fn case(path: &Path) -> Case {
    let text = std::fs::read_to_string(path).unwrap();
    let doc = kube_codegen_crd::read::parse_documents(path, &text).unwrap();
    let header = kube_codegen_crd::cases::parse_invalid_case(&text);
    Case {
        expect: header.expect,
        structural: header.structural,
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

#[test]
fn lenient_generates_non_structural_crds_with_warnings_and_nothing_else() {
    let mut structural = 0;
    for path in cases() {
        let c = case(&path);
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let out_dir = tempfile::tempdir().unwrap();
        let out = gen_cmd(&path, out_dir.path(), Some("--lenient"));
        let stderr = String::from_utf8_lossy(&out.stderr);
        if c.generated {
            assert_eq!(out.status.code(), Some(0), "{name}: {stderr}");
        } else if c.structural {
            structural += 1;
            assert_eq!(out.status.code(), Some(0), "{name}: {stderr}");
            for want in &c.expect {
                assert!(
                    stderr.contains(want),
                    "{name}: warning {want:?} missing\n{stderr}"
                );
            }
            assert!(stderr.contains("--lenient"), "{name}: {stderr}");
        } else {
            assert_eq!(
                out.status.code(),
                Some(1),
                "{name}: --lenient let it through\n{stderr}"
            );
        }
    }
    assert!(structural >= 5, "only {structural} structural cases");
}
