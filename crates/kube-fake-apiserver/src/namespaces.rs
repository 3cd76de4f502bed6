//! Namespaces as the API server stores them: the namespaces a cluster starts with, the
//! `NamespaceLifecycle` admission checks, and DELETE of a namespace (`Terminating` first). The
//! namespace controller that empties a terminating namespace, finalizes it and deletes it is
//! `controllers::namespaces`.
use std::sync::Arc;

use serde_json::{Value, json};

use crate::deletion::{self, DeleteOpts, Propagation};
use crate::objects::{self, view};
use crate::registry::Resource;
use crate::state::Db;
use crate::status::ApiError;
use crate::store::{Key, Store};
use crate::util::{finalizers, is_deleting, meta_mut, now, str_list, str_of, uid};

/// The namespaces a cluster has from the start.
const INITIAL: &[&str] = &["default", "kube-node-lease", "kube-public", "kube-system"];
/// Namespaces the admission plugin refuses to delete.
const IMMORTAL: &[&str] = &["default", "kube-public", "kube-system"];
/// The `spec.finalizers` entry the namespace controller removes once the namespace is empty.
pub const KUBERNETES_FINALIZER: &str = "kubernetes";

pub fn is_namespaces(res: &Resource) -> bool {
    res.group.is_empty() && res.plural == "namespaces"
}

pub fn ns_key(name: &str) -> Key {
    Key {
        group: String::new(),
        resource: "namespaces".into(),
        namespace: String::new(),
        name: name.into(),
    }
}

pub fn create_initial(store: &mut Store) {
    for name in INITIAL {
        let ns = json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": name, "uid": uid(), "creationTimestamp": now(),
                         "labels": {"kubernetes.io/metadata.name": name}},
            "spec": {"finalizers": [KUBERNETES_FINALIZER]},
            "status": {"phase": "Active"}
        });
        store.put(ns_key(name), ns);
    }
}

fn terminating(ns: &Value) -> bool {
    str_of(ns.pointer("/status/phase")) == "Terminating"
}

/// `NamespaceLifecycle` on create: nothing new in a namespace that is being terminated.
/// `name` is empty for a `generateName` create (admission runs before the name is generated).
pub fn admit_create(db: &Db, res: &Resource, ns: Option<&str>, name: &str) -> Result<(), ApiError> {
    let Some(ns) = ns.filter(|_| res.namespaced) else {
        return Ok(());
    };
    if !db.store.get(&ns_key(ns)).is_some_and(terminating) {
        return Ok(());
    }
    let mut e = ApiError::forbidden(
        &res.group,
        &res.plural,
        name,
        &format!("unable to create new content in namespace {ns} because it is being terminated"),
    );
    if let Some(d) = e.details.as_mut() {
        d["causes"] = json!([{
            "reason": "NamespaceTerminating",
            "message": format!("namespace {ns} is being terminated"),
            "field": "metadata.namespace",
        }]);
    }
    Err(e)
}

/// A terminating namespace is deleted only once `spec.finalizers` is empty too.
pub fn awaits_finalize(res: &Resource, obj: &Value) -> bool {
    is_namespaces(res) && !str_list(obj.pointer("/spec/finalizers")).is_empty()
}

/// A namespace's `metadata.finalizers` after its first DELETE, as the namespace storage sets
/// them: `orphan` for `Orphan` (or `orphanDependents: true`), `foregroundDeletion` for
/// `Foreground` (or `orphanDependents: false`), what it had when neither is given.
///
/// The policy is about the namespace's own dependents (objects elsewhere whose owner reference
/// names the namespace), which the garbage collector orphans or waits for. Its contents are
/// always deleted by the namespace controller, in the background, whatever the policy.
fn gc_finalizers(old: &[String], opts: &DeleteOpts) -> Vec<String> {
    let has = |f: &str| old.iter().any(|x| x == f);
    let orphan = match (opts.orphan_dependents, opts.propagation) {
        (Some(o), _) => o,
        (None, Some(p)) => p == Propagation::Orphan,
        (None, None) => has(deletion::ORPHAN),
    };
    let foreground = match (opts.orphan_dependents, opts.propagation) {
        (Some(o), _) => !o,
        (None, Some(p)) => p == Propagation::Foreground,
        (None, None) => has(deletion::FOREGROUND),
    };
    let mut out: Vec<String> = old
        .iter()
        .filter(|f| *f != deletion::ORPHAN && *f != deletion::FOREGROUND)
        .cloned()
        .collect();
    if orphan {
        out.push(deletion::ORPHAN.into());
    }
    if foreground {
        out.push(deletion::FOREGROUND.into());
    }
    out
}

/// DELETE of a namespace: the first one marks it `Terminating` and sets the garbage
/// collector's finalizers ([`gc_finalizers`]); the controller does the rest. Later ones are a
/// 409 until `spec.finalizers` is empty.
pub fn delete(
    db: &mut Db,
    res: &Arc<Resource>,
    version: &str,
    key: &Key,
    old: Value,
    opts: &DeleteOpts,
) -> Result<(u16, Value), ApiError> {
    let dry_run = opts.dry_run;
    if IMMORTAL.contains(&key.name.as_str()) {
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
        let after = gc_finalizers(&before, opts);
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
    if awaits_finalize(res, &old) {
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
