//! `DELETE` of one object as the generic registry does it: preconditions, the propagation policy
//! turned into the garbage collector's finalizers (`orphan`, `foregroundDeletion`), and graceful
//! (pending) deletion while any finalizer remains; a namespace's DELETE (`Terminating` first).
use std::sync::Arc;

use serde_json::{Value, json};

use crate::namespaces;
use crate::objects::{self, key_of, stored, view};
use crate::registry::Resource;
use crate::state::Db;
use crate::status::ApiError;
use crate::store::Key;
use crate::util::{finalizers, is_deleting, meta_mut, meta_str, now};

/// Finalizer the collector removes once it has taken the owner references off the dependents.
pub const ORPHAN: &str = "orphan";
/// Finalizer the collector removes once no dependent with `blockOwnerDeletion` is left.
pub const FOREGROUND: &str = "foregroundDeletion";

/// `DeleteOptions.propagationPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Propagation {
    Orphan,
    Background,
    Foreground,
}

impl Propagation {
    /// Parses the wire value; anything else is the 422 `ValidateDeleteOptions` answers.
    pub fn parse(s: &str) -> Result<Self, ApiError> {
        match s {
            "Orphan" => Ok(Propagation::Orphan),
            "Background" => Ok(Propagation::Background),
            "Foreground" => Ok(Propagation::Foreground),
            other => Err(ApiError::invalid_options(
                "DeleteOptions",
                "propagationPolicy",
                "FieldValueNotSupported",
                &format!(
                    "Unsupported value: \"{other}\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""
                ),
            )),
        }
    }
}

/// `DeleteOptions.preconditions`.
#[derive(Debug, Clone, Default)]
pub struct Preconditions {
    pub uid: Option<String>,
    pub resource_version: Option<String>,
}

/// What a DELETE asked for.
#[derive(Debug, Clone, Default)]
pub struct DeleteOpts {
    pub preconditions: Preconditions,
    pub dry_run: bool,
    pub propagation: Option<Propagation>,
    /// The deprecated `orphanDependents` (overrides everything when set).
    pub orphan_dependents: Option<bool>,
}

/// Kinds whose strategy defaults to orphaning for backward compatibility (`batch/v1` jobs,
/// `v1` replication controllers, the pre-`apps/v1` workload versions); everything else,
/// custom resources included, defaults to background deletion.
fn orphans_by_default(res: &Resource, version: &str) -> bool {
    matches!(
        (res.group.as_str(), version, res.plural.as_str()),
        ("batch", "v1", "jobs")
            | ("", "v1", "replicationcontrollers")
            | ("extensions", "v1beta1", _)
            | ("apps", "v1beta1" | "v1beta2", _)
    )
}

/// The finalizers an object gets on DELETE (`deletionFinalizersForGarbageCollection`): the GC
/// finalizers are replaced by the one the policy asks for.
fn gc_finalizers(res: &Resource, version: &str, old: &[String], opts: &DeleteOpts) -> Vec<String> {
    let has = |f: &str| old.iter().any(|x| x == f);
    let orphan = match (opts.orphan_dependents, opts.propagation) {
        (Some(o), _) => o,
        (None, Some(p)) => p == Propagation::Orphan,
        (None, None) if has(ORPHAN) => true,
        (None, None) if has(FOREGROUND) => false,
        (None, None) => orphans_by_default(res, version),
    };
    let foreground = match (opts.orphan_dependents, opts.propagation) {
        (Some(_), _) => false,
        (None, Some(p)) => p == Propagation::Foreground,
        (None, None) => has(FOREGROUND),
    };
    let mut out: Vec<String> = old
        .iter()
        .filter(|f| *f != ORPHAN && *f != FOREGROUND)
        .cloned()
        .collect();
    if orphan {
        out.push(ORPHAN.into());
    }
    if foreground {
        out.push(FOREGROUND.into());
    }
    out
}

fn check_preconditions(
    res: &Resource,
    name: &str,
    old: &Value,
    pre: &Preconditions,
) -> Result<(), ApiError> {
    let checks = [
        (&pre.uid, "uid", "UID"),
        (&pre.resource_version, "resourceVersion", "ResourceVersion"),
    ];
    for (want, field, label) in checks {
        let actual = meta_str(old, field);
        if let Some(want) = want
            && want != actual
        {
            return Err(ApiError::conflict(
                &res.group,
                &res.plural,
                name,
                &format!(
                    "Precondition failed: {label} in precondition: {want}, {label} in object meta: {actual}"
                ),
            ));
        }
    }
    Ok(())
}

/// `DELETE` of one object. Returns the HTTP code and the body: the object while finalizers keep
/// it (200, or 202 when `orphanDependents: false` asked for cascading), else the deleted object or
/// a success `Status`, as the resource does.
pub fn delete(
    db: &mut Db,
    res: &Arc<Resource>,
    version: &str,
    ns: Option<&str>,
    name: &str,
    opts: &DeleteOpts,
) -> Result<(u16, Value), ApiError> {
    let key = key_of(res, ns, name);
    let old = stored(db, res, &key)?;
    check_preconditions(res, name, &old, &opts.preconditions)?;
    if namespaces::is_namespaces(res) {
        return delete_namespace(db, res, version, &key, old, opts);
    }
    if objects::is_crd(res) && !is_deleting(&old) {
        // The CRD storage's own first DELETE: the finalizer controller deletes its objects.
        let mut new = old;
        crate::crd::mark_for_deletion(&mut new);
        if opts.dry_run {
            return Ok((200, view(res, version, &new)));
        }
        let stored = db.store.put(key, new);
        return Ok((200, view(res, version, &stored)));
    }
    let before = finalizers(&old);
    let after = if db.gc_enabled {
        gc_finalizers(res, version, &before, opts)
    } else {
        before.clone()
    };
    let pending_code = if opts.orphan_dependents == Some(false) {
        202
    } else {
        200
    };
    if !after.is_empty() {
        let deleting = is_deleting(&old);
        if deleting && after == before {
            return Ok((pending_code, view(res, version, &old)));
        }
        let mut new = old.clone();
        let m = meta_mut(&mut new);
        m.insert("finalizers".into(), json!(after));
        if !deleting {
            m.insert("deletionTimestamp".into(), json!(now()));
            m.insert("deletionGracePeriodSeconds".into(), json!(0));
            // Graceful deletion bumps the generation of objects that have one.
            if let Some(g) = m.get("generation").and_then(Value::as_i64) {
                m.insert("generation".into(), json!(g + 1));
            }
        }
        if opts.dry_run {
            return Ok((pending_code, view(res, version, &new)));
        }
        let stored = db.store.put(key, new);
        return Ok((pending_code, view(res, version, &stored)));
    }
    let last = if opts.dry_run {
        old
    } else {
        objects::remove(db, res, &key, None).unwrap_or(old)
    };
    if res.return_deleted {
        Ok((200, view(res, version, &last)))
    } else {
        Ok((
            200,
            crate::status::success_status(&res.group, &res.plural, name, meta_str(&last, "uid")),
        ))
    }
}

/// Deletes `k` as a controller's `deletecollection` does (the namespace controller, the CRD
/// finalizer): background propagation, the uid it saw as a precondition. Objects already being
/// deleted are left to their finalizers. Returns whether it changed anything.
pub fn delete_in_background(db: &mut Db, k: &Key) -> bool {
    let Some(res) = db.registry.get(&k.group, &k.resource).cloned() else {
        // Nothing serves it any more: nobody can see it, so it just goes.
        return db.store.delete(k).is_some();
    };
    let Some(obj) = db.store.get(k) else {
        return false;
    };
    if is_deleting(obj) {
        return false;
    }
    let opts = DeleteOpts {
        propagation: Some(Propagation::Background),
        preconditions: Preconditions {
            uid: Some(meta_str(obj, "uid").to_string()),
            resource_version: None,
        },
        ..Default::default()
    };
    let version = res.storage_version().to_string();
    let ns = (!k.namespace.is_empty()).then_some(k.namespace.as_str());
    delete(db, &res, &version, ns, &k.name, &opts).is_ok()
}

/// A namespace's `metadata.finalizers` after its first DELETE, as the namespace storage sets
/// them: `orphan` for `Orphan` (or `orphanDependents: true`), `foregroundDeletion` for
/// `Foreground` (or `orphanDependents: false`), what it had when neither is given.
///
/// The policy is about the namespace's own dependents (objects elsewhere whose owner reference
/// names the namespace), which the garbage collector orphans or waits for. Its contents are
/// always deleted by the namespace controller, in the background, whatever the policy.
fn namespace_gc_finalizers(old: &[String], opts: &DeleteOpts) -> Vec<String> {
    let has = |f: &str| old.iter().any(|x| x == f);
    let orphan = match (opts.orphan_dependents, opts.propagation) {
        (Some(o), _) => o,
        (None, Some(p)) => p == Propagation::Orphan,
        (None, None) => has(ORPHAN),
    };
    let foreground = match (opts.orphan_dependents, opts.propagation) {
        (Some(o), _) => !o,
        (None, Some(p)) => p == Propagation::Foreground,
        (None, None) => has(FOREGROUND),
    };
    let mut out: Vec<String> = old
        .iter()
        .filter(|f| *f != ORPHAN && *f != FOREGROUND)
        .cloned()
        .collect();
    if orphan {
        out.push(ORPHAN.into());
    }
    if foreground {
        out.push(FOREGROUND.into());
    }
    out
}

/// DELETE of a namespace: the first one marks it `Terminating` and sets the garbage
/// collector's finalizers ([`namespace_gc_finalizers`]); the controller does the rest. Later ones are a
/// 409 until `spec.finalizers` is empty.
fn delete_namespace(
    db: &mut Db,
    res: &Arc<Resource>,
    version: &str,
    key: &Key,
    old: Value,
    opts: &DeleteOpts,
) -> Result<(u16, Value), ApiError> {
    let dry_run = opts.dry_run;
    if namespaces::IMMORTAL.contains(&key.name.as_str()) {
        return Err(ApiError::forbidden(
            "",
            "namespaces",
            &key.name,
            "this namespace may not be deleted",
        ));
    }
    if !is_deleting(&old) {
        let mut new = old;
        let before = finalizers(&new);
        let after = namespace_gc_finalizers(&before, opts);
        let m = meta_mut(&mut new);
        m.insert("deletionTimestamp".into(), json!(now()));
        if db.gc_enabled && after != before {
            if after.is_empty() {
                m.remove("finalizers");
            } else {
                m.insert("finalizers".into(), json!(after));
            }
        }
        new["status"]["phase"] = json!("Terminating");
        if dry_run {
            return Ok((200, view(res, version, &new)));
        }
        let stored = db.store.put(key.clone(), new);
        return Ok((200, view(res, version, &stored)));
    }
    if namespaces::awaits_finalize(res, &old) {
        return Err(ApiError::conflict(
            "",
            "namespaces",
            &key.name,
            "The system is ensuring all content is removed from this namespace.  Upon completion, this namespace will automatically be purged by the system.",
        ));
    }
    if !finalizers(&old).is_empty() || dry_run {
        return Ok((200, view(res, version, &old)));
    }
    let last = objects::remove(db, res, key, None).unwrap_or(old);
    Ok((200, view(res, version, &last)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn custom() -> Resource {
        Resource {
            custom: true,
            ..crate::registry::crd_resource()
        }
    }

    fn opts(p: Option<Propagation>, orphan: Option<bool>) -> DeleteOpts {
        DeleteOpts {
            propagation: p,
            orphan_dependents: orphan,
            ..Default::default()
        }
    }

    #[test]
    fn policy_becomes_finalizers() {
        let r = custom();
        let none: Vec<String> = Vec::new();
        assert!(gc_finalizers(&r, "v1", &none, &opts(None, None)).is_empty());
        assert_eq!(
            gc_finalizers(&r, "v1", &none, &opts(Some(Propagation::Orphan), None)),
            [ORPHAN]
        );
        assert_eq!(
            gc_finalizers(
                &r,
                "v1",
                &["x".into()],
                &opts(Some(Propagation::Foreground), None)
            ),
            ["x", FOREGROUND]
        );
        // An existing GC finalizer stands in for a missing policy; an explicit one replaces it.
        let orphaning = vec![ORPHAN.to_string()];
        assert_eq!(
            gc_finalizers(&r, "v1", &orphaning, &opts(None, None)),
            [ORPHAN]
        );
        assert!(
            gc_finalizers(
                &r,
                "v1",
                &orphaning,
                &opts(Some(Propagation::Background), None)
            )
            .is_empty()
        );
        assert_eq!(
            gc_finalizers(
                &r,
                "v1",
                &none,
                &opts(Some(Propagation::Foreground), Some(true))
            ),
            [ORPHAN]
        );
        let jobs = Resource {
            group: "batch".into(),
            plural: "jobs".into(),
            ..custom()
        };
        assert_eq!(
            gc_finalizers(&jobs, "v1", &none, &opts(None, None)),
            [ORPHAN]
        );
        assert!(Propagation::parse("Sideways").is_err());
    }
}
