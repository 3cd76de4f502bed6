//! The CRD naming and establishing controllers: a CRD whose names were refused tries again, one
//! that is `Installing` becomes `Established` once `crd_establish_delay` is over. (The names a
//! create or update can take are decided in the write itself, by `crd::set_status`.)
use std::collections::{HashMap, HashSet};
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

use super::Changed;
use crate::crd::{self, CRDS};
use crate::objects::Mode;
use crate::state::Db;
use crate::util::meta_str;

/// The establishing timers, and when the last pass had something to do next.
#[derive(Default)]
pub struct Pending {
    /// CRD name -> when it becomes established.
    due: HashMap<String, Instant>,
    next: Option<Instant>,
    /// CRDs looked at, for tests that check a round's cost.
    #[cfg(test)]
    pub visited: usize,
}

impl Pending {
    /// Naming controller (a CRD whose names were refused tries again, e.g. after the CRD
    /// holding them is gone) and establishing controller (after the delay). Returns (changed,
    /// next due). Only a CRD's change frees names, so a round without one (nor a delay run
    /// out) leaves the CRDs alone.
    pub fn reconcile(
        &mut self,
        db: &mut Db,
        delay: Duration,
        changed: &Changed,
        at: Instant,
    ) -> (bool, Option<Instant>) {
        let Some(res) = db.registry.get(CRDS.0, CRDS.1).cloned() else {
            return (false, None);
        };
        let due_now = self.next.is_some_and(|n| n <= at);
        if !changed.full && !due_now && changed.of(CRDS.0, CRDS.1).next().is_none() {
            return (false, self.next);
        }
        let crds = || db.store.of_resource(CRDS.0, CRDS.1);
        let names: HashSet<&str> = crds().map(|c| meta_str(c, "name")).collect();
        self.due.retain(|name, _| names.contains(name.as_str()));
        // Only CRDs with work left are copied (a deep copy of every CRD per write was the cost).
        let pending: Vec<Value> = crds()
            .filter(|c| !crd::names_accepted(c) || crd::is_installing(c))
            .cloned()
            .collect();
        #[cfg(test)]
        {
            self.visited += names.len();
        }
        let mut changed = false;
        let mut next = None;
        for c in pending {
            let name = meta_str(&c, "name").to_string();
            let mode = if !crd::names_accepted(&c) {
                // A main-resource write recomputes the names (a no-op when nothing was freed).
                Some((Mode::Main, c.clone()))
            } else if crd::is_installing(&c) {
                let when = *self.due.entry(name.clone()).or_insert(at + delay);
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
        self.next = next;
        (changed, next)
    }
}
