//! Namespace lifecycle: the namespaces a cluster starts with, the `NamespaceLifecycle` admission
//! checks, DELETE of a namespace (`Terminating` first), and the namespace controller that empties
//! a terminating namespace, finalizes it and deletes it.
use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::deletion::{self, DeleteOpts, Propagation};
use crate::objects::{self, Mode, view};
use crate::registry::Resource;
use crate::state::Db;
use crate::status::ApiError;
use crate::store::{Key, Store};
use crate::util::{finalizers, is_deleting, meta_mut, meta_str, now, str_list, str_of, uid};

/// The namespaces a cluster has from the start.
const INITIAL: &[&str] = &["default", "kube-node-lease", "kube-public", "kube-system"];
/// Namespaces the admission plugin refuses to delete.
const IMMORTAL: &[&str] = &["default", "kube-public", "kube-system"];
/// The `spec.finalizers` entry the namespace controller removes once the namespace is empty.
const KUBERNETES_FINALIZER: &str = "kubernetes";
/// Field manager of the controllers' writes.
pub const CONTROLLER_MANAGER: &str = "kube-controller-manager";

pub fn is_namespaces(res: &Resource) -> bool {
    res.group.is_empty() && res.plural == "namespaces"
}

fn ns_key(name: &str) -> Key {
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

/// The namespace controller, one pass: deletes the contents of every terminating namespace
/// (background propagation, as the controller does), and once nothing is left removes the
/// `kubernetes` finalizer, which deletes the namespace. Returns whether it changed anything.
pub fn reconcile(db: &mut Db) -> bool {
    let Some(res) = db.registry.get("", "namespaces").cloned() else {
        return false;
    };
    let dying: Vec<Value> = db
        .store
        .list("", "namespaces", None)
        .into_iter()
        .map(|(_, ns)| ns)
        .filter(is_deleting)
        .collect();
    let mut changed = false;
    for ns in dying {
        let name = meta_str(&ns, "name").to_string();
        let contents = db.store.keys_in_namespace(&name);
        if contents.is_empty() {
            changed |= finalize(db, &res, &ns);
            continue;
        }
        for k in contents {
            changed |= deletion::delete_in_background(db, &k);
        }
        changed |= report_remaining(db, &res, &name);
    }
    changed
}

/// The namespace controller's conditions, in its order, with their "all is well" reason and message.
const CONDITIONS: &[(&str, &str, &str)] = &[
    (
        "NamespaceDeletionDiscoveryFailure",
        "ResourcesDiscovered",
        "All resources successfully discovered",
    ),
    (
        "NamespaceDeletionGroupVersionParsingFailure",
        "ParsedGroupVersions",
        "All legacy kube types successfully parsed",
    ),
    (
        "NamespaceDeletionContentFailure",
        "ContentDeleted",
        "All content successfully deleted, may be waiting on finalization",
    ),
    (
        "NamespaceContentRemaining",
        "ContentRemoved",
        "All content successfully removed",
    ),
    (
        "NamespaceFinalizersRemaining",
        "ContentHasNoFinalizers",
        "All content-preserving finalizers finished",
    ),
];

/// Sets `status.conditions` of a terminating namespace from what is left in it (objects held by
/// finalizers): `NamespaceContentRemaining` and `NamespaceFinalizersRemaining` say what.
fn report_remaining(db: &mut Db, res: &Arc<Resource>, name: &str) -> bool {
    let mut per_resource: BTreeMap<String, usize> = BTreeMap::new();
    let mut per_finalizer: BTreeMap<String, usize> = BTreeMap::new();
    for k in db.store.keys_in_namespace(name) {
        *per_resource
            .entry(format!("{}.{}", k.resource, k.group))
            .or_default() += 1;
        for f in db.store.get(&k).map(finalizers).unwrap_or_default() {
            *per_finalizer.entry(f).or_default() += 1;
        }
    }
    let remaining = |m: &BTreeMap<String, usize>, verb: &str| -> Vec<String> {
        m.iter()
            .map(|(what, n)| format!("{what} {verb} {n} resource instances"))
            .collect()
    };
    let Some(ns) = db.store.get(&ns_key(name)).cloned() else {
        return false;
    };
    let old: Vec<Value> = ns
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let t = now();
    let conditions: Vec<Value> = CONDITIONS
        .iter()
        .map(|(ty, ok_reason, ok_message)| {
            let bad = match *ty {
                "NamespaceContentRemaining" if !per_resource.is_empty() => Some((
                    "SomeResourcesRemain",
                    format!("Some resources are remaining: {}", remaining(&per_resource, "has").join(", ")),
                )),
                "NamespaceFinalizersRemaining" if !per_finalizer.is_empty() => Some((
                    "SomeFinalizersRemain",
                    format!(
                        "Some content in the namespace has finalizers remaining: {}",
                        remaining(&per_finalizer, "in").join(", ")
                    ),
                )),
                _ => None,
            };
            let (status, reason, message) = match bad {
                Some((r, m)) => ("True", r.to_string(), m),
                None => ("False", ok_reason.to_string(), ok_message.to_string()),
            };
            // The transition time moves only when the status does.
            let since = old
                .iter()
                .find(|c| str_of(c.get("type")) == *ty && str_of(c.get("status")) == status)
                .and_then(|c| c.get("lastTransitionTime").cloned())
                .unwrap_or_else(|| json!(t));
            json!({"type": ty, "status": status, "lastTransitionTime": since, "reason": reason, "message": message})
        })
        .collect();
    let mut new = ns;
    new["status"]["conditions"] = json!(conditions);
    write_as_controller(db, res, name, new, Mode::Status)
}

/// What `PUT .../finalize` does for the controller: `kubernetes` leaves `spec.finalizers`.
fn finalize(db: &mut Db, res: &Arc<Resource>, ns: &Value) -> bool {
    let name = meta_str(ns, "name").to_string();
    if !str_list(ns.pointer("/spec/finalizers"))
        .iter()
        .any(|f| f == KUBERNETES_FINALIZER)
    {
        // Already finalized: it goes once its own finalizers are gone.
        return !awaits_finalize(res, ns)
            && finalizers(ns).is_empty()
            && objects::remove(db, res, &ns_key(&name), None).is_some();
    }
    let rest: Vec<String> = str_list(ns.pointer("/spec/finalizers"))
        .into_iter()
        .filter(|f| f != KUBERNETES_FINALIZER)
        .collect();
    let mut new = ns.clone();
    new["spec"]["finalizers"] = json!(rest);
    write_as_controller(db, res, &name, new, Mode::Main)
}

/// Writes a namespace as the controller manager; returns whether the store changed.
fn write_as_controller(
    db: &mut Db,
    res: &Arc<Resource>,
    name: &str,
    new: Value,
    mode: Mode,
) -> bool {
    crate::controllers::write_back(db, res, None, name, new, mode)
}
