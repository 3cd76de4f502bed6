//! get and list, with Table / PartialObjectMetadata output, selectors and pagination.
use crate::registry::TableKind;
use http::Response;
use serde_json::{Value, json};

use super::Ctx;
use super::continuation::{self, Continue};
use crate::field_labels::Selection;
use crate::http::{Body, Output, json_response};
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
    match ver.table {
        TableKind::CreatedAt => crate::table::default_table(items, include, meta),
        TableKind::Events => crate::events::table(items, include, meta),
        TableKind::Columns => crate::table::to_table(&ver.columns, items, include, meta),
        TableKind::Printer(p) => crate::printers::to_table(p, items, include, meta),
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

pub async fn get(ctx: &Ctx<'_>, out: Output) -> Result<Response<Body>, ApiError> {
    let obj = ctx.stored(&ctx.shared.db.lock())?;
    let obj = super::converted::show(ctx, vec![obj])
        .await?
        .pop()
        .unwrap_or_default();
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

/// The field selector's labels through the resource's field label conversion (a 400 with its
/// message for a label the kind does not accept), as the list, watch and deletecollection
/// handlers do after validating the list options.
pub fn field_selection(ctx: &Ctx, fields: &FieldSelector) -> Result<Selection, ApiError> {
    Selection::convert(
        fields,
        ctx.res.field_labels,
        ctx.res.namespaced,
        &ctx.ver.selectable,
    )
    .map_err(ApiError::bad_request)
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

/// The items a list reads (before selectors and paging), the resourceVersion it reports, and
/// where it continues from.
type Snapshot = (Vec<(Key, Value)>, u64, Option<Continue>);

/// Reads the list's snapshot: current, at an exact resourceVersion, or where a continue token
/// points (410 once the history no longer reaches back to it).
fn snapshot(ctx: &Ctx, limit: usize) -> Result<Snapshot, ApiError> {
    let res = &ctx.res;
    let db = ctx.shared.db.lock();
    let current = db.store.rv();
    let rv = ctx.req.q("resourceVersion").unwrap_or("");
    if let Some(token) = ctx.req.q("continue").filter(|c| !c.is_empty()) {
        let token = Continue::decode(token, ctx.ns(), res.namespaced)?;
        if !rv.is_empty() && rv != "0" {
            return Err(ApiError::bad_request(
                "specifying resource version is not allowed when using continue",
            ));
        }
        let Some(at) = token.rv else {
            let items = db.store.list(res.storage().0, res.storage().1, ctx.ns());
            return Ok((items, current, Some(token)));
        };
        if ctx.shared.faults.take_list_expiry() {
            return Err(continuation::expired(&token, ctx.ns()));
        }
        let items = db
            .store
            .snapshot(res.storage().0, res.storage().1, ctx.ns(), at)
            .map_err(|_| continuation::expired(&token, ctx.ns()))?;
        return Ok((items, at, Some(token)));
    }
    if rv.is_empty() || rv == "0" {
        return Ok((
            db.store.list(res.storage().0, res.storage().1, ctx.ns()),
            current,
            None,
        ));
    }
    let n = parse_rv(rv)?;
    if n > current {
        return Err(ApiError::new(
            504,
            "Timeout",
            format!("Too large resource version: {n}, current: {current}"),
        )
        .with_details(json!({"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}], "retryAfterSeconds": 1})));
    }
    // `Exact`, or the legacy exact match: a limit with a resourceVersion and no match given.
    let exact = match ctx.req.q("resourceVersionMatch").unwrap_or("") {
        "Exact" => true,
        "" => limit > 0,
        _ => false,
    };
    if !exact {
        return Ok((
            db.store.list(res.storage().0, res.storage().1, ctx.ns()),
            current,
            None,
        ));
    }
    let too_old = || ApiError::expired("The resourceVersion for the provided list is too old.");
    if ctx.shared.faults.take_list_expiry() {
        return Err(too_old());
    }
    let items = db
        .store
        .snapshot(res.storage().0, res.storage().1, ctx.ns(), n)
        .map_err(|_| too_old())?;
    Ok((items, n, None))
}

pub async fn list(ctx: &Ctx<'_>, out: Output) -> Result<Response<Body>, ApiError> {
    let (labels, fields) = selectors(ctx)?;
    let shard = crate::shard_selector::from_request(ctx)?;
    check_rv_options(ctx)?;
    let fields = field_selection(ctx, &fields)?;
    let limit: usize = match ctx.req.q("limit") {
        Some(l) if !l.is_empty() => l
            .parse::<i64>()
            .map_err(|_| ApiError::bad_request("invalid limit"))?
            .max(0) as usize,
        _ => 0,
    };
    let res = &ctx.res;
    let (items, list_rv, after) = snapshot(ctx, limit)?;
    let mut matching = items.into_iter().filter(|(k, o)| {
        after.as_ref().is_none_or(|c| c.includes(k))
            && labels.matches(o)
            && fields.matches(o)
            && shard.as_ref().is_none_or(|(s, _)| s.matches_object(o))
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
            meta["continue"] = json!(Continue::after(Some(list_rv), last).encode(ctx.ns()));
        }
        if labels.is_empty() && fields.is_empty() && shard.is_none() {
            meta["remainingItemCount"] = json!(remaining);
        }
    }
    if let Some((_, raw)) = &shard {
        crate::shard_selector::echo(&mut meta, raw);
    }
    // One conversion for the whole page, as the real server batches a list.
    let items = super::converted::show(ctx, page.into_iter().map(|(_, o)| o).collect()).await?;
    let list = json!({"kind": res.list_kind, "apiVersion": res.api_version(ctx.version()), "metadata": meta});
    Ok(json_response(
        200,
        &render(&ctx.ver, out, &include_object(ctx), items, Some(list)),
    ))
}
