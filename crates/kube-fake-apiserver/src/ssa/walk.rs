//! Schema-aware walks over objects: the field set a value covers, what changed between two
//! values, merging an applied configuration, and removing one field.
use serde_json::{Map, Value};

use super::fieldpath::{Element, FieldSet, Path};
use super::shape::{ListType, Shape};
use crate::schema::MAX_DEPTH;

/// The path element of `item`, the `i`th element of a list of type `lt`.
fn item_element(lt: &ListType, shape: Shape<'_>, i: usize, item: &Value) -> Element {
    match (lt, item) {
        (ListType::Set, v) => Element::Value(v.to_string()),
        (ListType::Map(keys), Value::Object(m)) => {
            let mut fields: Vec<(String, String)> = keys
                .iter()
                .filter_map(|k| {
                    m.get(k)
                        .filter(|v| !v.is_null())
                        .or_else(|| shape.item_default(k))
                        .map(|v| (k.clone(), v.to_string()))
                })
                .collect();
            fields.sort();
            Element::Key(fields)
        }
        _ => Element::Index(i),
    }
}

/// Whether the list is merged per element (a list-map of objects or a set).
fn granular(lt: &ListType) -> bool {
    !matches!(lt, ListType::Atomic)
}

/// The fields `v` sets, below `at`, as kube-apiserver counts them: every scalar, atomic list and
/// atomic map; every element of a granular list; every entry of a map that is not a declared field.
pub fn field_set(v: &Value, shape: Shape<'_>, at: &mut Path, out: &mut FieldSet) {
    if at.len() > MAX_DEPTH {
        return;
    }
    match v {
        Value::Object(m) if !shape.atomic_map() => {
            for (k, child) in m {
                let (cs, declared) = shape.child(k);
                at.push(Element::field(k));
                field_set(child, cs, at, out);
                if !declared {
                    out.insert(at.clone());
                }
                at.pop();
            }
        }
        Value::Array(items) if granular(&shape.list_type()) => {
            let lt = shape.list_type();
            for (i, item) in items.iter().enumerate() {
                at.push(item_element(&lt, shape, i, item));
                field_set(item, shape.items(), at, out);
                out.insert(at.clone());
                at.pop();
            }
        }
        _ if !at.is_empty() => out.insert(at.clone()),
        _ => {}
    }
}

/// What changed between two values, as structured-merge-diff's `Compare` reports it.
pub struct Diff {
    /// Fields modified or added (a map, list or element that appeared counts itself, with
    /// everything below it).
    pub changed: FieldSet,
    /// Fields that are gone (a map, list or element that went counts itself too).
    pub removed: FieldSet,
}

/// The [`Diff`] from `old` to `new` (list elements paired by key, not by position).
pub fn diff(old: &Value, new: &Value, shape: Shape<'_>) -> Diff {
    let mut d = Diff {
        changed: FieldSet::default(),
        removed: FieldSet::default(),
    };
    compare(Some(old), Some(new), shape, &mut Vec::new(), &mut d);
    d
}

/// How a node is walked: into its entries or elements, or as one value.
#[derive(PartialEq)]
enum Node {
    Map,
    List,
    Leaf,
}

fn node_of(v: &Value, shape: Shape<'_>) -> Node {
    match v {
        Value::Object(_) if !shape.atomic_map() => Node::Map,
        Value::Array(_) if granular(&shape.list_type()) => Node::List,
        _ => Node::Leaf,
    }
}

/// Whether `v` (absent, null, or an empty map or list) holds nothing.
fn hollow(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::Object(m)) => m.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        Some(_) => false,
    }
}

/// [`diff`] below `at`, walked as structured-merge-diff walks it: a leaf (scalar, atomic map or
/// list, or a map or list empty on both sides) is added, removed or modified as a whole; a map or
/// granular list is compared entry by entry and, when absent on one side (a `null` is not
/// absent), is itself added or removed as well.
fn compare(
    old: Option<&Value>,
    new: Option<&Value>,
    shape: Shape<'_>,
    at: &mut Path,
    d: &mut Diff,
) {
    if at.len() > MAX_DEPTH {
        return;
    }
    // A null takes the other side's form; two different forms compare as values.
    let kind = match (old.filter(|v| !v.is_null()), new.filter(|v| !v.is_null())) {
        (Some(o), Some(n)) if node_of(o, shape) != node_of(n, shape) => Node::Leaf,
        (Some(v), _) | (None, Some(v)) => node_of(v, shape),
        (None, None) => Node::Leaf,
    };
    if kind == Node::Leaf || (hollow(old) && hollow(new)) {
        if !at.is_empty() {
            match (old, new) {
                (None, Some(_)) => d.changed.insert(at.clone()),
                (Some(_), None) => d.removed.insert(at.clone()),
                (Some(o), Some(n)) if o != n => d.changed.insert(at.clone()),
                _ => {}
            }
        }
        return;
    }
    if kind == Node::Map {
        let empty = Map::new();
        let o = old.and_then(Value::as_object).unwrap_or(&empty);
        let n = new.and_then(Value::as_object).unwrap_or(&empty);
        let keys: std::collections::BTreeSet<&String> = o.keys().chain(n.keys()).collect();
        for k in keys {
            at.push(Element::field(k));
            compare(o.get(k), n.get(k), shape.child(k).0, at, d);
            at.pop();
        }
    } else {
        let lt = shape.list_type();
        // Elements by path element; a repeated element counts once (the first), as the server's.
        let keyed = |v: Option<&Value>| -> Vec<(Element, Value)> {
            let mut out: Vec<(Element, Value)> = Vec::new();
            for (i, item) in v
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                let e = item_element(&lt, shape, i, item);
                if !out.iter().any(|(x, _)| *x == e) {
                    out.push((e, item.clone()));
                }
            }
            out
        };
        let (o, n) = (keyed(old), keyed(new));
        for (e, nv) in &n {
            let ov = o.iter().find(|(oe, _)| oe == e).map(|(_, v)| v);
            at.push(e.clone());
            compare(ov, Some(nv), shape.items(), at, d);
            at.pop();
        }
        for (e, ov) in o.iter().filter(|(e, _)| !n.iter().any(|(ne, _)| ne == e)) {
            at.push(e.clone());
            compare(Some(ov), None, shape.items(), at, d);
            at.pop();
        }
    }
    if !at.is_empty() {
        match (old, new) {
            (None, _) => d.changed.insert(at.clone()),
            (_, None) => d.removed.insert(at.clone()),
            _ => {}
        }
    }
}

/// `config` applied onto `live`: granular maps merge key by key, granular lists element by
/// element (live elements keep their order, new ones follow in the configuration's order),
/// everything else is replaced.
pub fn merge(live: Option<&Value>, config: &Value, shape: Shape<'_>, depth: usize) -> Value {
    if depth > MAX_DEPTH {
        return config.clone();
    }
    match (live, config) {
        (Some(Value::Object(l)), Value::Object(c)) if !shape.atomic_map() => {
            let mut out = l.clone();
            for (k, cv) in c {
                let merged = merge(l.get(k), cv, shape.child(k).0, depth + 1);
                out.insert(k.clone(), merged);
            }
            Value::Object(out)
        }
        (Some(Value::Array(l)), Value::Array(c)) if granular(&shape.list_type()) => {
            let lt = shape.list_type();
            let items = shape.items();
            let ce: Vec<Element> = c
                .iter()
                .enumerate()
                .map(|(i, v)| item_element(&lt, shape, i, v))
                .collect();
            let mut taken = vec![false; c.len()];
            let mut out = Vec::with_capacity(l.len().max(c.len()));
            for (i, lv) in l.iter().enumerate() {
                let le = item_element(&lt, shape, i, lv);
                match ce.iter().position(|e| *e == le) {
                    Some(j) => {
                        taken[j] = true;
                        out.push(merge(Some(lv), &c[j], items, depth + 1));
                    }
                    None => out.push(lv.clone()),
                }
            }
            for (j, cv) in c.iter().enumerate() {
                // A configuration repeating a key is refused by validation; the first one wins here.
                if !taken[j] && !ce[..j].contains(&ce[j]) {
                    out.push(cv.clone());
                }
            }
            Value::Array(out)
        }
        _ => config.clone(),
    }
}

/// Every granular list below `at` that holds one element twice, as structured-merge-diff
/// reports it: `.spec.ports: duplicate entries for key [name="a"]`.
pub fn duplicates(v: &Value, shape: Shape<'_>, at: &mut Path, out: &mut Vec<String>) {
    if at.len() > MAX_DEPTH {
        return;
    }
    match v {
        Value::Object(m) if !shape.atomic_map() => {
            for (k, child) in m {
                at.push(Element::field(k));
                duplicates(child, shape.child(k).0, at, out);
                at.pop();
            }
        }
        Value::Array(items) if granular(&shape.list_type()) => {
            let lt = shape.list_type();
            let mut seen: Vec<Element> = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let e = item_element(&lt, shape, i, item);
                if seen.contains(&e) {
                    out.push(format!(
                        "{}: duplicate entries for key {e}",
                        super::fieldpath::display(at)
                    ));
                    continue;
                }
                at.push(e.clone());
                duplicates(item, shape.items(), at, out);
                at.pop();
                seen.push(e);
            }
        }
        _ => {}
    }
}

/// Removes the field at `p` (a map key, or a list element by key, value or index). Returns
/// whether something was removed.
pub fn remove(obj: &mut Value, p: &[Element], shape: Shape<'_>) -> bool {
    let Some((first, rest)) = p.split_first() else {
        return false;
    };
    match (obj, first) {
        (Value::Object(m), Element::Field(k)) => {
            if rest.is_empty() {
                m.remove(k).is_some()
            } else {
                let cs = shape.child(k).0;
                m.get_mut(k).is_some_and(|c| remove(c, rest, cs))
            }
        }
        (Value::Array(items), e) => {
            let lt = shape.list_type();
            let Some(i) = items
                .iter()
                .enumerate()
                .position(|(i, v)| item_element(&lt, shape, i, v) == *e)
            else {
                return false;
            };
            if rest.is_empty() {
                items.remove(i);
                true
            } else {
                remove(&mut items[i], rest, shape.items())
            }
        }
        _ => false,
    }
}

/// The value at `p`, if any.
pub fn get<'v>(obj: &'v Value, p: &[Element], shape: Shape<'_>) -> Option<&'v Value> {
    let Some((first, rest)) = p.split_first() else {
        return Some(obj);
    };
    match (obj, first) {
        (Value::Object(m), Element::Field(k)) => get(m.get(k)?, rest, shape.child(k).0),
        (Value::Array(items), e) => {
            let lt = shape.list_type();
            let item = items
                .iter()
                .enumerate()
                .find(|(i, v)| item_element(&lt, shape, *i, v) == *e)?
                .1;
            get(item, rest, shape.items())
        }
        _ => None,
    }
}

/// The metadata fields never recorded as owned (kube-apiserver's `stripmeta.go`; the server sets
/// them, or they are the object's identity). `metadata` itself is stripped too, by the caller.
const STRIPPED_META: &[&str] = &[
    "name",
    "namespace",
    "creationTimestamp",
    "selfLink",
    "uid",
    "clusterName",
    "generation",
    "managedFields",
    "resourceVersion",
];

/// `obj` as `managedFields` sees it: without apiVersion and kind, without the stripped metadata
/// fields, and with only the top-level fields `keep` accepts (an endpoint's reset fields, as
/// `status` through the main resource, are no one's through it).
pub fn tracked(obj: &Value, keep: &dyn Fn(&str) -> bool) -> Value {
    let Some(m) = obj.as_object() else {
        return Value::Object(Map::new());
    };
    let mut out = Map::new();
    for (k, v) in m {
        if k == "apiVersion" || k == "kind" || !keep(k) {
            continue;
        }
        let mut v = v.clone();
        if k == "metadata"
            && let Some(meta) = v.as_object_mut()
        {
            meta.retain(|f, _| !STRIPPED_META.contains(&f.as_str()));
        }
        out.insert(k.clone(), v);
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn containers_schema() -> Value {
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "containers": {"type": "array", "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"], "items": {"type": "object"}},
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "args": {"type": "array", "items": {"type": "string"}},
            "selector": {"type": "object", "x-kubernetes-map-type": "atomic"}
        }}}})
    }

    #[test]
    fn merges_list_maps_and_sets_per_element_and_replaces_atomic_ones() {
        let s = containers_schema();
        let live = json!({"spec": {
            "containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}],
            "tags": ["t1"], "args": ["1", "2"], "selector": {"k": "v", "j": "w"}}});
        let config = json!({"spec": {
            "containers": [{"name": "c", "image": "z"}, {"name": "a", "port": 80}],
            "tags": ["t2", "t1"], "args": ["3"], "selector": {"k": "v2"}}});
        let out = merge(Some(&live), &config, Shape::root(Some(&s)), 0);
        assert_eq!(
            out["spec"],
            json!({
                "containers": [{"name": "a", "image": "x", "port": 80}, {"name": "b", "image": "y"},
                               {"name": "c", "image": "z"}],
                "tags": ["t1", "t2"], "args": ["3"], "selector": {"k": "v2"}})
        );
    }

    #[test]
    fn field_set_marks_elements_and_atomic_nodes() {
        let s = containers_schema();
        let v = json!({"spec": {"containers": [{"name": "a", "image": "x"}], "tags": ["t"],
                       "args": ["1"], "selector": {"k": "v"}}});
        let mut set = FieldSet::default();
        field_set(&v, Shape::root(Some(&s)), &mut Vec::new(), &mut set);
        assert_eq!(
            set.to_fields_v1(),
            json!({"f:spec": {
                "f:containers": {"k:{\"name\":\"a\"}": {".": {}, "f:name": {}, "f:image": {}}},
                "f:tags": {"v:\"t\"": {}}, "f:args": {}, "f:selector": {}}})
        );
    }

    #[test]
    fn diff_pairs_elements_by_key() {
        let s = containers_schema();
        let old = json!({"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b"}]}});
        let new = json!({"spec": {"containers": [{"name": "b"}, {"name": "a", "image": "y"}]}});
        let d = diff(&old, &new, Shape::root(Some(&s)));
        let shown: Vec<String> = d
            .changed
            .iter()
            .map(|p| super::super::fieldpath::display(p))
            .collect();
        assert_eq!(shown, [".spec.containers[name=\"a\"].image"]);
        assert!(d.removed.is_empty());
        let mut obj = new.clone();
        let item = vec![
            Element::field("spec"),
            Element::field("containers"),
            Element::Key(vec![("name".into(), "\"b\"".into())]),
        ];
        assert!(remove(&mut obj, &item, Shape::root(Some(&s))));
        assert_eq!(
            obj["spec"]["containers"],
            json!([{"name": "a", "image": "y"}])
        );
    }
}
