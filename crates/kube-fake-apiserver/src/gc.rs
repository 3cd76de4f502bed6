//! The garbage collector, one pass at a time (as kube-controller-manager's does it, by uid):
//! dependents without a live owner are deleted, owners deleted with `Orphan` release their
//! dependents, owners deleted with `Foreground` wait for their blocking dependents.
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::{Value, json};

use crate::deletion::{self, DeleteOpts, FOREGROUND, ORPHAN, Preconditions, Propagation};
use crate::namespaces::CONTROLLER_MANAGER;
use crate::objects::{self, Mode, WriteOpts};
use crate::registry::Resource;
use crate::state::Db;
use crate::store::Key;
use crate::util::{finalizers, meta_mut, str_of};

/// One `metadata.ownerReferences` entry.
#[derive(Debug, Clone)]
struct OwnerRef {
    api_version: String,
    kind: String,
    name: String,
    uid: String,
    block: bool,
}

/// What the collector needs of one object.
#[derive(Debug)]
struct Node {
    key: Key,
    uid: String,
    owners: Vec<OwnerRef>,
    deleting: bool,
    finalizers: Vec<String>,
}

/// How an owner reference resolves (`classifyReferences`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owner {
    /// The kind is not served, or a cluster-scoped dependent names a namespaced owner: the
    /// collector cannot decide, so it leaves the dependent alone.
    Unresolvable,
    /// No object with that name and uid: the dependent is not held by it.
    Absent,
    /// Being deleted in the foreground: it waits for its dependents.
    Waiting,
    Solid,
}

enum Action {
    RemoveOwnerRefs {
        key: Key,
        uids: HashSet<String>,
    },
    RemoveFinalizer {
        key: Key,
        finalizer: &'static str,
    },
    Delete {
        key: Key,
        uid: String,
        policy: Propagation,
    },
}

fn owner_refs(obj: &Value) -> Vec<OwnerRef> {
    let Some(refs) = obj
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    refs.iter()
        .map(|r| OwnerRef {
            api_version: str_of(r.get("apiVersion")).to_string(),
            kind: str_of(r.get("kind")).to_string(),
            name: str_of(r.get("name")).to_string(),
            uid: str_of(r.get("uid")).to_string(),
            block: r.get("blockOwnerDeletion").and_then(Value::as_bool) == Some(true),
        })
        .collect()
}

/// The objects the collector has to look at: those with owners, and those being deleted.
fn nodes(db: &Db) -> Vec<Node> {
    db.store
        .iter()
        .filter(|(_, o)| {
            let m = o.get("metadata");
            m.and_then(|m| m.get("ownerReferences")).is_some()
                || m.and_then(|m| m.get("deletionTimestamp")).is_some()
        })
        .map(|(k, o)| Node {
            key: k.clone(),
            uid: str_of(o.pointer("/metadata/uid")).to_string(),
            owners: owner_refs(o),
            deleting: o.pointer("/metadata/deletionTimestamp").is_some(),
            finalizers: finalizers(o),
        })
        .collect()
}

fn resolve(db: &Db, dependent: &Key, r: &OwnerRef) -> Owner {
    let group = r.api_version.split_once('/').map_or("", |(g, _)| g);
    let Some(res) = db.registry.by_kind(group, &r.kind) else {
        return Owner::Unresolvable;
    };
    let namespace = if res.namespaced {
        if dependent.namespace.is_empty() {
            return Owner::Unresolvable;
        }
        dependent.namespace.clone()
    } else {
        String::new()
    };
    let key = Key {
        group: res.group.clone(),
        resource: res.plural.clone(),
        namespace,
        name: r.name.clone(),
    };
    match db.store.get(&key) {
        Some(o) if str_of(o.pointer("/metadata/uid")) == r.uid => {
            let deleting = o.pointer("/metadata/deletionTimestamp").is_some();
            if deleting && finalizers(o).iter().any(|f| f == FOREGROUND) {
                Owner::Waiting
            } else {
                Owner::Solid
            }
        }
        _ => Owner::Absent,
    }
}

/// Decides, for a snapshot of the store, what the collector does next.
fn plan(db: &Db) -> Vec<Action> {
    let nodes = nodes(db);
    // owner uid -> (dependent index, blockOwnerDeletion)
    let mut dependents: HashMap<&str, Vec<(usize, bool)>> = HashMap::new();
    for (i, n) in nodes.iter().enumerate() {
        for r in &n.owners {
            dependents
                .entry(r.uid.as_str())
                .or_default()
                .push((i, r.block));
        }
    }
    let mut actions = Vec::new();
    for n in &nodes {
        if n.owners.is_empty() || n.deleting {
            continue;
        }
        let states: Vec<Owner> = n.owners.iter().map(|r| resolve(db, &n.key, r)).collect();
        if states.contains(&Owner::Unresolvable) {
            continue;
        }
        let released: HashSet<String> = n
            .owners
            .iter()
            .zip(&states)
            .filter(|(_, s)| matches!(s, Owner::Absent | Owner::Waiting))
            .map(|(r, _)| r.uid.clone())
            .collect();
        if states.contains(&Owner::Solid) {
            if !released.is_empty() {
                actions.push(Action::RemoveOwnerRefs {
                    key: n.key.clone(),
                    uids: released,
                });
            }
            continue;
        }
        let has = |f: &str| n.finalizers.iter().any(|x| x == f);
        let policy = if states.contains(&Owner::Waiting) && dependents.contains_key(n.uid.as_str())
        {
            Propagation::Foreground
        } else if has(ORPHAN) {
            Propagation::Orphan
        } else if has(FOREGROUND) {
            Propagation::Foreground
        } else {
            Propagation::Background
        };
        actions.push(Action::Delete {
            key: n.key.clone(),
            uid: n.uid.clone(),
            policy,
        });
    }
    for n in nodes.iter().filter(|n| n.deleting) {
        let deps = dependents
            .get(n.uid.as_str())
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        if n.finalizers.iter().any(|f| f == ORPHAN) {
            for (i, _) in deps {
                actions.push(Action::RemoveOwnerRefs {
                    key: nodes[*i].key.clone(),
                    uids: HashSet::from([n.uid.clone()]),
                });
            }
            actions.push(Action::RemoveFinalizer {
                key: n.key.clone(),
                finalizer: ORPHAN,
            });
        }
        if n.finalizers.iter().any(|f| f == FOREGROUND) && !deps.iter().any(|(_, block)| *block) {
            actions.push(Action::RemoveFinalizer {
                key: n.key.clone(),
                finalizer: FOREGROUND,
            });
        }
    }
    actions
}

/// Writes `new` over the object at `key` as the controller manager (an update without a
/// resourceVersion precondition). Returns whether the store changed.
fn write(db: &mut Db, res: &Arc<Resource>, key: &Key, mut new: Value) -> bool {
    meta_mut(&mut new).remove("resourceVersion");
    let opts = WriteOpts {
        manager: CONTROLLER_MANAGER.into(),
        ..Default::default()
    };
    let ns = res.namespaced.then_some(key.namespace.as_str());
    let before = db.store.rv();
    let version = res.storage_version().to_string();
    let written = objects::update(
        db,
        res,
        &version,
        ns,
        &key.name,
        new.clone(),
        &opts,
        Mode::Main,
        "Update",
        &new,
    );
    written.is_ok() && db.store.rv() != before
}

fn apply(db: &mut Db, action: Action) -> bool {
    let key = match &action {
        Action::RemoveOwnerRefs { key, .. }
        | Action::RemoveFinalizer { key, .. }
        | Action::Delete { key, .. } => key.clone(),
    };
    let (Some(res), Some(current)) = (
        db.registry.get(&key.group, &key.resource).cloned(),
        db.store.get(&key).cloned(),
    ) else {
        return false;
    };
    match action {
        Action::RemoveOwnerRefs { uids, .. } => {
            let mut new = current;
            let m = meta_mut(&mut new);
            let kept: Vec<Value> = m
                .get("ownerReferences")
                .and_then(Value::as_array)
                .map(|refs| {
                    refs.iter()
                        .filter(|r| !uids.contains(str_of(r.get("uid"))))
                        .cloned()
                        .collect()
                })
                .unwrap_or_default();
            if kept.is_empty() {
                m.remove("ownerReferences");
            } else {
                m.insert("ownerReferences".into(), Value::Array(kept));
            }
            write(db, &res, &key, new)
        }
        Action::RemoveFinalizer { finalizer, .. } => {
            let rest: Vec<String> = finalizers(&current)
                .into_iter()
                .filter(|f| f != finalizer)
                .collect();
            let mut new = current;
            let m = meta_mut(&mut new);
            if rest.is_empty() {
                m.remove("finalizers");
            } else {
                m.insert("finalizers".into(), json!(rest));
            }
            write(db, &res, &key, new)
        }
        Action::Delete { uid, policy, .. } => {
            let opts = DeleteOpts {
                preconditions: Preconditions {
                    uid: Some(uid),
                    resource_version: None,
                },
                propagation: Some(policy),
                ..Default::default()
            };
            let ns = res.namespaced.then_some(key.namespace.as_str());
            let before = db.store.rv();
            let version = res.storage_version().to_string();
            deletion::delete(db, &res, &version, ns, &key.name, &opts).is_ok()
                && db.store.rv() != before
        }
    }
}

/// One collector pass over the whole store. Returns whether it changed anything.
pub fn collect(db: &mut Db) -> bool {
    let mut changed = false;
    for action in plan(db) {
        changed |= apply(db, action);
    }
    changed
}
