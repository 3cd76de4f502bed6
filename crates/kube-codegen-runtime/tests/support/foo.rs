//! A hand-written `KindConversion` standing in for generated code: `Foo` of `example.com`
//! serves `v2` (the hub) and `v1`; v1's `spec.size` is v2's `spec.replicas`.

use kube_codegen_runtime::conversion::{ConversionError, KindConversion};
use serde_json::{Value, json};

pub struct FooConversion;

impl KindConversion for FooConversion {
    fn group(&self) -> &str {
        "example.com"
    }
    fn kind(&self) -> &str {
        "Foo"
    }
    fn versions(&self) -> &[&str] {
        &["v2", "v1"]
    }
    fn convert(&self, mut object: Value, version: &str) -> Result<Value, ConversionError> {
        let (from, to) = match version {
            "v2" => ("size", "replicas"),
            "v1" => ("replicas", "size"),
            other => {
                return Err(ConversionError::UnknownVersion {
                    kind: "Foo".into(),
                    api_version: format!("example.com/{other}"),
                });
            }
        };
        if object.pointer("/spec/refuse") == Some(&Value::Bool(true)) {
            return Err(ConversionError::Refused("spec.refuse is set".into()));
        }
        if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut)
            && let Some(v) = spec.remove(from)
        {
            spec.insert(to.to_owned(), v);
        }
        object["apiVersion"] = Value::String(format!("example.com/{version}"));
        Ok(object)
    }
}

/// A Foo in `version` (`v1`: `spec.size`, `v2`: `spec.replicas`).
pub fn foo(version: &str, name: &str, n: i64) -> Value {
    let field = if version == "v1" { "size" } else { "replicas" };
    json!({
        "apiVersion": format!("example.com/{version}"),
        "kind": "Foo",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": format!("uid-{name}"),
            "resourceVersion": "42",
            "generation": 3,
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"app": "foo"},
            "annotations": {"note": "x"},
            "managedFields": [{"manager": "kubectl", "operation": "Apply", "apiVersion": "example.com/v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}],
        },
        "spec": {field: n, "image": "nginx"},
        "status": {"ready": n},
    })
}

/// A `ConversionReview` request body.
pub fn review(api_version: &str, desired: &str, objects: Vec<Value>) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": api_version,
        "kind": "ConversionReview",
        "request": {"uid": "d3b07384-d9a0-4c8e-9f5e-1b2c3d4e5f60", "desiredAPIVersion": desired, "objects": objects},
    }))
    .unwrap()
}
