//! The round-trip contract: a custom resource, as a real API server stores (and so returns) it, deserializes into
//! its generated type and serializes back to the same JSON. The input is the stored form, not the raw sample: a
//! client never sees what the server pruned (e.g. the contents of objects nested under
//! `additionalProperties: true`), so no typed value could be expected to drop it.
//!
//! The stored form is the sample after structural pruning (`kube_fake_apiserver::structural::prune`) with the root
//! `metadata` decoded and re-encoded as `ObjectMeta` (the server does that too: unknown metadata fields and nulls
//! vanish), then defaulted (`apply_defaults`). JSON numbers compare by value, because the wire cannot tell `1` from `1.0` and the server itself
//! re-encodes numbers (`-0.0` comes back as `0`); an integer and a float are equal only when the float is exactly
//! that integer, so an `int64` squeezed through `f64` is still caught.

use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Number, Value};

/// A sample as the API server would store it.
#[derive(Debug, Clone, PartialEq)]
pub struct Stored {
    pub value: Value,
    /// Whether pruning changed it (undeclared fields, dropped nulls, normalised metadata).
    pub pruned: bool,
    /// Whether schema defaults added anything.
    pub defaulted: bool,
}

/// What a server with `schema` (a version's `openAPIV3Schema`) stores for `sample`: pruned, then defaulted (a
/// required field with a default is filled in before validation, so a sample may rightly omit it).
pub fn stored_form(schema: &Value, sample: &Value) -> Stored {
    let mut value = sample.clone();
    kube_fake_apiserver::structural::prune(schema, &mut value);
    normalise_metadata(&mut value);
    let pruned = first_difference(sample, &value).is_some();
    let before = value.clone();
    kube_fake_apiserver::structural::apply_defaults(schema, &mut value);
    let defaulted = first_difference(&before, &value).is_some();
    Stored {
        value,
        pruned,
        defaulted,
    }
}

fn normalise_metadata(obj: &mut Value) {
    let Some(meta) = obj.get_mut("metadata") else {
        return;
    };
    // Metadata the server could not decode would be rejected; leave it for the typed decode to report.
    if let Ok(parsed) = serde_json::from_value::<ObjectMeta>(meta.clone())
        && let Ok(back) = serde_json::to_value(parsed)
    {
        *meta = back;
    }
}

/// The first place where two JSON documents differ.
#[derive(Debug, Clone, PartialEq)]
pub struct Difference {
    /// Path of the differing node, e.g. `.spec.ports[2].protocol` (`.` for the root).
    pub path: String,
    /// `None` when the node is missing on that side.
    pub expected: Option<Value>,
    pub actual: Option<Value>,
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "at {}: expected {}, got {}",
            if self.path.is_empty() {
                "."
            } else {
                &self.path
            },
            show(self.expected.as_ref()),
            show(self.actual.as_ref())
        )
    }
}

fn show(v: Option<&Value>) -> String {
    const MAX: usize = 160;
    match v {
        None => "<absent>".to_string(),
        Some(v) => {
            let s = v.to_string();
            if s.len() > MAX {
                let cut = (0..=MAX)
                    .rev()
                    .find(|&i| s.is_char_boundary(i))
                    .unwrap_or(0);
                format!("{}...", &s[..cut])
            } else {
                s
            }
        }
    }
}

/// The first differing node of `expected` and `actual` in document order (object keys sorted), if any.
pub fn first_difference(expected: &Value, actual: &Value) -> Option<Difference> {
    let mut path = String::new();
    diff_at(expected, actual, &mut path)
}

fn diff_at(expected: &Value, actual: &Value, path: &mut String) -> Option<Difference> {
    let here = |path: &String| Difference {
        path: path.clone(),
        expected: Some(expected.clone()),
        actual: Some(actual.clone()),
    };
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            let mut keys: Vec<&String> = e.keys().chain(a.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                let len = path.len();
                push_key(path, key);
                let found = match (e.get(key), a.get(key)) {
                    (Some(ev), Some(av)) => diff_at(ev, av, path),
                    (ev, av) => Some(Difference {
                        path: path.clone(),
                        expected: ev.cloned(),
                        actual: av.cloned(),
                    }),
                };
                path.truncate(len);
                if found.is_some() {
                    return found;
                }
            }
            None
        }
        (Value::Array(e), Value::Array(a)) => {
            for i in 0..e.len().max(a.len()) {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                let found = match (e.get(i), a.get(i)) {
                    (Some(ev), Some(av)) => diff_at(ev, av, path),
                    (ev, av) => Some(Difference {
                        path: path.clone(),
                        expected: ev.cloned(),
                        actual: av.cloned(),
                    }),
                };
                path.truncate(len);
                if found.is_some() {
                    return found;
                }
            }
            None
        }
        (Value::Number(e), Value::Number(a)) => (!numbers_equal(e, a)).then(|| here(path)),
        (e, a) => (e != a).then(|| here(path)),
    }
}

fn push_key(path: &mut String, key: &str) {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if plain {
        path.push('.');
        path.push_str(key);
    } else {
        path.push_str(&format!("[{}]", Value::String(key.to_string())));
    }
}

/// JSON numbers by value: integers exactly; an integer equals a float only if the float is exactly it.
pub fn numbers_equal(a: &Number, b: &Number) -> bool {
    match (as_int(a), as_int(b)) {
        (Some(x), Some(y)) => x == y,
        _ => match (a.as_f64(), b.as_f64()) {
            (Some(x), Some(y)) => x == y,
            _ => false,
        },
    }
}

/// An integer value of `n`, also for a float with no fractional part that lies in the `i128` range.
fn as_int(n: &Number) -> Option<i128> {
    if let Some(i) = n.as_i64() {
        return Some(i.into());
    }
    if let Some(u) = n.as_u64() {
        return Some(u.into());
    }
    let f = n.as_f64()?;
    // 2^100 bounds every float we could compare exactly against an i64/u64.
    (f.fract() == 0.0 && f.abs() < 1.0e30).then_some(f as i128)
}

/// Result of one typed round trip.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Match,
    /// The typed value serialized back to something else.
    Mismatch(Difference),
    /// The generated type could not deserialize (or serialize) the object.
    DecodeError(String),
}

/// Compares what the typed round trip produced with the stored form.
pub fn judge(stored: &Value, actual: Result<Value, String>) -> Verdict {
    match actual {
        Err(e) => Verdict::DecodeError(e),
        Ok(actual) => match first_difference(stored, &actual) {
            None => Verdict::Match,
            Some(d) => Verdict::Mismatch(d),
        },
    }
}

/// Deserializes `value` into `T` and serializes it back: the typed half of a round trip.
pub fn typed_round_trip<T>(value: Value) -> Result<Value, String>
where
    T: serde::de::DeserializeOwned + serde::Serialize,
{
    let typed: T = serde_json::from_value(value).map_err(|e| format!("deserialize: {e}"))?;
    serde_json::to_value(&typed).map_err(|e| format!("serialize: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_compare_by_value_but_catch_precision_loss() {
        assert!(first_difference(&json!({"a": 1}), &json!({"a": 1.0})).is_none());
        assert!(first_difference(&json!(0), &json!(-0.0)).is_none());
        let big = json!(9007199254740993_i64);
        let squeezed = json!(9007199254740993_i64 as f64);
        assert!(first_difference(&big, &squeezed).is_some());
        assert!(first_difference(&json!(1.5), &json!(1)).is_some());
    }

    #[test]
    fn reports_first_differing_path() {
        let e = json!({"spec": {"ports": [{"name": "a"}, {"name": "b", "x.y": 1}]}});
        let a = json!({"spec": {"ports": [{"name": "a"}, {"name": "b", "x.y": 2}]}});
        let d = first_difference(&e, &a).unwrap();
        assert_eq!(d.path, r#".spec.ports[1]["x.y"]"#);
        assert_eq!(
            d.to_string(),
            r#"at .spec.ports[1]["x.y"]: expected 1, got 2"#
        );
        let d = first_difference(&json!({"a": null}), &json!({})).unwrap();
        assert_eq!((d.path.as_str(), d.actual), (".a", None));
        let d = first_difference(&json!([1]), &json!([1, 2])).unwrap();
        assert_eq!(d.path, "[1]");
    }

    #[test]
    fn metadata_is_normalised_like_the_server_does() {
        let sample = json!({"apiVersion": "a/v1", "kind": "A", "metadata": {"name": "x", "creationTimestamp": null}});
        let stored = stored_form(&json!({"type": "object"}), &sample);
        assert_eq!(stored.value["metadata"], json!({"name": "x"}));
        assert!(stored.pruned);
    }

    #[test]
    fn judge_classifies() {
        assert_eq!(judge(&json!({"a": 1}), Ok(json!({"a": 1}))), Verdict::Match);
        assert!(matches!(
            judge(&json!({"a": 1}), Ok(json!({}))),
            Verdict::Mismatch(_)
        ));
        assert!(matches!(
            judge(&json!({}), Err("boom".into())),
            Verdict::DecodeError(_)
        ));
    }
}
