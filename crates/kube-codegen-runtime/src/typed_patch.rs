//! Typed JSON patches: the RFC 6902 operations turning one typed object into another, written
//! field by field by generated code (`TypedDiff`, emitted by kube-codegen for every generated
//! type with `--emit validation`), so a defaulting webhook need not encode both objects and
//! diff the texts.
//!
//! The operations are those that turn the first object's JSON encoding into the second's: a
//! member present only after is added, present only before removed, present on both sides
//! compared inside (generated types field by field, maps of them key by key) or replaced as a
//! whole value (scalars, lists, maps of anything else, JSON, k8s-openapi types: one `replace`
//! of a changed list rather than one operation per item). A root's `ObjectMeta` is encoded and
//! diffed with `json_patch::diff`, only when it changed. Operations come in field order; the
//! patch, applied, gives what `json_patch::diff` of the two encodings gives, not necessarily
//! with the same operations.

use std::collections::BTreeMap;

/// An RFC 6902 operation (`json_patch`'s), named here for generated code.
pub use json_patch::PatchOperation;
use json_patch::jsonptr::{PointerBuf, Token};
use json_patch::{AddOperation, RemoveOperation, ReplaceOperation};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;
use serde_json::Value;

/// Where a diff is (the pointer to the value compared) and the operations so far.
#[derive(Debug, Default)]
pub struct Diff {
    at: PointerBuf,
    ops: Vec<PatchOperation>,
    /// A value that did not encode (never for generated types): no patch can be trusted.
    failed: bool,
}

impl Diff {
    /// An empty diff at the document's root.
    pub fn new() -> Diff {
        Diff::default()
    }

    /// The operations, or `None` when a value did not encode.
    pub fn into_ops(self) -> Option<Vec<PatchOperation>> {
        (!self.failed).then_some(self.ops)
    }

    fn value<T: Serialize + ?Sized>(&mut self, v: &T) -> Value {
        serde_json::to_value(v).unwrap_or_else(|_| {
            self.failed = true;
            Value::Null
        })
    }

    /// `add` of `v` here.
    pub fn add<T: Serialize + ?Sized>(&mut self, v: &T) {
        let value = self.value(v);
        self.ops.push(PatchOperation::Add(AddOperation {
            path: self.at.clone(),
            value,
        }));
    }

    /// `replace` by `v` here.
    pub fn replace<T: Serialize + ?Sized>(&mut self, v: &T) {
        let value = self.value(v);
        self.ops.push(PatchOperation::Replace(ReplaceOperation {
            path: self.at.clone(),
            value,
        }));
    }

    /// `remove` here.
    pub fn remove(&mut self) {
        self.ops.push(PatchOperation::Remove(RemoveOperation {
            path: self.at.clone(),
        }));
    }

    /// Runs `f` at the member `key` of the value here (escaped as a pointer token needs).
    pub fn member(&mut self, key: &str, f: impl FnOnce(&mut Diff)) {
        self.at.push_back(Token::new(key));
        f(self);
        self.at.pop_back();
    }
}

/// A generated type that can say how it changed, as patch operations at the [`Diff`]'s place.
pub trait TypedDiff: PartialEq + Serialize {
    /// The operations turning `self`'s encoding into `after`'s, at `d`'s place (both present
    /// there).
    fn diff(&self, after: &Self, d: &mut Diff);
}

/// The operations turning `before`'s encoding into `after`'s.
pub fn typed_patch<T: TypedDiff>(before: &T, after: &T) -> Option<Vec<PatchOperation>> {
    let mut d = Diff::new();
    if before != after {
        before.diff(after, &mut d);
    }
    d.into_ops()
}

/// A field always encoded (required, or nullable: `None` is `null`), compared inside.
pub fn required<T: TypedDiff>(key: &str, before: &T, after: &T, d: &mut Diff) {
    if before != after {
        d.member(key, |d| before.diff(after, d));
    }
}

/// A field left out when `None`, compared inside.
pub fn optional<T: TypedDiff>(key: &str, before: &Option<T>, after: &Option<T>, d: &mut Diff) {
    match (before, after) {
        (None, None) => {}
        (None, Some(a)) => d.member(key, |d| d.add(a)),
        (Some(_), None) => d.member(key, Diff::remove),
        (Some(b), Some(a)) => required(key, b, a, d),
    }
}

/// A field always encoded, replaced whole when it changed (a scalar, a list, a map of
/// scalars, JSON, a k8s-openapi type; `null` for `None`).
pub fn required_whole<T: PartialEq + Serialize>(key: &str, before: &T, after: &T, d: &mut Diff) {
    if before != after {
        d.member(key, |d| d.replace(after));
    }
}

/// A field left out when `None`, replaced whole when it changed.
pub fn optional_whole<T: PartialEq + Serialize>(
    key: &str,
    before: &Option<T>,
    after: &Option<T>,
    d: &mut Diff,
) {
    match (before, after) {
        (None, None) => {}
        (None, Some(a)) => d.member(key, |d| d.add(a)),
        (Some(_), None) => d.member(key, Diff::remove),
        (Some(b), Some(a)) => required_whole(key, b, a, d),
    }
}

/// A string left out when empty (a root's `apiVersion` and `kind`).
pub fn non_empty(key: &str, before: &str, after: &str, d: &mut Diff) {
    if before == after {
        return;
    }
    match (before.is_empty(), after.is_empty()) {
        (true, _) => d.member(key, |d| d.add(after)),
        (_, true) => d.member(key, Diff::remove),
        _ => d.member(key, |d| d.replace(after)),
    }
}

/// The members of a flattened map (the undeclared keys, beside the struct's own fields), each
/// replaced whole when it changed.
pub fn flattened<T: PartialEq + Serialize>(
    before: &BTreeMap<String, T>,
    after: &BTreeMap<String, T>,
    d: &mut Diff,
) {
    if before != after {
        merge(before, after, d, |k, b, a, d| required_whole(k, b, a, d));
    }
}

/// A root's `metadata` (always encoded): encoded and diffed as JSON (`json_patch::diff`), only
/// when it changed.
pub fn metadata(before: &ObjectMeta, after: &ObjectMeta, d: &mut Diff) {
    if before == after {
        return;
    }
    let (b, a) = (d.value(before), d.value(after));
    d.member("metadata", |d| {
        for mut op in json_patch::diff(&b, &a).0 {
            let path = match &mut op {
                PatchOperation::Add(o) => &mut o.path,
                PatchOperation::Remove(o) => &mut o.path,
                PatchOperation::Replace(o) => &mut o.path,
                PatchOperation::Move(o) => &mut o.path,
                PatchOperation::Copy(o) => &mut o.path,
                PatchOperation::Test(o) => &mut o.path,
            };
            *path = d.at.concat(path);
            d.ops.push(op);
        }
    });
}

/// Two maps in key order, merged: keys only before removed, only after added, on both sides
/// compared by `both`.
fn merge<T: Serialize>(
    before: &BTreeMap<String, T>,
    after: &BTreeMap<String, T>,
    d: &mut Diff,
    both: impl Fn(&str, &T, &T, &mut Diff),
) {
    let (mut b, mut a) = (before.iter().peekable(), after.iter().peekable());
    loop {
        let order = match (b.peek(), a.peek()) {
            (None, None) => break,
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (Some((kb, _)), Some((ka, _))) => kb.cmp(ka),
        };
        match order {
            std::cmp::Ordering::Less => {
                if let Some((k, _)) = b.next() {
                    d.member(k, Diff::remove);
                }
            }
            std::cmp::Ordering::Greater => {
                if let Some((k, v)) = a.next() {
                    d.member(k, |d| d.add(v));
                }
            }
            std::cmp::Ordering::Equal => {
                if let (Some((k, vb)), Some((_, va))) = (b.next(), a.next()) {
                    both(k, vb, va, d);
                }
            }
        }
    }
}

/// `null` on one side (`None`), a value on the other: replaced; both present: compared inside.
impl<T: TypedDiff> TypedDiff for Option<T> {
    fn diff(&self, after: &Self, d: &mut Diff) {
        match (self, after) {
            (Some(b), Some(a)) => {
                if b != a {
                    b.diff(a, d);
                }
            }
            (None, None) => {}
            _ => d.replace(after),
        }
    }
}

/// A map of generated types: key by key.
impl<T: TypedDiff> TypedDiff for BTreeMap<String, T> {
    fn diff(&self, after: &Self, d: &mut Diff) {
        merge(self, after, d, |k, b, a, d| required(k, b, a, d));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A generated-like type: optional, nullable and required fields, a map of structs, a
    /// flattened map, written as kube-codegen writes them.
    #[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
    struct Spec {
        #[serde(skip_serializing_if = "Option::is_none")]
        a: Option<String>,
        #[serde(default)]
        n: Option<i64>,
        list: Vec<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        inner: Option<Inner>,
        #[serde(skip_serializing_if = "Option::is_none")]
        by_name: Option<BTreeMap<String, Inner>>,
        #[serde(flatten)]
        rest: BTreeMap<String, Value>,
    }

    #[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
    struct Inner {
        #[serde(skip_serializing_if = "Option::is_none")]
        x: Option<i32>,
    }

    impl TypedDiff for Spec {
        fn diff(&self, after: &Self, d: &mut Diff) {
            optional_whole("a", &self.a, &after.a, d);
            required_whole("n", &self.n, &after.n, d);
            required_whole("list", &self.list, &after.list, d);
            optional("inner", &self.inner, &after.inner, d);
            optional("by_name", &self.by_name, &after.by_name, d);
            flattened(&self.rest, &after.rest, d);
        }
    }

    impl TypedDiff for Inner {
        fn diff(&self, after: &Self, d: &mut Diff) {
            optional_whole("x", &self.x, &after.x, d);
        }
    }

    /// The patch, applied to `before`'s encoding, gives `after`'s.
    fn applies(before: &Spec, after: &Spec) -> Vec<PatchOperation> {
        let ops = typed_patch(before, after).expect("encodes");
        let mut doc = serde_json::to_value(before).unwrap();
        json_patch::patch(&mut doc, &ops).unwrap();
        assert_eq!(doc, serde_json::to_value(after).unwrap(), "{ops:?}");
        ops
    }

    fn paths(ops: &[PatchOperation]) -> Vec<String> {
        ops.iter()
            .map(|op| {
                let (kind, path) = match op {
                    PatchOperation::Add(o) => ("add", &o.path),
                    PatchOperation::Remove(o) => ("remove", &o.path),
                    PatchOperation::Replace(o) => ("replace", &o.path),
                    other => return format!("{other:?}"),
                };
                format!("{kind} {path}")
            })
            .collect()
    }

    #[test]
    fn equal_values_give_no_operation() {
        let s = Spec {
            a: Some("x".into()),
            list: vec!["a".into()],
            ..Spec::default()
        };
        assert!(applies(&s, &s.clone()).is_empty());
    }

    #[test]
    fn add_remove_replace_by_presence() {
        let before = Spec {
            a: Some("x".into()),
            n: Some(1),
            list: vec!["a".into()],
            inner: Some(Inner { x: Some(1) }),
            ..Spec::default()
        };
        let after = Spec {
            a: None,
            n: None,
            list: vec!["a".into(), "b".into()],
            inner: Some(Inner { x: None }),
            ..Spec::default()
        };
        // `n` is always encoded: `null` replaces it; a list is replaced whole.
        assert_eq!(
            paths(&applies(&before, &after)),
            [
                "remove /a",
                "replace /n",
                "replace /list",
                "remove /inner/x"
            ]
        );
        assert_eq!(
            paths(&applies(&after, &before)),
            ["add /a", "replace /n", "replace /list", "add /inner/x"]
        );
    }

    #[test]
    fn map_keys_and_flattened_members_are_escaped() {
        let before = Spec {
            by_name: Some(BTreeMap::from([
                ("a/b".to_owned(), Inner { x: Some(1) }),
                ("gone".to_owned(), Inner::default()),
            ])),
            rest: BTreeMap::from([("m~n".to_owned(), json!(1))]),
            ..Spec::default()
        };
        let after = Spec {
            by_name: Some(BTreeMap::from([
                ("a/b".to_owned(), Inner { x: Some(2) }),
                ("c~d".to_owned(), Inner::default()),
            ])),
            rest: BTreeMap::from([("m~n".to_owned(), json!(2)), ("/".to_owned(), json!(3))]),
            ..Spec::default()
        };
        assert_eq!(
            paths(&applies(&before, &after)),
            [
                "replace /by_name/a~1b/x",
                "add /by_name/c~0d",
                "remove /by_name/gone",
                "add /~1",
                "replace /m~0n"
            ]
        );
    }

    #[test]
    fn nullable_struct_replaced_between_null_and_value() {
        let mut d = Diff::new();
        let (none, some) = (None, Some(Inner { x: Some(1) }));
        required("inner", &none, &some, &mut d);
        required("inner", &some, &none, &mut d);
        let ops = d.into_ops().unwrap();
        assert_eq!(paths(&ops), ["replace /inner", "replace /inner"]);
    }

    #[test]
    fn root_strings_and_metadata() {
        let mut d = Diff::new();
        non_empty("kind", "", "Widget", &mut d);
        non_empty("apiVersion", "v1", "", &mut d);
        let before = ObjectMeta {
            name: Some("a".into()),
            ..ObjectMeta::default()
        };
        let mut after = before.clone();
        after.labels = Some(BTreeMap::from([("x/y".to_owned(), "1".to_owned())]));
        metadata(&before, &after, &mut d);
        metadata(&after, &after, &mut d);
        assert_eq!(
            paths(&d.into_ops().unwrap()),
            ["add /kind", "remove /apiVersion", "add /metadata/labels"]
        );
    }
}
