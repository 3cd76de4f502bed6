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
use crate::util::{meta_mut, now, str_list, str_of, uid};

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

/// The label kube-apiserver keeps equal to a namespace's name.
pub const NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// `SetDefaults_Namespace`, run when a request is decoded: the [`NAME_LABEL`] label, when the
/// name is known (a `generateName` create has none yet). A default, so the writer owns it.
pub fn default_name_label(obj: &mut Value) {
    let name = str_of(obj.pointer("/metadata/name")).to_string();
    if !name.is_empty() {
        set_name_label(obj, name);
    }
}

fn set_name_label(obj: &mut Value, name: String) {
    let m = meta_mut(obj);
    if !m.get("labels").is_some_and(Value::is_object) {
        m.insert("labels".into(), json!({}));
    }
    m["labels"][NAME_LABEL] = json!(name);
}

/// The namespace strategy's `PrepareForCreate` and `Canonicalize`, which run after the field
/// manager, so no manager owns what they set: `status.phase: Active`, `kubernetes` appended to
/// `spec.finalizers` when missing, and the [`NAME_LABEL`] label (a generated name's too).
pub fn prepare_for_create(obj: &mut Value) {
    obj["status"] = json!({"phase": "Active"});
    if !obj.get("spec").is_some_and(Value::is_object) {
        obj["spec"] = json!({});
    }
    let mut finalizers = str_list(obj.pointer("/spec/finalizers"));
    if !finalizers.iter().any(|f| f == KUBERNETES_FINALIZER) {
        finalizers.push(KUBERNETES_FINALIZER.into());
    }
    obj["spec"]["finalizers"] = json!(finalizers);
    let name = str_of(obj.pointer("/metadata/name")).to_string();
    set_name_label(obj, name);
}

/// An update's `spec` without `finalizers` gets `kubernetes`, as this server has always done.
/// kube-apiserver's `PrepareForUpdate` instead keeps the stored `spec.finalizers` (only
/// `/finalize` changes them); here the namespace controller and `/finalize` write through the
/// main resource, so that rule is not modelled.
pub fn default_finalizers_on_update(obj: &mut Value) {
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut)
        && !spec.contains_key("finalizers")
    {
        spec.insert("finalizers".into(), json!([KUBERNETES_FINALIZER]));
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
