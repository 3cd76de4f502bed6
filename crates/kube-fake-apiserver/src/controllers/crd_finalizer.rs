//! The CRD finalizer controller: for a CRD being deleted (marked by its first DELETE, see
//! [`crate::crd::mark_for_deletion`]) it deletes every custom resource, then removes its
//! finalizer, which deletes the CRD.
use serde_json::{Value, json};

use crate::crd::{CLEANUP_FINALIZER, CRDS, condition, is_established, set_condition, terminating};
use crate::deletion::delete_in_background;
use crate::objects::Mode;
use crate::registry::Resource;
use crate::state::Db;
use crate::util::{finalizers, is_deleting, meta_mut, meta_str, str_of};

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
        .of_resource(CRDS.0, CRDS.1)
        .filter(|c| is_deleting(c) && finalizers(c).iter().any(|f| f == CLEANUP_FINALIZER))
        .cloned()
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
    super::write_back(db, res, None, name, new, mode)
}
