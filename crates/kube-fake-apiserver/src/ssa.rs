//! Field ownership for server-side apply: which manager owns which fields (`managedFields`),
//! conflicts between appliers, and removal of fields an applier stopped applying.
//! Lists are atomic (owned as a whole), which is what `x-kubernetes-list-type: atomic` means.
use serde_json::{Map, Value, json};

use crate::objects::{apply_merge, fields_v1};
use crate::status::ApiError;
use crate::util::str_of;

/// A field path as plain names (`["spec", "replicas"]`).
pub type Path = Vec<String>;

/// Leaf paths of a `fieldsV1` tree.
pub fn leaves(fields: &Value) -> Vec<Path> {
    let mut out = Vec::new();
    if let Some(m) = fields.as_object() {
        for (k, v) in m {
            let Some(name) = k.strip_prefix("f:") else {
                continue;
            };
            let children = leaves(v);
            if children.is_empty() {
                out.push(vec![name.to_string()]);
            } else {
                for mut c in children {
                    c.insert(0, name.to_string());
                    out.push(c);
                }
            }
        }
    }
    out
}

/// The `fieldsV1` tree of a set of paths.
pub fn tree(paths: &[Path]) -> Value {
    let mut root = Map::new();
    for p in paths {
        let mut cur = &mut root;
        for seg in p {
            let e = cur.entry(format!("f:{seg}")).or_insert_with(|| json!({}));
            if !e.is_object() {
                *e = json!({});
            }
            cur = e.as_object_mut().expect("made an object above");
        }
    }
    Value::Object(root)
}

fn overlaps(a: &Path, b: &Path) -> bool {
    a.iter().zip(b).all(|(x, y)| x == y)
}

fn get_at<'a>(obj: &'a Value, p: &Path) -> Option<&'a Value> {
    p.iter().try_fold(obj, |cur, seg| cur.get(seg))
}

fn remove_at(obj: &mut Value, p: &Path) {
    let Some((last, parents)) = p.split_last() else {
        return;
    };
    let mut cur = obj;
    for seg in parents {
        match cur.get_mut(seg) {
            Some(next) => cur = next,
            None => return,
        }
    }
    if let Some(m) = cur.as_object_mut() {
        m.remove(last);
    }
}

/// Leaf paths where `a` and `b` differ (objects are compared key by key, anything else whole).
pub fn diff(a: &Value, b: &Value) -> Vec<Path> {
    let mut out = Vec::new();
    diff_into(a, b, &mut Vec::new(), &mut out);
    out
}

fn diff_into(a: &Value, b: &Value, at: &mut Path, out: &mut Vec<Path>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                at.push(k.clone());
                match (x.get(k), y.get(k)) {
                    (Some(p), Some(q)) => diff_into(p, q, at, out),
                    _ => out.push(at.clone()),
                }
                at.pop();
            }
        }
        _ if a != b => out.push(at.clone()),
        _ => {}
    }
}

fn manager_of(e: &Value) -> (&str, &str) {
    (str_of(e.get("manager")), str_of(e.get("operation")))
}

/// Paths of the fields an object's fields tree covers that `fields_v1` would record (no
/// apiVersion/kind, metadata only labels/annotations/finalizers/ownerReferences).
pub fn object_paths(obj: &Value) -> Vec<Path> {
    leaves(&fields_v1(obj, true))
}

/// Server-side apply of `applied` by `manager` onto `current` (an object in the request's version).
/// Fails with 409 when another manager owns a field whose value would change, unless `force`.
/// Fields this manager applied before and no longer applies are removed if nobody else owns them.
pub fn merge(
    current: &Value,
    applied: &Value,
    manager: &str,
    force: bool,
) -> Result<Value, ApiError> {
    let entries: Vec<Value> = current
        .pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let new_paths = object_paths(applied);
    if !force {
        let mut conflicts: Vec<(String, Path)> = Vec::new();
        for p in &new_paths {
            let (now, want) = (get_at(current, p), get_at(applied, p));
            // An applied map only claims the map exists; its entries are compared leaf by leaf.
            let both_maps = now.is_some_and(Value::is_object) && want.is_some_and(Value::is_object);
            if now.is_none() || now == want || both_maps {
                continue;
            }
            for e in &entries {
                let (m, _) = manager_of(e);
                if m == manager {
                    continue;
                }
                let owned = leaves(e.get("fieldsV1").unwrap_or(&Value::Null));
                if owned.iter().any(|q| overlaps(p, q)) {
                    // The server prints an `Update` manager with its apiVersion and time, an
                    // `Apply` one by name only (apimachinery's printManager).
                    let printed = match (str_of(e.get("operation")), str_of(e.get("time"))) {
                        ("Update", "") => format!("{m:?} using {}", str_of(e.get("apiVersion"))),
                        ("Update", t) => {
                            format!("{m:?} using {} at {t}", str_of(e.get("apiVersion")))
                        }
                        _ => format!("{m:?}"),
                    };
                    conflicts.push((printed, p.clone()));
                }
            }
        }
        if !conflicts.is_empty() {
            return Err(conflict_error(&conflicts));
        }
    }
    let mut merged = current.clone();
    apply_merge(&mut merged, applied);
    let previous: Vec<Path> = entries
        .iter()
        .filter(|e| manager_of(e) == (manager, "Apply"))
        .flat_map(|e| leaves(e.get("fieldsV1").unwrap_or(&Value::Null)))
        .collect();
    for p in previous {
        // Still applied: the same field, a field below it, or an applied non-map value above it.
        let still_applied = new_paths.iter().any(|q| {
            let q_above = q.len() < p.len() && overlaps(&p, q);
            (q.len() >= p.len() && overlaps(&p, q))
                || (q_above && !get_at(applied, q).is_some_and(Value::is_object))
        });
        let owned_elsewhere = entries
            .iter()
            .filter(|e| manager_of(e) != (manager, "Apply"))
            .any(|e| {
                leaves(e.get("fieldsV1").unwrap_or(&Value::Null))
                    .iter()
                    .any(|q| overlaps(&p, q))
            });
        if !still_applied && !owned_elsewhere {
            remove_at(&mut merged, &p);
        }
    }
    Ok(merged)
}

fn conflict_error(conflicts: &[(String, Path)]) -> ApiError {
    let field = |p: &Path| format!(".{}", p.join("."));
    let message = if let [(m, p)] = conflicts {
        format!(
            "Apply failed with 1 conflict: conflict with {m}: {}",
            field(p)
        )
    } else {
        // Grouped by manager, managers sorted, one `- path` line per field.
        let mut by_manager: std::collections::BTreeMap<&str, Vec<String>> = Default::default();
        for (m, p) in conflicts {
            by_manager
                .entry(m)
                .or_default()
                .push(format!("- {}", field(p)));
        }
        let mut lines = Vec::new();
        for (m, paths) in by_manager {
            lines.push(format!("conflicts with {m}:"));
            lines.extend(paths);
        }
        format!(
            "Apply failed with {} conflicts: {}",
            conflicts.len(),
            lines.join("\n")
        )
    };
    let causes: Vec<Value> = conflicts
        .iter()
        .map(|(m, p)| {
            json!({"reason": "FieldManagerConflict", "message": format!("conflict with {m}"), "field": field(p)})
        })
        .collect();
    ApiError::new(409, "Conflict", message).with_details(json!({"causes": causes}))
}

#[allow(clippy::too_many_arguments)]
/// New `managedFields`: `manager`'s entry for `operation` now owns `mine`; fields that changed in this
/// write are taken away from every other manager; managers left with nothing are dropped.
pub fn record(
    old_entries: &[Value],
    manager: &str,
    operation: &str,
    subresource: Option<&str>,
    mine: Vec<Path>,
    changed: &[Path],
    api_version: &str,
    time: &str,
) -> Vec<Value> {
    let same = |e: &Value| {
        manager_of(e) == (manager, operation)
            && e.get("subresource").and_then(Value::as_str) == subresource
    };
    let mut out = Vec::new();
    for e in old_entries.iter().filter(|e| !same(e)) {
        let kept: Vec<Path> = leaves(e.get("fieldsV1").unwrap_or(&Value::Null))
            .into_iter()
            .filter(|q| !changed.iter().any(|c| overlaps(c, q)))
            .collect();
        if kept.is_empty() {
            continue;
        }
        let mut e = e.clone();
        e["fieldsV1"] = tree(&kept);
        out.push(e);
    }
    let mut entry = json!({
        "manager": manager,
        "operation": operation,
        "apiVersion": api_version,
        "time": time,
        "fieldsType": "FieldsV1",
        "fieldsV1": tree(&mine),
    });
    if let Some(s) = subresource {
        entry["subresource"] = json!(s);
    }
    out.push(entry);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(m: &str, op: &str, paths: &[&[&str]]) -> Value {
        let ps: Vec<Path> = paths
            .iter()
            .map(|p| p.iter().map(|s| s.to_string()).collect())
            .collect();
        json!({"manager": m, "operation": op, "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": tree(&ps)})
    }

    #[test]
    fn tree_and_leaves_round_trip() {
        let t = tree(&[
            vec!["spec".into(), "a".into()],
            vec!["spec".into(), "b".into()],
        ]);
        assert_eq!(t, json!({"f:spec": {"f:a": {}, "f:b": {}}}));
        assert_eq!(leaves(&t).len(), 2);
    }

    #[test]
    fn conflicts_unless_forced_and_removes_unapplied_fields() {
        let current = json!({"metadata": {"managedFields": [
            entry("other", "Update", &[&["spec", "replicas"]]),
            entry("me", "Apply", &[&["spec", "color"], &["spec", "size"]]),
        ]}, "spec": {"replicas": 1, "color": "red", "size": 3}});
        let applied = json!({"spec": {"replicas": 2, "color": "red"}});
        let err = merge(&current, &applied, "me", false).unwrap_err();
        assert_eq!(err.code, 409);
        assert_eq!(
            err.message,
            "Apply failed with 1 conflict: conflict with \"other\" using v1: .spec.replicas"
        );
        let merged = merge(&current, &applied, "me", true).unwrap();
        assert_eq!(
            merged["spec"],
            json!({"replicas": 2, "color": "red"}),
            "size is no longer applied"
        );
        // Same value: shared ownership, no conflict.
        assert!(merge(&current, &json!({"spec": {"replicas": 1}}), "me", false).is_ok());
    }

    #[test]
    fn record_transfers_changed_fields() {
        let old = vec![entry("a", "Apply", &[&["spec", "x"], &["spec", "y"]])];
        let changed = vec![vec!["spec".to_string(), "x".to_string()]];
        let out = record(
            &old,
            "b",
            "Update",
            None,
            changed.clone(),
            &changed,
            "v1",
            "t",
        );
        assert_eq!(out[0]["fieldsV1"], json!({"f:spec": {"f:y": {}}}));
        assert_eq!(out[1]["manager"], "b");
        assert_eq!(
            diff(
                &json!({"a": 1, "b": {"c": 2}}),
                &json!({"a": 1, "b": {"c": 3}, "d": 0})
            )
            .len(),
            2
        );
    }
}
