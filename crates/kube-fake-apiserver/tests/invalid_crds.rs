//! The table of CRDs kube-apiserver refuses (`testdata/invalid-crds/`, one rule each): creating
//! one is a 422 `Invalid` whose causes are the server's, as kubectl prints them. The same files
//! drive the generator's and the validator's tests.

use crate::common;

use std::path::{Path, PathBuf};

use common::{Resp, post};
use kube_fake_apiserver::FakeApiServer;
use serde_json::Value;

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

fn cases() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/invalid-crds");
    let files = kube_codegen_crd::cases::case_files(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    assert!(files.len() >= 40, "{} cases", files.len());
    files
}

/// The `# expect: field: message` lines of a case.
fn expected(path: &Path) -> Vec<String> {
    kube_codegen_crd::cases::parse_invalid_case(&std::fs::read_to_string(path).unwrap()).expect
}

fn causes(r: &Resp) -> Vec<String> {
    r.body["details"]["causes"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|c| {
                    format!(
                        "{}: {}",
                        c["field"].as_str().unwrap_or_default(),
                        c["message"].as_str().unwrap_or_default()
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn every_invalid_crd_is_422_with_the_servers_causes() {
    let server = FakeApiServer::start().await.expect("server starts");
    let client = server.in_process_client();
    let mut checked = 0;
    for path in cases() {
        let docs = kube_codegen_crd::read::read_documents(&path).unwrap();
        let crd: Value = docs.into_iter().next().unwrap().value;
        // The server serves apiextensions.k8s.io/v1 only, as every server since 1.22 does.
        if crd["apiVersion"] != "apiextensions.k8s.io/v1" {
            continue;
        }
        checked += 1;
        let r = post(&client, CRDS, crd.clone()).await;
        let name = path.file_name().unwrap().to_string_lossy();
        assert_eq!(r.code, 422, "{name}: {}", r.body);
        assert_eq!(r.body["reason"], "Invalid", "{name}");
        let got = causes(&r);
        for want in expected(&path) {
            assert!(
                got.contains(&want),
                "{name}: cause {want:?} missing from {got:#?}"
            );
        }
        let message = r.body["message"].as_str().unwrap_or_default();
        let crd_name = crd["metadata"]["name"].as_str().unwrap_or_default();
        assert!(
            message.starts_with(&format!(
                "CustomResourceDefinition.apiextensions.k8s.io {crd_name:?} is invalid"
            )),
            "{name}: {message}"
        );
        // Nothing was stored.
        let listed = common::get(&client, CRDS).await;
        assert!(
            listed.body["items"].as_array().is_none_or(|items| items
                .iter()
                .all(|i| i["metadata"]["name"] != crd_name)
                || crd_name.is_empty()),
            "{name}: stored anyway"
        );
    }
    assert!(checked >= 35, "only {checked} v1 cases");
}

/// The server binary reads `--crd` files with the shared reader: a file whose CRD the server
/// refuses stops it at start with the causes.
#[test]
fn the_binary_refuses_an_invalid_crd_file_at_start() {
    let case = cases()
        .into_iter()
        .find(|p| p.to_string_lossy().contains("ref"))
        .expect("a $ref case");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kube-fake-apiserver"))
        .arg("--crd")
        .arg(&case)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&*case.to_string_lossy()), "{stderr}");
    for want in expected(&case) {
        assert!(stderr.contains(&want), "{want:?} missing: {stderr}");
    }
}
