//! The scale subresource's checks on every write of a custom resource (apiextensions-apiserver's
//! `ValidateScaleSpec` and `ValidateScaleStatus`), after the schema's own checks: the value at
//! `specReplicasPath` (and `statusReplicasPath`) must be an integer from 0 to 2^31-1, the one at
//! `labelSelectorPath` a string. A path with nothing at it is fine.
//!
//! Causes name the path as the CRD spells it (`.spec.replicas`, leading dot kept). A value of the
//! wrong type is reported as kube-apiserver 1.35 was observed to report it,
//! `.spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer`
//! (the found JSON type as the value, the path without its dot in the message), beside the
//! schema's own cause for the same field. The range messages are the source's
//! (`should be a non-negative integer`, `should be less than or equal to 2147483647`).
use serde_json::Value;

use super::openapi::{float_is_integer, type_name};
use crate::Cause;
use crate::model::Scale;

/// Causes for the spec side (create and update of the main resource).
pub fn spec_causes(scale: &Scale, obj: &Value, out: &mut Vec<Cause>) {
    replicas(&scale.spec_replicas_path, obj, out);
}

/// Causes for the status side (every write, the status subresource's included).
pub fn status_causes(scale: &Scale, obj: &Value, out: &mut Vec<Cause>) {
    replicas(&scale.status_replicas_path, obj, out);
    if let Some(path) = &scale.label_selector_path
        && let Some(v) = at(obj, path)
        && !v.is_string()
    {
        out.push(wrong_type(path, v, "string"));
    }
}

/// The value at a `.a.b.c` path; `None` when a field on the way is missing or not an object.
fn at<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    let path = path.strip_prefix('.').unwrap_or(path);
    path.split('.')
        .try_fold(obj, |v, field| v.as_object()?.get(field))
}

fn replicas(path: &str, obj: &Value, out: &mut Vec<Cause>) {
    let Some(v) = at(obj, path) else {
        return;
    };
    let n = match (v.as_i64(), v.as_u64()) {
        (Some(n), _) => i128::from(n),
        // Beyond int64: out of range like any other too-large count.
        (None, Some(n)) => i128::from(n),
        // A whole float passes the schema's integer check (go-openapi), so it is not a wrong
        // type here either: refusing it would refuse what the schema accepts.
        _ if float_is_integer(v) => v.as_f64().map_or(0, |f| f as i128),
        _ => {
            out.push(wrong_type(path, v, "integer"));
            return;
        }
    };
    let detail = if n < 0 {
        "should be a non-negative integer".to_string()
    } else if n > i128::from(i32::MAX) {
        format!("should be less than or equal to {}", i32::MAX)
    } else {
        return;
    };
    out.push(Cause::new(
        "FieldValueInvalid",
        path,
        format!("Invalid value: {n}: {detail}"),
    ));
}

fn wrong_type(path: &str, v: &Value, want: &str) -> Cause {
    let bare = path.strip_prefix('.').unwrap_or(path);
    Cause::new(
        "FieldValueInvalid",
        path,
        format!(
            "Invalid value: {:?}: {bare} in body must be of type {want}",
            type_name(v)
        ),
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn scale(selector: Option<&str>) -> Scale {
        Scale {
            spec_replicas_path: ".spec.replicas".into(),
            status_replicas_path: ".status.replicas".into(),
            label_selector_path: selector.map(Into::into),
        }
    }

    fn all(obj: Value) -> Vec<String> {
        let s = scale(Some(".status.selector"));
        let mut out = Vec::new();
        spec_causes(&s, &obj, &mut out);
        status_causes(&s, &obj, &mut out);
        out.iter().map(|c| format!("{c} ({})", c.reason)).collect()
    }

    #[test]
    fn the_observed_type_cause() {
        assert_eq!(
            all(json!({"spec": {"replicas": "3"}})),
            [
                ".spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer (FieldValueInvalid)"
            ]
        );
    }

    #[test]
    fn a_whole_float_is_an_integer_as_for_the_schema() {
        assert!(all(json!({"spec": {"replicas": 3.0}})).is_empty());
        assert_eq!(
            all(json!({"spec": {"replicas": -2.0}})),
            [
                ".spec.replicas: Invalid value: -2: should be a non-negative integer (FieldValueInvalid)"
            ]
        );
        assert_eq!(
            all(json!({"spec": {"replicas": 1.5}})),
            [
                ".spec.replicas: Invalid value: \"number\": spec.replicas in body must be of type integer (FieldValueInvalid)"
            ]
        );
    }

    #[test]
    fn ranges_types_and_absence() {
        assert!(all(json!({})).is_empty());
        assert!(all(json!({"spec": "x", "status": {}})).is_empty());
        assert!(all(json!({"spec": {"replicas": 2147483647}, "status": {"replicas": 0, "selector": "a=b"}})).is_empty());
        assert_eq!(
            all(
                json!({"spec": {"replicas": -1}, "status": {"replicas": 2147483648_i64, "selector": 5}})
            ),
            [
                ".spec.replicas: Invalid value: -1: should be a non-negative integer (FieldValueInvalid)",
                ".status.replicas: Invalid value: 2147483648: should be less than or equal to 2147483647 (FieldValueInvalid)",
                ".status.selector: Invalid value: \"integer\": status.selector in body must be of type string (FieldValueInvalid)",
            ]
        );
        assert_eq!(
            all(json!({"spec": {"replicas": 1.5}, "status": {"replicas": null}})),
            [
                ".spec.replicas: Invalid value: \"number\": spec.replicas in body must be of type integer (FieldValueInvalid)",
                ".status.replicas: Invalid value: \"null\": status.replicas in body must be of type integer (FieldValueInvalid)",
            ]
        );
    }
}
