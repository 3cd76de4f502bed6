//! `shardSelector` (server-side sharded list and watch, Kubernetes 1.36 KEP-5866, alpha, feature
//! gate `ShardedListAndWatch`): lists, watches and watch-list streams keep only the objects whose
//! FNV-1a hash of `metadata.uid` or `metadata.namespace` falls in the selector's ranges, and a
//! list (and a watch-list's initial-events-end bookmark) echoes the selector in
//! `metadata.shardInfo.selector`. Off by default ([`ServerBuilder::shard_selectors`]): the
//! parameter is then ignored as a 1.35 server ignores it, with no echo. Parsing and hashing are
//! `kube_codegen_crd::shard`'s, the same the runtime's sharded informers filter with.
//!
//! [`ServerBuilder::shard_selectors`]: crate::ServerBuilder::shard_selectors
use kube_codegen_crd::shard::ShardSelector;
use serde_json::{Value, json};

use crate::handlers::Ctx;
use crate::status::ApiError;

/// The request's selector and its text as sent, when the feature is on and one is given; a
/// malformed one is a 400.
pub(crate) fn from_request(ctx: &Ctx) -> Result<Option<(ShardSelector, String)>, ApiError> {
    if !ctx.shared.shard_selectors {
        return Ok(None);
    }
    let raw = ctx.req.q("shardSelector").unwrap_or("");
    match ShardSelector::parse(raw) {
        Ok(sel) => Ok(sel.map(|s| (s, raw.to_owned()))),
        Err(e) => Err(ApiError::bad_request(e.to_string())),
    }
}

/// Writes `shardInfo` into a list's (or bookmark's) `metadata`.
pub(crate) fn echo(meta: &mut Value, raw: &str) {
    meta["shardInfo"] = json!({"selector": raw});
}

/// The query parameter as the 1.36 OpenAPI documents it, added to every operation that takes
/// `labelSelector` (list, watch-list, deletecollection) in an OpenAPI v3 document.
pub(crate) fn document_parameter(doc: &mut Value) {
    let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) else {
        return;
    };
    for ops in paths.values_mut().filter_map(Value::as_object_mut) {
        for op in ops.values_mut() {
            let Some(params) = op.get_mut("parameters").and_then(Value::as_array_mut) else {
                continue;
            };
            let listed = |n: &str| params.iter().any(|p| p["name"] == n);
            if listed("labelSelector") && !listed("shardSelector") {
                params.push(json!({
                    "name": "shardSelector",
                    "in": "query",
                    "description": "shardSelector restricts the list of returned objects by a \
                        hash-based shard selector expression: shardRange(<path>, '<hexStart>', \
                        '<hexEnd>') terms joined by ||, over the 64-bit FNV-1a hash of \
                        object.metadata.uid or object.metadata.namespace, start inclusive, end \
                        exclusive. This is an alpha field and requires enabling the \
                        ShardedListAndWatch feature gate.",
                    "schema": {"type": "string", "uniqueItems": true},
                }));
                params.sort_by(|a, b| {
                    let key = |p: &Value| {
                        (
                            p["in"] != "query",
                            p["name"].as_str().unwrap_or("").to_owned(),
                        )
                    };
                    key(a).cmp(&key(b))
                });
            }
        }
    }
}
