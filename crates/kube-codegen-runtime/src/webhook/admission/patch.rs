//! The JSON patch (RFC 6902) a mutating webhook answers, as controller-runtime's
//! `PatchResponseFromRaw` plus `dropSchemeRemovals` computes it: the difference between the
//! object as sent and the mutated object as encoded, less the removals the typed decode made
//! by itself (fields the type does not hold), which are not the defaulter's to make.
//!
//! The difference is `json_patch::diff`'s, operation for operation, but taken on the two JSON
//! texts: a subtree whose text is the same on both sides is skipped unparsed, and only the
//! objects and lists on the way to a change are read (keys borrowed, members left as text).
//! Building both objects as `serde_json::Value` trees to diff them was most of the webhook's
//! cost (A1), and nearly all of a 50-field object is the same on both sides.

use std::borrow::Cow;

use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, Patch, PatchOperation, RemoveOperation, ReplaceOperation};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

/// Whether `obj` encodes to exactly `text`: written into a sink that compares as it goes and
/// stops at the first difference, allocating nothing.
pub(super) fn encodes_as<T: serde::Serialize>(obj: &T, text: &str) -> bool {
    struct Same<'a>(&'a [u8]);
    impl std::io::Write for Same<'_> {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            match self.0.strip_prefix(buf) {
                Some(rest) => {
                    self.0 = rest;
                    Ok(buf.len())
                }
                None => Err(std::io::ErrorKind::InvalidData.into()),
            }
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut sink = Same(text.as_bytes());
    serde_json::to_writer(&mut sink, obj).is_ok() && sink.0.is_empty()
}

/// The patch from `sent` to `mutated` (both JSON texts); `round_trip` gives the sent object
/// decoded and encoded again with no change (called only when the patch removes something).
pub(super) fn patch(
    sent: &str,
    mutated: &str,
    round_trip: impl FnOnce() -> Result<String, String>,
) -> Result<Patch, String> {
    let mut ops = diff(sent, mutated)?;
    if ops
        .0
        .iter()
        .any(|op| matches!(op, PatchOperation::Remove(_)))
    {
        let by_decode = diff(sent, &round_trip()?)?;
        ops.0.retain(|op| match op {
            PatchOperation::Remove(r) => !by_decode
                .0
                .iter()
                .any(|d| matches!(d, PatchOperation::Remove(dr) if dr.path == r.path)),
            _ => true,
        });
    }
    Ok(ops)
}

/// `json_patch::diff` of the documents `left` and `right` are the texts of.
pub(super) fn diff(left: &str, right: &str) -> Result<Patch, String> {
    let mut patch = Patch::default();
    let mut pointer = PointerBuf::new();
    walk(left, right, &mut pointer, &mut patch.0).map_err(|e| e.to_string())?;
    Ok(patch)
}

/// An object's key, borrowed from the text unless it has escapes; ordered as `serde_json::Map`
/// orders its keys (by string), so operations come in `json_patch::diff`'s order.
#[derive(Deserialize, PartialEq, Eq, PartialOrd, Ord)]
struct Key<'a>(#[serde(borrow)] Cow<'a, str>);

/// An object's members in key order, each key once with its last value (as a parsed `Value`
/// keeps it). Both texts are nearly always in key order already (the API server's encoding of
/// a custom resource, and a generated type's fields, are), which the stable sort only checks.
fn members(text: &str) -> serde_json::Result<Vec<(Key<'_>, &RawValue)>> {
    let MemberList(mut m) = serde_json::from_str(text)?;
    if !m.is_sorted_by(|a, b| a.0 < b.0) {
        m.sort_by(|a, b| a.0.cmp(&b.0));
        // Of equal keys (now adjacent, in text order) the last stays.
        let mut kept: Vec<(Key, &RawValue)> = Vec::with_capacity(m.len());
        for member in m {
            match kept.last_mut() {
                Some(last) if last.0 == member.0 => *last = member,
                _ => kept.push(member),
            }
        }
        m = kept;
    }
    Ok(m)
}

/// A JSON object read as a list of members, in text order.
struct MemberList<'a>(Vec<(Key<'a>, &'a RawValue)>);

impl<'de> Deserialize<'de> for MemberList<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = MemberList<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Self::Value, A::Error> {
                let mut members = Vec::with_capacity(map.size_hint().unwrap_or(16));
                while let Some(member) = map.next_entry()? {
                    members.push(member);
                }
                Ok(MemberList(members))
            }
        }
        d.deserialize_map(Visit)
    }
}

fn walk(
    left: &str,
    right: &str,
    pointer: &mut PointerBuf,
    ops: &mut Vec<PatchOperation>,
) -> serde_json::Result<()> {
    if left == right {
        return Ok(());
    }
    match (first_byte(left), first_byte(right)) {
        (Some(b'{'), Some(b'{')) => {
            let (l, r) = (members(left)?, members(right)?);
            // A merge of the two key-ordered lists: the right's keys in order (added, or
            // compared), then the left's keys the right lacks (removed), as `json_patch::diff`.
            let mut removed = Vec::new();
            let mut li = l.iter().peekable();
            for (key, rv) in &r {
                while let Some((lk, _)) = li.next_if(|(lk, _)| lk < key) {
                    removed.push(lk);
                }
                pointer.push_back(&*key.0);
                match li.next_if(|(lk, _)| lk == key) {
                    Some((_, lv)) => walk(lv.get(), rv.get(), pointer, ops)?,
                    None => ops.push(PatchOperation::Add(AddOperation {
                        path: pointer.clone(),
                        value: serde_json::from_str(rv.get())?,
                    })),
                }
                pointer.pop_back();
            }
            removed.extend(li.map(|(lk, _)| lk));
            for key in removed {
                pointer.push_back(&*key.0);
                ops.push(PatchOperation::Remove(RemoveOperation {
                    path: pointer.clone(),
                }));
                pointer.pop_back();
            }
        }
        (Some(b'['), Some(b'[')) => {
            let l: Vec<&RawValue> = serde_json::from_str(left)?;
            let r: Vec<&RawValue> = serde_json::from_str(right)?;
            // Index by index; what the left has beyond the right is removed at the first
            // index past the right's end, as `json_patch::diff` writes it.
            let mut shift = 0usize;
            for idx in 0..l.len().max(r.len()) {
                pointer.push_back(idx - shift);
                match (l.get(idx), r.get(idx)) {
                    (Some(lv), Some(rv)) => walk(lv.get(), rv.get(), pointer, ops)?,
                    (Some(_), None) => {
                        shift += 1;
                        ops.push(PatchOperation::Remove(RemoveOperation {
                            path: pointer.clone(),
                        }));
                    }
                    (None, Some(rv)) => ops.push(PatchOperation::Add(AddOperation {
                        path: pointer.clone(),
                        value: serde_json::from_str(rv.get())?,
                    })),
                    (None, None) => {}
                }
                pointer.pop_back();
            }
        }
        _ => {
            // Scalars, or values of different types: equal as values (`1.0` and `1.00`) or
            // replaced.
            let l: Value = serde_json::from_str(left)?;
            let r: Value = serde_json::from_str(right)?;
            if l != r {
                ops.push(PatchOperation::Replace(ReplaceOperation {
                    path: pointer.clone(),
                    value: r,
                }));
            }
        }
    }
    Ok(())
}

fn first_byte(text: &str) -> Option<u8> {
    text.trim_start().bytes().next()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(v: &Value) -> String {
        v.to_string()
    }

    #[test]
    fn removals_by_the_decode_are_dropped_and_the_defaulters_kept() {
        let sent = json!({"spec": {"a": 1, "unknown": true, "gone": "x"}});
        // The decode drops `unknown` and `gone`, the defaulter `a`: only `a`'s removal stays.
        let mutated = json!({"spec": {"b": 2}});
        let p = patch(&text(&sent), &text(&mutated), || {
            Ok(text(&json!({"spec": {"a": 1}})))
        })
        .unwrap();
        let ops = serde_json::to_value(&p).unwrap();
        assert_eq!(
            ops,
            json!([
                {"op": "add", "path": "/spec/b", "value": 2},
                {"op": "remove", "path": "/spec/a"}
            ])
        );
    }

    #[test]
    fn no_removal_no_round_trip() {
        let p = patch(r#"{"a":1}"#, r#"{"a":2}"#, || Err("not called".into())).unwrap();
        assert_eq!(
            serde_json::to_value(&p).unwrap(),
            json!([{"op": "replace", "path": "/a", "value": 2}])
        );
    }

    /// The text diff gives `json_patch::diff`'s operations, in its order, whatever the texts'
    /// spacing, key order, escapes and number spellings.
    #[test]
    fn the_text_diff_is_json_patchs() {
        let pairs = [
            (json!({}), json!({})),
            (json!({"a": 1}), json!({"a": 1.0})),
            (
                json!({"a": 1, "b": [1, 2, 3]}),
                json!({"b": [1, 5], "c": null}),
            ),
            (json!({"b": [1]}), json!({"b": [1, {"x": [true]}, "s"]})),
            (json!({"b": [1, 2, 3, 4]}), json!({"b": []})),
            (json!({"a": {"b": {"c": "d"}}}), json!({"a": {"b": "c"}})),
            (json!({"a": [1]}), json!({"a": {"0": 1}})),
            (
                json!({"a~b": 1, "c/d": 2, "é\"\\": 3}),
                json!({"a~b": 2, "A": 4}),
            ),
            (json!([1, 2]), json!({"a": 1})),
            (json!("s"), json!("t")),
            (json!(null), json!(null)),
            (
                json!({"metadata": {"name": "n", "labels": {"a": "b"}}, "spec": {"z": 1, "y": [{"k": "v"}]}}),
                json!({"metadata": {"name": "n", "labels": {"a": "c", "d": "e"}}, "spec": {"z": 1, "y": [{"k": "w"}], "x": 2}}),
            ),
        ];
        for (left, right) in pairs {
            let expected = json_patch::diff(&left, &right);
            let spaced = serde_json::to_string_pretty(&left).unwrap();
            assert_eq!(
                diff(&text(&left), &text(&right)).unwrap(),
                expected,
                "{left} -> {right}"
            );
            assert_eq!(
                diff(&spaced, &text(&right)).unwrap(),
                expected,
                "{spaced} -> {right}"
            );
        }

        // Keys out of order and repeated, on either side.
        let texts = [
            (
                r#"{"z":1,"a":2,"z":3,"m":{"y":1,"x":2}}"#,
                r#"{"a":2,"z":1,"m":{"x":2}}"#,
            ),
            (
                r#"{"b":1,"a":{"d":1,"c":2}}"#,
                r#"{"a":{"c":3,"e":1,"c":2},"c":[],"b":1}"#,
            ),
            (
                r#"{"s":{"k2":"v","k1":"v","k0":"v"}}"#,
                r#"{"s":{"k1":"v"}}"#,
            ),
        ];
        for (left, right) in texts {
            let expected = json_patch::diff(
                &serde_json::from_str(left).unwrap(),
                &serde_json::from_str(right).unwrap(),
            );
            assert_eq!(diff(left, right).unwrap(), expected, "{left} -> {right}");
        }

        // Texts that differ only in spelling: no operation.
        let left = r#"{ "b" : 1.50, "a": "\u0041", "c": [ 1 , 2 ], "\u0064": 0 }"#;
        let right = r#"{"a":"A","b":1.5,"c":[1,2],"d":0}"#;
        assert_eq!(diff(left, right).unwrap(), Patch::default());
        // A duplicate key counts once, with its last value, as when parsed.
        assert_eq!(
            diff(r#"{"a":1,"a":2}"#, r#"{"a":2}"#).unwrap(),
            Patch::default()
        );
        // Not JSON: an error, not a panic.
        assert!(diff("{", "{}").is_err());
    }
}
