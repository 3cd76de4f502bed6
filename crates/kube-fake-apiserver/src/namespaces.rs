//! Namespaces as the API server stores them: the namespaces a cluster starts with (created by
//! `ServerBuilder::start`) and the `NamespaceLifecycle` admission checks, which the write
//! pipeline calls; so this module names nothing of the pipeline. DELETE of a namespace
//! (`Terminating` first) is `deletion::delete_namespace`; the namespace controller that empties
//! a terminating namespace, finalizes it and deletes it is `controllers::namespaces`.
use serde_json::{Value, json};

use crate::registry::Resource;
use crate::state::Db;
use crate::status::ApiError;
use crate::store::{Key, Store};
use crate::util::{now, str_list, str_of, uid};

/// The namespaces a cluster has from the start.
const INITIAL: &[&str] = &["default", "kube-node-lease", "kube-public", "kube-system"];
/// Namespaces the admission plugin refuses to delete.
pub const IMMORTAL: &[&str] = &["default", "kube-public", "kube-system"];
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
