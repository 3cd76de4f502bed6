//! The in-process controllers a cluster runs next to its API server: garbage collector,
//! namespace controller, CRD naming/establishing and finalizing, and a deployment stand-in.
//! One task runs them after every change of the store and when a delay they set runs out.
//!
//! They sit above the write pipeline (`objects`, `deletion`, `state`, `store`, `registry`,
//! `crd`, `namespaces`, ...) and write through it, as `kube-controller-manager` writes through
//! the API: nothing below calls back up into this module (checked by
//! `tests::nothing_below_calls_back_up`).
mod crd_finalizer;
mod crds;
mod deployments;
mod gc;
mod namespaces;

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
use crate::util::meta_mut;

/// Field manager of the controllers' writes.
const CONTROLLER_MANAGER: &str = "kube-controller-manager";

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
    let (_, mut next) = crds::reconcile(db, settings.crd_establish_delay, &mut timers.crds, at);
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
