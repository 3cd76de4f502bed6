//! Deleting a CRD as apiextensions-apiserver does: the first DELETE marks it (`deletionTimestamp`,
//! the `customresourcecleanup.apiextensions.k8s.io` finalizer, `Terminating=True`), creates of its
//! custom resources are refused from then on, and the finalizer controller deletes every custom
//! resource, then removes its finalizer, which deletes the CRD.
use serde_json::{Value, json};

use crate::crd::{condition, is_established, set_condition};
use crate::deletion::delete_in_background;
use crate::objects::Mode;
use crate::registry::Resource;
use crate::state::Db;
use crate::status::ApiError;
use crate::util::{finalizers, is_deleting, meta_mut, meta_str, now, str_of};

/// The finalizer the finalizer controller removes once no custom resource is left.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

const CRDS: (&str, &str) = ("apiextensions.k8s.io", "customresourcedefinitions");

fn terminating(status: &str, reason: &str, message: &str) -> Value {
    json!({"type": "Terminating", "status": status, "lastTransitionTime": now(),
           "reason": reason, "message": message})
}

/// The first DELETE of a CRD (its storage's `Delete`; the propagation policy plays no part).
pub fn mark_for_deletion(crd: &mut Value) {
    let mut fins = finalizers(crd);
    if !fins.iter().any(|f| f == CLEANUP_FINALIZER) {
        fins.push(CLEANUP_FINALIZER.into());
    }
    let m = meta_mut(crd);
    m.insert("deletionTimestamp".into(), json!(now()));
    m.insert("finalizers".into(), json!(fins));
    set_condition(
        crd,
        terminating(
            "True",
            "InstanceDeletionPending",
            "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
        ),
    );
}

/// The 405 a create of a custom resource gets while its CRD is terminating.
pub fn refuse_create(db: &Db, res: &Resource) -> Result<(), ApiError> {
    if !res.custom {
        return Ok(());
    }
    let key = crate::store::Key {
        group: CRDS.0.into(),
        resource: CRDS.1.into(),
        namespace: String::new(),
        name: format!("{}.{}", res.plural, res.group),
    };
    let terminating = db.store.get(&key).is_some_and(|crd| {
        condition(crd, "Terminating").is_some_and(|c| str_of(c.get("status")) == "True")
    });
    if terminating {
        let mut e = ApiError::method_not_allowed();
        e.message = "create not allowed while custom resource definition is terminating".into();
        return Err(e);
    }
    Ok(())
}

/// The finalizer controller, one pass over the CRDs being deleted that still carry
/// [`CLEANUP_FINALIZER`]: their custom resources are deleted in the background (objects with
/// finalizers keep the CRD until they go); once none is left, `Terminating=False` and the
/// finalizer is removed. A CRD never established had no objects. Returns whether it changed
/// anything.
pub fn reconcile(db: &mut Db) -> bool {
    let Some(res) = db.registry.get(CRDS.0, CRDS.1).cloned() else {
        return false;
    };
    let dying: Vec<Value> = db
        .store
        .list(CRDS.0, CRDS.1, None)
        .into_iter()
        .map(|(_, c)| c)
        .filter(|c| is_deleting(c) && finalizers(c).iter().any(|f| f == CLEANUP_FINALIZER))
        .collect();
    let mut changed = false;
    for crd in dying {
        let name = meta_str(&crd, "name").to_string();
        let done = if !is_established(&crd) {
            terminating(
                "False",
                "NeverEstablished",
                "resource was never established",
            )
        } else {
            let group = str_of(crd.pointer("/spec/group"));
            let plural = str_of(crd.pointer("/spec/names/plural"));
            let left = db.store.list(group, plural, None);
            if !left.is_empty() {
                let reason = condition(&crd, "Terminating").map(|c| str_of(c.get("reason")));
                if reason != Some("InstanceDeletionInProgress") {
                    let mut new = crd.clone();
                    set_condition(
                        &mut new,
                        terminating(
                            "True",
                            "InstanceDeletionInProgress",
                            "CustomResource deletion is in progress",
                        ),
                    );
                    changed |= write(db, &res, &name, new, Mode::Status);
                }
                for (k, _) in left {
                    changed |= delete_in_background(db, &k);
                }
                continue;
            }
            terminating(
                "False",
                "InstanceDeletionCompleted",
                "removed all instances",
            )
        };
        let mut new = crd.clone();
        set_condition(&mut new, done);
        changed |= write(db, &res, &name, new.clone(), Mode::Status);
        let rest: Vec<String> = finalizers(&new)
            .into_iter()
            .filter(|f| f != CLEANUP_FINALIZER)
            .collect();
        let Some(mut current) = db
            .store
            .get(&crate::objects::key_of(&res, None, &name))
            .cloned()
        else {
            continue;
        };
        meta_mut(&mut current).insert("finalizers".into(), json!(rest));
        changed |= write(db, &res, &name, current, Mode::Main);
    }
    changed
}

fn write(db: &mut Db, res: &std::sync::Arc<Resource>, name: &str, new: Value, mode: Mode) -> bool {
    crate::controllers::write_back(db, res, None, name, new, mode)
}
