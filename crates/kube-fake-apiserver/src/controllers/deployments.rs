//! A stand-in for the deployment controller (no ReplicaSets or Pods): it observes every new
//! generation at once (`status.observedGeneration`, as the real controller does on every sync)
//! and, when asked for, reports all `spec.replicas` as updated, ready and available after a
//! delay, so code that waits for a rollout can be tested.
use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::time::Instant;

use super::Changed;
use crate::objects::Mode;
use crate::state::Db;
use crate::store::Key;
use crate::util::{int_of, is_deleting, meta, now};

/// When each deployment's current generation becomes available.
#[derive(Default)]
pub struct Due {
    /// key -> (generation, due).
    due: HashMap<Key, (i64, Instant)>,
    /// The times of `due` not yet reached, earliest first: the deployments to look at again.
    pending: BTreeSet<(Instant, Key)>,
    /// Deployments looked at, for tests that check a round's cost.
    #[cfg(test)]
    pub visited: usize,
}

/// The status once `replicas` are available; zero counts are left out, as the API omits them.
fn available_status(old: &Value, generation: i64, replicas: i64) -> Value {
    let mut st: Map<String, Value> = old.as_object().cloned().unwrap_or_default();
    st.insert("observedGeneration".into(), json!(generation));
    for f in [
        "replicas",
        "updatedReplicas",
        "readyReplicas",
        "availableReplicas",
    ] {
        if replicas > 0 {
            st.insert(f.into(), json!(replicas));
        } else {
            st.remove(f);
        }
    }
    let t = now();
    st.insert(
        "conditions".into(),
        json!([{"type": "Available", "status": "True", "lastUpdateTime": t, "lastTransitionTime": t,
                "reason": "MinimumReplicasAvailable", "message": "Deployment has minimum availability."}]),
    );
    Value::Object(st)
}

impl Due {
    fn forget(&mut self, key: &Key) {
        if let Some((_, when)) = self.due.remove(key) {
            self.pending.remove(&(when, key.clone()));
        }
    }

    /// One pass over the deployments events named (all of them in a full round) and those whose
    /// delay ran out: returns whether it wrote anything and when it next has something to do.
    /// `available_after`: `None` writes only `observedGeneration`.
    pub fn reconcile(
        &mut self,
        db: &mut Db,
        available_after: Option<Duration>,
        changed: &Changed,
        at: Instant,
    ) -> (bool, Option<Instant>) {
        let Some(res) = db.registry.get("apps", "deployments").cloned() else {
            return (false, None);
        };
        // In key order, as a full pass goes.
        let mut keys: BTreeSet<Key> = if changed.full {
            let all: BTreeSet<Key> = db
                .store
                .keys_of_resource("apps", "deployments")
                .cloned()
                .collect();
            self.due.retain(|k, _| all.contains(k));
            self.pending.retain(|(_, k)| all.contains(k));
            all
        } else {
            changed.of("apps", "deployments").cloned().collect()
        };
        while let Some(first) = self.pending.first() {
            if first.0 > at {
                break;
            }
            if let Some((_, key)) = self.pending.pop_first() {
                keys.insert(key);
            }
        }
        let mut changed = false;
        for key in keys {
            let Some(d) = db.store.get(&key) else {
                self.forget(&key);
                continue;
            };
            #[cfg(test)]
            {
                self.visited += 1;
            }
            if is_deleting(d) {
                continue;
            }
            let generation = int_of(meta(d, "generation")).unwrap_or(1);
            let replicas = int_of(d.pointer("/spec/replicas")).unwrap_or(1);
            let status = d.get("status").cloned().unwrap_or(json!({}));
            let observe_only = || {
                (int_of(status.get("observedGeneration")) != Some(generation)).then(|| {
                    let mut s = status.clone();
                    s["observedGeneration"] = json!(generation);
                    s
                })
            };
            let new_status = match available_after {
                None => observe_only(),
                Some(delay) => {
                    let when = match self.due.get(&key) {
                        Some(&(g, when)) if g == generation => when,
                        _ => {
                            // A new generation starts its delay again.
                            self.forget(&key);
                            let when = at + delay;
                            self.due.insert(key.clone(), (generation, when));
                            if when > at {
                                self.pending.insert((when, key.clone()));
                            }
                            when
                        }
                    };
                    if when <= at {
                        let done = int_of(status.get("observedGeneration")) == Some(generation)
                            && int_of(status.get("availableReplicas")).unwrap_or(0) == replicas
                            && int_of(status.get("updatedReplicas")).unwrap_or(0) == replicas;
                        (!done).then(|| available_status(&status, generation, replicas))
                    } else {
                        observe_only()
                    }
                }
            };
            let Some(new_status) = new_status else {
                continue;
            };
            let mut new = d.clone();
            new["status"] = new_status;
            changed |=
                super::write_back(db, &res, Some(&key.namespace), &key.name, new, Mode::Status);
        }
        (changed, self.pending.first().map(|(when, _)| *when))
    }
}
