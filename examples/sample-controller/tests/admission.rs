//! Foo's admission webhooks: replicas defaulted, a deployment name that is not a DNS-1123 label
//! refused with apimachinery's message, and the configurations `sample-conversion-webhook
//! --print-webhook-configurations` prints. Reviews are posted as kube-apiserver posts them.

use std::process::Command;

use base64::Engine as _;
use sample_controller::admission::{foo_defaulting, foo_validating};
use serde_json::{Value, json};

fn review(operation: &str, spec: Value) -> Vec<u8> {
    let object = json!({
        "apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo",
        "metadata": {"name": "example-foo", "namespace": "default"},
        "spec": spec
    });
    let mut request = json!({
        "uid": "b0a4d0c4-0000-4000-8000-000000000001",
        "kind": {"group": "samplecontroller.k8s.io", "version": "v1alpha1", "kind": "Foo"},
        "resource": {"group": "samplecontroller.k8s.io", "version": "v1alpha1", "resource": "foos"},
        "name": "example-foo", "namespace": "default", "operation": operation,
        "userInfo": {"username": "kubernetes-admin"},
        "object": object
    });
    if operation == "UPDATE" {
        request["oldObject"] = request["object"].clone();
    }
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request
    }))
    .unwrap()
}

fn response(answer: &[u8]) -> Value {
    let v: Value = serde_json::from_slice(answer).unwrap();
    assert_eq!(v["response"]["uid"], "b0a4d0c4-0000-4000-8000-000000000001");
    v["response"].clone()
}

#[test]
fn replicas_are_defaulted_when_absent() {
    let hook = foo_defaulting();
    assert_eq!(hook.path(), "/mutate-samplecontroller-k8s-io-v1alpha1-foo");
    let r =
        response(&hook.review_json(&review("CREATE", json!({"deploymentName": "example-foo"}))));
    assert_eq!(r["allowed"], true);
    assert_eq!(r["patchType"], "JSONPatch");
    let patch = base64::engine::general_purpose::STANDARD
        .decode(r["patch"].as_str().unwrap())
        .unwrap();
    let patch: Value = serde_json::from_slice(&patch).unwrap();
    assert_eq!(
        patch,
        json!([{"op": "add", "path": "/spec/replicas", "value": 1}])
    );

    // Set replicas are left alone: no patch.
    let r = response(&hook.review_json(&review(
        "UPDATE",
        json!({"deploymentName": "d", "replicas": 3}),
    )));
    assert_eq!(r["allowed"], true);
    assert!(r.get("patch").is_none(), "{r}");
}

#[test]
fn deployment_names_must_be_dns1123_labels() {
    let hook = foo_validating();
    assert_eq!(
        hook.path(),
        "/validate-samplecontroller-k8s-io-v1alpha1-foo"
    );
    let r = response(&hook.review_json(&review(
        "CREATE",
        json!({"deploymentName": "example-foo", "replicas": 1}),
    )));
    assert_eq!(r["allowed"], true, "{r}");

    let r = response(&hook.review_json(&review(
        "UPDATE",
        json!({"deploymentName": "Example_Foo", "replicas": 1}),
    )));
    assert_eq!(r["allowed"], false);
    let cause = "Invalid value: \"Example_Foo\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
    assert_eq!(
        r["status"],
        json!({
            "metadata": {},
            "status": "Failure",
            "message": format!("Foo.samplecontroller.k8s.io \"example-foo\" is invalid: spec.deploymentName: {cause}"),
            "reason": "Invalid",
            "details": {
                "name": "example-foo", "group": "samplecontroller.k8s.io", "kind": "Foo",
                "causes": [{"reason": "FieldValueInvalid", "message": cause, "field": "spec.deploymentName"}]
            },
            "code": 422
        })
    );

    let r = response(&hook.review_json(&review("CREATE", json!({"replicas": 1}))));
    assert_eq!(
        r["status"]["message"],
        "Foo.samplecontroller.k8s.io \"example-foo\" is invalid: spec.deploymentName: Required value"
    );
    // The generated schema checks run first (replicas 1 to 10).
    let r = response(&hook.review_json(&review(
        "CREATE",
        json!({"deploymentName": "d", "replicas": 11}),
    )));
    assert_eq!(
        r["status"]["details"]["causes"][0]["field"],
        "spec.replicas"
    );
}

#[test]
fn the_binary_prints_the_configurations() {
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.crt");
    std::fs::write(&ca, "PEM").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_sample-conversion-webhook"))
        .args([
            "--print-webhook-configurations",
            "--webhook-service",
            "sample-controller/webhook-service",
            "--ca-bundle",
        ])
        .arg(&ca)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    let items = list["items"].as_array().unwrap();
    assert_eq!(items[0]["kind"], "MutatingWebhookConfiguration");
    assert_eq!(items[1]["kind"], "ValidatingWebhookConfiguration");
    let m = &items[0]["webhooks"][0];
    assert_eq!(m["name"], "mfoo-v1alpha1.kb.io");
    assert_eq!(
        m["clientConfig"],
        json!({
            "caBundle": "UEVN",
            "service": {"namespace": "sample-controller", "name": "webhook-service", "path": "/mutate-samplecontroller-k8s-io-v1alpha1-foo"}
        })
    );
    let v = &items[1]["webhooks"][0];
    assert_eq!(v["name"], "vfoo-v1alpha1.kb.io");
    assert_eq!(
        v["rules"],
        json!([{"apiGroups": ["samplecontroller.k8s.io"], "apiVersions": ["v1alpha1"], "operations": ["CREATE", "UPDATE"], "resources": ["foos"]}])
    );
    assert_eq!(v["sideEffects"], "None");
    assert_eq!(v["admissionReviewVersions"], json!(["v1"]));
    assert_eq!(v["failurePolicy"], "Fail");

    // Without --listen and the certificate, serving is refused as a usage error.
    let out = Command::new(env!("CARGO_BIN_EXE_sample-conversion-webhook"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
