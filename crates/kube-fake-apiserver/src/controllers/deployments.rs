//! A stand-in for the deployment controller (no ReplicaSets or Pods): it observes every new
//! generation at once (`status.observedGeneration`, as the real controller does on every sync)
//! and, when asked for, reports all `spec.replicas` as updated, ready and available after a
//! delay, so code that waits for a rollout can be tested.
use std::collections::HashMap;
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::time::Instant;

use crate::objects::Mode;
use crate::state::Db;
use crate::store::Key;
use crate::util::{int_of, is_deleting, meta, now};

/// When each deployment's current generation becomes available: key -> (generation, due).
pub type Due = HashMap<Key, (i64, Instant)>;

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

/// One pass: returns whether it wrote anything and when it next has something to do.
/// `available_after`: `None` writes only `observedGeneration`.
pub fn reconcile(
    db: &mut Db,
    available_after: Option<Duration>,
    due: &mut Due,
    at: Instant,
) -> (bool, Option<Instant>) {
    let Some(res) = db.registry.get("apps", "deployments").cloned() else {
        return (false, None);
    };
    let all = db.store.list("apps", "deployments", None);
    due.retain(|k, _| all.iter().any(|(key, _)| key == k));
    let mut changed = false;
    let mut next: Option<Instant> = None;
    for (key, d) in all {
        if is_deleting(&d) {
            continue;
        }
        let generation = int_of(meta(&d, "generation")).unwrap_or(1);
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
                let entry = due.entry(key.clone()).or_insert((generation, at + delay));
                if entry.0 != generation {
                    *entry = (generation, at + delay);
                }
                if entry.1 <= at {
                    let done = int_of(status.get("observedGeneration")) == Some(generation)
                        && int_of(status.get("availableReplicas")).unwrap_or(0) == replicas
                        && int_of(status.get("updatedReplicas")).unwrap_or(0) == replicas;
                    (!done).then(|| available_status(&status, generation, replicas))
                } else {
                    next = Some(next.map_or(entry.1, |n| n.min(entry.1)));
                    observe_only()
                }
            }
        };
        let Some(new_status) = new_status else {
            continue;
        };
        let mut new = d.clone();
        new["status"] = new_status;
        changed |= super::write_back(db, &res, Some(&key.namespace), &key.name, new, Mode::Status);
    }
    (changed, next)
}
