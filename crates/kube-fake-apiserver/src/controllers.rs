//! The in-process controllers a cluster runs next to its API server: garbage collector,
//! namespace controller, CRD naming/establishing and finalizing, and a deployment stand-in.
//! One task runs them after every change of the store and when a delay they set runs out.
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep_until};

use crate::objects::{self, Mode, WriteOpts};
use crate::registry::Resource;
use crate::state::{Db, Shared};
use crate::util::{meta_mut, meta_str};
use crate::{crd, crd_finalizer, deployments, gc, namespaces};

#[derive(Debug, Clone)]
pub(crate) struct ControllerSettings {
    pub gc: bool,
    pub crd_establish_delay: Duration,
    pub deployments_available_after: Option<Duration>,
}

/// Timers the controllers wait on.
#[derive(Default)]
struct Timers {
    /// CRD name -> when it becomes established.
    crds: HashMap<String, Instant>,
    deployments: deployments::Due,
}

pub(crate) fn spawn(shared: Arc<Shared>, settings: ControllerSettings) -> JoinHandle<()> {
    let mut rx = shared.db.lock().store.subscribe();
    tokio::spawn(async move {
        let mut timers = Timers::default();
        let mut collector = gc::Collector::new();
        loop {
            let next = {
                let mut db = shared.db.lock();
                // Every write happens under this lock, so once drained here the collector's view
                // is the store's.
                loop {
                    match rx.try_recv() {
                        Ok(e) => collector.observe(&e),
                        Err(TryRecvError::Lagged(_)) => collector.lagged(),
                        Err(_) => break,
                    }
                }
                run(&mut db, &settings, &mut timers, &mut collector)
            };
            // Far enough to mean "no timer"; tokio caps sleeps anyway.
            let wake = next.unwrap_or_else(|| Instant::now() + Duration::from_secs(3600));
            tokio::select! {
                r = rx.recv() => match r {
                    Ok(e) => collector.observe(&e),
                    Err(RecvError::Lagged(_)) => collector.lagged(),
                    Err(RecvError::Closed) => return,
                },
                _ = sleep_until(wake) => {}
                _ = shared.kinds_changed.notified() => {}
            }
        }
    })
}

/// Runs the controllers once over what changed; returns the next due time. Their own writes
/// come back as events, so a cascade goes on in the next round.
fn run(
    db: &mut Db,
    settings: &ControllerSettings,
    timers: &mut Timers,
    collector: &mut gc::Collector,
) -> Option<Instant> {
    let at = Instant::now();
    if settings.gc {
        collector.run(db);
    }
    namespaces::reconcile(db);
    crd_finalizer::reconcile(db);
    let (_, mut next) = crds(db, settings.crd_establish_delay, &mut timers.crds, at);
    let (_, n) = deployments::reconcile(
        db,
        settings.deployments_available_after,
        &mut timers.deployments,
        at,
    );
    next = earliest(next, n);
    next
}

fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Naming controller (a CRD whose names were refused tries again, e.g. after the CRD holding
/// them is gone) and establishing controller (after the delay). Returns (changed, next due).
fn crds(
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
    let all: Vec<Value> = db
        .store
        .list("apiextensions.k8s.io", "customresourcedefinitions", None)
        .into_iter()
        .map(|(_, v)| v)
        .collect();
    due.retain(|name, _| all.iter().any(|c| meta_str(c, "name") == name));
    let mut changed = false;
    let mut next = None;
    for c in all {
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
                next = earliest(next, Some(when));
                None
            }
        } else {
            None
        };
        let Some((mode, new)) = mode else {
            continue;
        };
        changed |= write_back(db, &res, None, &name, new, mode);
    }
    (changed, next)
}

/// Writes `new` over the object `ns`/`name` as `kube-controller-manager` does: an update without a
/// resourceVersion precondition, of the main resource or `/status` (whose part is all the
/// manager claims). Returns whether the store changed.
pub(crate) fn write_back(
    db: &mut Db,
    res: &Arc<Resource>,
    ns: Option<&str>,
    name: &str,
    mut new: Value,
    mode: Mode,
) -> bool {
    meta_mut(&mut new).remove("resourceVersion");
    let opts = WriteOpts {
        manager: namespaces::CONTROLLER_MANAGER.into(),
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
