//! What the conversion tests share.

use kube_codegen_runtime::conversion::Converter;
use serde_json::{Value, json};

/// `object` converted to `api_version` through `converter`'s byte path (`review_json`, which
/// takes generated conversions' text path), as a one-object `ConversionReview` would be;
/// panics unless the review succeeds.
pub fn through_review(converter: &Converter, object: &Value, api_version: &str) -> Value {
    let body = serde_json::to_vec(&json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": "u", "desiredAPIVersion": api_version, "objects": [object]}
    }))
    .unwrap();
    let answer: Value = serde_json::from_slice(&converter.review_json(&body).unwrap()).unwrap();
    assert_eq!(
        answer["response"]["result"]["status"], "Success",
        "{answer:#}"
    );
    answer["response"]["convertedObjects"][0].clone()
}
