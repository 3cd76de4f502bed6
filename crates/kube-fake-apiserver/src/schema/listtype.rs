//! `x-kubernetes-list-type: set|map` uniqueness, checked after the OpenAPI validation as
//! apiextensions-apiserver does (`Duplicate value` causes at the repeated item).
use super::node::{Additional, Node};
use super::{Cause, MAX_DEPTH};
use serde_json::{Map, Value};

pub(super) fn check(s: Node<'_>, x: &Value, path: &str, depth: usize, out: &mut Vec<Cause>) {
    if depth > MAX_DEPTH {
        return;
    }
    match x {
        Value::Object(m) => {
            for (k, v) in m {
                let sub = match (s.property(k), s.additional()) {
                    (Some(p), _) => p,
                    (None, Some(Additional::Schema(a))) => a,
                    _ => continue,
                };
                let child = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                check(sub, v, &child, depth + 1, out);
            }
        }
        Value::Array(items) => {
            match s.raw("x-kubernetes-list-type").and_then(Value::as_str) {
                Some("set") => set(items, path, out),
                Some("map") => map(s, items, path, out),
                _ => {}
            }
            if let Some(item_schema) = s.items() {
                for (i, v) in items.iter().enumerate() {
                    check(item_schema, v, &format!("{path}[{i}]"), depth + 1, out);
                }
            }
        }
        _ => {}
    }
}

fn duplicate(path: &str, i: usize, shown: String) -> Cause {
    Cause {
        reason: "FieldValueDuplicate".into(),
        message: format!("Duplicate value: {shown}"),
        field: format!("{path}[{i}]"),
    }
}

fn set(items: &[Value], path: &str, out: &mut Vec<Cause>) {
    for (i, x) in items.iter().enumerate() {
        if items[..i].contains(x) {
            out.push(duplicate(path, i, super::gofmt::go_bad_value(x)));
        }
    }
}

fn map(s: Node<'_>, items: &[Value], path: &str, out: &mut Vec<Cause>) {
    let keys: Vec<&str> = match s.raw("x-kubernetes-list-map-keys") {
        Some(Value::Array(k)) => k.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let before = out.len();
    for (i, x) in items.iter().enumerate() {
        if !x.is_object() && !x.is_null() {
            out.push(Cause {
                reason: "FieldValueInvalid".into(),
                message: format!(
                    "Invalid value: {}: must be an object for an array of list-type map",
                    super::gofmt::go_bad_value(x)
                ),
                field: format!("{path}[{i}]"),
            });
        }
    }
    if out.len() > before {
        return;
    }
    // The entry's identity: its key fields (a missing key is a value of its own).
    let identity = |x: &Value| -> Vec<Option<Value>> {
        keys.iter()
            .map(|k| x.get(*k).filter(|v| !v.is_null()).cloned())
            .collect()
    };
    let mut seen: Vec<Vec<Option<Value>>> = Vec::new();
    for (i, x) in items.iter().enumerate() {
        let id = identity(x);
        if seen.contains(&id) {
            let mut shown = Map::new();
            for (k, v) in keys.iter().zip(&id) {
                if let Some(v) = v {
                    shown.insert((*k).to_string(), v.clone());
                }
            }
            out.push(duplicate(path, i, go_map_literal(&shown)));
        } else {
            seen.push(id);
        }
    }
}

/// Go's `%#v` of a `map[string]interface{}` holding scalars.
fn go_map_literal(m: &Map<String, Value>) -> String {
    super::gofmt::go_bad_value(&Value::Object(m.clone()))
}
