//! The scale subresource's checks on every write of a custom resource (apiextensions-apiserver's
//! `ValidateScaleSpec` and `ValidateScaleStatus`), after the schema's own checks: the value at
//! `specReplicasPath` (and `statusReplicasPath`) must be an integer from 0 to 2^31-1, the one at
//! `labelSelectorPath` a string. A path with nothing at it is fine.
//!
//! Causes name the path as the CRD spells it (`.spec.replicas`, leading dot kept). A value of the
//! wrong type is reported as the source reports it (and kube-apiserver 1.35.7 was observed to):
//! the error of apimachinery's `unstructured.NestedInt64` / `NestedString` with the zero value,
//! `.spec.replicas: Invalid value: 0: .spec.replicas accessor error: x is of the type string,
//! expected int64`, beside the schema's own cause for the same field. The range messages are the
//! source's (`should be a non-negative integer`, `should be less than or equal to 2147483647`).
use serde_json::Value;

use super::openapi::float_is_integer;
use crate::Cause;
use crate::gofmt::{go_plain_v, go_type};
use crate::model::Scale;

/// Causes for the spec side (create and update of the main resource).
pub fn spec_causes(scale: &Scale, obj: &Value, out: &mut Vec<Cause>) {
    replicas(&scale.spec_replicas_path, obj, out);
}

/// Causes for the status side (every write, the status subresource's included).
pub fn status_causes(scale: &Scale, obj: &Value, out: &mut Vec<Cause>) {
    replicas(&scale.status_replicas_path, obj, out);
    if let Some(path) = &scale.label_selector_path {
        match nested(obj, path) {
            Err(e) => out.push(invalid(path, "\"\"", e)),
            Ok(Some(v)) if !v.is_string() => {
                out.push(invalid(path, "\"\"", accessor_error(path, v, "string")));
            }
            Ok(_) => {}
        }
    }
}

/// `unstructured.NestedFieldNoCopy` at a `.a.b.c` path: `None` when a field on the way is
/// missing or null, an accessor error when one is not an object.
fn nested<'a>(obj: &'a Value, path: &str) -> Result<Option<&'a Value>, String> {
    let fields: Vec<&str> = path.strip_prefix('.').unwrap_or(path).split('.').collect();
    let mut v = obj;
    for (i, field) in fields.iter().enumerate() {
        match v {
            Value::Null if i > 0 => return Ok(None),
            Value::Object(m) => match m.get(*field) {
                Some(x) => v = x,
                None => return Ok(None),
            },
            other => {
                let at = format!(".{}", fields[..=i].join("."));
                return Err(accessor_error(&at, other, "map[string]interface{}"));
            }
        }
    }
    Ok(Some(v))
}

/// The accessors' error: `<path> accessor error: <%v> is of the type <%T>, expected <want>`.
fn accessor_error(path: &str, v: &Value, want: &str) -> String {
    let path = format!(".{}", path.strip_prefix('.').unwrap_or(path));
    format!(
        "{path} accessor error: {} is of the type {}, expected {want}",
        go_plain_v(v),
        go_type(v)
    )
}

fn replicas(path: &str, obj: &Value, out: &mut Vec<Cause>) {
    let v = match nested(obj, path) {
        Ok(Some(v)) => v,
        Ok(None) => return,
        Err(e) => {
            out.push(invalid(path, "0", e));
            return;
        }
    };
    let n = match v.as_i64() {
        Some(n) => n,
        // A whole float is an integer after the server's number round trip (as for the schema).
        None if float_is_integer(v) && v.as_f64().is_some_and(|f| f.abs() < 9.2e18) => {
            v.as_f64().map_or(0, |f| f as i64)
        }
        // Anything else (a fraction, beyond int64, another type) is not an int64 to the accessor.
        None => {
            out.push(invalid(path, "0", accessor_error(path, v, "int64")));
            return;
        }
    };
    let detail = if n < 0 {
        "should be a non-negative integer".to_string()
    } else if n > i64::from(i32::MAX) {
        format!("should be less than or equal to {}", i32::MAX)
    } else {
        return;
    };
    out.push(invalid(path, &n.to_string(), detail));
}

fn invalid(path: &str, value: &str, detail: String) -> Cause {
    Cause::new(
        "FieldValueInvalid",
        path,
        format!("Invalid value: {value}: {detail}"),
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
                ".spec.replicas: Invalid value: 0: .spec.replicas accessor error: 3 is of the type string, expected int64 (FieldValueInvalid)"
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
                ".spec.replicas: Invalid value: 0: .spec.replicas accessor error: 1.5 is of the type float64, expected int64 (FieldValueInvalid)"
            ]
        );
    }

    #[test]
    fn ranges_types_and_absence() {
        assert!(all(json!({})).is_empty());
        assert_eq!(
            all(json!({"spec": "x", "status": {}})),
            [
                ".spec.replicas: Invalid value: 0: .spec.replicas accessor error: x is of the type string, expected map[string]interface{} (FieldValueInvalid)"
            ]
        );
        assert!(all(json!({"spec": {"replicas": 2147483647}, "status": {"replicas": 0, "selector": "a=b"}})).is_empty());
        assert_eq!(
            all(
                json!({"spec": {"replicas": -1}, "status": {"replicas": 2147483648_i64, "selector": 5}})
            ),
            [
                ".spec.replicas: Invalid value: -1: should be a non-negative integer (FieldValueInvalid)",
                ".status.replicas: Invalid value: 2147483648: should be less than or equal to 2147483647 (FieldValueInvalid)",
                ".status.selector: Invalid value: \"\": .status.selector accessor error: 5 is of the type int64, expected string (FieldValueInvalid)",
            ]
        );
        assert_eq!(
            all(json!({"spec": {"replicas": 1.5}, "status": {"replicas": null}})),
            [
                ".spec.replicas: Invalid value: 0: .spec.replicas accessor error: 1.5 is of the type float64, expected int64 (FieldValueInvalid)",
                ".status.replicas: Invalid value: 0: .status.replicas accessor error: <nil> is of the type <nil>, expected int64 (FieldValueInvalid)",
            ]
        );
    }
}
