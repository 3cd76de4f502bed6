//! Stand-ins for the workload controllers (no Pods are made): when asked for, each reports its
//! workloads ready a delay after each new generation, with the status fields
//! kube-controller-manager 1.35 writes, so code that waits for a rollout or a Job can be tested.
//! Deployments, StatefulSets, DaemonSets (on one node) and ReplicaSets report every replica
//! ready and available; Jobs succeed. The Deployment stand-in also writes
//! `status.observedGeneration` at once on every generation even without a delay (the real
//! controller does so on every sync); the others do nothing unless asked.
use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::time::Instant;

use super::Changed;
use crate::objects::Mode;
use crate::state::Db;
use crate::store::Key;
use crate::util::{int_of, is_deleting, meta, now};

/// One workload kind's stand-in.
pub struct Workload {
    pub group: &'static str,
    pub resource: &'static str,
    /// Runs `pending` even when no delay is set.
    observe_always: bool,
    /// The status before the delay ran out (`None`: nothing to write).
    pending: fn(&Value, &Value, i64) -> Option<Value>,
    /// The status once ready (`None`: it already is).
    ready: fn(&Value, &Value, i64) -> Option<Value>,
}

pub static DEPLOYMENTS: Workload = Workload {
    group: "apps",
    resource: "deployments",
    observe_always: true,
    pending: observe_only,
    ready: deployment_ready,
};
pub static STATEFULSETS: Workload = Workload {
    group: "apps",
    resource: "statefulsets",
    observe_always: false,
    pending: observe_only,
    ready: statefulset_ready,
};
pub static DAEMONSETS: Workload = Workload {
    group: "apps",
    resource: "daemonsets",
    observe_always: false,
    pending: observe_only,
    ready: daemonset_ready,
};
pub static REPLICASETS: Workload = Workload {
    group: "apps",
    resource: "replicasets",
    observe_always: false,
    pending: observe_only,
    ready: replicaset_ready,
};
pub static JOBS: Workload = Workload {
    group: "batch",
    resource: "jobs",
    observe_always: false,
    pending: job_started,
    ready: job_complete,
};

fn replicas_of(obj: &Value) -> i64 {
    int_of(obj.pointer("/spec/replicas")).unwrap_or(1)
}

/// `status.observedGeneration` set to the generation, when it is not yet.
fn observe_only(_: &Value, status: &Value, generation: i64) -> Option<Value> {
    (int_of(status.get("observedGeneration")) != Some(generation)).then(|| {
        let mut s = status.clone();
        s["observedGeneration"] = json!(generation);
        s
    })
}

/// Sets `fields` to `n`, dropping them at zero (Go's `omitempty` on non-pointer counts).
fn counts(st: &mut Map<String, Value>, fields: &[&str], n: i64) {
    for f in fields {
        if n > 0 {
            st.insert((*f).into(), json!(n));
        } else {
            st.remove(*f);
        }
    }
}

/// Whether `status` already holds every `(field, value)`.
fn holds(status: &Value, want: &Map<String, Value>) -> bool {
    want.iter().all(|(k, v)| status.get(k) == Some(v))
        && [
            "replicas",
            "readyReplicas",
            "availableReplicas",
            "updatedReplicas",
        ]
        .iter()
        .all(|k| want.contains_key(*k) || status.get(*k).is_none())
}

fn deployment_ready(obj: &Value, status: &Value, generation: i64) -> Option<Value> {
    let replicas = replicas_of(obj);
    let mut st: Map<String, Value> = status.as_object().cloned().unwrap_or_default();
    st.insert("observedGeneration".into(), json!(generation));
    counts(
        &mut st,
        &[
            "replicas",
            "updatedReplicas",
            "readyReplicas",
            "availableReplicas",
        ],
        replicas,
    );
    let done = int_of(status.get("observedGeneration")) == Some(generation)
        && int_of(status.get("availableReplicas")).unwrap_or(0) == replicas
        && int_of(status.get("updatedReplicas")).unwrap_or(0) == replicas;
    if done {
        return None;
    }
    let t = now();
    st.insert(
        "conditions".into(),
        json!([{"type": "Available", "status": "True", "lastUpdateTime": t, "lastTransitionTime": t,
                "reason": "MinimumReplicasAvailable", "message": "Deployment has minimum availability."}]),
    );
    Some(Value::Object(st))
}

/// `controller.ComputeHash`'s shape: FNV-32a of the template, its decimal digits mapped onto
/// `rand.SafeEncodeString`'s alphabet (the real hash input differs: it is the Go struct's dump).
fn template_hash(obj: &Value) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let text = obj
        .pointer("/spec/template")
        .map(Value::to_string)
        .unwrap_or_default();
    let mut h: u32 = 0x811c_9dc5;
    for b in text.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h.to_string()
        .bytes()
        .map(|b| ALPHABET[usize::from(b) % ALPHABET.len()] as char)
        .collect()
}

fn statefulset_ready(obj: &Value, status: &Value, generation: i64) -> Option<Value> {
    let n = replicas_of(obj);
    let name = meta(obj, "name").and_then(Value::as_str).unwrap_or("");
    let revision = format!("{name}-{}", template_hash(obj));
    let mut want = Map::new();
    want.insert("observedGeneration".into(), json!(generation));
    // `replicas` and `availableReplicas` have no omitempty in StatefulSetStatus.
    want.insert("replicas".into(), json!(n));
    want.insert("availableReplicas".into(), json!(n));
    counts(
        &mut want,
        &["readyReplicas", "currentReplicas", "updatedReplicas"],
        n,
    );
    want.insert("currentRevision".into(), json!(revision));
    want.insert("updateRevision".into(), json!(revision));
    want.insert("collisionCount".into(), json!(0));
    merged(status, want)
}

fn daemonset_ready(_: &Value, status: &Value, generation: i64) -> Option<Value> {
    // One node, which every DaemonSet's pod fits.
    let want = json!({"currentNumberScheduled": 1, "numberMisscheduled": 0,
        "desiredNumberScheduled": 1, "numberReady": 1, "observedGeneration": generation,
        "updatedNumberScheduled": 1, "numberAvailable": 1});
    merged(status, want.as_object().cloned().unwrap_or_default())
}

fn replicaset_ready(obj: &Value, status: &Value, generation: i64) -> Option<Value> {
    let n = replicas_of(obj);
    let mut want = Map::new();
    // `replicas` has no omitempty in ReplicaSetStatus.
    want.insert("replicas".into(), json!(n));
    counts(
        &mut want,
        &["fullyLabeledReplicas", "readyReplicas", "availableReplicas"],
        n,
    );
    want.insert("observedGeneration".into(), json!(generation));
    merged(status, want)
}

/// `status` with `want` written over it and the zero counts `want` left out removed; `None`
/// when that changes nothing.
fn merged(status: &Value, want: Map<String, Value>) -> Option<Value> {
    if holds(status, &want) {
        return None;
    }
    let mut st: Map<String, Value> = status.as_object().cloned().unwrap_or_default();
    for k in [
        "readyReplicas",
        "currentReplicas",
        "updatedReplicas",
        "fullyLabeledReplicas",
        "availableReplicas",
    ] {
        if !want.contains_key(k) {
            st.remove(k);
        }
    }
    st.extend(want);
    Some(Value::Object(st))
}

fn suspended(job: &Value) -> bool {
    job.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true)
}

fn job_finished(status: &Value) -> bool {
    status
        .get("conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter().any(|c| {
                matches!(c["type"].as_str(), Some("Complete" | "Failed")) && c["status"] == "True"
            })
        })
}

/// The Job controller's first sync: `startTime` and the pods it runs counted as active.
fn job_started(job: &Value, status: &Value, _: i64) -> Option<Value> {
    if suspended(job) || job_finished(status) || status.get("startTime").is_some() {
        return None;
    }
    let completions = int_of(job.pointer("/spec/completions")).unwrap_or(1);
    let parallelism = int_of(job.pointer("/spec/parallelism")).unwrap_or(1);
    let mut st: Map<String, Value> = status.as_object().cloned().unwrap_or_default();
    st.insert("startTime".into(), json!(now()));
    counts(&mut st, &["active"], parallelism.min(completions));
    st.insert("ready".into(), json!(0));
    st.insert("terminating".into(), json!(0));
    st.insert("uncountedTerminatedPods".into(), json!({}));
    Some(Value::Object(st))
}

/// Every completion succeeded: `SuccessCriteriaMet`, then `Complete`, as the 1.35 controller
/// writes them (`CompletionsReached`).
fn job_complete(job: &Value, status: &Value, generation: i64) -> Option<Value> {
    if suspended(job) || job_finished(status) {
        return None;
    }
    let mut st: Map<String, Value> = (job_started(job, status, generation))
        .unwrap_or_else(|| status.clone())
        .as_object()
        .cloned()
        .unwrap_or_default();
    let completions = int_of(job.pointer("/spec/completions")).unwrap_or(1);
    let t = now();
    st.remove("active");
    st.insert("succeeded".into(), json!(completions));
    st.insert("ready".into(), json!(0));
    st.insert("terminating".into(), json!(0));
    st.insert("uncountedTerminatedPods".into(), json!({}));
    st.insert("completionTime".into(), json!(t));
    if job.pointer("/spec/completionMode").and_then(Value::as_str) == Some("Indexed") {
        let indexes = match completions {
            1 => "0".to_string(),
            n => format!("0-{}", n - 1),
        };
        st.insert("completedIndexes".into(), json!(indexes));
    }
    let condition = |ty: &str| {
        json!({"type": ty, "status": "True", "reason": "CompletionsReached",
               "message": "Reached expected number of succeeded pods",
               "lastProbeTime": t, "lastTransitionTime": t})
    };
    let mut conditions = st
        .get("conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    conditions.push(condition("SuccessCriteriaMet"));
    conditions.push(condition("Complete"));
    st.insert("conditions".into(), Value::Array(conditions));
    Some(Value::Object(st))
}

/// When each workload's current generation becomes ready.
#[derive(Default)]
pub struct Due {
    /// key -> (generation, due).
    due: HashMap<Key, (i64, Instant)>,
    /// The times of `due` not yet reached, earliest first: the workloads to look at again.
    pending: BTreeSet<(Instant, Key)>,
    /// Workloads looked at, for tests that check a round's cost.
    #[cfg(test)]
    pub visited: usize,
}

impl Due {
    fn forget(&mut self, key: &Key) {
        if let Some((_, when)) = self.due.remove(key) {
            self.pending.remove(&(when, key.clone()));
        }
    }

    /// One pass over the workloads events named (all of them in a full round) and those whose
    /// delay ran out: returns whether it wrote anything and when it next has something to do.
    pub fn reconcile(
        &mut self,
        kind: &Workload,
        db: &mut Db,
        delay: Option<Duration>,
        changed: &Changed,
        at: Instant,
    ) -> (bool, Option<Instant>) {
        if delay.is_none() && !kind.observe_always {
            return (false, None);
        }
        let Some(res) = db.registry.get(kind.group, kind.resource).cloned() else {
            return (false, None);
        };
        // In key order, as a full pass goes.
        let mut keys: BTreeSet<Key> = if changed.full {
            let all: BTreeSet<Key> = db
                .store
                .keys_of_resource(kind.group, kind.resource)
                .cloned()
                .collect();
            self.due.retain(|k, _| all.contains(k));
            self.pending.retain(|(_, k)| all.contains(k));
            all
        } else {
            changed.of(kind.group, kind.resource).cloned().collect()
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
            let status = d.get("status").cloned().unwrap_or(json!({}));
            let new_status = match delay {
                None => (kind.pending)(d, &status, generation),
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
                        (kind.ready)(d, &status, generation)
                    } else {
                        (kind.pending)(d, &status, generation)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ready_statefulset_carries_the_controllers_fields() {
        let sts = json!({"metadata": {"name": "db", "generation": 2},
                         "spec": {"replicas": 3, "template": {"spec": {}}}});
        let st = statefulset_ready(&sts, &json!({}), 2).unwrap();
        let rev = st["currentRevision"].as_str().unwrap();
        assert!(rev.starts_with("db-") && rev.len() > 5, "{rev}");
        assert_eq!(st["updateRevision"], st["currentRevision"]);
        for f in [
            "replicas",
            "readyReplicas",
            "currentReplicas",
            "updatedReplicas",
            "availableReplicas",
        ] {
            assert_eq!(st[f], 3, "{f}");
        }
        assert_eq!(st["observedGeneration"], 2);
        assert!(statefulset_ready(&sts, &st, 2).is_none(), "written once");
        let zero = json!({"metadata": {"name": "db"}, "spec": {"replicas": 0}});
        let st = statefulset_ready(&zero, &st, 3).unwrap();
        assert_eq!(st["replicas"], 0);
        assert!(st.get("readyReplicas").is_none());
    }

    #[test]
    fn a_job_starts_then_completes_with_both_conditions() {
        let job = json!({"metadata": {"name": "j"}, "spec": {"completions": 3, "parallelism": 2,
                          "completionMode": "Indexed"}});
        let started = job_started(&job, &json!({}), 1).unwrap();
        assert_eq!(started["active"], 2);
        assert!(job_started(&job, &started, 1).is_none());
        let done = job_complete(&job, &started, 1).unwrap();
        assert_eq!(done["succeeded"], 3);
        assert!(done.get("active").is_none());
        assert_eq!(done["completedIndexes"], "0-2");
        assert_eq!(done["startTime"], started["startTime"]);
        let types: Vec<&str> = done["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["type"].as_str().unwrap())
            .collect();
        assert_eq!(types, ["SuccessCriteriaMet", "Complete"]);
        assert!(
            job_complete(&job, &done, 1).is_none(),
            "complete stays complete"
        );
        let suspended = json!({"spec": {"suspend": true}});
        assert!(job_started(&suspended, &json!({}), 1).is_none());
    }
}
