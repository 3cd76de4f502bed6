//! PATCH: JSON merge patch, JSON patch, server-side apply (create-or-merge), strategic merge (built-ins only).
use http::Response;
use serde_json::Value;

use super::{Ctx, write_opts};
use crate::http::{Body, json_response};
use crate::objects::{Mode, key_of, view};
use crate::ssa::{self, Operation};
use crate::status::ApiError;
use crate::util::{meta_mut, meta_str, str_of};

const CR_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
];
const ALL_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
];

fn parse_json(body: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))
}

pub fn patch(ctx: &Ctx) -> Result<Response<Body>, ApiError> {
    let ct = ctx.req.content_type();
    let accepted = if ctx.res.custom { CR_TYPES } else { ALL_TYPES };
    if !accepted.contains(&ct.as_str()) {
        return Err(ApiError::unsupported_media_type(accepted));
    }
    let mode = if ctx.t.sub.as_deref() == Some("status") {
        Mode::Status
    } else {
        Mode::Main
    };
    let scale = ctx.t.sub.as_deref() == Some("scale");
    if ct == "application/apply-patch+yaml" {
        return apply(ctx, mode);
    }
    let opts = write_opts(ctx.req)?;
    let patch_doc = parse_json(&ctx.req.body)?;
    let mut db = ctx.shared.db.lock();
    let old = ctx.stored(&db)?;
    let mut doc = if scale {
        super::write::to_scale(&ctx.res, &super::write::scale_paths(ctx)?, &old)
    } else {
        view(&ctx.res, ctx.version(), &old)
    };
    if ct == "application/json-patch+json" {
        let ops: json_patch::Patch = serde_json::from_value(patch_doc.clone())
            .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
        json_patch::patch(&mut doc, &ops)
            .map_err(|e| ApiError::new(422, "Invalid", e.to_string()))?;
    } else {
        // Merge patch (and, for built-ins stored without schemas, strategic merge approximated by it).
        if !patch_doc.is_object() {
            return Err(ApiError::bad_request(
                "error decoding patch: a merge patch must be a JSON object",
            ));
        }
        json_patch::merge(&mut doc, &patch_doc);
    }
    if scale {
        let out = super::write::write_scale(ctx, &mut db, &doc, &patch_doc)?;
        return Ok(json_response(200, &out));
    }
    let obj =
        ctx.write(&opts, Operation::Update)
            .update(&mut db, ctx.name(), doc, mode, &patch_doc)?;
    Ok(json_response(200, &obj))
}

fn apply(ctx: &Ctx, mode: Mode) -> Result<Response<Body>, ApiError> {
    let opts = write_opts(ctx.req)?;
    if ctx.req.q("fieldManager").unwrap_or("").is_empty() {
        return Err(ApiError::invalid_options(
            "PatchOptions",
            "fieldManager",
            "FieldValueRequired",
            "Required value: is required for apply patch",
        ));
    }
    let text = std::str::from_utf8(&ctx.req.body)
        .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
    let applied: Value = kube_codegen_crd::read::yaml_value("apply patch", text)
        .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
    if !applied.is_object() {
        return Err(ApiError::bad_request(
            "error decoding YAML: the applied configuration must be an object",
        ));
    }
    for f in ["apiVersion", "kind"] {
        if str_of(applied.get(f)).is_empty() {
            return Err(ApiError::bad_request(format!(
                "invalid object type: {f} must be set in an applied configuration"
            )));
        }
    }
    let mut applied = applied;
    let name = meta_str(&applied, "name").to_string();
    if name.is_empty() {
        meta_mut(&mut applied).insert("name".into(), Value::String(ctx.name().to_string()));
    } else if name != ctx.name() {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({name}) does not match the name on the URL ({})",
            ctx.name()
        )));
    }
    let write = ctx.write(&opts, Operation::Apply);
    let writer = ssa::Writer::of(&write, mode);
    writer.check_config(&applied, ctx.ns().unwrap_or(""), ctx.name())?;
    let mut db = ctx.shared.db.lock();
    let key = key_of(&ctx.res, ctx.ns(), ctx.name());
    match db.store.get(&key).cloned() {
        None if mode == Mode::Status => Err(ApiError::not_found(
            &ctx.res.group,
            &ctx.res.plural,
            ctx.name(),
        )),
        None => {
            let obj = write.create(&mut db, applied)?;
            Ok(json_response(201, &obj))
        }
        Some(old) => {
            let force = ctx.req.flag("force");
            let merged = writer.apply(&view(&ctx.res, ctx.version(), &old), &applied, force)?;
            let obj = write.update(&mut db, ctx.name(), merged, mode, &applied)?;
            Ok(json_response(200, &obj))
        }
    }
}
