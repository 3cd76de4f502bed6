//! `x-kubernetes-list-type: set|map` uniqueness, checked after the OpenAPI validation as
//! apiextensions-apiserver does: one `Duplicate value` cause per repeated value (at its first
//! repetition), printed as JSON; paths are `field.Path`s (`spec.replicaSpecs[Worker]` for a map
//! key). Never ratcheted: a duplicate kept from the old object is still refused, as on the
//! server (adding `set` to a list with duplicates always fails).
use super::correlate;
use super::node::{Additional, Node};
use super::{Cause, MAX_DEPTH, child};
use crate::gofmt::go_error_value;
use serde_json::{Map, Value};

pub(super) fn check(s: Node<'_>, x: &Value, path: &str, depth: usize, out: &mut Vec<Cause>) {
    if depth > MAX_DEPTH {
        return;
    }
    match x {
        Value::Object(m) => {
            for (k, v) in m {
                let (sub, field) = match (s.property(k), s.additional()) {
                    (Some(p), _) => (p, child(path, k)),
                    (None, Some(Additional::Schema(a))) => (a, format!("{path}[{k}]")),
                    _ => continue,
                };
                check(sub, v, &field, depth + 1, out);
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

/// Reports each repeated identity once, at its first repetition.
fn report_repeats<T: PartialEq>(
    ids: &[T],
    path: &str,
    shown: impl Fn(usize) -> String,
    out: &mut Vec<Cause>,
) {
    let mut reported: Vec<&T> = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        if ids[..i].contains(id) && !reported.contains(&id) {
            reported.push(id);
            out.push(duplicate(path, i, shown(i)));
        }
    }
}

fn set(items: &[Value], path: &str, out: &mut Vec<Cause>) {
    report_repeats(items, path, |i| go_error_value(&items[i]), out);
}

fn map(s: Node<'_>, items: &[Value], path: &str, out: &mut Vec<Cause>) {
    let keys = correlate::map_keys(s);
    let before = out.len();
    for (i, x) in items.iter().enumerate() {
        if !x.is_object() && !x.is_null() {
            out.push(Cause {
                reason: "FieldValueInvalid".into(),
                message: format!(
                    "Invalid value: {}: must be an object for an array of list-type map",
                    go_error_value(x)
                ),
                field: format!("{path}[{i}]"),
            });
        }
    }
    if out.len() > before {
        return;
    }
    // The entry's identity: its key fields (a missing key is a value of its own).
    let ids: Vec<Vec<Option<&Value>>> = items
        .iter()
        .map(|x| {
            keys.iter()
                .map(|k| x.get(*k).filter(|v| !v.is_null()))
                .collect()
        })
        .collect();
    let shown = |i: usize| {
        let mut m = Map::new();
        for (k, v) in keys.iter().zip(&ids[i]) {
            if let Some(v) = v {
                m.insert((*k).to_string(), (*v).clone());
            }
        }
        go_error_value(&Value::Object(m))
    };
    report_repeats(&ids, path, shown, out);
}
