//! Writes that call out over HTTP: on a custom resource whose CRD converts by webhook
//! (`strategy: Webhook`), and on any resource an admission webhook or policy may judge
//! (`admission`: mutating webhooks between a first, capturing run of the pipeline and the dry
//! run, validating admission between the dry run and the store).
//!
//! The write pipeline (`objects`) runs synchronously under the store lock, and a webhook call is
//! an HTTP request: it never runs under the lock. So a write here is what kube-apiserver's
//! `GuaranteedUpdate` does, in steps:
//!
//! 1. read the stored object (storage version) and convert it to the request's version;
//! 2. run the unchanged pipeline in the request's version as a dry run, against that converted
//!    object (`WriteOpts::served_old`): type checks, metadata, defaulting, validation, ratcheting,
//!    `managedFields` are those of every other write;
//! 3. convert its result to the storage version;
//! 4. under the lock again, store it if the object has not changed since step 1 (else start
//!    over, as the real server retries on a conflict it caused itself);
//! 5. convert what was stored back to the request's version for the response.
//!
//! With admission, step 2 is preceded by a run that stops at the mutating-admission point and
//! the mutating webhooks (the dry run then goes on from their object), and followed by the
//! policies and validating webhooks; without conversion, steps 1, 3 and 5 convert nothing.
//!
//! A request's own `dryRun` converts step 2's result to the storage version and back, then
//! stops (the real server's dry-run storage encodes for storage and decodes, storing nothing). Reads convert on the way out (`read`, `watch`), deletes run in the storage
//! version and convert their answer.
use serde_json::{Value, json};

use super::Ctx;
use crate::admission;
use crate::conversion;
use crate::objects::{self, AdmissionStep, WriteOpts, key_of, view};
use crate::state::Db;
use crate::status::ApiError;
use crate::store::Key;
use crate::util::meta_str;

/// How often a write starts over when the object changed between its steps.
const ATTEMPTS: usize = 8;

/// One step-2 pipeline run: the HTTP code and the object (in the request's version).
pub type Pipeline<'a> =
    dyn Fn(&mut Db, &WriteOpts) -> Result<(u16, Value), ApiError> + Send + Sync + 'a;

/// Runs `pipeline` as the write of `ctx`: directly under the lock, or for a webhook-converted
/// resource or one that admission webhooks or policies may judge, through the steps above
/// (with admission: a first run stops where mutating admission belongs and hands the object
/// out, the mutating webhooks patch it, the dry run goes on from there, and validating
/// admission judges its result before it is stored). `name` is the object's name (`None` for a
/// create, whose name the pipeline decides). Returns the code and the object as the response
/// shows it.
pub async fn write(
    ctx: &Ctx<'_>,
    opts: &WriteOpts,
    name: Option<&str>,
    pipeline: &Pipeline<'_>,
) -> Result<(u16, Value), ApiError> {
    let by_webhook = conversion::by_webhook(&ctx.res);
    let sub = ctx.t.sub.as_deref().unwrap_or("");
    let config = if by_webhook {
        let db = ctx.shared.db.lock();
        admission::Config::load(&db, &ctx.res, sub, admission_ns(ctx))
    } else {
        let mut db = ctx.shared.db.lock();
        match admission::Config::load(&db, &ctx.res, sub, admission_ns(ctx)) {
            None => return pipeline(&mut db, opts),
            c => c,
        }
    };
    let res = &ctx.res;
    let shared = &**ctx.shared;
    let version = ctx.version();
    let storage = res.storage_version().to_string();
    let key = name.map(|n| key_of(res, ctx.ns(), n));
    let scale = ctx.t.sub.as_deref() == Some("scale");
    for _ in 0..ATTEMPTS {
        let stored = key
            .as_ref()
            .and_then(|k| ctx.shared.db.lock().store.get(k).cloned());
        let served_old = match &stored {
            Some(s) if by_webhook => {
                Some(conversion::convert_one(shared, res, s.clone(), version).await?)
            }
            _ => None,
        };
        let mut trial = WriteOpts {
            dry_run: true,
            served_old: served_old.clone(),
            ..opts.clone()
        };
        let old_seen = stored
            .as_ref()
            .map(|s| served_old.clone().unwrap_or_else(|| view(res, version, s)));
        let mut attrs = config
            .as_ref()
            .map(|_| attributes(ctx, opts, old_seen.clone()));
        if let (Some(config), Some(attrs)) = (&config, attrs.as_mut())
            && config.mutates()
            && !scale
        {
            let slot = objects::Captured::default();
            let capture = WriteOpts {
                admission: AdmissionStep::Capture(slot.clone()),
                ..trial.clone()
            };
            let reached = {
                let mut db = ctx.shared.db.lock();
                if !unchanged(&db, key.as_ref(), stored.as_ref()) {
                    continue;
                }
                pipeline(&mut db, &capture)
            };
            let captured = slot.lock().take();
            match (reached, captured) {
                (_, Some((obj, old))) => {
                    if attrs.name.is_empty() {
                        // A create's name is the object's (empty under generateName).
                        attrs.name = meta_str(&obj, "name").to_string();
                    }
                    attrs.object = Some(obj);
                    attrs.old_object = old;
                    attrs.operation = operation(&attrs.old_object, attrs.operation);
                    admission::mutate(shared, config, attrs).await?;
                    if let Some(m) = &attrs.object {
                        trial.admission = AdmissionStep::Mutated(m.clone());
                    }
                }
                (Err(e), None) => return Err(e),
                (Ok(_), None) => {}
            }
        }
        let (code, out) = {
            let mut db = ctx.shared.db.lock();
            if !unchanged(&db, key.as_ref(), stored.as_ref()) {
                continue;
            }
            pipeline(&mut db, &trial)?
        };
        if let (Some(config), Some(attrs)) = (&config, attrs.as_mut()) {
            if scale {
                let paths = super::write::scale_paths(ctx)?;
                attrs.object = Some(super::write::to_scale(res, &paths, &out));
                attrs.old_object = old_seen
                    .as_ref()
                    .map(|o| super::write::to_scale(res, &paths, o));
            } else {
                attrs.object = Some(out.clone());
                attrs.old_object = old_seen.clone();
            }
            attrs.name = meta_str(&out, "name").to_string();
            admission::validate(shared, config, attrs).await?;
        }
        if opts.dry_run {
            if !by_webhook {
                return Ok((code, out));
            }
            // kube-apiserver's dry-run storage still encodes the result for storage and decodes
            // it back (`DryRunnableStorage.copyInto`): the webhook converts it both ways, and
            // its failure fails the request as a real write's would.
            let encoded = conversion::convert_one(shared, res, out, &storage).await?;
            let shown = conversion::convert_one(shared, res, encoded, version).await?;
            return Ok((code, view(res, version, &shown)));
        }
        let new = if by_webhook {
            conversion::convert_one(shared, res, out, &storage).await?
        } else {
            out
        };
        let key = key
            .clone()
            .unwrap_or_else(|| key_of(res, ctx.ns(), meta_str(&new, "name")));
        let committed = {
            let mut db = ctx.shared.db.lock();
            if !unchanged(&db, Some(&key), stored.as_ref()) {
                if stored.is_none() {
                    return Err(ApiError::already_exists(&res.group, &res.plural, &key.name));
                }
                continue;
            }
            objects::commit(&mut db, res, &key, new, stored.as_ref())?
        };
        let shown = if by_webhook {
            conversion::convert_one(shared, res, committed, version).await?
        } else {
            committed
        };
        return Ok((code, view(res, version, &shown)));
    }
    Err(ApiError::conflict(
        &res.group,
        &res.plural,
        name.unwrap_or(""),
        "the object has been modified; please apply your changes to the latest version and try again",
    ))
}

/// A write's operation: an update of an object that does not exist is its create (apply).
fn operation(old: &Option<Value>, op: admission::Operation) -> admission::Operation {
    match (old, op) {
        (None, admission::Operation::Update) => admission::Operation::Create,
        (_, op) => op,
    }
}

/// The admission attributes of a write (its objects are filled in as the steps produce them).
fn attributes(ctx: &Ctx<'_>, opts: &WriteOpts, old: Option<Value>) -> admission::Attributes {
    let op = if ctx.req.method == http::Method::POST {
        admission::Operation::Create
    } else {
        admission::Operation::Update
    };
    let op = operation(&old, op);
    let options_kind = if op == admission::Operation::Create {
        "CreateOptions"
    } else {
        opts.options_kind
    };
    let mut options = json!({"kind": options_kind, "apiVersion": "meta.k8s.io/v1"});
    if opts.dry_run {
        options["dryRun"] = json!(["All"]);
    }
    for q in ["fieldManager", "fieldValidation"] {
        if let Some(v) = ctx.req.q(q).filter(|v| !v.is_empty()) {
            options[q] = json!(v);
        }
    }
    if ctx.req.flag("force") {
        options["force"] = json!(true);
    }
    let name = ctx.name().to_string();
    let namespace = if admission_on_namespace(ctx) {
        name.clone()
    } else {
        ctx.ns().unwrap_or("").to_string()
    };
    admission::Attributes {
        res: ctx.res.clone(),
        version: ctx.version().to_string(),
        subresource: ctx.t.sub.clone().unwrap_or_default(),
        operation: op,
        namespace,
        name,
        object: None,
        old_object: old,
        dry_run: opts.dry_run,
        options,
        user_info: admission::user_info(ctx.req.user.as_deref(), &ctx.req.headers),
        warnings: opts.warnings.clone(),
        audit: ctx.req.audit.clone(),
        authorizer: crate::auth::cel_authorizer(
            ctx.shared,
            ctx.req.user.clone(),
            admission::authz::Check {
                group: ctx.res.group.clone(),
                resource: ctx.res.plural.clone(),
                subresource: ctx.t.sub.clone().unwrap_or_default(),
                namespace: ctx.ns().unwrap_or("").to_string(),
                name: ctx.name().to_string(),
                ..Default::default()
            },
        ),
    }
}

/// A request on a namespace itself carries the namespace's name as its namespace.
fn admission_on_namespace(ctx: &Ctx<'_>) -> bool {
    ctx.res.group.is_empty() && ctx.res.plural == "namespaces"
}

/// The namespace whose labels `namespaceSelector`s are matched against.
fn admission_ns<'a>(ctx: &'a Ctx<'_>) -> Option<&'a str> {
    if admission_on_namespace(ctx) {
        Some(ctx.name())
    } else {
        ctx.ns()
    }
}

/// Admission of a `deletecollection`: mutating admission once without an object, then each
/// object about to go judged as a DELETE with it as `oldObject` and no name, as the real
/// store's `DeleteCollection` runs its per-item delete validation. All are judged before any
/// is deleted.
pub async fn admit_delete_collection(
    ctx: &Ctx<'_>,
    dry_run: bool,
    targets: Vec<Value>,
) -> Result<(), ApiError> {
    let Some(config) = admission::Config::load(&ctx.shared.db.lock(), &ctx.res, "", ctx.ns())
    else {
        return Ok(());
    };
    let opts = WriteOpts {
        dry_run,
        options_kind: "DeleteOptions",
        warnings: ctx.req.warnings.clone(),
        ..Default::default()
    };
    let mut attrs = attributes(ctx, &opts, None);
    attrs.operation = admission::Operation::Delete;
    attrs.options = json!({"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"});
    if dry_run {
        attrs.options["dryRun"] = json!(["All"]);
    }
    if config.mutates() {
        admission::mutate(ctx.shared, &config, &mut attrs).await?;
    }
    for old in show(ctx, targets).await? {
        attrs.old_object = Some(old);
        admission::validate(ctx.shared, &config, &attrs).await?;
    }
    Ok(())
}

/// Admission of a DELETE of the object at the URL (mutating webhooks may not change it;
/// validating webhooks and policies see it as `oldObject`). Runs before the delete.
pub async fn admit_delete(ctx: &Ctx<'_>, dry_run: bool) -> Result<(), ApiError> {
    let (config, stored) = {
        let db = ctx.shared.db.lock();
        let Some(config) = admission::Config::load(&db, &ctx.res, "", admission_ns(ctx)) else {
            return Ok(());
        };
        // A missing object is the delete's own 404.
        let Some(stored) = db
            .store
            .get(&key_of(&ctx.res, ctx.ns(), ctx.name()))
            .cloned()
        else {
            return Ok(());
        };
        (config, stored)
    };
    let old = show(ctx, vec![stored]).await?.pop();
    let opts = WriteOpts {
        dry_run,
        options_kind: "DeleteOptions",
        warnings: ctx.req.warnings.clone(),
        ..Default::default()
    };
    let mut attrs = attributes(ctx, &opts, old);
    attrs.operation = admission::Operation::Delete;
    attrs.options = json!({"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"});
    if dry_run {
        attrs.options["dryRun"] = json!(["All"]);
    }
    if config.mutates() {
        admission::mutate(ctx.shared, &config, &mut attrs).await?;
    }
    admission::validate(ctx.shared, &config, &attrs).await
}

/// Whether the object at `key` is still what step 1 read (same resourceVersion, or still absent).
fn unchanged(db: &Db, key: Option<&Key>, seen: Option<&Value>) -> bool {
    let now = key.and_then(|k| db.store.get(k));
    match (now, seen) {
        (None, None) => true,
        (Some(a), Some(b)) => meta_str(a, "resourceVersion") == meta_str(b, "resourceVersion"),
        _ => false,
    }
}

/// Converts stored objects (a get, a list page, a delete's answer) to the request's version and
/// shows them through it.
pub async fn show(ctx: &Ctx<'_>, objects: Vec<Value>) -> Result<Vec<Value>, ApiError> {
    let converted = if conversion::by_webhook(&ctx.res) {
        conversion::convert(ctx.shared, &ctx.res, objects, ctx.version()).await?
    } else {
        objects
    };
    Ok(converted
        .iter()
        .map(|o| view(&ctx.res, ctx.version(), o))
        .collect())
}
