//! The in-process controllers a cluster runs next to its API server: garbage collector,
//! namespace controller, CRD naming/establishing and finalizing, ClusterRole aggregation, the
//! ValidatingAdmissionPolicy status (type checking) and workload status stand-ins.
//! One task runs them after every change of the store and when a delay they set runs out. A
//! round looks only at the objects the store's events named since the last one and at the
//! timers due, so a write costs the controllers what it touched, not the store (a scan of every
//! Deployment per write made seeding quadratic). The task drains the event channel (16,384
//! events) under the store lock every round, so writers (64 at once, seeding) only add what
//! they write between two rounds; it lags when one round writes more than that itself (e.g.
//! deleting a namespace that holds more objects), and a lag means one full pass.
//!
//! They sit above the write pipeline (`objects`, `deletion`, `state`, `store`, `registry`,
//! `crd`, `namespaces`, ...) and write through it, as `kube-controller-manager` writes through
//! the API: nothing below calls back up into this module (checked by
//! `tests::nothing_below_calls_back_up`).
mod clusterroles;
mod crd_finalizer;
mod crds;
mod gc;
mod namespaces;
mod policy_status;
mod workloads;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep_until};

use crate::objects::{self, Mode, WriteOpts};
use crate::registry::Resource;
use crate::state::{Db, Shared};
use crate::store::{Event, Key};
use crate::util::meta_mut;

/// Field manager of the controllers' writes.
const CONTROLLER_MANAGER: &str = "kube-controller-manager";

#[derive(Debug, Clone)]
pub(crate) struct ControllerSettings {
    pub gc: bool,
    pub crd_establish_delay: Duration,
    pub workloads: WorkloadDelays,
}

/// How long after each new generation the workload stand-ins report ready (`None`: off; the
/// Deployment stand-in still writes `observedGeneration`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct WorkloadDelays {
    pub deployments: Option<Duration>,
    pub statefulsets: Option<Duration>,
    pub daemonsets: Option<Duration>,
    pub replicasets: Option<Duration>,
    pub jobs: Option<Duration>,
}

impl WorkloadDelays {
    /// The stand-ins in the order `Controllers::workloads` keeps their state, with their delays.
    fn each(&self) -> [(&'static workloads::Workload, Option<Duration>); 5] {
        [
            (&workloads::DEPLOYMENTS, self.deployments),
            (&workloads::STATEFULSETS, self.statefulsets),
            (&workloads::DAEMONSETS, self.daemonsets),
            (&workloads::REPLICASETS, self.replicasets),
            (&workloads::JOBS, self.jobs),
        ]
    }
}

pub(crate) fn spawn(shared: Arc<Shared>, settings: ControllerSettings) -> JoinHandle<()> {
    let mut rx = shared.db.lock().store.subscribe();
    tokio::spawn(async move {
        let mut controllers = Controllers::new(settings);
        loop {
            let next = {
                let mut db = shared.db.lock();
                // Every write happens under this lock, so once drained here the controllers'
                // view is the store's.
                loop {
                    match rx.try_recv() {
                        Ok(e) => controllers.observe(&e),
                        Err(TryRecvError::Lagged(_)) => controllers.lagged(),
                        Err(_) => break,
                    }
                }
                controllers.run(&mut db, Instant::now())
            };
            // Far enough to mean "no timer"; tokio caps sleeps anyway.
            let wake = next.unwrap_or_else(|| Instant::now() + Duration::from_secs(3600));
            tokio::select! {
                r = rx.recv() => match r {
                    Ok(e) => controllers.observe(&e),
                    Err(RecvError::Lagged(_)) => controllers.lagged(),
                    Err(RecvError::Closed) => return,
                },
                _ = sleep_until(wake) => {}
                _ = shared.kinds_changed.notified() => {}
            }
        }
    })
}

/// What the store's events named since the last round. A controller looks only at these
/// objects (and at its timers), so a round costs what changed, not the size of the store.
#[derive(Default)]
struct Changed {
    keys: HashSet<Key>,
    /// Look at every object: at start, after missed events, after kinds were added or removed.
    full: bool,
}

impl Changed {
    /// The changed objects of one resource.
    fn of<'a>(&'a self, group: &'a str, resource: &'a str) -> impl Iterator<Item = &'a Key> {
        self.keys
            .iter()
            .filter(move |k| k.group == group && k.resource == resource)
    }
}

/// The controllers' state between rounds.
struct Controllers {
    settings: ControllerSettings,
    changed: Changed,
    /// The registry generation the last round saw.
    kinds_seen: Option<u64>,
    collector: gc::Collector,
    namespaces: namespaces::Terminating,
    crd_finalizer: crd_finalizer::Dying,
    crds: crds::Pending,
    /// ClusterRole aggregation.
    aggregation: clusterroles::Aggregation,
    policy_status: policy_status::PolicyStatus,
    /// One timer set per workload stand-in, in `WorkloadDelays::each`'s order.
    workloads: [workloads::Due; 5],
}

impl Controllers {
    fn new(settings: ControllerSettings) -> Self {
        Controllers {
            settings,
            changed: Changed {
                full: true,
                ..Changed::default()
            },
            kinds_seen: None,
            collector: gc::Collector::new(),
            namespaces: Default::default(),
            crd_finalizer: Default::default(),
            crds: Default::default(),
            aggregation: Default::default(),
            policy_status: Default::default(),
            workloads: Default::default(),
        }
    }

    /// Takes in one change of the store.
    fn observe(&mut self, e: &Event) {
        self.collector.observe(e);
        if !self.changed.full {
            self.changed.keys.insert(e.key.clone());
        }
    }

    /// Events were missed: the next round looks at everything.
    fn lagged(&mut self) {
        self.collector.lagged();
        self.changed = Changed {
            full: true,
            ..Changed::default()
        };
    }

    /// Runs the controllers once over what changed; returns the next due time. Their own
    /// writes come back as events, so a cascade goes on in the next round.
    fn run(&mut self, db: &mut Db, at: Instant) -> Option<Instant> {
        let mut changed = std::mem::take(&mut self.changed);
        let kinds = db.registry.generation();
        if self.kinds_seen != Some(kinds) {
            // A kind added or removed may change what a controller does with objects no
            // event named (the collector checks this itself).
            changed.full = true;
            self.kinds_seen = Some(kinds);
        }
        if self.settings.gc {
            self.collector.run(db);
        }
        self.namespaces.reconcile(db, &changed);
        self.crd_finalizer.reconcile(db, &changed);
        self.aggregation.reconcile(db, &changed);
        self.policy_status.reconcile(db, &changed);
        let (_, next) = self
            .crds
            .reconcile(db, self.settings.crd_establish_delay, &changed, at);
        let mut next = next;
        for ((kind, delay), due) in self
            .settings
            .workloads
            .each()
            .into_iter()
            .zip(&mut self.workloads)
        {
            let (_, n) = due.reconcile(kind, db, delay, &changed, at);
            next = earliest(next, n);
        }
        next
    }

    /// Objects the controllers looked at since the count was last taken.
    #[cfg(test)]
    fn take_visited(&mut self) -> usize {
        std::mem::take(&mut self.collector.visited)
            + std::mem::take(&mut self.namespaces.visited)
            + std::mem::take(&mut self.crd_finalizer.visited)
            + std::mem::take(&mut self.crds.visited)
            + std::mem::take(&mut self.aggregation.visited)
            + std::mem::take(&mut self.policy_status.visited)
            + self
                .workloads
                .iter_mut()
                .map(|w| std::mem::take(&mut w.visited))
                .sum::<usize>()
    }
}

fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Writes `new` over the object `ns`/`name` as `kube-controller-manager` does: an update without a
/// resourceVersion precondition, of the main resource or `/status` (whose part is all the
/// manager claims). Returns whether the store changed.
fn write_back(
    db: &mut Db,
    res: &Arc<Resource>,
    ns: Option<&str>,
    name: &str,
    mut new: Value,
    mode: Mode,
) -> bool {
    meta_mut(&mut new).remove("resourceVersion");
    let opts = WriteOpts {
        manager: CONTROLLER_MANAGER.into(),
        ..Default::default()
    };
    let source = match mode {
        Mode::Status => serde_json::json!({"status": new["status"]}),
        _ => new.clone(),
    };
    let before = db.store.rv();
    let version = res.storage_version().to_string();
    let write = objects::Write {
        res,
        version: &version,
        ns,
        opts: &opts,
        operation: crate::ssa::Operation::Update,
    };
    let written = write.update(db, name, new, mode, &source);
    written.is_ok() && db.store.rv() != before
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};
    use std::time::Duration;

    use serde_json::{Value, json};
    use tokio::sync::broadcast::{Receiver, error::TryRecvError};
    use tokio::time::Instant;

    use super::{ControllerSettings, Controllers};
    use crate::objects::{Write, WriteOpts};
    use crate::state::Db;
    use crate::store::{Event, Key, Store};

    fn db() -> Db {
        let mut registry = crate::registry::Registry::default();
        registry.insert(crate::registry::crd_resource());
        for r in crate::registry::builtins() {
            registry.insert(r);
        }
        let mut store = Store::new(100_000);
        crate::namespaces::create_initial(&mut store);
        Db {
            registry,
            store,
            require_namespaces: true,
            gc_enabled: true,
            crd_establish_delay: Duration::ZERO,
            limits: Default::default(),
        }
    }

    fn create_deployment(db: &mut Db, name: &str) -> Key {
        let res = db.registry.get("apps", "deployments").cloned().unwrap();
        let labels = json!({"app": name});
        let obj = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": 2, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": "i"}]}}}
        });
        let opts = WriteOpts {
            manager: "test".into(),
            ..Default::default()
        };
        let write = Write {
            res: &res,
            version: "v1",
            ns: Some("default"),
            opts: &opts,
            operation: crate::ssa::Operation::Update,
        };
        write.create(db, obj).unwrap();
        crate::objects::key_of(&res, Some("default"), name)
    }

    /// Hands the round's events to the controllers (as `spawn` does), runs them once at `at`
    /// and returns how many events the round took in and how many objects it looked at.
    fn round(
        c: &mut Controllers,
        db: &mut Db,
        rx: &mut Receiver<std::sync::Arc<Event>>,
        at: Instant,
    ) -> (usize, usize) {
        let mut events = 0;
        loop {
            match rx.try_recv() {
                Ok(e) => {
                    events += 1;
                    c.observe(&e);
                }
                Err(TryRecvError::Lagged(_)) => c.lagged(),
                Err(_) => break,
            }
        }
        c.run(db, at);
        (events, c.take_visited())
    }

    /// A round looks at the objects the events since the last one named and at the timers
    /// due, not at every object of the store: with 1,000 Deployments stored, one write costs
    /// the next round a couple of objects. (A controller that scans its kind on every round,
    /// as the deployment stand-in once did, makes seeding quadratic.)
    #[test]
    fn a_round_looks_at_what_changed_not_at_the_store() {
        let mut db = db();
        let mut rx = db.store.subscribe();
        let mut c = Controllers::new(ControllerSettings {
            gc: true,
            crd_establish_delay: Duration::ZERO,
            workloads: super::WorkloadDelays {
                deployments: Some(Duration::from_secs(5)),
                ..Default::default()
            },
        });
        let t0 = Instant::now();
        for i in 0..1_000 {
            create_deployment(&mut db, &format!("dep-{i}"));
        }
        // A namespace that stays terminating: what is left in it waits for its finalizer.
        let deleted = json!(crate::util::now());
        db.store.put(
            crate::namespaces::ns_key("held"),
            json!({"apiVersion": "v1", "kind": "Namespace",
                   "metadata": {"name": "held", "uid": "held-uid", "deletionTimestamp": deleted},
                   "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Terminating"}}),
        );
        let held = Key {
            group: String::new(),
            resource: "configmaps".into(),
            namespace: "held".into(),
            name: "cm".into(),
        };
        db.store.put(
            held.clone(),
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "cm", "namespace": "held", "uid": "cm-uid",
                                "deletionTimestamp": deleted, "finalizers": ["example.com/hold"]}}),
        );
        // The first round looks at everything; then each Deployment's observedGeneration, its
        // availability once the delay ran out, and the writes coming back as events.
        let (_, first) = round(&mut c, &mut db, &mut rx, t0);
        assert!(first >= 1_000, "the first round looked at {first} objects");
        round(&mut c, &mut db, &mut rx, t0);
        let (_, due) = round(&mut c, &mut db, &mut rx, t0 + Duration::from_secs(6));
        assert!(due >= 1_000, "the delay ran out for 1,000, {due} looked at");
        for _ in 0..3 {
            round(&mut c, &mut db, &mut rx, t0 + Duration::from_secs(6));
        }
        let (events, idle) = round(&mut c, &mut db, &mut rx, t0 + Duration::from_secs(6));
        assert_eq!((events, idle), (0, 0), "the controllers are quiet");
        let conditions =
            db.store.get(&crate::namespaces::ns_key("held")).unwrap()["status"]["conditions"]
                .to_string();
        assert!(
            conditions.contains("example.com/hold in 1 resource instances"),
            "{conditions}"
        );

        let key = create_deployment(&mut db, "one-more");
        let (events, one) = round(&mut c, &mut db, &mut rx, t0 + Duration::from_secs(7));
        assert_eq!(events, 1);
        // The collector and the stand-in each look at the new Deployment; the terminating
        // namespace is left alone, as nothing in it changed.
        assert_eq!(one, 2, "one write cost a round {one} objects");
        let observed = |db: &Db| db.store.get(&key).unwrap()["status"].clone();
        assert_eq!(observed(&db)["observedGeneration"], 1);
        assert_eq!(observed(&db).get("availableReplicas"), None);
        // Its own status write comes back; its delay has not run out.
        let (_, back) = round(&mut c, &mut db, &mut rx, t0 + Duration::from_secs(8));
        assert_eq!(back, 2, "the status write cost a round {back} objects");
        // Its timer, and nothing else, brings it up.
        let (_, timer) = round(&mut c, &mut db, &mut rx, t0 + Duration::from_secs(12));
        assert_eq!(timer, 1, "one timer cost a round {timer} objects");
        assert_eq!(observed(&db)["availableReplicas"], Value::from(2));

        let (_, back) = round(&mut c, &mut db, &mut rx, t0 + Duration::from_secs(12));
        assert_eq!(back, 2, "the status write cost a round {back} objects");

        // A change in the terminating namespace has the controller look at it again.
        db.store.delete(&held);
        let (_, emptied) = round(&mut c, &mut db, &mut rx, t0 + Duration::from_secs(13));
        assert_eq!(
            emptied, 1,
            "the emptied namespace cost a round {emptied} objects"
        );
        round(&mut c, &mut db, &mut rx, t0 + Duration::from_secs(13));
        assert!(db.store.get(&crate::namespaces::ns_key("held")).is_none());

        // Missed events: everything is looked at again.
        c.lagged();
        let (_, lagged) = round(&mut c, &mut db, &mut rx, t0 + Duration::from_secs(13));
        assert!(lagged > 1_000, "after a lag {lagged} objects looked at");
    }

    /// The files that may name this module: itself, and the top that starts the controllers or
    /// serves requests (`lib.rs`, `main.rs`, `dispatch.rs`, `handlers/`). Everything else is the
    /// write pipeline or below it.
    fn may_use_controllers(rel: &Path) -> bool {
        rel.starts_with("controllers")
            || rel.starts_with("handlers")
            || ["lib.rs", "main.rs", "dispatch.rs"]
                .iter()
                .any(|f| rel == Path::new(f))
    }

    fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                rust_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    fn words(s: &str) -> impl Iterator<Item = &str> {
        s.split(|c: char| !(c.is_alphanumeric() || c == '_'))
    }

    /// Whether `src` names `crate::controllers` (or `super::controllers`), as a path or in a `use`
    /// group (`use crate::{crd, controllers}`).
    fn names_controllers(src: &str) -> bool {
        ["crate::", "super::"].iter().any(|prefix| {
            src.match_indices(prefix).any(|(i, _)| {
                let mut rest = &src[i + prefix.len()..];
                while let Some(r) = rest.trim_start().strip_prefix("super::") {
                    rest = r;
                }
                let rest = rest.trim_start();
                match rest.strip_prefix('{') {
                    Some(group) => {
                        let mut depth = 1;
                        let end = group
                            .char_indices()
                            .find(|&(_, c)| {
                                match c {
                                    '{' => depth += 1,
                                    '}' => depth -= 1,
                                    _ => {}
                                }
                                depth == 0
                            })
                            .map_or(group.len(), |(j, _)| j);
                        words(&group[..end]).any(|w| w == "controllers")
                    }
                    None => words(rest).next() == Some("controllers"),
                }
            })
        })
    }

    #[test]
    fn the_check_sees_every_spelling() {
        for bad in [
            "use crate::controllers::write_back;",
            "crate::controllers::write_back(db, res, None, name, new, mode)",
            "use crate::{crd, controllers, gc};",
            "use crate::{\n    controllers::{self, write_back},\n    crd,\n};",
            "use super::controllers;",
            "use super::super::controllers::gc;",
        ] {
            assert!(names_controllers(bad), "missed: {bad}");
        }
        for good in [
            "use crate::crd;",
            "use crate::{crd, namespaces};",
            "// the controllers write through objects",
            "use crate::objects::{self, Mode};\nfn controllers() {}",
        ] {
            assert!(!names_controllers(good), "false alarm: {good}");
        }
    }

    /// The controllers sit above the write pipeline: no module below them (`objects`,
    /// `deletion`, `state`, `store`, `registry`, `crd`, `namespaces`, `schema`, `ssa`, ...)
    /// calls back up into them.
    #[test]
    fn nothing_below_calls_back_up() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        let below: Vec<PathBuf> = files
            .into_iter()
            .map(|f| f.strip_prefix(&src).unwrap().to_path_buf())
            .filter(|rel| !may_use_controllers(rel))
            .collect();
        for must in [
            "objects.rs",
            "deletion.rs",
            "state.rs",
            "crd.rs",
            "namespaces.rs",
        ] {
            assert!(
                below.iter().any(|f| f == Path::new(must)),
                "{must} not checked"
            );
        }
        let offenders: Vec<&PathBuf> = below
            .iter()
            .filter(|rel| names_controllers(&std::fs::read_to_string(src.join(rel)).unwrap()))
            .collect();
        assert!(
            offenders.is_empty(),
            "below the controllers, these name crate::controllers: {offenders:?}"
        );
    }
}
