//! The garbage collector, one pass at a time (as kube-controller-manager's does it, by uid):
//! dependents without a live owner are deleted, owners deleted with `Orphan` release their
//! dependents, owners deleted with `Foreground` wait for their blocking dependents.
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::{Value, json};

use crate::deletion::{self, DeleteOpts, FOREGROUND, ORPHAN, Preconditions, Propagation};
use crate::objects::Mode;
use crate::registry::Resource;
use crate::state::Db;
use crate::store::{Event, EventType, Key};
use crate::util::{finalizers, is_deleting, meta, meta_mut, meta_str, str_of};

/// One `metadata.ownerReferences` entry.
#[derive(Debug, Clone)]
struct OwnerRef {
    api_version: String,
    kind: String,
    name: String,
    uid: String,
    block: bool,
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
    let Some(refs) = meta(obj, "ownerReferences").and_then(Value::as_array) else {
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
    let (group, resource) = res.storage();
    let key = Key {
        group: group.to_string(),
        resource: resource.to_string(),
        namespace,
        name: r.name.clone(),
    };
    match db.store.get(&key) {
        Some(o) if meta_str(o, "uid") == r.uid => {
            let deleting = is_deleting(o);
            if deleting && finalizers(o).iter().any(|f| f == FOREGROUND) {
                Owner::Waiting
            } else {
                Owner::Solid
            }
        }
        _ => Owner::Absent,
    }
}

/// The collector's view of the ownership graph, kept up to date from the store's events, and
/// the objects to look at next. Only objects an event touched are looked at, so a write costs
/// the collector the size of its neighbourhood, not of the store.
#[derive(Default)]
pub struct Collector {
    /// owner uid -> the objects that name it.
    dependents: HashMap<String, HashSet<Key>>,
    /// uid -> object.
    by_uid: HashMap<String, Key>,
    /// object -> the uids it names as owners.
    owners_of: HashMap<Key, Vec<String>>,
    /// Objects to look at, as dependents and as owners.
    dirty: HashSet<Key>,
    /// Rebuild everything from the store (at start, after missed events, when kinds changed).
    full: bool,
    /// The registry generation the last rebuild saw: a kind added or removed since (a CRD, or
    /// `register_kind` at any time) may make owner references resolve differently.
    kinds_seen: Option<u64>,
    /// Objects looked at (every one in a rebuild), for tests that check a round's cost.
    #[cfg(test)]
    pub visited: usize,
}

impl Collector {
    pub fn new() -> Self {
        Collector {
            full: true,
            ..Default::default()
        }
    }

    /// Events were missed: start over from the store.
    pub fn lagged(&mut self) {
        self.full = true;
    }

    fn forget(&mut self, key: &Key) {
        for owner in self.owners_of.remove(key).unwrap_or_default() {
            if let Some(set) = self.dependents.get_mut(&owner) {
                set.remove(key);
                if set.is_empty() {
                    self.dependents.remove(&owner);
                }
            }
        }
    }

    fn learn(&mut self, key: &Key, obj: &Value) {
        let uid = meta_str(obj, "uid");
        if !uid.is_empty() {
            self.by_uid.insert(uid.to_string(), key.clone());
        }
        let owners: Vec<String> = owner_refs(obj).into_iter().map(|r| r.uid).collect();
        for o in &owners {
            self.dependents
                .entry(o.clone())
                .or_default()
                .insert(key.clone());
        }
        if !owners.is_empty() {
            self.owners_of.insert(key.clone(), owners);
        }
    }

    fn mark_owners(&mut self, uids: &[String]) {
        for u in uids {
            if let Some(k) = self.by_uid.get(u) {
                self.dirty.insert(k.clone());
            }
        }
    }

    fn mark_dependents(&mut self, uid: &str) {
        if let Some(deps) = self.dependents.get(uid) {
            self.dirty.extend(deps.iter().cloned());
        }
    }

    /// Takes in one change of the store.
    pub fn observe(&mut self, e: &Event) {
        if self.full {
            return;
        }
        let before = self.owners_of.get(&e.key).cloned().unwrap_or_default();
        self.forget(&e.key);
        if let Some(old) = &e.old {
            let old_uid = meta_str(old, "uid");
            if old_uid != meta_str(&e.object, "uid") || e.kind == EventType::Deleted {
                self.by_uid.remove(old_uid);
                // Its dependents may have lost their owner.
                self.mark_dependents(old_uid);
            }
        }
        // Owners in the foreground wait on it; they may be free now.
        self.mark_owners(&before);
        if e.kind == EventType::Deleted {
            return;
        }
        self.learn(&e.key, &e.object);
        self.dirty.insert(e.key.clone());
        if is_deleting(&e.object) {
            // Its dependents see an owner being deleted (in the foreground, it waits for them).
            self.mark_dependents(meta_str(&e.object, "uid"));
        }
    }

    fn rebuild(&mut self, db: &Db) {
        self.dependents.clear();
        self.by_uid.clear();
        self.owners_of.clear();
        self.dirty.clear();
        for (k, o) in db.store.iter() {
            #[cfg(test)]
            {
                self.visited += 1;
            }
            self.learn(k, o);
            if meta(o, "ownerReferences").is_some() || is_deleting(o) {
                self.dirty.insert(k.clone());
            }
        }
        self.full = false;
    }

    /// Looks at every object an event touched and acts; returns whether it changed anything.
    pub fn run(&mut self, db: &mut Db) -> bool {
        let kinds = db.registry.generation();
        if self.full || self.kinds_seen != Some(kinds) {
            self.rebuild(db);
            self.kinds_seen = Some(kinds);
        }
        let dirty: Vec<Key> = self.dirty.drain().collect();
        #[cfg(test)]
        {
            self.visited += dirty.len();
        }
        let mut actions = Vec::new();
        for key in dirty {
            let Some(obj) = db.store.get(&key) else {
                continue;
            };
            if is_deleting(obj) {
                self.as_owner(db, &key, obj, &mut actions);
            } else {
                self.as_dependent(db, &key, obj, &mut actions);
            }
        }
        let mut changed = false;
        for a in actions {
            changed |= apply(db, a);
        }
        changed
    }

    /// `attemptToDeleteItem`: a dependent without a solid owner goes; references to owners that
    /// are gone (or waiting for their dependents) leave a dependent that still has a solid one.
    fn as_dependent(&self, db: &Db, key: &Key, obj: &Value, actions: &mut Vec<Action>) {
        let refs = owner_refs(obj);
        if refs.is_empty() {
            return;
        }
        let states: Vec<Owner> = refs.iter().map(|r| resolve(db, key, r)).collect();
        if states.contains(&Owner::Unresolvable) {
            return;
        }
        let released: HashSet<String> = refs
            .iter()
            .zip(&states)
            .filter(|(_, s)| matches!(s, Owner::Absent | Owner::Waiting))
            .map(|(r, _)| r.uid.clone())
            .collect();
        if states.contains(&Owner::Solid) {
            if !released.is_empty() {
                actions.push(Action::RemoveOwnerRefs {
                    key: key.clone(),
                    uids: released,
                });
            }
            return;
        }
        let fins = finalizers(obj);
        let has = |f: &str| fins.iter().any(|x| x == f);
        let uid = meta_str(obj, "uid");
        let policy = if states.contains(&Owner::Waiting) && self.dependents.contains_key(uid) {
            Propagation::Foreground
        } else if has(ORPHAN) {
            Propagation::Orphan
        } else if has(FOREGROUND) {
            Propagation::Foreground
        } else {
            Propagation::Background
        };
        actions.push(Action::Delete {
            key: key.clone(),
            uid: uid.to_string(),
            policy,
        });
    }

    /// An owner being deleted: `orphan` releases its dependents, `foregroundDeletion` waits for
    /// the blocking ones.
    fn as_owner(&self, db: &Db, key: &Key, obj: &Value, actions: &mut Vec<Action>) {
        let uid = meta_str(obj, "uid");
        let fins = finalizers(obj);
        let deps: Vec<&Key> = self
            .dependents
            .get(uid)
            .map(|d| d.iter().collect())
            .unwrap_or_default();
        if fins.iter().any(|f| f == ORPHAN) {
            for d in &deps {
                actions.push(Action::RemoveOwnerRefs {
                    key: (*d).clone(),
                    uids: HashSet::from([uid.to_string()]),
                });
            }
            actions.push(Action::RemoveFinalizer {
                key: key.clone(),
                finalizer: ORPHAN,
            });
        }
        if fins.iter().any(|f| f == FOREGROUND) {
            let blocked = deps.iter().any(|d| {
                db.store
                    .get(d)
                    .is_some_and(|dep| owner_refs(dep).iter().any(|r| r.uid == uid && r.block))
            });
            if !blocked {
                actions.push(Action::RemoveFinalizer {
                    key: key.clone(),
                    finalizer: FOREGROUND,
                });
            }
        }
    }
}

/// Writes `new` over the object at `key` as the controller manager.
fn write(db: &mut Db, res: &Arc<Resource>, key: &Key, new: Value) -> bool {
    let ns = res.namespaced.then_some(key.namespace.as_str());
    super::write_back(db, res, ns, &key.name, new, Mode::Main)
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
