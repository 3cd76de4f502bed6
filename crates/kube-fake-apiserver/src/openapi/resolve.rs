//! A kind's schema as the published `/openapi/v3` document gives it, with every `$ref`
//! followed: what kube-controller-manager's schema resolver hands the ValidatingAdmissionPolicy
//! type checker (`resolver.ClientDiscoveryResolver` and the built-in definitions alike).
use serde_json::{Map, Value, json};

use super::{ResourceSchema, cached_group_version};

/// How many `$ref`s deep the resolution follows before it declares the rest `dyn`.
const MAX_REF_DEPTH: usize = 32;

/// The schema of `group/version, Kind=kind` with its references resolved (descriptions left
/// out; a recursive reference is an untyped `{}`), or `None` when nothing serves it.
pub fn resolved_kind_schema(
    resources: &[ResourceSchema],
    group: &str,
    version: &str,
    kind: &str,
) -> Option<Value> {
    let doc = cached_group_version(group, version, resources)?;
    let schemas = doc.doc.pointer("/components/schemas")?.as_object()?;
    let root = schemas.values().find(|s| {
        s.get("x-kubernetes-group-version-kind")
            .and_then(Value::as_array)
            .is_some_and(|gvks| {
                gvks.iter().any(|g| {
                    g.get("group").and_then(Value::as_str) == Some(group)
                        && g.get("version").and_then(Value::as_str) == Some(version)
                        && g.get("kind").and_then(Value::as_str) == Some(kind)
                })
            })
    })?;
    Some(inline(root, schemas, &mut Vec::new()))
}

/// The component a node stands for: a bare `$ref`, or an `allOf` of one `$ref` beside a
/// description (how v3 documents a referenced property).
fn reference(m: &Map<String, Value>) -> Option<&str> {
    let r = match m.get("allOf").and_then(Value::as_array) {
        Some(all) if all.len() == 1 => all[0].get("$ref"),
        _ => m.get("$ref"),
    }?;
    r.as_str()?.rsplit('/').next()
}

fn inline(v: &Value, schemas: &Map<String, Value>, stack: &mut Vec<String>) -> Value {
    let Value::Object(m) = v else {
        return v.clone();
    };
    if let Some(name) = reference(m) {
        if stack.iter().any(|s| s == name) || stack.len() >= MAX_REF_DEPTH {
            return json!({});
        }
        let Some(target) = schemas.get(name) else {
            return json!({});
        };
        stack.push(name.to_string());
        let out = inline(target, schemas, stack);
        stack.pop();
        return out;
    }
    let mut out = Map::new();
    for (k, child) in m {
        match k.as_str() {
            "description" | "x-kubernetes-group-version-kind" => {}
            "properties" => {
                let props = child
                    .as_object()
                    .map(|p| {
                        p.iter()
                            .map(|(n, s)| (n.clone(), inline(s, schemas, stack)))
                            .collect()
                    })
                    .unwrap_or_default();
                out.insert(k.clone(), Value::Object(props));
            }
            "items" | "additionalProperties" if child.is_object() => {
                out.insert(k.clone(), inline(child, schemas, stack));
            }
            // The built-in definitions mark IntOrString by its format; the checker reads the
            // CRD extension (`isXIntOrString` accepts both).
            "format" if child == "int-or-string" => {
                out.insert("x-kubernetes-int-or-string".into(), json!(true));
                out.insert(k.clone(), child.clone());
            }
            _ => {
                out.insert(k.clone(), child.clone());
            }
        }
    }
    Value::Object(out)
}
