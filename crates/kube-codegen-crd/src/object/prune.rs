//! Pruning of unknown fields and of non-nullable `null`s (apiextensions-apiserver semantics).
use super::MAX_DEPTH;
use super::node::{Additional, Node};
use serde_json::Value;

const META_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// Tracks the path of the value being visited, for reporting unknown fields.
struct Tracker<'t> {
    path: String,
    unknown: Option<&'t mut Vec<String>>,
}

impl Tracker<'_> {
    fn push_key(&mut self, key: &str) -> usize {
        let len = self.path.len();
        if self.unknown.is_some() {
            if !self.path.is_empty() {
                self.path.push('.');
            }
            self.path.push_str(key);
        }
        len
    }

    fn push_index(&mut self, i: usize) -> usize {
        let len = self.path.len();
        if self.unknown.is_some() {
            self.path.push_str(&format!("[{i}]"));
        }
        len
    }

    fn record(&mut self, key: &str) {
        if let Some(list) = self.unknown.as_deref_mut() {
            if self.path.is_empty() {
                list.push(key.to_string());
            } else {
                list.push(format!("{}.{key}", self.path));
            }
        }
    }
}

/// Prunes a whole object: the root is treated as an embedded resource, so apiVersion, kind and
/// metadata stay (metadata as it is).
pub(super) fn prune_object(schema: &Value, obj: &mut Value, unknown: Option<&mut Vec<String>>) {
    let mut t = Tracker {
        path: String::new(),
        unknown,
    };
    prune(Some(Node(schema)), obj, true, &mut t, 0);
}

/// Prunes a value that is not a resource root (used for defaults).
pub(super) fn prune_value(schema: Node<'_>, value: &mut Value) {
    let mut t = Tracker {
        path: String::new(),
        unknown: None,
    };
    prune(Some(schema), value, false, &mut t, 0);
}

fn prune(s: Option<Node<'_>>, x: &mut Value, root: bool, t: &mut Tracker<'_>, depth: usize) {
    if depth > MAX_DEPTH {
        // Deeper than any real object: leave it rather than recurse further.
        return;
    }
    if let Some(s) = s
        && s.preserve_unknown()
    {
        skip_prune(s, x, root, t, depth);
        return;
    }
    match x {
        Value::Object(map) => {
            let Some(s) = s else {
                let keys: Vec<String> = map.keys().cloned().collect();
                for k in keys {
                    t.record(&k);
                }
                map.clear();
                return;
            };
            let embedded = root || s.embedded();
            if s.embedded() && !root {
                normalize_embedded_metadata(map);
            }
            map.retain(|k, v| {
                if embedded && META_FIELDS.contains(&k.as_str()) {
                    return true;
                }
                let mark = t.push_key(k);
                let keep = match s.field(k) {
                    Some(sub) => {
                        prune(sub, v, false, t, depth + 1);
                        true
                    }
                    None => false,
                };
                t.path.truncate(mark);
                if !keep && (!META_FIELDS.contains(&k.as_str()) || !t.path.is_empty()) {
                    t.record(k);
                }
                keep
            });
        }
        Value::Array(items) => {
            let item_schema = s.and_then(Node::items);
            for (i, v) in items.iter_mut().enumerate() {
                let mark = t.push_index(i);
                prune(item_schema, v, false, t, depth + 1);
                t.path.truncate(mark);
            }
        }
        _ => {}
    }
}

/// Under `x-kubernetes-preserve-unknown-fields`: unknown keys stay, declared ones are still pruned.
fn skip_prune(s: Node<'_>, x: &mut Value, root: bool, t: &mut Tracker<'_>, depth: usize) {
    match x {
        Value::Object(map) => {
            let embedded = root || s.embedded();
            if s.embedded() && !root {
                normalize_embedded_metadata(map);
            }
            for (k, v) in map.iter_mut() {
                if embedded && META_FIELDS.contains(&k.as_str()) {
                    continue;
                }
                let sub = match (s.property(k), s.additional()) {
                    (Some(p), _) => Some(p),
                    (None, Some(Additional::Schema(a))) => Some(a),
                    (None, Some(Additional::Bool)) => None,
                    (None, None) => continue,
                };
                let mark = t.push_key(k);
                prune(sub, v, false, t, depth + 1);
                t.path.truncate(mark);
            }
        }
        Value::Array(items) => {
            let Some(item_schema) = s.items() else { return };
            for (i, v) in items.iter_mut().enumerate() {
                let mark = t.push_index(i);
                if depth < MAX_DEPTH {
                    skip_prune(item_schema, v, false, t, depth + 1);
                }
                t.path.truncate(mark);
            }
        }
        _ => {}
    }
}

/// `ObjectMeta` fields; anything else in an embedded resource's metadata is dropped by the server,
/// which decodes that metadata into an `ObjectMeta` and encodes it back.
const OBJECT_META_FIELDS: [&str; 15] = [
    "annotations",
    "creationTimestamp",
    "deletionGracePeriodSeconds",
    "deletionTimestamp",
    "finalizers",
    "generateName",
    "generation",
    "labels",
    "managedFields",
    "name",
    "namespace",
    "ownerReferences",
    "resourceVersion",
    "selfLink",
    "uid",
];

/// An embedded resource's metadata as the server stores it: only `ObjectMeta` fields, without
/// the ones Go's `omitempty` leaves out (empty strings, maps and lists, zero generation, nulls),
/// and without a zero `creationTimestamp`. Metadata that is not an object is left for validation.
fn normalize_embedded_metadata(map: &mut serde_json::Map<String, Value>) {
    let Some(Value::Object(meta)) = map.get_mut("metadata") else {
        return;
    };
    meta.retain(|k, v| {
        if !OBJECT_META_FIELDS.contains(&k.as_str()) {
            return false;
        }
        match v {
            Value::Null => false,
            Value::String(s) => !s.is_empty(),
            Value::Object(m) => !m.is_empty(),
            Value::Array(a) => !a.is_empty(),
            Value::Number(n) if k == "generation" => n.as_f64() != Some(0.0),
            _ => true,
        }
    });
}

/// Drops `null`s whose schema is neither nullable nor has a default; those with a default are
/// left for defaulting. Nulls without any schema (free-form content, array items) stay.
pub(super) fn prune_nulls(s: Option<Node<'_>>, x: &mut Value, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    match x {
        Value::Object(map) => {
            map.retain(|k, v| {
                let sub = s.and_then(|s| s.field(k)).flatten();
                if v.is_null() {
                    if let Some(sub) = sub
                        && !sub.nullable()
                        && sub.default().is_none()
                    {
                        return false;
                    }
                    return true;
                }
                prune_nulls(sub, v, depth + 1);
                true
            });
        }
        Value::Array(items) => {
            let item_schema = s.and_then(Node::items);
            for v in items {
                prune_nulls(item_schema, v, depth + 1);
            }
        }
        _ => {}
    }
}
