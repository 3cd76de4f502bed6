//! Randomized fault schedules: a shared informer follows config maps on the in-memory API
//! server while a churn task creates, patches and deletes them and a seeded schedule injects
//! faults (dropped watches, watches ended after a few events, compaction forcing 410s, 5xx and
//! 429 bursts, latency, restarts with or without history). After each schedule, once the faults
//! are lifted, the informer must converge within a deadline:
//! - its cache equals the server's objects (key -> resourceVersion);
//! - every handler's replayed view (its add/update/delete notifications applied to a map)
//!   equals the server's objects, and each notification fits what that handler saw before
//!   (no add of a key it has, no update whose old state it was not given, no delete of a key it
//!   does not have);
//! - no object's notifications go back in resourceVersion;
//! - `has_synced` is never true before a first list was complete.
//!
//! `FAULT_SCHEDULES` (default 48) schedules run from seed `FAULT_SEED` (default 1) on, up to
//! `FAULT_PARALLEL` (default 4) at a time; a failing seed is printed with the command that
//! replays it. `cargo xtask faults` runs a thousand in release.

use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{
    Api, DeleteParams, ListParams, ObjectList, Patch, PatchParams, PostParams, WatchEvent,
    WatchParams,
};
use kube_codegen_runtime::cache::{
    Deleted, EventHandler, InformerOptions, ListWatch, Lister, ReflectorOptions,
    SharedIndexInformer, WatchStream, key_of,
};
use kube_fake_apiserver::FakeApiServer;
use parking_lot::Mutex;
use tokio::time::Instant;

use crate::support;

const NAMESPACES: [&str; 2] = ["default", "other"];
/// Names per namespace: a small key space, so creates, updates and deletes collide often.
const NAMES: u64 = 5;
/// How long an informer may take to converge once the faults are lifted.
const CONVERGE: Duration = Duration::from_secs(10);

/// The schedules' seeded generator (fastrand's wyrand: replayable from the seed alone).
type Rng = fastrand::Rng;

/// A pause of 0..=`max` milliseconds.
fn millis(rng: &mut Rng, max: u64) -> Duration {
    Duration::from_millis(rng.u64(..=max))
}

/// Problems seen while the schedule ran (by handlers and the source), reported at its end.
type Violations = Arc<Mutex<Vec<String>>>;

fn rv_of(cm: &ConfigMap) -> u64 {
    cm.metadata
        .resource_version
        .as_deref()
        .and_then(|rv| rv.parse().ok())
        .unwrap_or(0)
}

fn key(cm: &ConfigMap) -> String {
    key_of(cm).unwrap_or_else(|e| format!("<no key: {e}>"))
}

/// What the informer's source knows about lists, for the `has_synced` check.
struct SourceState {
    /// Lists whose last page (or a watch-list's end bookmark) has arrived.
    lists_done: AtomicUsize,
    /// The informer's lister, set once it exists (the source is built first).
    lister: OnceLock<Lister<ConfigMap>>,
    violations: Violations,
    /// What the informer met, by name (`list 410`, `watch ERROR 410`, ...): the run's summary
    /// shows the faults reached it.
    counts: Mutex<BTreeMap<String, u64>>,
}

impl SourceState {
    fn count(&self, what: impl Into<String>) {
        *self.counts.lock().entry(what.into()).or_default() += 1;
    }

    fn count_error(&self, request: &str, e: &kube::Error) {
        match e {
            kube::Error::Api(s) => self.count(format!("{request} {}", s.code)),
            _ => self.count(format!("{request} transport error")),
        }
    }

    fn check_synced(&self, when: &str) {
        let synced = self.lister.get().is_some_and(Lister::has_synced);
        if synced && self.lists_done.load(Ordering::SeqCst) == 0 {
            self.violations.lock().push(format!(
                "has_synced was true {when}, before any list was complete"
            ));
        }
    }
}

/// The informer's source: the API, watched for the `has_synced` invariant.
struct Observed {
    api: Api<ConfigMap>,
    state: Arc<SourceState>,
}

impl ListWatch<ConfigMap> for Observed {
    fn list<'a>(
        &'a self,
        params: &'a ListParams,
    ) -> BoxFuture<'a, Result<ObjectList<ConfigMap>, kube::Error>> {
        async move {
            self.state.check_synced("when a list page was asked for");
            let page = self.api.list(params).await;
            self.state.check_synced("when a list page arrived");
            match &page {
                Ok(p) if p.metadata.continue_.as_deref().is_none_or(str::is_empty) => {
                    self.state.lists_done.fetch_add(1, Ordering::SeqCst);
                    self.state.count("list complete");
                }
                Ok(_) => self.state.count("list page"),
                Err(e) => self.state.count_error("list", e),
            }
            page
        }
        .boxed()
    }

    fn watch<'a>(
        &'a self,
        params: &'a WatchParams,
        resource_version: &'a str,
    ) -> BoxFuture<'a, Result<WatchStream<ConfigMap>, kube::Error>> {
        async move {
            self.state.check_synced("when a watch was opened");
            let stream = match ListWatch::watch(&self.api, params, resource_version).await {
                Ok(stream) => stream,
                Err(e) => {
                    self.state.count_error("watch", &e);
                    return Err(e);
                }
            };
            self.state.count("watch opened");
            let (state, watch_list) = (self.state.clone(), params.send_initial_events);
            Ok(stream
                .inspect(move |event| match event {
                    Ok(WatchEvent::Error(s)) => {
                        state.count(format!("watch ERROR event {}", s.code))
                    }
                    Err(e) => state.count_error("watch stream", e),
                    // A watch-list's initial list is complete at the annotated bookmark.
                    Ok(WatchEvent::Bookmark(b))
                        if watch_list
                            && b.metadata
                                .annotations
                                .get("k8s.io/initial-events-end")
                                .map(String::as_str)
                                == Some("true") =>
                    {
                        state.lists_done.fetch_add(1, Ordering::SeqCst);
                    }
                    Ok(_) => {}
                })
                .boxed())
        }
        .boxed()
    }
}

/// A handler that replays its notifications into a map and checks each against it.
#[derive(Clone)]
struct Replay {
    name: &'static str,
    view: Arc<Mutex<BTreeMap<String, u64>>>,
    /// Highest resourceVersion delivered per key (kept across deletes).
    highest: Arc<Mutex<BTreeMap<String, u64>>>,
    violations: Violations,
}

impl Replay {
    fn new(name: &'static str, violations: &Violations) -> Self {
        Replay {
            name,
            view: Arc::default(),
            highest: Arc::default(),
            violations: violations.clone(),
        }
    }

    fn violation(&self, what: String) {
        self.violations
            .lock()
            .push(format!("handler {}: {what}", self.name));
    }

    /// Records that `key` was delivered at `rv`; going back is a violation.
    fn in_order(&self, what: &str, key: &str, rv: u64) {
        let mut highest = self.highest.lock();
        let last = highest.entry(key.to_owned()).or_insert(0);
        if rv < *last {
            self.violation(format!(
                "{what} of {key} at resourceVersion {rv} after {} was delivered",
                *last
            ));
        }
        *last = (*last).max(rv);
    }
}

impl EventHandler<ConfigMap> for Replay {
    fn on_add(&self, o: &Arc<ConfigMap>, _initial: bool) {
        let (k, rv) = (key(o), rv_of(o));
        self.in_order("add", &k, rv);
        if let Some(had) = self.view.lock().insert(k.clone(), rv) {
            self.violation(format!("add of {k} (rv {rv}), which it had at rv {had}"));
        }
    }

    fn on_update(&self, old: &Arc<ConfigMap>, new: &Arc<ConfigMap>) {
        let (k, rv) = (key(new), rv_of(new));
        self.in_order("update", &k, rv);
        let had = self.view.lock().insert(k.clone(), rv);
        if had != Some(rv_of(old)) {
            self.violation(format!(
                "update of {k} from rv {} to {rv}, but it had {had:?}",
                rv_of(old)
            ));
        }
    }

    fn on_delete(&self, d: &Deleted<ConfigMap>) {
        let (k, what) = match d {
            Deleted::Object(o) => (key(o), "delete"),
            Deleted::FinalStateUnknown { key, .. } => (key.clone(), "tombstone"),
        };
        self.in_order(what, &k, rv_of(d.object()));
        if self.view.lock().remove(&k).is_none() {
            self.violation(format!("{what} of {k}, which it did not have"));
        }
    }
}

/// One schedule's settings and what happened, for the failure report.
struct Schedule {
    seed: u64,
    log: Vec<String>,
}

impl Schedule {
    fn note(&mut self, what: impl Into<String>) {
        self.log.push(what.into());
    }
}

fn random_key(rng: &mut Rng) -> (&'static str, String) {
    let ns = NAMESPACES[rng.u64(..NAMESPACES.len() as u64) as usize];
    (ns, format!("cm-{}", rng.u64(..NAMES)))
}

fn config_map(name: &str, value: u64) -> ConfigMap {
    support::cm(name, &value.to_string())
}

/// One random write; failures (409 on create, 404, injected faults) are part of the game.
async fn churn_once(client: &kube::Client, rng: &mut Rng) -> bool {
    let (ns, name) = random_key(rng);
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let value = rng.u64(..);
    match rng.u64(..10) {
        0..4 => api
            .create(&PostParams::default(), &config_map(&name, value))
            .await
            .is_ok(),
        4..8 => {
            let patch = serde_json::json!({"data": {"k": value.to_string()}});
            api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .is_ok()
        }
        _ => api.delete(&name, &DeleteParams::default()).await.is_ok(),
    }
}

/// Applies one random fault (or none), describing it.
async fn fault(server: &FakeApiServer, rng: &mut Rng) -> String {
    let faults = server.faults();
    let watch_path = "/api/v1/configmaps";
    let code = [500, 503, 429][rng.u64(..3) as usize];
    match rng.u64(..13) {
        0 | 1 => {
            faults.drop_watches();
            "drop watches".into()
        }
        2 => {
            let n = 1 + rng.u64(..4) as usize;
            faults.end_watches_after(Some(n));
            format!("end watches after {n} events")
        }
        3 => {
            faults.end_watches_after(None);
            "watches run on".into()
        }
        4 | 5 => {
            faults.compact();
            "compact".into()
        }
        6 => {
            faults.compact();
            faults.drop_watches();
            "compact and drop watches (410 on re-watch)".into()
        }
        7 => {
            let n = 1 + rng.u64(..6) as usize;
            faults.fail_next_matching(n, code, watch_path);
            format!("{n} x {code} on the informer's lists and watches")
        }
        8 => {
            let n = 1 + rng.u64(..4) as usize;
            faults.fail_next(n, code);
            format!("{n} x {code} on any request")
        }
        9 => {
            let ms = rng.u64(..4);
            faults.set_latency(Duration::from_millis(ms));
            format!("latency {ms} ms")
        }
        10 => {
            let lose = rng.u64(..2) == 0;
            faults.restart(lose);
            format!("restart (history lost: {lose})")
        }
        11 => {
            // The informer misses writes while cut off, and the history goes meanwhile: its
            // re-watch gets a 410 and it relists.
            let cut = millis(rng, 6);
            faults.fail_next_matching(usize::MAX, 503, watch_path);
            faults.drop_watches();
            tokio::time::sleep(cut).await;
            faults.compact();
            faults.clear_failures();
            format!("cut off for {} ms, compact, reconnect", cut.as_millis())
        }
        _ => "no fault".into(),
    }
}

/// Key -> resourceVersion of every config map on the server.
async fn server_objects(client: &kube::Client) -> Result<BTreeMap<String, u64>, String> {
    let list = Api::<ConfigMap>::all(client.clone())
        .list(&ListParams::default())
        .await
        .map_err(|e| format!("listing the server's config maps: {e}"))?;
    Ok(list.items.iter().map(|c| (key(c), rv_of(c))).collect())
}

fn cache_objects(informer: &SharedIndexInformer<ConfigMap>) -> BTreeMap<String, u64> {
    informer
        .store()
        .list()
        .iter()
        .map(|c| (key(c), rv_of(c)))
        .collect()
}

/// Runs one schedule; `Ok` holds what the informer met (see [`SourceState::counts`]), `Err`
/// the failure report.
async fn run_schedule(seed: u64) -> Result<BTreeMap<String, u64>, String> {
    let mut rng = Rng::with_seed(seed);
    let mut schedule = Schedule {
        seed,
        log: Vec::new(),
    };
    let server = FakeApiServer::start()
        .await
        .map_err(|e| format!("starting the server: {e}"))?;
    // Churn and the final reads go in-process; the informer over HTTP sometimes, so that
    // restarts cut real connections.
    let direct = server.in_process_client();
    let over_http = rng.u64(..4) == 0;
    let client = if over_http {
        support::client(&server)
    } else {
        direct.clone()
    };
    let initial = rng.u64(..2 * NAMES);
    for _ in 0..initial {
        churn_once(&direct, &mut rng).await;
    }
    let page_size = 1 + rng.u64(..4) as u32;
    let backlog = match rng.u64(..3) {
        0 => None,
        1 => Some(2 + rng.u64(..6) as usize),
        _ => Some(kube_codegen_runtime::cache::DEFAULT_MAX_HANDLER_BACKLOG),
    };
    schedule.note(format!(
        "informer over {}, page size {page_size}, handler backlog {backlog:?}, {initial} writes before",
        if over_http { "HTTP" } else { "the in-process client" }
    ));

    let violations = Violations::default();
    let state = Arc::new(SourceState {
        lists_done: AtomicUsize::new(0),
        lister: OnceLock::new(),
        violations: violations.clone(),
        counts: Mutex::default(),
    });
    let source = Observed {
        api: Api::all(client),
        state: state.clone(),
    };
    let reflector = ReflectorOptions::default()
        .backoff(Duration::from_millis(1), Duration::from_millis(20))
        .page_size(page_size);
    let informer = SharedIndexInformer::new(
        source,
        InformerOptions::default()
            .reflector(reflector)
            .max_handler_backlog(backlog),
    );
    let _ = state.lister.set(informer.lister());
    let mut handlers = vec![Replay::new("early", &violations)];
    informer
        .add_event_handler(handlers[0].clone())
        .map_err(|e| e.to_string())?;

    let run = tokio::spawn({
        let informer = informer.clone();
        async move { informer.run().await }
    });
    // Polls has_synced until it first holds, between the source's own checks.
    let monitor = tokio::spawn({
        let (informer, state) = (informer.clone(), state.clone());
        async move {
            while !informer.has_synced() {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            state.check_synced("when the monitor saw it");
        }
    });
    let stop = Arc::new(AtomicBool::new(false));
    let churn = tokio::spawn({
        let (stop, direct) = (stop.clone(), direct.clone());
        let mut rng = Rng::with_seed(seed ^ 0xC0FF_EE00_D15E_A5E5);
        async move {
            let mut writes = 0usize;
            while !stop.load(Ordering::Relaxed) {
                writes += usize::from(churn_once(&direct, &mut rng).await);
                match rng.u64(..3) {
                    0 => tokio::task::yield_now().await,
                    _ => tokio::time::sleep(millis(&mut rng, 2)).await,
                }
            }
            writes
        }
    });

    let steps = 3 + rng.u64(..8);
    let late_at = rng.u64(..steps + 1);
    for step in 0..=steps {
        if step == late_at {
            let late = Replay::new("late", &violations);
            informer
                .add_event_handler(late.clone())
                .map_err(|e| e.to_string())?;
            handlers.push(late);
            schedule.note("late handler added");
        }
        if step < steps {
            let what = fault(&server, &mut rng).await;
            let pause = millis(&mut rng, 12);
            schedule.note(format!("{what}, then {} ms", pause.as_millis()));
            tokio::time::sleep(pause).await;
        }
    }

    stop.store(true, Ordering::Relaxed);
    let writes = tokio::time::timeout(Duration::from_secs(10), churn)
        .await
        .map_err(|_| "the churn task did not stop within 10 s".to_owned())?
        .map_err(|e| format!("churn task: {e}"))?;
    schedule.note(format!(
        "{writes} writes succeeded during the schedule; faults lifted"
    ));
    let faults = server.faults();
    faults.clear_failures();
    faults.set_latency(Duration::ZERO);
    faults.end_watches_after(None);

    let outcome = converge(&informer, &handlers, &direct).await;
    run.abort();
    monitor.abort();
    let violations = std::mem::take(&mut *violations.lock());
    match (outcome, violations.is_empty()) {
        (Ok(()), true) => Ok(std::mem::take(&mut *state.counts.lock())),
        (outcome, _) => Err(report(&schedule, outcome.err(), &violations)),
    }
}

/// Waits until the cache and every handler's view equal the server's objects.
async fn converge(
    informer: &SharedIndexInformer<ConfigMap>,
    handlers: &[Replay],
    direct: &kube::Client,
) -> Result<(), String> {
    let deadline = Instant::now() + CONVERGE;
    loop {
        let want = server_objects(direct).await?;
        let cache = cache_objects(informer);
        let views: Vec<BTreeMap<String, u64>> =
            handlers.iter().map(|h| h.view.lock().clone()).collect();
        if informer.has_synced() && cache == want && views.iter().all(|v| *v == want) {
            return Ok(());
        }
        if Instant::now() >= deadline {
            let mut why = format!(
                "not converged within {CONVERGE:?} after the faults were lifted\n  server:  {want:?}\n  cache:   {cache:?} (synced: {})",
                informer.has_synced()
            );
            for (h, v) in handlers.iter().zip(&views) {
                why.push_str(&format!("\n  {:<7}  {v:?}", h.name));
            }
            return Err(why);
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

fn report(schedule: &Schedule, outcome: Option<String>, violations: &[String]) -> String {
    let seed = schedule.seed;
    let mut r = format!("seed {seed} failed\n");
    if let Some(o) = outcome {
        r.push_str(&format!("{o}\n"));
    }
    for v in violations.iter().take(20) {
        r.push_str(&format!("  violation: {v}\n"));
    }
    if violations.len() > 20 {
        r.push_str(&format!("  ... {} violations in all\n", violations.len()));
    }
    r.push_str("  schedule:\n");
    for step in &schedule.log {
        r.push_str(&format!("    {step}\n"));
    }
    r.push_str(&format!(
        "  replay (same faults and writes; timing varies): FAULT_SEED={seed} FAULT_SCHEDULES=1 \
         cargo test -p kube-codegen-runtime --all-features --test all -- cache_faults:: --nocapture\n"
    ));
    r
}

fn env_u64(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a non-negative integer")),
        Err(_) => default,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn randomized_fault_schedules_converge() {
    let first = env_u64("FAULT_SEED", 1);
    let count = env_u64("FAULT_SCHEDULES", 48);
    let parallel = env_u64("FAULT_PARALLEL", 4).max(1) as usize;
    let started = std::time::Instant::now();
    let mut seeds = first..first.saturating_add(count);
    let mut running = tokio::task::JoinSet::new();
    let mut failures = Vec::new();
    let mut met: BTreeMap<String, u64> = BTreeMap::new();
    loop {
        while running.len() < parallel {
            let Some(seed) = seeds.next() else { break };
            running.spawn(async move {
                AssertUnwindSafe(run_schedule(seed))
                    .catch_unwind()
                    .await
                    .unwrap_or_else(|panic| {
                        let msg = panic
                            .downcast_ref::<String>()
                            .cloned()
                            .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                            .unwrap_or_default();
                        Err(format!(
                            "seed {seed} panicked: {msg}\n  replay: FAULT_SEED={seed} FAULT_SCHEDULES=1 \
                             cargo test -p kube-codegen-runtime --all-features --test all -- cache_faults:: --nocapture\n"
                        ))
                    })
            });
        }
        let Some(done) = running.join_next().await else {
            break;
        };
        match done.expect("schedule task") {
            Ok(counts) => {
                for (what, n) in counts {
                    *met.entry(what).or_default() += n;
                }
            }
            Err(report) => {
                eprintln!("{report}");
                failures.push(report);
            }
        }
    }
    let took = started.elapsed();
    eprintln!(
        "fault schedules: {count} from seed {first}, {} failed, {:.1} s ({:.0} ms per schedule, {parallel} at a time)",
        failures.len(),
        took.as_secs_f64(),
        took.as_secs_f64() * 1e3 / count.max(1) as f64
    );
    eprintln!("the informer met: {met:?}");
    assert!(
        failures.is_empty(),
        "{} of {count} fault schedules failed; first:\n{}",
        failures.len(),
        failures[0]
    );
}
