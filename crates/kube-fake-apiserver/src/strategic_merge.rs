//! Strategic merge patch (`application/strategic-merge-patch+json`) on built-in kinds, as
//! apimachinery's `strategicpatch.StrategicMergeMapPatch` applies it on the server (parallel
//! lists merged, unmatched nulls ignored): maps merge, lists merge by their
//! `x-kubernetes-patch-merge-key` where `x-kubernetes-patch-strategy` says `merge` (replaced
//! otherwise), and the directives `$patch` (`replace`/`delete` on maps and list items),
//! `$setElementOrder/<list>`, `$retainKeys` and `$deleteFromPrimitiveList/<list>` are honoured.
//! The patch strategies come from the built-in OpenAPI definitions ([`crate::builtin_schemas`]).
use serde_json::{Map, Value};

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const SET_ELEMENT_ORDER: &str = "$setElementOrder/";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList/";

/// A schema node of a built-in definition (`None` where the definitions say nothing: maps then
/// merge and lists are replaced, as for a field without patch tags).
type Node = Option<&'static Value>;

/// Why a patch could not be applied (the text of apimachinery's error).
#[derive(Debug, Clone, PartialEq)]
pub struct PatchError(pub String);

/// Applies `patch` to `original` (both JSON objects) following the definition `schema`.
pub fn apply(original: &Value, patch: &Value, schema: Node) -> Result<Value, PatchError> {
    let (Value::Object(o), Value::Object(p)) = (original, patch) else {
        return Err(PatchError(
            "strategic merge patch: both the object and the patch must be JSON objects".into(),
        ));
    };
    merge_map(o.clone(), p.clone(), resolve(schema)).map(Value::Object)
}

/// Follows a `$ref` to its definition.
fn resolve(node: Node) -> Node {
    let mut node = node?;
    for _ in 0..8 {
        match node.get("$ref").and_then(Value::as_str) {
            Some(r) => node = crate::builtin_schemas::definitions().resolve(r)?,
            None => break,
        }
    }
    Some(node)
}

/// The schema of the field `key` of an object node (or a map's value schema), and its patch
/// strategy (`retainKeys` dropped) and merge key.
fn field(node: Node, key: &str) -> (Node, String, String) {
    let Some(n) = node else {
        return (None, String::new(), String::new());
    };
    let prop = n
        .get("properties")
        .and_then(|p| p.get(key))
        .or_else(|| n.get("additionalProperties").filter(|a| a.is_object()));
    let Some(prop) = prop else {
        return (None, String::new(), String::new());
    };
    let strategy = prop
        .get("x-kubernetes-patch-strategy")
        .and_then(Value::as_str)
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|s| *s != "retainKeys" && !s.is_empty())
        .collect::<Vec<_>>()
        .join(",");
    let merge_key = prop
        .get("x-kubernetes-patch-merge-key")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    (resolve(Some(prop)), strategy, merge_key)
}

/// The item schema of a list node.
fn items(node: Node) -> Node {
    resolve(node.and_then(|n| n.get("items")))
}

fn merge_map(
    mut original: Map<String, Value>,
    mut patch: Map<String, Value>,
    schema: Node,
) -> Result<Map<String, Value>, PatchError> {
    if let Some(d) = patch.get(DIRECTIVE) {
        return match d.as_str() {
            Some("replace") => {
                patch.remove(DIRECTIVE);
                Ok(patch)
            }
            Some("delete") => Ok(Map::new()),
            _ => Err(PatchError(format!(
                "unknown patch type: {d} in map: {}",
                Value::Object(patch.clone())
            ))),
        };
    }
    retain_keys(&mut original, &mut patch)?;
    set_element_order(&mut original, &mut patch, schema)?;
    for (k, v) in patch {
        let (key, delete_list) = match k.strip_prefix(DELETE_FROM_PRIMITIVE_LIST) {
            Some(rest) => (rest.to_string(), true),
            None => (k, false),
        };
        if v.is_null() {
            original.remove(&key);
            continue;
        }
        let (sub, strategy, merge_key) = field(schema, &key);
        let Some(current) = original.remove(&key) else {
            if !delete_list {
                // Not in the object: the patch value, with its directives processed as a merge
                // into nothing (kube-apiserver's typed decode drops what is left of them).
                original.insert(key, added(v, sub, &strategy, &merge_key)?);
            }
            continue;
        };
        let merged = match (current, v) {
            (Value::Object(c), Value::Object(p)) => {
                if strategy == "replace" {
                    Value::Object(p)
                } else {
                    Value::Object(merge_map(c, p, sub)?)
                }
            }
            (Value::Array(c), Value::Array(p)) => {
                if strategy == "merge" {
                    Value::Array(merge_list(c, p, items(sub), &merge_key, delete_list)?)
                } else {
                    Value::Array(p)
                }
            }
            // `$deleteFromPrimitiveList/x` on a field that is not a list: nothing to delete.
            (c, _) if delete_list => c,
            (_, p) => p,
        };
        original.insert(key, merged);
    }
    Ok(original)
}

/// A patch value for a field the object does not have.
fn added(v: Value, schema: Node, strategy: &str, merge_key: &str) -> Result<Value, PatchError> {
    Ok(match v {
        Value::Object(p) if strategy != "replace" => {
            Value::Object(merge_map(Map::new(), p, schema)?)
        }
        Value::Array(p) if strategy == "merge" => {
            Value::Array(merge_list(Vec::new(), p, items(schema), merge_key, false)?)
        }
        v => discard_nulls(v),
    })
}

/// Nulls inside a value that replaces nothing mean nothing (`discardNullValuesFromPatch`).
fn discard_nulls(v: Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, discard_nulls(v)))
                .collect(),
        ),
        v => v,
    }
}

/// `$retainKeys`: keys of the object not listed are cleared; every key the patch sets must be listed.
fn retain_keys(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
) -> Result<(), PatchError> {
    let Some(list) = patch.remove(RETAIN_KEYS) else {
        return Ok(());
    };
    let bad = || {
        PatchError("invalid patch: the value of $retainKeys must be a list of strings, and every field in the patch must be in it".into())
    };
    let Value::Array(list) = list else {
        return Err(bad());
    };
    let keep: Vec<&str> = list.iter().filter_map(Value::as_str).collect();
    for (k, v) in patch.iter() {
        if v.is_null()
            || k.starts_with(DELETE_FROM_PRIMITIVE_LIST)
            || k.starts_with(SET_ELEMENT_ORDER)
        {
            continue;
        }
        if !keep.contains(&k.as_str()) {
            return Err(bad());
        }
    }
    original.retain(|k, _| keep.contains(&k.as_str()));
    Ok(())
}

/// `$setElementOrder/<list>`: merges the list (when the patch has it) and orders the result:
/// the directive's order first, then the object's.
fn set_element_order(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
    schema: Node,
) -> Result<(), PatchError> {
    let directives: Vec<String> = patch
        .keys()
        .filter(|k| k.starts_with(SET_ELEMENT_ORDER))
        .cloned()
        .collect();
    for directive in directives {
        let Some(Value::Array(order)) = patch.remove(&directive) else {
            return Err(PatchError(format!(
                "invalid patch: {directive} must be a list"
            )));
        };
        let key = &directive[SET_ELEMENT_ORDER.len()..];
        let (sub, strategy, merge_key) = field(schema, key);
        let current = match original.get(key) {
            Some(Value::Array(c)) => Some(c.clone()),
            Some(_) => return Err(PatchError(format!("invalid patch: {key} is not a list"))),
            None => None,
        };
        let patched = match patch.remove(key) {
            Some(Value::Array(p)) => Some(p),
            Some(_) => return Err(PatchError(format!("invalid patch: {key} is not a list"))),
            None => None,
        };
        let merged = match (&current, patched) {
            (Some(c), None) => c.clone(),
            (None, Some(p)) => merge_list(Vec::new(), p, items(sub), &merge_key, false)?,
            (Some(c), Some(p)) if strategy == "merge" => {
                merge_list(c.clone(), p, items(sub), &merge_key, false)?
            }
            (Some(_), Some(p)) => p,
            (None, None) => continue,
        };
        let (in_order, server_only): (Vec<Value>, Vec<Value>) = merged
            .into_iter()
            .partition(|v| position(&order, v, &merge_key).is_some());
        let current = current.unwrap_or_default();
        original.insert(
            key.to_string(),
            Value::Array(normalize(
                in_order,
                server_only,
                &order,
                &current,
                &merge_key,
            )),
        );
    }
    Ok(())
}

/// Merges a list with strategy `merge`: scalars as a set (or deleted from, for
/// `$deleteFromPrimitiveList`), objects by `merge_key` (with `$patch: delete` and
/// `$patch: replace` items), ordered as the patch orders them, the object's other items kept in
/// place.
fn merge_list(
    original: Vec<Value>,
    patch: Vec<Value>,
    schema: Node,
    merge_key: &str,
    delete_list: bool,
) -> Result<Vec<Value>, PatchError> {
    if original.is_empty() && patch.is_empty() {
        return Ok(original);
    }
    let maps = original.iter().chain(&patch).all(Value::is_object);
    let scalars = !original
        .iter()
        .chain(&patch)
        .any(|v| v.is_object() || v.is_array());
    if !maps && !scalars {
        return Err(PatchError(format!(
            "list element types are not identical: {}",
            Value::Array([original, patch].concat())
        )));
    }
    let (original, patch, merged) = if !maps {
        if delete_list {
            return Ok(original
                .into_iter()
                .filter(|v| !patch.contains(v))
                .collect());
        }
        let mut merged: Vec<Value> = Vec::new();
        for v in original.iter().chain(&patch) {
            if !merged.contains(v) {
                merged.push(v.clone());
            }
        }
        (original, patch, merged)
    } else {
        if merge_key.is_empty() {
            return Err(PatchError("cannot merge lists without merge key".into()));
        }
        let (original, patch) = special_items(original, patch, merge_key)?;
        let mut merged = original.clone();
        for item in &patch {
            let Some(value) = item.get(merge_key) else {
                return Err(PatchError(format!(
                    "map: {item} does not contain declared merge key: {merge_key}"
                )));
            };
            match merged.iter().position(|o| o.get(merge_key) == Some(value)) {
                Some(i) => {
                    let (Value::Object(o), Value::Object(p)) = (merged[i].take(), item.clone())
                    else {
                        unreachable!("every item is an object");
                    };
                    merged[i] = Value::Object(merge_map(o, p, schema)?);
                }
                // A new item: its own directives are processed as a merge into nothing.
                None => {
                    let Value::Object(p) = item.clone() else {
                        unreachable!("every item is an object");
                    };
                    merged.push(Value::Object(merge_map(Map::new(), p, schema)?));
                }
            }
        }
        (original, patch, merged)
    };
    let key = if maps { merge_key } else { "" };
    let (in_patch, server_only): (Vec<Value>, Vec<Value>) = merged
        .into_iter()
        .partition(|v| position(&patch, v, key).is_some());
    Ok(normalize(in_patch, server_only, &patch, &original, key))
}

/// Applies the `$patch` items of a list of objects: `delete` removes the object's items with
/// that merge key, `replace` makes the patch's other items the whole list.
fn special_items(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    merge_key: &str,
) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
    let mut plain = Vec::new();
    let mut replace = false;
    for item in patch {
        match item.get(DIRECTIVE) {
            None => plain.push(item),
            Some(d) if d == "delete" => {
                let Some(value) = item.get(merge_key) else {
                    return Err(PatchError(format!(
                        "map: {item} does not contain declared merge key: {merge_key}"
                    )));
                };
                original.retain(|o| o.get(merge_key) != Some(value));
            }
            Some(d) if d == "replace" => replace = true,
            Some(d) if d == "merge" => {
                return Err(PatchError(
                    "merging lists cannot yet be specified in the patch".into(),
                ));
            }
            Some(d) => {
                return Err(PatchError(format!(
                    "unknown patch type: {d} in map: {item}"
                )));
            }
        }
    }
    if replace {
        return Ok((plain, Vec::new()));
    }
    Ok((original, plain))
}

/// Where `item` is in `list`: by merge key for objects, by value for scalars.
fn position(list: &[Value], item: &Value, merge_key: &str) -> Option<usize> {
    if merge_key.is_empty() {
        return list.iter().position(|v| v == item);
    }
    let value = item.get(merge_key)?;
    list.iter().position(|v| v.get(merge_key) == Some(value))
}

/// `normalizeElementOrder`: the patch's items sorted by `patch_order`, the object's other
/// items by `server_order`, then interleaved so both keep their relative order, a server item
/// going before a patch item it preceded in the object.
fn normalize(
    mut patch_items: Vec<Value>,
    mut server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    merge_key: &str,
) -> Vec<Value> {
    let rank = |order: &[Value], v: &Value| position(order, v, merge_key).unwrap_or(usize::MAX);
    patch_items.sort_by_key(|v| rank(patch_order, v));
    server_only.sort_by_key(|v| rank(server_order, v));
    let mut out = Vec::with_capacity(patch_items.len() + server_only.len());
    let (mut left, mut right) = (
        server_only.into_iter().peekable(),
        patch_items.into_iter().peekable(),
    );
    loop {
        match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => out.extend(left.next()),
            (None, Some(_)) => out.extend(right.next()),
            (Some(l), Some(r)) => {
                let before = match (
                    position(server_order, l, merge_key),
                    position(server_order, r, merge_key),
                ) {
                    (Some(li), Some(ri)) => li < ri,
                    _ => false,
                };
                if before {
                    out.extend(left.next());
                } else {
                    out.extend(right.next());
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment() -> Node {
        let defs = crate::builtin_schemas::definitions();
        defs.get("io.k8s.api.apps.v1.Deployment")
    }

    fn pod_spec(containers: Value) -> Value {
        json!({"spec": {"template": {"spec": {"containers": containers}}}})
    }

    fn containers(v: &Value) -> &Value {
        &v["spec"]["template"]["spec"]["containers"]
    }

    /// New list items go before the object's own (`mergeSortedSlice` puts a server item first
    /// only when both are in the object), so `B` precedes `A` as on a real server.
    #[test]
    fn containers_merge_by_name_and_keep_the_others() {
        let live = pod_spec(json!([
            {"name": "app", "image": "app:1", "env": [{"name": "A", "value": "1"}]},
            {"name": "sidecar", "image": "side:1"}
        ]));
        let patch = pod_spec(
            json!([{"name": "app", "image": "app:2", "env": [{"name": "B", "value": "2"}]}]),
        );
        let out = apply(&live, &patch, deployment()).unwrap();
        assert_eq!(
            containers(&out),
            &json!([
                {"name": "app", "image": "app:2", "env": [{"name": "B", "value": "2"}, {"name": "A", "value": "1"}]},
                {"name": "sidecar", "image": "side:1"}
            ])
        );
    }

    /// What kubectl's client-side apply sends when a container port changes (seen in a test
    /// against kubectl 1.32): the old port deleted, `$setElementOrder` for both lists.
    #[test]
    fn kubectl_apply_patch_with_directives() {
        let live = pod_spec(json!([
            {"name": "db", "image": "db:1", "ports": [{"containerPort": 5432, "name": "sql", "protocol": "TCP"}]},
            {"name": "exporter", "image": "exporter:1"}
        ]));
        let patch = json!({"spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "db"}, {"name": "exporter"}],
            "containers": [{
                "$setElementOrder/ports": [{"containerPort": 5433}],
                "image": "db:2", "name": "db",
                "ports": [{"containerPort": 5433, "name": "sql"}, {"$patch": "delete", "containerPort": 5432}]
            }]
        }}}});
        let out = apply(&live, &patch, deployment()).unwrap();
        assert_eq!(
            containers(&out),
            &json!([
                {"name": "db", "image": "db:2", "ports": [{"containerPort": 5433, "name": "sql"}]},
                {"name": "exporter", "image": "exporter:1"}
            ])
        );
    }

    #[test]
    fn set_element_order_reorders() {
        let live = pod_spec(json!([{"name": "a"}, {"name": "b"}, {"name": "c"}]));
        let patch = json!({"spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "c"}, {"name": "a"}, {"name": "b"}]
        }}}});
        let out = apply(&live, &patch, deployment()).unwrap();
        assert_eq!(
            containers(&out),
            &json!([{"name": "c"}, {"name": "a"}, {"name": "b"}])
        );
    }

    #[test]
    fn patch_replace_and_delete_directives() {
        let live = pod_spec(json!([{"name": "a", "image": "x"}, {"name": "b"}]));
        let patch = pod_spec(json!([{"name": "z"}, {"$patch": "replace"}]));
        let out = apply(&live, &patch, deployment()).unwrap();
        assert_eq!(containers(&out), &json!([{"name": "z"}]));
        // `$patch: replace` on a map replaces it; `delete` empties it.
        let live = json!({"metadata": {"labels": {"a": "1", "b": "2"}}});
        let patch = json!({"metadata": {"labels": {"$patch": "replace", "c": "3"}}});
        let out = apply(&live, &patch, deployment()).unwrap();
        assert_eq!(out["metadata"]["labels"], json!({"c": "3"}));
        let patch = json!({"metadata": {"labels": {"$patch": "delete"}}});
        let out = apply(&live, &patch, deployment()).unwrap();
        assert_eq!(out["metadata"]["labels"], json!({}));
        let bad = json!({"metadata": {"labels": {"$patch": "sideways"}}});
        assert!(apply(&live, &bad, deployment()).is_err());
    }

    #[test]
    fn lists_without_merge_strategy_are_replaced_and_nulls_delete() {
        // `args` has no patch strategy: replaced.
        let live = pod_spec(json!([{"name": "a", "args": ["x", "y"], "image": "i"}]));
        let patch = pod_spec(json!([{"name": "a", "args": ["z"], "image": null}]));
        let out = apply(&live, &patch, deployment()).unwrap();
        assert_eq!(containers(&out), &json!([{"name": "a", "args": ["z"]}]));
    }

    #[test]
    fn primitive_lists_delete_and_retain_keys() {
        // `finalizers` merges as a set; `$deleteFromPrimitiveList` removes from it.
        let live = json!({"metadata": {"finalizers": ["a", "b"]}});
        let patch = json!({"metadata": {"finalizers": ["c"], "$deleteFromPrimitiveList/finalizers": ["a"]}});
        let out = apply(&live, &patch, deployment()).unwrap();
        let mut got: Vec<&str> = out["metadata"]["finalizers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        got.sort();
        assert_eq!(got, ["b", "c"]);
        // `strategy` has `retainKeys`: switching type clears the old type's field.
        let live = json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}});
        let patch = json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}});
        let out = apply(&live, &patch, deployment()).unwrap();
        assert_eq!(out["spec"]["strategy"], json!({"type": "Recreate"}));
        let bad = json!({"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {}}}});
        assert!(apply(&live, &bad, deployment()).is_err());
    }

    #[test]
    fn added_values_lose_their_directives() {
        let live = json!({"spec": {}});
        let patch = pod_spec(
            json!([{"name": "a", "ports": [{"containerPort": 1}, {"$patch": "delete", "containerPort": 2}]}]),
        );
        let out = apply(&live, &patch, deployment()).unwrap();
        assert_eq!(
            containers(&out),
            &json!([{"name": "a", "ports": [{"containerPort": 1}]}])
        );
    }
}
