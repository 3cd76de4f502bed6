//! The CRD naming and establishing controllers: a CRD whose names were refused tries again, one
//! that is `Installing` becomes `Established` once `crd_establish_delay` is over. (The names a
//! create or update can take are decided in the write itself, by `crd::set_status`.)
use std::collections::HashMap;
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

use crate::crd;
use crate::objects::Mode;
use crate::state::Db;
use crate::util::meta_str;

/// Naming controller (a CRD whose names were refused tries again, e.g. after the CRD holding
/// them is gone) and establishing controller (after the delay). Returns (changed, next due).
pub fn reconcile(
    db: &mut Db,
    delay: Duration,
    due: &mut HashMap<String, Instant>,
    at: Instant,
) -> (bool, Option<Instant>) {
    let Some(res) = db
        .registry
        .get("apiextensions.k8s.io", "customresourcedefinitions")
        .cloned()
    else {
        return (false, None);
    };
    let crds = || {
        db.store
            .of_resource("apiextensions.k8s.io", "customresourcedefinitions")
    };
    due.retain(|name, _| crds().any(|c| meta_str(c, "name") == name));
    // Only CRDs with work left are copied (a deep copy of every CRD per write was the cost).
    let pending: Vec<Value> = crds()
        .filter(|c| !crd::names_accepted(c) || crd::is_installing(c))
        .cloned()
        .collect();
    let mut changed = false;
    let mut next = None;
    for c in pending {
        let name = meta_str(&c, "name").to_string();
        let mode = if !crd::names_accepted(&c) {
            // A main-resource write recomputes the names (a no-op when nothing was freed).
            Some((Mode::Main, c.clone()))
        } else if crd::is_installing(&c) {
            let when = *due.entry(name.clone()).or_insert(at + delay);
            if when <= at {
                let mut new = c.clone();
                crd::establish(&mut new);
                Some((Mode::Status, new))
            } else {
                next = super::earliest(next, Some(when));
                None
            }
        } else {
            None
        };
        let Some((mode, new)) = mode else {
            continue;
        };
        changed |= super::write_back(db, &res, None, &name, new, mode);
    }
    (changed, next)
}
