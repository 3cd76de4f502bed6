//! JSON values as the server's CEL sees them, typed by the schema: declared fields under their
//! escaped names (`foo-bar` is `foo__dash__bar`; a field named like a CEL keyword under both
//! `__return__` and `return`), map keys as they are, `type: number` always a double,
//! `format: date-time` strings as timestamps, and at the root and in embedded resources only
//! `metadata.name` and `metadata.generateName`.
use std::collections::HashMap;
use std::sync::Arc;

use kube_cel::cel::Value as Cel;
use kube_cel::cel::objects::{Key, Map};
use serde_json::Value;

use crate::cel_words::RESERVED;
use crate::object::MAX_DEPTH;
use crate::object::node::{Additional, Node};

/// `self` for a value whose schema is `s` (`None`: no schema, as under preserve-unknown-fields).
pub(super) fn to_cel(s: Option<Node<'_>>, x: &Value, root: bool) -> Cel {
    convert(s, x, root, 0)
}

fn convert(s: Option<Node<'_>>, x: &Value, meta_limited: bool, depth: usize) -> Cel {
    if depth > MAX_DEPTH {
        return Cel::Null;
    }
    match x {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(n) => {
            let float = s.and_then(Node::type_) == Some("number");
            match n.as_i64() {
                Some(i) if !float => Cel::Int(i),
                _ => match n.as_u64() {
                    Some(u) if !float => Cel::UInt(u),
                    _ => Cel::Float(n.as_f64().unwrap_or(0.0)),
                },
            }
        }
        Value::String(text) => string(s, text),
        Value::Array(items) => {
            let item = s.and_then(Node::items);
            Cel::List(Arc::new(
                items
                    .iter()
                    .map(|v| convert(item, v, false, depth + 1))
                    .collect(),
            ))
        }
        Value::Object(m) => {
            let embedded = meta_limited || s.is_some_and(Node::embedded);
            let mut out: HashMap<Key, Cel> = HashMap::with_capacity(m.len());
            for (k, v) in m {
                if embedded && k == "metadata" {
                    out.insert(key("metadata"), limited_metadata(v));
                    continue;
                }
                let (child, name) = match s {
                    Some(node) => match node.property(k) {
                        Some(p) => match escape(k) {
                            Some(e) => (Some(p), e),
                            None => continue,
                        },
                        None => match node.additional() {
                            Some(Additional::Schema(a)) => (Some(a), k.clone()),
                            Some(Additional::Bool) => (None, k.clone()),
                            None => match escape(k) {
                                Some(e) => (None, e),
                                None => continue,
                            },
                        },
                    },
                    None => (None, k.clone()),
                };
                let value = convert(child, v, false, depth + 1);
                // A declared field named like a keyword is found by both spellings, as the
                // server's object value unescapes the name it is asked for before the lookup
                // (`unstructuredMap.Find` in k8s.io/apiserver/pkg/cel/common/values.go): so
                // `self.return` reads it as `self.__return__` does, and a missing one is `no
                // such key: return`. The checker forbids iterating, sizing or indexing an
                // object, so the second key is not otherwise seen.
                if child.is_some() && name != *k && RESERVED.contains(&k.as_str()) {
                    out.insert(key(k), value.clone());
                }
                // The name is already an owned copy: it becomes the key without another one.
                out.insert(Key::String(Arc::new(name)), value);
            }
            Cel::Map(Map { map: Arc::new(out) })
        }
    }
}

fn key(k: &str) -> Key {
    Key::String(Arc::new(k.to_string()))
}

fn string(s: Option<Node<'_>>, text: &str) -> Cel {
    match s.and_then(|n| n.raw("format")).and_then(Value::as_str) {
        Some("date-time") => {
            if let Ok(t) = chrono::DateTime::parse_from_rfc3339(text) {
                return Cel::Timestamp(t);
            }
        }
        Some("duration") => {
            if let Some(d) = go_duration(text) {
                return Cel::Duration(d);
            }
        }
        _ => {}
    }
    Cel::String(Arc::new(text.to_string()))
}

/// Go's `time.ParseDuration`: `300ms`, `-1.5h`, `2h45m`; units ns, us (µs), ms, s, m, h.
fn go_duration(text: &str) -> Option<chrono::Duration> {
    let (negative, mut rest) = match text.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    if rest == "0" {
        return Some(chrono::Duration::zero());
    }
    if rest.is_empty() {
        return None;
    }
    let mut nanos: f64 = 0.0;
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..number_end].parse().ok()?;
        rest = &rest[number_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_end] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        rest = &rest[unit_end..];
        nanos += number * scale;
    }
    if !nanos.is_finite() || nanos > i64::MAX as f64 {
        return None;
    }
    let d = chrono::Duration::nanoseconds(nanos as i64);
    Some(if negative { -d } else { d })
}

/// What CEL sees of an object's metadata: `name` and `generateName` only.
fn limited_metadata(v: &Value) -> Cel {
    let mut out = HashMap::new();
    if let Some(m) = v.as_object() {
        for k in ["name", "generateName"] {
            if let Some(Value::String(s)) = m.get(k) {
                out.insert(key(k), Cel::String(Arc::new(s.clone())));
            }
        }
    }
    Cel::Map(Map { map: Arc::new(out) })
}

/// The escaped name a selection of a keyword also finds: kube-apiserver's type provider
/// (`DeclTypeProvider.FindStructFieldType` in k8s.io/apiserver/pkg/cel/types.go, with
/// `recognizeKeywordAsFieldName`, on since 1.32) looks `self.return` up as `__return__` when the
/// object declares no field `return` (it never does: that one is declared escaped).
pub(crate) fn keyword_field(name: &str) -> Option<String> {
    RESERVED.contains(&name).then(|| format!("__{name}__"))
}

/// A property name as CEL spells it (the server's escaping), or `None` when it cannot be
/// accessed from CEL at all (it does not start with a letter, `_`, `.`, `-` or `/`).
pub(crate) fn escape(name: &str) -> Option<String> {
    if RESERVED.contains(&name) {
        return Some(format!("__{name}__"));
    }
    let mut chars = name.chars();
    let first = chars.next()?;
    if !(first.is_ascii_alphabetic() || matches!(first, '_' | '.' | '-' | '/')) {
        return None;
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '/'))
    {
        return None;
    }
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(c) = rest.chars().next() {
        if rest.starts_with("__") {
            out.push_str("__underscores__");
            rest = &rest[2..];
            continue;
        }
        match c {
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c => out.push(c),
        }
        rest = &rest[c.len_utf8()..];
    }
    Some(out)
}

/// Whether `a` and `b` are equal as the server's CEL compares them: lists of
/// `x-kubernetes-list-type: set` ignore order, `map` lists compare by their key fields, and
/// the rest as JSON. (The interpreter compares lists in order; a transition rule whose values
/// differ only so gets the new value as `oldSelf`, so `self == oldSelf` holds as on the server.)
pub(super) fn same_for_cel(s: Option<Node<'_>>, a: &Value, b: &Value) -> bool {
    same(s, a, b, 0)
}

fn same(s: Option<Node<'_>>, a: &Value, b: &Value, depth: usize) -> bool {
    if a == b {
        return true;
    }
    if depth > MAX_DEPTH {
        return false;
    }
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter().all(|(k, v)| {
                    y.get(k).is_some_and(|w| {
                        let child = s.and_then(|n| n.field(k)).flatten();
                        same(child, v, w, depth + 1)
                    })
                })
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            let item = s.and_then(Node::items);
            let list_type = s
                .and_then(|n| n.raw("x-kubernetes-list-type"))
                .and_then(Value::as_str);
            match list_type {
                Some("set") => x
                    .iter()
                    .all(|v| y.iter().any(|w| same(item, v, w, depth + 1))),
                Some("map") => {
                    let keys: Vec<&str> = s
                        .and_then(|n| n.raw("x-kubernetes-list-map-keys"))
                        .and_then(Value::as_array)
                        .map(|k| k.iter().filter_map(Value::as_str).collect())
                        .unwrap_or_default();
                    let key_of = |v: &Value| -> Vec<Value> {
                        keys.iter()
                            .map(|k| v.get(*k).cloned().unwrap_or(Value::Null))
                            .collect()
                    };
                    x.iter().all(|v| {
                        let k = key_of(v);
                        y.iter()
                            .find(|w| key_of(w) == k)
                            .is_some_and(|w| same(item, v, w, depth + 1))
                    })
                }
                _ => x.iter().zip(y).all(|(v, w)| same(item, v, w, depth + 1)),
            }
        }
        _ => false,
    }
}
