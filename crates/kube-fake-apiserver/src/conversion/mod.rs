//! `spec.conversion` of custom resources, as apiextensions-apiserver's converter applies it.
//!
//! `strategy: None` only rewrites `apiVersion` (`objects::view`). `strategy: Webhook` sends the
//! objects that are not yet in the desired version to the CRD's webhook in one `ConversionReview`
//! ([`convert`]), checks the answer as the real converter does (count, `apiVersion`, kind,
//! name/namespace/uid, labels and annotations), restores every other piece of metadata from the
//! original, and prunes the result with the target version's schema. The HTTPS call itself is
//! [`client`]. Failures are the real server's 500 with its message (see ARCHITECTURE.md for which
//! wordings were observed and which come from the source).
//!
//! Conversion is async (an HTTP call) and so never runs under the store lock: the handlers call
//! it before and after the write pipeline (`handlers::converted`).
pub mod client;

use serde_json::{Map, Value, json};

use crate::conversion_config::ReviewVersion;
use crate::registry::Resource;
use crate::state::Shared;
use crate::status::ApiError;
use crate::util::str_of;

/// Go's `schema.GroupVersionKind.String()`: `group/version, Kind=Kind`.
fn gvk(obj: &Value) -> String {
    format!(
        "{}, Kind={}",
        str_of(obj.get("apiVersion")),
        str_of(obj.get("kind"))
    )
}

/// A conversion failure: the real server answers it as a 500 `Status` with no reason.
fn failed(message: String) -> ApiError {
    ApiError::new(500, "", message)
}

/// Converts one object of `res` to `version` (see [`convert`]).
pub async fn convert_one(
    shared: &Shared,
    res: &Resource,
    obj: Value,
    version: &str,
) -> Result<Value, ApiError> {
    Ok(convert(shared, res, vec![obj], version)
        .await?
        .into_iter()
        .next()
        .unwrap_or_default())
}

/// Whether reading or writing `res` may call a conversion webhook.
pub fn by_webhook(res: &Resource) -> bool {
    res.conversion.is_some()
}

/// Converts `objects` of `res` to its `version`, in one review for all of them, as the real
/// converter does: objects already in the desired version are not sent and stay as they are; the
/// others come back with their metadata restored (but for labels and annotations) and are pruned
/// with the version's schema. Without a webhook only `apiVersion` changes.
pub async fn convert(
    shared: &Shared,
    res: &Resource,
    mut objects: Vec<Value>,
    version: &str,
) -> Result<Vec<Value>, ApiError> {
    let desired = res.api_version(version);
    let Some(hook) = res.conversion.clone() else {
        for o in &mut objects {
            o["apiVersion"] = json!(desired);
        }
        return Ok(objects);
    };
    let todo: Vec<usize> = (0..objects.len())
        .filter(|&i| str_of(objects[i].get("apiVersion")) != desired)
        .collect();
    let Some(&first) = todo.first() else {
        return Ok(objects);
    };
    let from = gvk(&objects[first]);
    if hook.review == ReviewVersion::Unsupported {
        return Err(failed("no supported conversion review versions".into()));
    }
    let uid = crate::util::uid();
    let review = json!({
        "apiVersion": hook.review.api_version(),
        "kind": "ConversionReview",
        "request": {
            "uid": uid,
            "desiredAPIVersion": desired,
            "objects": todo.iter().map(|&i| &objects[i]).collect::<Vec<_>>(),
        },
    });
    let body = serde_json::to_vec(&review).unwrap_or_default();
    let answer = client::post(shared, &hook, body)
        .await
        .map_err(|cause| failed(format!("conversion webhook for {from} failed: {cause}")))?;
    let converted = converted_objects(hook.review, &uid, &answer)
        .map_err(|cause| failed(format!("conversion webhook for {from} failed: {cause}")))?;
    if converted.len() != todo.len() {
        return Err(failed(format!(
            "conversion webhook for {from} returned {} objects, expected {}",
            converted.len(),
            todo.len()
        )));
    }
    let schema = res.version(version).and_then(|v| v.schema.clone());
    for (n, (&i, mut out)) in todo.iter().zip(converted).enumerate() {
        // The real converter increments its index before it formats these messages.
        let at = n + 1;
        let original = &objects[i];
        let invalid = |why: String| {
            failed(format!(
                "conversion webhook for {from} returned invalid converted object at index {at}: {why}"
            ))
        };
        if !out.is_object() {
            return Err(failed(format!(
                "conversion webhook for {from} returned invalid converted object at index {n}: \
                 Object 'Kind' is missing in '{out}'"
            )));
        }
        let got = str_of(out.get("apiVersion"));
        if got != desired {
            return Err(invalid(format!(
                "invalid groupVersion (expected {desired}, received {got})"
            )));
        }
        let (want_kind, got_kind) = (str_of(original.get("kind")), str_of(out.get("kind")));
        if want_kind != got_kind {
            return Err(invalid(format!(
                "invalid kind (expected {want_kind}, received {got_kind})"
            )));
        }
        for (field, what) in [("name", "name"), ("namespace", "namespace"), ("uid", "UID")] {
            let (a, b) = (meta_of(original, field), meta_of(&out, field));
            if a != b {
                return Err(invalid(format!("must have the same {what}: {a} != {b}")));
            }
        }
        restore_object_meta(original, &mut out).map_err(|why| {
            failed(format!(
                "conversion webhook for {from} returned invalid metadata in object at index {at}: {why}"
            ))
        })?;
        if let Some(s) = &schema {
            s.prune(&mut out);
        }
        objects[i] = out;
    }
    Ok(objects)
}

fn meta_of<'a>(obj: &'a Value, field: &str) -> &'a str {
    str_of(obj.pointer(&format!("/metadata/{field}")))
}

/// `getConvertedObjectsFromResponse`: the converted objects of a well-formed, successful answer,
/// or the cause the real server reports.
fn converted_objects(review: ReviewVersion, uid: &str, body: &[u8]) -> Result<Vec<Value>, String> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| format!("couldn't get version/kind; json parse error: {e}"))?;
    if !v.is_object() {
        return Err(format!(
            "couldn't get version/kind; json parse error: json: cannot unmarshal {} into Go value of type struct {{ APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }}",
            go_type(&v)
        ));
    }
    if review == ReviewVersion::V1 {
        let got = gvk(&v);
        if got != "apiextensions.k8s.io/v1, Kind=ConversionReview" {
            return Err(format!(
                "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got {got}"
            ));
        }
    }
    let Some(resp) = v.get("response").filter(|r| r.is_object()) else {
        return Err("no response provided".into());
    };
    if review == ReviewVersion::V1 {
        let got = str_of(resp.get("uid"));
        if got != uid {
            return Err(format!("expected response.uid={uid:?}, got {got:?}"));
        }
    }
    let status = str_of(resp.pointer("/result/status"));
    if status != "Success" {
        let message = str_of(resp.pointer("/result/message"));
        if !message.is_empty() {
            return Err(message.to_string());
        }
        return Err(format!(
            "response.result.status was '{status}', not 'Success'"
        ));
    }
    Ok(resp
        .get("convertedObjects")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default())
}

fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Array(_) => "array",
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "bool",
        _ => "null",
    }
}

/// `restoreObjectMeta`: the original's metadata, with the converted object's labels and
/// annotations (which must be valid).
fn restore_object_meta(original: &Value, converted: &mut Value) -> Result<(), String> {
    let response_meta = match converted.get("metadata") {
        None => return Err("missing metadata in converted object".into()),
        Some(Value::Object(m)) => m.clone(),
        Some(other) => {
            return Err(format!(
                "invalid metadata of type {} in converted object",
                go_value_type(other)
            ));
        }
    };
    let mut meta: Map<String, Value> = original
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for field in ["labels", "annotations"] {
        match response_meta.get(field) {
            None | Some(Value::Null) => {
                meta.remove(field);
            }
            Some(Value::Object(m)) => {
                let mut pairs = Vec::new();
                for (k, v) in m {
                    match v.as_str() {
                        Some(s) => pairs.push((k.clone(), s.to_string())),
                        None => {
                            return Err(format!(
                                "invalid metadata.{field} of type {} in converted object",
                                go_value_type(&Value::Object(m.clone()))
                            ));
                        }
                    }
                }
                let errs = if field == "labels" {
                    label_errors(&pairs)
                } else {
                    annotation_errors(&pairs)
                };
                if !errs.is_empty() {
                    return Err(aggregate(&errs));
                }
                meta.insert(field.into(), Value::Object(m.clone()));
            }
            Some(other) => {
                return Err(format!(
                    "invalid metadata.{field} of type {} in converted object",
                    go_value_type(other)
                ));
            }
        }
    }
    converted["metadata"] = Value::Object(meta);
    Ok(())
}

/// The Go type an unstructured value decodes to, as `%T` prints it.
fn go_value_type(v: &Value) -> &'static str {
    match v {
        Value::Object(_) => "map[string]interface {}",
        Value::Array(_) => "[]interface {}",
        Value::String(_) => "string",
        Value::Number(n) if n.is_i64() || n.is_u64() => "int64",
        Value::Number(_) => "float64",
        Value::Bool(_) => "bool",
        Value::Null => "<nil>",
    }
}

/// `utilerrors.NewAggregate(...).Error()`: one message as is, several in brackets.
fn aggregate(errs: &[String]) -> String {
    match errs {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// `metav1validation.ValidateLabels` on `metadata.labels`.
fn label_errors(pairs: &[(String, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (k, v) in pairs {
        for e in crate::selector::qualified_name_errors(k) {
            out.push(format!("metadata.labels: Invalid value: {k:?}: {e}"));
        }
        for e in crate::selector::label_value_errors(v) {
            out.push(format!("metadata.labels: Invalid value: {v:?}: {e}"));
        }
    }
    out
}

/// `apivalidation.ValidateAnnotations` on `metadata.annotations` (keys, and the 256 KiB total).
fn annotation_errors(pairs: &[(String, String)]) -> Vec<String> {
    let mut out = Vec::new();
    let mut total = 0usize;
    for (k, v) in pairs {
        for e in crate::selector::qualified_name_errors(&k.to_lowercase()) {
            out.push(format!("metadata.annotations: Invalid value: {k:?}: {e}"));
        }
        total += k.len() + v.len();
    }
    if total > 256 * 1024 {
        out.push(format!(
            "metadata.annotations: Too long: may not be more than {} bytes",
            256 * 1024
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_are_checked_as_the_server_does() {
        let ok = |b: Value| converted_objects(ReviewVersion::V1, "u", b.to_string().as_bytes());
        assert_eq!(
            ok(
                json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                      "response": {"uid": "x", "result": {"status": "Success"}}})
            )
            .unwrap_err(),
            "expected response.uid=\"u\", got \"x\""
        );
        assert_eq!(
            ok(
                json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                      "response": {"uid": "u", "result": {"status": "Failure"}}})
            )
            .unwrap_err(),
            "response.result.status was 'Failure', not 'Success'"
        );
        assert_eq!(
            ok(json!({"apiVersion": "v1", "kind": "Status"})).unwrap_err(),
            "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got v1, Kind=Status"
        );
        assert!(
            converted_objects(ReviewVersion::V1, "u", b"nope")
                .unwrap_err()
                .starts_with("couldn't get version/kind; json parse error: ")
        );
    }

    #[test]
    fn metadata_comes_from_the_original_but_labels_and_annotations() {
        let original =
            json!({"metadata": {"name": "a", "uid": "1", "labels": {"x": "1"}, "generation": 3}});
        let mut out =
            json!({"metadata": {"name": "a", "generation": 9, "labels": {"y": "2"}}, "spec": {}});
        restore_object_meta(&original, &mut out).unwrap();
        assert_eq!(
            out,
            json!({"metadata": {"name": "a", "uid": "1", "labels": {"y": "2"}, "generation": 3}, "spec": {}})
        );
        let mut bad = json!({"metadata": {"labels": {"a b": "c"}}});
        let e = restore_object_meta(&original, &mut bad).unwrap_err();
        assert!(
            e.starts_with("metadata.labels: Invalid value: \"a b\": name part must consist"),
            "{e}"
        );
        let mut none = json!({"spec": {}});
        assert_eq!(
            restore_object_meta(&original, &mut none).unwrap_err(),
            "missing metadata in converted object"
        );
    }
}
