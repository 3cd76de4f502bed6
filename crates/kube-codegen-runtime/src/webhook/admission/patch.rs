//! The JSON patch (RFC 6902) a mutating webhook answers, as controller-runtime's
//! `PatchResponseFromRaw` plus `dropSchemeRemovals` computes it: the difference between the
//! object as sent and the mutated object as encoded, less the removals the typed decode made
//! by itself (fields the type does not hold), which are not the defaulter's to make.

use json_patch::{Patch, PatchOperation};
use serde_json::Value;

/// The patch from `sent` to `mutated`; `round_trip` gives the sent object decoded and encoded
/// again with no change (called only when the patch removes something).
pub(super) fn patch(
    sent: &Value,
    mutated: &Value,
    round_trip: impl FnOnce() -> Result<Value, String>,
) -> Result<Patch, String> {
    let mut ops = json_patch::diff(sent, mutated);
    if ops
        .0
        .iter()
        .any(|op| matches!(op, PatchOperation::Remove(_)))
    {
        let by_decode = json_patch::diff(sent, &round_trip()?);
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn removals_by_the_decode_are_dropped_and_the_defaulters_kept() {
        let sent = json!({"spec": {"a": 1, "unknown": true, "gone": "x"}});
        // The decode drops `unknown` and `gone`, the defaulter `a`: only `a`'s removal stays.
        let mutated = json!({"spec": {"b": 2}});
        let p = patch(&sent, &mutated, || Ok(json!({"spec": {"a": 1}}))).unwrap();
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
        let p = patch(&json!({"a": 1}), &json!({"a": 2}), || {
            Err("not called".into())
        })
        .unwrap();
        assert_eq!(
            serde_json::to_value(&p).unwrap(),
            json!([{"op": "replace", "path": "/a", "value": 2}])
        );
    }
}
