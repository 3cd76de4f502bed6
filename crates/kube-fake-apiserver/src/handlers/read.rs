//! get and list, with Table / PartialObjectMetadata output, selectors and pagination.
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use http::Response;
use serde_json::{Value, json};

use super::Ctx;
use crate::http::{Body, Output, json_response};
use crate::objects::view;
use crate::registry::Version;
use crate::selector::{FieldSelector, LabelSelector};
use crate::status::ApiError;
use crate::store::Key;
use crate::util::meta_str;

pub fn partial_metadata(obj: &Value) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata").cloned().unwrap_or(json!({})),
    })
}

/// Renders objects as the client asked: a plain list/object, a Table, or metadata only.
/// A `Table` of `items`: the CRD's printer columns, or for kinds without any (the CRD resource
/// itself) the generic registry's `Name` + `Created At`.
pub fn table(ver: &Version, items: &[Value], include: &str, meta: Value) -> Value {
    if ver.created_at_table {
        crate::table::default_table(items, include, meta)
    } else {
        crate::table::to_table(&ver.columns, items, include, meta)
    }
}

pub fn render(
    ver: &Version,
    out: Output,
    include: &str,
    items: Vec<Value>,
    list: Option<Value>,
) -> Value {
    match (out, list) {
        (Output::Json, None) => items.into_iter().next().unwrap_or_default(),
        (Output::Json, Some(l)) => {
            let mut l = l;
            l["items"] = Value::Array(items);
            l
        }
        (Output::Table, list) => {
            let meta = match &list {
                Some(l) => l["metadata"].clone(),
                None => {
                    json!({"resourceVersion": items.first().map(|o| meta_str(o, "resourceVersion")).unwrap_or("")})
                }
            };
            table(ver, &items, include, meta)
        }
        (Output::PartialMetadata, None) => items.first().map(partial_metadata).unwrap_or_default(),
        (Output::PartialMetadata, Some(l)) => json!({
            "kind": "PartialObjectMetadataList",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": l["metadata"].clone(),
            "items": items.iter().map(partial_metadata).collect::<Vec<_>>(),
        }),
    }
}

fn include_object(ctx: &Ctx) -> String {
    ctx.req
        .q("includeObject")
        .filter(|s| !s.is_empty())
        .unwrap_or("Metadata")
        .to_string()
}

pub fn get(ctx: &Ctx, out: Output) -> Result<Response<Body>, ApiError> {
    let obj = ctx.stored(&ctx.shared.db.lock())?;
    let obj = view(&ctx.res, ctx.version(), &obj);
    Ok(json_response(
        200,
        &render(&ctx.ver, out, &include_object(ctx), vec![obj], None),
    ))
}

/// Parses `labelSelector` and `fieldSelector` (400 on a bad one).
pub fn selectors(ctx: &Ctx) -> Result<(LabelSelector, FieldSelector), ApiError> {
    let l = LabelSelector::parse(ctx.req.q("labelSelector").unwrap_or(""))
        .map_err(|e| ApiError::bad_request(e.0))?;
    let f = FieldSelector::parse(ctx.req.q("fieldSelector").unwrap_or(""))
        .map_err(|e| ApiError::bad_request(e.0))?;
    Ok((l, f))
}

fn encode_continue(rv: u64, last: &Key) -> String {
    let token = json!({"v": "meta.k8s.io/v1", "rv": rv, "start": format!("{}/{}", last.namespace, last.name)});
    STANDARD.encode(token.to_string())
}

fn decode_continue(token: &str) -> Result<(u64, String, String), ApiError> {
    let bad = |why: &str| ApiError::bad_request(format!("continue key is not valid: {why}"));
    let raw = STANDARD
        .decode(token)
        .map_err(|_| bad("incorrect encoded start resourceVersion (version meta.k8s.io/v1)"))?;
    let v: Value =
        serde_json::from_slice(&raw).map_err(|_| bad("incorrect encoded start resourceVersion"))?;
    let rv = v
        .get("rv")
        .and_then(Value::as_u64)
        .ok_or_else(|| bad("incorrect encoded start resourceVersion"))?;
    let start = v
        .get("start")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("missing start key"))?;
    let (ns, name) = start
        .split_once('/')
        .ok_or_else(|| bad("malformed start key"))?;
    Ok((rv, ns.to_string(), name.to_string()))
}

/// Checks `resourceVersion` / `resourceVersionMatch` the way `ValidateListOptions` does.
pub fn check_rv_options(ctx: &Ctx) -> Result<(), ApiError> {
    let rv = ctx.req.q("resourceVersion").unwrap_or("");
    // A watch-list (`sendInitialEvents`) may pass NotOlderThan with an empty resourceVersion.
    let watch_list = ctx
        .req
        .q("sendInitialEvents")
        .is_some_and(|s| !s.is_empty());
    match ctx.req.q("resourceVersionMatch").unwrap_or("") {
        "" => Ok(()),
        "NotOlderThan" if rv.is_empty() && watch_list => Ok(()),
        "NotOlderThan" | "Exact" if rv.is_empty() => Err(ApiError::invalid_options(
            "ListOptions",
            "resourceVersionMatch",
            "FieldValueForbidden",
            "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
        )),
        "Exact" if rv == "0" => Err(ApiError::invalid_options(
            "ListOptions",
            "resourceVersionMatch",
            "FieldValueForbidden",
            "Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
        )),
        "NotOlderThan" | "Exact" => Ok(()),
        other => Err(ApiError::invalid_options(
            "ListOptions",
            "resourceVersionMatch",
            "FieldValueNotSupported",
            &format!(
                "Unsupported value: \"{other}\": supported values: \"Exact\", \"NotOlderThan\", \"\""
            ),
        )),
    }
}

pub fn parse_rv(s: &str) -> Result<u64, ApiError> {
    s.parse()
        .map_err(|_| ApiError::bad_request(format!("invalid resource version \"{s}\"")))
}

pub fn list(ctx: &Ctx, out: Output) -> Result<Response<Body>, ApiError> {
    let (labels, fields) = selectors(ctx)?;
    check_rv_options(ctx)?;
    let limit: usize = match ctx.req.q("limit") {
        Some(l) if !l.is_empty() => l
            .parse::<i64>()
            .map_err(|_| ApiError::bad_request("invalid limit"))?
            .max(0) as usize,
        _ => 0,
    };
    let res = &ctx.res;
    let (items, list_rv, after) = {
        let db = ctx.shared.db.lock();
        let current = db.store.rv();
        match ctx.req.q("continue").filter(|c| !c.is_empty()) {
            Some(token) => {
                let (rv, ns, name) = decode_continue(token)?;
                let items = db.store.snapshot(&res.group, &res.plural, ctx.ns(), rv).map_err(|_| {
                    ApiError::expired(
                        "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
                    )
                })?;
                (items, rv, Some((ns, name)))
            }
            None => {
                let rv = ctx.req.q("resourceVersion").unwrap_or("");
                let exact = ctx.req.q("resourceVersionMatch") == Some("Exact");
                if rv.is_empty() || rv == "0" {
                    (
                        db.store.list(&res.group, &res.plural, ctx.ns()),
                        current,
                        None,
                    )
                } else {
                    let n = parse_rv(rv)?;
                    if n > current {
                        return Err(ApiError::new(
                            504,
                            "Timeout",
                            format!("Too large resource version: {n}, current: {current}"),
                        )
                        .with_details(json!({"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}], "retryAfterSeconds": 1})));
                    }
                    if exact {
                        let items = db
                            .store
                            .snapshot(&res.group, &res.plural, ctx.ns(), n)
                            .map_err(|floor| ApiError::too_old(n, floor))?;
                        (items, n, None)
                    } else {
                        (
                            db.store.list(&res.group, &res.plural, ctx.ns()),
                            current,
                            None,
                        )
                    }
                }
            }
        }
    };
    let mut matching = items.into_iter().filter(|(k, o)| {
        after
            .as_ref()
            .is_none_or(|(ns, name)| (&k.namespace, &k.name) > (ns, name))
            && labels.matches(o)
            && fields.matches(o)
    });
    let mut page: Vec<(Key, Value)> = Vec::new();
    for it in matching.by_ref() {
        if limit > 0 && page.len() == limit {
            page.push(it);
            break;
        }
        page.push(it);
    }
    let mut meta = json!({"resourceVersion": list_rv.to_string()});
    if limit > 0 && page.len() > limit {
        page.pop();
        let remaining = 1 + matching.count();
        if let Some((last, _)) = page.last() {
            meta["continue"] = json!(encode_continue(list_rv, last));
        }
        if labels.is_empty() && fields.is_empty() {
            meta["remainingItemCount"] = json!(remaining);
        }
    }
    let items: Vec<Value> = page
        .into_iter()
        .map(|(_, o)| view(res, ctx.version(), &o))
        .collect();
    let list = json!({"kind": res.list_kind, "apiVersion": res.api_version(ctx.version()), "metadata": meta});
    Ok(json_response(
        200,
        &render(&ctx.ver, out, &include_object(ctx), items, Some(list)),
    ))
}
