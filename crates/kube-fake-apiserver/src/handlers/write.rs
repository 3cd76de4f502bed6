//! create, update (main and status), delete, deletecollection, and the scale subresource.
use http::Response;
use serde_json::{Value, json};

use super::{Ctx, converted, decode_body, write_opts};
use crate::deletion::{self, DeleteOpts, Propagation};
use crate::http::{Body, json_response};
use crate::objects::{self, Mode};
use crate::registry::{Resource, ScalePaths};
use crate::ssa::Operation;
use crate::status::ApiError;
use crate::util::{get_path, meta_str, set_path};

pub async fn create(ctx: &Ctx<'_>) -> Result<Response<Body>, ApiError> {
    let body = decode_body(ctx.req)?;
    let opts = write_opts(ctx.req)?;
    let (code, obj) = converted::write(ctx, &opts, None, &|db, opts| {
        crate::crd::refuse_create(db, &ctx.res)?;
        let obj = ctx
            .write(opts, Operation::Update)
            .create(db, body.clone())?;
        Ok((201, obj))
    })
    .await?;
    Ok(json_response(code, &obj))
}

pub async fn update(ctx: &Ctx<'_>, mode: Mode) -> Result<Response<Body>, ApiError> {
    let body = decode_body(ctx.req)?;
    let opts = write_opts(ctx.req)?;
    let (code, obj) = converted::write(ctx, &opts, Some(ctx.name()), &|db, opts| {
        let obj =
            ctx.write(opts, Operation::Update)
                .update(db, ctx.name(), body.clone(), mode, &body)?;
        Ok((200, obj))
    })
    .await?;
    Ok(json_response(code, &obj))
}

/// `DeleteOptions` from the body (optional) and the query.
fn delete_options(ctx: &Ctx) -> Result<DeleteOpts, ApiError> {
    let mut opts = DeleteOpts {
        dry_run: write_opts(ctx.req)?.dry_run,
        ..Default::default()
    };
    let mut policy = ctx.req.q("propagationPolicy").map(String::from);
    let mut orphan = ctx.req.q("orphanDependents").map(|v| v == "true");
    if !ctx.req.body.is_empty() {
        let v: Value = if ctx.req.content_type() == crate::proto::MEDIA_TYPE {
            crate::proto::decode(&ctx.req.body).map_err(|e| ApiError::bad_request(e.message()))?
        } else {
            serde_json::from_slice(&ctx.req.body).map_err(|e| {
                ApiError::bad_request(format!("the request body is not valid DeleteOptions: {e}"))
            })?
        };
        if !v.is_object() {
            return Err(ApiError::bad_request(
                "the request body is not a DeleteOptions object",
            ));
        }
        let text = |p: &str| v.pointer(p).and_then(Value::as_str).map(String::from);
        opts.preconditions.uid = text("/preconditions/uid");
        opts.preconditions.resource_version = text("/preconditions/resourceVersion");
        if let Some(d) = v.get("dryRun").and_then(Value::as_array) {
            opts.dry_run |= d.iter().any(|x| x == "All");
        }
        policy = text("/propagationPolicy").or(policy);
        orphan = v
            .get("orphanDependents")
            .and_then(Value::as_bool)
            .or(orphan);
    }
    if let Some(p) = policy.filter(|p| !p.is_empty()) {
        if let Some(o) = orphan {
            return Err(ApiError::invalid_options(
                "DeleteOptions",
                "orphanDependents",
                "FieldValueInvalid",
                &format!(
                    "Invalid value: {o}: OrphanDependents and PropagationPolicy cannot be both set"
                ),
            ));
        }
        opts.propagation = Some(Propagation::parse(&p)?);
    }
    opts.orphan_dependents = orphan;
    Ok(opts)
}

/// The version a delete runs in: the request's, or for a webhook-converted resource the storage
/// version (a delete changes metadata only; its answer is converted afterwards).
fn delete_version(ctx: &Ctx) -> String {
    if crate::conversion::by_webhook(&ctx.res) {
        ctx.res.storage_version().to_string()
    } else {
        ctx.version().to_string()
    }
}

/// A deleted object's answer through the request's version (a `Status` stays as it is).
async fn shown(ctx: &Ctx<'_>, bodies: Vec<Value>) -> Result<Vec<Value>, ApiError> {
    let (objs, idx): (Vec<Value>, Vec<usize>) = bodies
        .iter()
        .enumerate()
        .filter(|(_, b)| b.get("kind").and_then(Value::as_str) != Some("Status"))
        .map(|(i, b)| (b.clone(), i))
        .unzip();
    let mut bodies = bodies;
    for (o, i) in converted::show(ctx, objs).await?.into_iter().zip(idx) {
        bodies[i] = o;
    }
    Ok(bodies)
}

pub async fn delete(ctx: &Ctx<'_>) -> Result<Response<Body>, ApiError> {
    let opts = delete_options(ctx)?;
    let version = delete_version(ctx);
    converted::admit_delete(ctx, opts.dry_run).await?;
    let (code, body) = deletion::delete(
        &mut ctx.shared.db.lock(),
        &ctx.res,
        &version,
        ctx.ns(),
        ctx.name(),
        &opts,
    )?;
    let body = shown(ctx, vec![body]).await?.pop().unwrap_or_default();
    Ok(json_response(code, &body))
}

pub async fn delete_collection(ctx: &Ctx<'_>) -> Result<Response<Body>, ApiError> {
    let (labels, fields) = super::read::selectors(ctx)?;
    // Its list options are a list's: `shardSelector` too (kube-apiserver's registry lists with
    // them, then deletes what the list returned, and answers that list, echo included).
    let shard = crate::shard_selector::from_request(ctx)?;
    let fields = super::read::field_selection(ctx, &fields)?;
    let mut opts = delete_options(ctx)?;
    // Preconditions name one object; a collection delete has none.
    opts.preconditions = Default::default();
    let version = delete_version(ctx);
    let selected = |db: &crate::state::Db| -> Vec<(crate::store::Key, Value)> {
        db.store
            .list(ctx.res.storage().0, ctx.res.storage().1, ctx.ns())
            .into_iter()
            .filter(|(_, o)| {
                labels.matches(o)
                    && fields.matches(o)
                    && shard.as_ref().is_none_or(|(s, _)| s.matches_object(o))
            })
            .collect()
    };
    let judged = selected(&ctx.shared.db.lock());
    converted::admit_delete_collection(
        ctx,
        opts.dry_run,
        judged.into_iter().map(|(_, o)| o).collect(),
    )
    .await?;
    let (items, rv) = {
        let mut db = ctx.shared.db.lock();
        let targets: Vec<String> = selected(&db)
            .into_iter()
            .map(|(k, _)| format!("{}/{}", k.namespace, k.name))
            .collect();
        let mut items = Vec::new();
        for t in targets {
            let (ns, name) = t.split_once('/').unwrap_or(("", &t));
            let ns = if ctx.res.namespaced { Some(ns) } else { None };
            let (_, body) = deletion::delete(&mut db, &ctx.res, &version, ns, name, &opts)?;
            if body.get("kind").and_then(Value::as_str) != Some("Status") {
                items.push(body);
            }
        }
        (items, db.store.rv().to_string())
    };
    let items = shown(ctx, items).await?;
    let mut meta = json!({"resourceVersion": rv});
    if let Some((_, raw)) = &shard {
        crate::shard_selector::echo(&mut meta, raw);
    }
    let list = json!({
        "kind": ctx.res.list_kind,
        "apiVersion": ctx.res.api_version(ctx.version()),
        "metadata": meta,
        "items": items,
    });
    Ok(json_response(200, &list))
}

pub fn scale_paths(ctx: &Ctx) -> Result<ScalePaths, ApiError> {
    ctx.ver.scale.clone().ok_or_else(ApiError::path_not_found)
}

/// The `autoscaling/v1 Scale` view of an object.
pub fn to_scale(res: &Resource, paths: &ScalePaths, obj: &Value) -> Value {
    let m = obj.get("metadata").cloned().unwrap_or(json!({}));
    let mut meta = json!({});
    for f in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(v) = m.get(f) {
            meta[f] = v.clone();
        }
    }
    let mut status =
        json!({"replicas": get_path(obj, &paths.status_replicas).cloned().unwrap_or(json!(0))});
    if let Some(sel) = paths
        .label_selector
        .as_deref()
        .and_then(|p| get_path(obj, p))
        .and_then(Value::as_str)
    {
        status["selector"] = json!(sel);
    } else if res.group == "apps" {
        // Deployments expose their label selector as a string.
        if let Some(ml) = obj
            .pointer("/spec/selector/matchLabels")
            .and_then(Value::as_object)
        {
            let s: Vec<String> = ml
                .iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                .collect();
            status["selector"] = json!(s.join(","));
        }
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": meta,
        "spec": {"replicas": get_path(obj, &paths.spec_replicas).cloned().unwrap_or(json!(0))},
        "status": status,
    })
}

pub async fn get_scale(ctx: &Ctx<'_>) -> Result<Response<Body>, ApiError> {
    let paths = scale_paths(ctx)?;
    let obj = ctx.stored(&ctx.shared.db.lock())?;
    let obj = converted::show(ctx, vec![obj])
        .await?
        .pop()
        .unwrap_or_default();
    Ok(json_response(200, &to_scale(&ctx.res, &paths, &obj)))
}

/// Writes a (possibly patched) Scale back into the object `old` (the stored object as the
/// request's version shows it). Returns the written object.
pub fn write_scale(
    ctx: &Ctx,
    db: &mut crate::state::Db,
    opts: &objects::WriteOpts,
    old: &Value,
    scale: &Value,
    source: &Value,
) -> Result<Value, ApiError> {
    let paths = scale_paths(ctx)?;
    let rv = meta_str(scale, "resourceVersion");
    if !rv.is_empty() && rv != meta_str(old, "resourceVersion") {
        return Err(ApiError::stale(&ctx.res.group, &ctx.res.plural, ctx.name()));
    }
    let replicas = scale.pointer("/spec/replicas").cloned().unwrap_or(json!(0));
    if !replicas.is_i64() || replicas.as_i64().is_some_and(|r| r < 0) {
        let cause = crate::schema::Cause {
            reason: "FieldValueInvalid".into(),
            message: format!("Invalid value: {replicas}: must be greater than or equal to 0"),
            field: "spec.replicas".into(),
        };
        return Err(ApiError::invalid(
            "autoscaling",
            "Scale",
            ctx.name(),
            &[cause],
        ));
    }
    let mut new = objects::view(&ctx.res, ctx.version(), old);
    set_path(&mut new, &paths.spec_replicas, replicas);
    ctx.write(opts, Operation::Update)
        .update(db, ctx.name(), new, Mode::Scale, source)
}

/// The stored object at the request's URL as its version shows it: the converted one a
/// webhook-converted write was given, else the stored one.
pub fn served_old(
    ctx: &Ctx,
    db: &crate::state::Db,
    opts: &objects::WriteOpts,
) -> Result<Value, ApiError> {
    let stored = ctx.stored(db)?;
    Ok(match &opts.served_old {
        Some(o) => o.clone(),
        None => objects::view(&ctx.res, ctx.version(), &stored),
    })
}

pub async fn put_scale(ctx: &Ctx<'_>) -> Result<Response<Body>, ApiError> {
    let body = decode_body(ctx.req)?;
    let opts = write_opts(ctx.req)?;
    let source = json!({"spec": {"replicas": body.pointer("/spec/replicas")}});
    let (code, obj) = converted::write(ctx, &opts, Some(ctx.name()), &|db, opts| {
        let old = served_old(ctx, db, opts)?;
        Ok((200, write_scale(ctx, db, opts, &old, &body, &source)?))
    })
    .await?;
    Ok(json_response(
        code,
        &to_scale(&ctx.res, &scale_paths(ctx)?, &obj),
    ))
}
