//! `defaulting.ValidateDefaults`: every `default` must survive pruning unchanged (no unknown
//! fields) and validate against its own schema (type, enum, required; formats and numeric bounds
//! are not checked here). Defaults under `metadata`, `apiVersion` and `kind` of a resource are
//! skipped.

use serde_json::Value;

use super::Violation;
use super::model::Schema;
use super::path::Path;
use super::render::{go_json, invalid, not_supported, q, required, type_invalid};

const META_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// Checks the defaults of the whole schema (the resource root).
pub(crate) fn validate_defaults(path: &Path, root: &Schema) -> Vec<Violation> {
    let mut out = Vec::new();
    walk(path, root, true, false, &mut out);
    out
}

fn walk(path: &Path, s: &Schema, is_root: bool, inside_meta: bool, out: &mut Vec<Violation>) {
    if s.unreadable {
        return;
    }
    let embedded = is_root || s.x_embedded_resource;
    let inside_meta = if embedded { false } else { inside_meta };
    if let Some(default) = &s.default
        && !inside_meta
    {
        if has_unknown_fields(default, Some(s), embedded) {
            out.push(Violation::new(invalid(
                &path.child("default"),
                &go_json(default),
                "must not have unknown fields",
            )));
        } else {
            check_value(default, s, &path.child("default"), "", out);
        }
    }
    if let Some(items) = s.items_schema() {
        walk(&path.child("items"), items, false, inside_meta, out);
    }
    for (k, p) in &s.properties {
        let sub_meta = inside_meta || (embedded && META_FIELDS.contains(&k.as_str()));
        walk(&path.child("properties").key(k), p, false, sub_meta, out);
    }
}

/// Whether structural pruning would remove anything from `v`.
fn has_unknown_fields(v: &Value, s: Option<&Schema>, resource_root: bool) -> bool {
    if let Some(s) = s
        && s.preserves_unknown()
    {
        return skip_prune(v, s);
    }
    match v {
        Value::Object(m) => {
            let Some(s) = s else {
                return !m.is_empty();
            };
            for (k, x) in m {
                if s.x_embedded_resource || resource_root {
                    if (k == "apiVersion" || k == "kind") && x.is_string() {
                        continue;
                    }
                    if k == "metadata" {
                        continue;
                    }
                }
                if let Some(p) = s.properties.get(k) {
                    if has_unknown_fields(x, Some(p), false) {
                        return true;
                    }
                } else if let Some(ap) = &s.additional_properties {
                    if has_unknown_fields(x, ap.schema.as_deref(), false) {
                        return true;
                    }
                } else if !(resource_root && META_FIELDS.contains(&k.as_str())) {
                    return true;
                }
            }
            false
        }
        Value::Array(a) => {
            let items = s.and_then(|s| s.items_schema());
            a.iter().any(|x| has_unknown_fields(x, items, false))
        }
        _ => false,
    }
}

fn skip_prune(v: &Value, s: &Schema) -> bool {
    match v {
        Value::Object(m) => m.iter().any(|(k, x)| {
            if s.x_embedded_resource && META_FIELDS.contains(&k.as_str()) {
                return false;
            }
            if let Some(p) = s.properties.get(k) {
                has_unknown_fields(x, Some(p), false)
            } else if let Some(ap) = &s.additional_properties {
                has_unknown_fields(x, ap.schema.as_deref(), false)
            } else {
                false
            }
        }),
        Value::Array(a) => match s.items_schema() {
            Some(items) => a.iter().any(|x| skip_prune(x, items)),
            None => false,
        },
        _ => false,
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn type_matches(v: &Value, s: &Schema) -> bool {
    if s.x_int_or_string {
        return matches!(v, Value::String(_)) || matches!(v, Value::Number(n) if !n.is_f64());
    }
    match (s.type_.as_str(), v) {
        ("", _) => true,
        (_, Value::Null) => s.nullable,
        ("object", Value::Object(_))
        | ("array", Value::Array(_))
        | ("string", Value::String(_)) => true,
        ("boolean", Value::Bool(_)) | ("number", Value::Number(_)) => true,
        ("integer", Value::Number(n)) => {
            !n.is_f64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => false,
    }
}

fn sub(name: &str, part: &str) -> String {
    if name.is_empty() {
        part.to_string()
    } else {
        format!("{name}.{part}")
    }
}

/// The kube-openapi checks this validator replicates, on one default value.
fn check_value(v: &Value, s: &Schema, base: &Path, name: &str, out: &mut Vec<Violation>) {
    let err_path = if name.is_empty() {
        base.clone()
    } else {
        base.child(name)
    };
    if v.is_null() && s.nullable {
        return;
    }
    if !type_matches(v, s) {
        let actual = json_type(v);
        let detail = format!(
            "{} in body must be of type {}: {}",
            name,
            s.type_,
            q(actual)
        );
        out.push(Violation::new(type_invalid(
            &err_path,
            &q(actual),
            detail.trim_start(),
        )));
        return;
    }
    if !s.enum_.is_empty() && !s.enum_.contains(v) {
        let allowed: Vec<String> = s
            .enum_
            .iter()
            .map(|e| match e {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect();
        let allowed: Vec<&str> = allowed.iter().map(String::as_str).collect();
        out.push(Violation::new(not_supported(
            &err_path,
            &go_json(v),
            &allowed,
        )));
    }
    match v {
        Value::Object(m) => {
            for r in &s.required {
                if !m.contains_key(r) {
                    out.push(Violation::new(required(&err_path.child(r), "")));
                }
            }
            for (k, x) in m {
                if let Some(p) = s.properties.get(k) {
                    check_value(x, p, base, &sub(name, k), out);
                } else if let Some(ap) = s.additional_properties_schema() {
                    check_value(x, ap, base, &sub(name, k), out);
                }
            }
        }
        Value::Array(a) => {
            if let Some(items) = s.items_schema() {
                for (i, x) in a.iter().enumerate() {
                    check_value(x, items, base, &sub(name, &i.to_string()), out);
                }
            }
        }
        _ => {}
    }
}
