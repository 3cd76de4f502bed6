//! The CRD finalizer controller: for a CRD being deleted (marked by its first DELETE, see
//! [`crate::crd::mark_for_deletion`]) it deletes every custom resource, then removes its
//! finalizer, which deletes the CRD.
use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::Changed;
use crate::crd::{CLEANUP_FINALIZER, CRDS, condition, is_established, set_condition, terminating};
use crate::deletion::delete_in_background;
use crate::objects::{Mode, key_of};
use crate::registry::Resource;
use crate::state::Db;
use crate::util::{finalizers, is_deleting, meta_mut, meta_str, str_of};

/// The CRDs being deleted that still carry [`CLEANUP_FINALIZER`], kept from the store's events.
#[derive(Default)]
pub struct Dying {
    names: BTreeSet<String>,
    /// CRDs looked at, for tests that check a round's cost.
    #[cfg(test)]
    pub visited: usize,
}

fn cleaning_up(crd: &Value) -> bool {
    is_deleting(crd) && finalizers(crd).iter().any(|f| f == CLEANUP_FINALIZER)
}

impl Dying {
    /// The finalizer controller, one pass over the dying CRDs an event touched (the CRD or one
    /// of its custom resources; all of them in a full round): their custom resources are
    /// deleted in the background (objects with finalizers keep the CRD until they go); once
    /// none is left, `Terminating=False` and the finalizer is removed. A CRD never established
    /// had no objects. Returns whether it changed anything.
    pub fn reconcile(&mut self, db: &mut Db, changed: &Changed) -> bool {
        let Some(res) = db.registry.get(CRDS.0, CRDS.1).cloned() else {
            return false;
        };
        if changed.full {
            self.names = db
                .store
                .of_resource(CRDS.0, CRDS.1)
                .filter(|c| cleaning_up(c))
                .map(|c| meta_str(c, "name").to_string())
                .collect();
        } else {
            for k in changed.of(CRDS.0, CRDS.1) {
                if db.store.get(k).is_some_and(cleaning_up) {
                    self.names.insert(k.name.clone());
                } else {
                    self.names.remove(&k.name);
                }
            }
        }
        let mut dying = Vec::new();
        for name in &self.names {
            let key = key_of(&res, None, name);
            let Some(crd) = db.store.get(&key) else {
                continue;
            };
            let touched = changed.full
                || changed.keys.contains(&key)
                || changed
                    .of(
                        str_of(crd.pointer("/spec/group")),
                        str_of(crd.pointer("/spec/names/plural")),
                    )
                    .next()
                    .is_some();
            if touched {
                dying.push(crd.clone());
            }
        }
        #[cfg(test)]
        {
            self.visited += dying.len();
        }
        finalize(db, &res, dying)
    }
}

/// Deletes the custom resources of each of `dying`, or finalizes it once they are gone.
fn finalize(db: &mut Db, res: &std::sync::Arc<Resource>, dying: Vec<Value>) -> bool {
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
                    changed |= write(db, res, &name, new, Mode::Status);
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
        changed |= write(db, res, &name, new.clone(), Mode::Status);
        let rest: Vec<String> = finalizers(&new)
            .into_iter()
            .filter(|f| f != CLEANUP_FINALIZER)
            .collect();
        let Some(mut current) = db.store.get(&key_of(res, None, &name)).cloned() else {
            continue;
        };
        meta_mut(&mut current).insert("finalizers".into(), json!(rest));
        changed |= write(db, res, &name, current, Mode::Main);
    }
    changed
}

fn write(db: &mut Db, res: &std::sync::Arc<Resource>, name: &str, new: Value, mode: Mode) -> bool {
    super::write_back(db, res, None, name, new, mode)
}
