//! Requests on a custom resource whose CRD converts by webhook (`strategy: Webhook`).
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
//! A request's own `dryRun` converts step 2's result to the storage version and back, then
//! stops (the real server's dry-run storage encodes for storage and decodes, storing nothing). Reads convert on the way out (`read`, `watch`), deletes run in the storage
//! version and convert their answer.
use serde_json::Value;

use super::Ctx;
use crate::conversion;
use crate::objects::{self, WriteOpts, key_of, view};
use crate::state::Db;
use crate::status::ApiError;
use crate::store::Key;
use crate::util::{finalizers, is_deleting, meta_str};

/// How often a write starts over when the object changed between its steps.
const ATTEMPTS: usize = 8;

/// One step-2 pipeline run: the HTTP code and the object (in the request's version).
pub type Pipeline<'a> =
    dyn Fn(&mut Db, &WriteOpts) -> Result<(u16, Value), ApiError> + Send + Sync + 'a;

/// Runs `pipeline` as the write of `ctx`: directly under the lock, or for a webhook-converted
/// resource through the steps above. `name` is the object's name (`None` for a create, whose
/// name the pipeline decides). Returns the code and the object as the response shows it.
pub async fn write(
    ctx: &Ctx<'_>,
    opts: &WriteOpts,
    name: Option<&str>,
    pipeline: &Pipeline<'_>,
) -> Result<(u16, Value), ApiError> {
    if !conversion::by_webhook(&ctx.res) {
        let mut db = ctx.shared.db.lock();
        return pipeline(&mut db, opts);
    }
    let res = &ctx.res;
    let shared = &**ctx.shared;
    let version = ctx.version();
    let storage = res.storage_version().to_string();
    let key = name.map(|n| key_of(res, ctx.ns(), n));
    for _ in 0..ATTEMPTS {
        let stored = key
            .as_ref()
            .and_then(|k| ctx.shared.db.lock().store.get(k).cloned());
        let served_old = match &stored {
            Some(s) => Some(conversion::convert_one(shared, res, s.clone(), version).await?),
            None => None,
        };
        let trial = WriteOpts {
            dry_run: true,
            served_old,
            ..opts.clone()
        };
        let (code, out) = {
            let mut db = ctx.shared.db.lock();
            if !unchanged(&db, key.as_ref(), stored.as_ref()) {
                continue;
            }
            pipeline(&mut db, &trial)?
        };
        if opts.dry_run {
            // kube-apiserver's dry-run storage still encodes the result for storage and decodes
            // it back (`DryRunnableStorage.copyInto`): the webhook converts it both ways, and
            // its failure fails the request as a real write's would.
            let encoded = conversion::convert_one(shared, res, out, &storage).await?;
            let shown = conversion::convert_one(shared, res, encoded, version).await?;
            return Ok((code, view(res, version, &shown)));
        }
        let new = conversion::convert_one(shared, res, out, &storage).await?;
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
            commit(&mut db, res, &key, new, stored.as_ref())?
        };
        let shown = conversion::convert_one(shared, res, committed, version).await?;
        return Ok((code, view(res, version, &shown)));
    }
    Err(ApiError::conflict(
        &res.group,
        &res.plural,
        name.unwrap_or(""),
        "the object has been modified; please apply your changes to the latest version and try again",
    ))
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

/// Stores the converted result of a write as the pipeline would have (a write that changes
/// nothing is not one; the last finalizer gone deletes the object; etcd's size limits apply).
/// Returns what is stored (or was, for a deletion).
fn commit(
    db: &mut Db,
    res: &crate::registry::Resource,
    key: &Key,
    mut new: Value,
    old: Option<&Value>,
) -> Result<Value, ApiError> {
    objects::to_storage_version(res, &mut new);
    let in_key = objects::group_in_key(res);
    let Some(old) = old else {
        db.limits.check_storage(key, in_key, &new, None)?;
        return Ok(db.store.put(key.clone(), new));
    };
    // As the pipeline decides it: a change to `managedFields` alone is a write, their times
    // alone are not.
    if crate::ssa::same_write(old, &new) {
        return Ok(old.clone());
    }
    if is_deleting(old) && finalizers(&new).is_empty() {
        return Ok(objects::remove(db, res, key, Some(new)).unwrap_or_default());
    }
    let revision = objects::stored_revision(old);
    db.limits.check_storage(key, in_key, &new, Some(revision))?;
    Ok(db.store.put(key.clone(), new))
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
