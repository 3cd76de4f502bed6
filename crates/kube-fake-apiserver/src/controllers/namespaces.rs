//! The namespace controller: empties a terminating namespace, reports what is left in its
//! conditions, finalizes it and deletes it.
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;

use serde_json::{Value, json};

use super::Changed;
use crate::deletion;
use crate::namespaces::{KUBERNETES_FINALIZER, awaits_finalize, ns_key};
use crate::objects::{self, Mode};
use crate::registry::Resource;
use crate::state::Db;
use crate::util::{finalizers, is_deleting, meta_str, now, str_list, str_of};

/// The namespaces being deleted, kept from the store's events.
#[derive(Default)]
pub struct Terminating {
    names: BTreeSet<String>,
    /// Namespaces looked at, for tests that check a round's cost.
    #[cfg(test)]
    pub visited: usize,
}

impl Terminating {
    /// The namespace controller, one pass over the terminating namespaces an event touched
    /// (the namespace or something in it; all of them in a full round): deletes their
    /// contents (background propagation, as the controller does), and once nothing is left
    /// removes the `kubernetes` finalizer, which deletes the namespace. Returns whether it
    /// changed anything.
    pub fn reconcile(&mut self, db: &mut Db, changed: &Changed) -> bool {
        let Some(res) = db.registry.get("", "namespaces").cloned() else {
            return false;
        };
        if changed.full {
            self.names = db
                .store
                .of_resource("", "namespaces")
                .filter(|ns| is_deleting(ns))
                .map(|ns| meta_str(ns, "name").to_string())
                .collect();
        } else {
            for k in changed.of("", "namespaces") {
                if db.store.get(k).is_some_and(is_deleting) {
                    self.names.insert(k.name.clone());
                } else {
                    self.names.remove(&k.name);
                }
            }
        }
        if self.names.is_empty() {
            return false;
        }
        // A namespace object's key has an empty namespace and its name as the name.
        let touched: HashSet<&str> = changed
            .keys
            .iter()
            .map(|k| match k.namespace.as_str() {
                "" if k.group.is_empty() && k.resource == "namespaces" => k.name.as_str(),
                ns => ns,
            })
            .collect();
        let dying: Vec<Value> = self
            .names
            .iter()
            .filter(|n| changed.full || touched.contains(n.as_str()))
            .filter_map(|n| db.store.get(&ns_key(n)).cloned())
            .collect();
        let mut changed = false;
        for ns in dying {
            #[cfg(test)]
            {
                self.visited += 1;
            }
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
    super::write_back(db, res, None, name, new, mode)
}
