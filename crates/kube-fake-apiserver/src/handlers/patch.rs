//! PATCH: JSON merge patch, JSON patch, server-side apply (create-or-merge), strategic merge (built-ins only).
use http::Response;
use serde_json::Value;

use super::{Ctx, converted, write_opts};
use crate::http::{Body, json_response};
use crate::objects::{Mode, key_of, view};
use crate::ssa::Operation;
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

pub async fn patch(ctx: &Ctx<'_>) -> Result<Response<Body>, ApiError> {
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
        return apply(ctx, mode).await;
    }
    let opts = write_opts(ctx.req)?;
    let patch_doc = parse_json(&ctx.req.body)?;
    let json_patch = ct == "application/json-patch+json";
    let strategic = ct == "application/strategic-merge-patch+json";
    let (code, obj) = converted::write(ctx, &opts, Some(ctx.name()), &|db, opts| {
        let old = super::write::served_old(ctx, db, opts)?;
        let mut doc = if scale {
            super::write::to_scale(&ctx.res, &super::write::scale_paths(ctx)?, &old)
        } else {
            old.clone()
        };
        if json_patch {
            let ops: json_patch::Patch = serde_json::from_value(patch_doc.clone())
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
            json_patch::patch(&mut doc, &ops)
                .map_err(|e| ApiError::new(422, "Invalid", e.to_string()))?;
        } else {
            if !patch_doc.is_object() {
                return Err(ApiError::bad_request(
                    "error decoding patch: a merge patch must be a JSON object",
                ));
            }
            match strategic.then(|| strategic_schema(ctx, scale)).flatten() {
                Some(schema) => {
                    doc = crate::strategic_merge::apply(&doc, &patch_doc, Some(schema))
                        .map_err(|e| ApiError::new(422, "Invalid", e.0))?;
                }
                // Merge patch (and strategic merge on a kind without a definition, which
                // then merges as a merge patch does).
                None => json_patch::merge(&mut doc, &patch_doc),
            }
        }
        let obj = if scale {
            super::write::write_scale(ctx, db, opts, &old, &doc, &patch_doc)?
        } else {
            ctx.write(opts, Operation::Update)
                .update(db, ctx.name(), doc, mode, &patch_doc)?
        };
        Ok((200, obj))
    })
    .await?;
    if scale {
        let paths = super::write::scale_paths(ctx)?;
        return Ok(json_response(
            code,
            &super::write::to_scale(&ctx.res, &paths, &obj),
        ));
    }
    Ok(json_response(code, &obj))
}

/// The built-in definition a strategic merge patch follows: the kind's, or `autoscaling/v1`
/// `Scale` on the scale subresource.
fn strategic_schema(ctx: &Ctx<'_>, scale: bool) -> Option<&'static Value> {
    let defs = crate::builtin_schemas::definitions();
    let name = if scale {
        defs.name_of("autoscaling", "v1", "Scale")?
    } else {
        defs.name_of(&ctx.res.group, ctx.version(), &ctx.res.kind)?
    };
    defs.get(name)
}

async fn apply(ctx: &Ctx<'_>, mode: Mode) -> Result<Response<Body>, ApiError> {
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
    if ctx.t.sub.as_deref() == Some("scale") && ctx.res.custom {
        // A CRD's type converter has no `autoscaling/v1 Scale`, so kube-apiserver's field manager
        // cannot type the applied Scale (kubernetes#116311); a 500 without reason.
        return Err(ApiError::new(
            500,
            "",
            format!(
                "failed to create typed patch object ({}/{}; autoscaling/v1, Kind=Scale): no corresponding type for autoscaling/v1, Kind=Scale",
                meta_str(&applied, "namespace"),
                meta_str(&applied, "name")
            ),
        ));
    }
    if crate::util::meta(&applied, "managedFields").is_some_and(|v| !v.is_null()) {
        return Err(ApiError::bad_request("metadata.managedFields must be nil"));
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
    {
        let write = ctx.write(&opts, Operation::Apply);
        write
            .writer(mode)
            .check_config(&applied, ctx.ns().unwrap_or(""), ctx.name())?;
    }
    let force = ctx.req.flag("force");
    let (code, obj) = converted::write(ctx, &opts, Some(ctx.name()), &|db, opts| {
        let write = ctx.write(opts, Operation::Apply);
        let writer = write.writer(mode);
        let key = key_of(&ctx.res, ctx.ns(), ctx.name());
        let old = match (&opts.served_old, db.store.get(&key)) {
            (_, None) => None,
            (Some(converted), Some(_)) => Some(converted.clone()),
            (None, Some(stored)) => Some(view(&ctx.res, ctx.version(), stored)),
        };
        match old {
            None if mode == Mode::Status => Err(ApiError::not_found(
                &ctx.res.group,
                &ctx.res.plural,
                ctx.name(),
            )),
            None => Ok((201, write.create(db, applied.clone())?)),
            Some(old) => {
                let merged = writer.apply(&old, &applied, force)?;
                Ok((200, write.update(db, ctx.name(), merged, mode, &applied)?))
            }
        }
    })
    .await?;
    Ok(json_response(code, &obj))
}
