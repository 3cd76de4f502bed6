//! Controllers in ring mode end to end on the in-memory API server: every replica runs in a
//! Tokio runtime of its own, so killing one (the runtime shut down, nothing cleaned up) is a
//! crash. Every reconcile's start and end is recorded with the replica's identity; no object
//! is ever reconciled by two replicas at once, a dead replica's objects are taken over within
//! the lease duration plus 5 s, and after the last change every object is reconciled.
#![cfg(feature = "sharding")]

use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use kube_codegen_runtime::SharedInformerFactory;
use kube_codegen_runtime::controller::{Action, Context, Controller, Reconciler};
use kube_codegen_runtime::shard::{MembershipConfig, RangeSet, ShardKey, ShardRing, object_hash};
use kube_fake_apiserver::FakeApiServer;
use parking_lot::Mutex;
use support::{cm, fast_reflector};

const LEASE: Duration = Duration::from_millis(1500);
const RENEW_DEADLINE: Duration = Duration::from_millis(1000);
const RETRY: Duration = Duration::from_millis(100);

/// One reconcile: who, what, when; `end` is set when it returns or is dropped (abandoned).
#[derive(Debug, Clone)]
struct Span {
    replica: String,
    name: String,
    start: Instant,
    end: Option<Instant>,
    completed: bool,
}

type Log = Arc<Mutex<Vec<Span>>>;

struct Recorder {
    me: String,
    log: Log,
    requeue: Duration,
}

/// Ends a span however the reconcile ends.
struct End {
    log: Log,
    i: usize,
    completed: bool,
}

impl Drop for End {
    fn drop(&mut self) {
        let mut log = self.log.lock();
        log[self.i].end = Some(Instant::now());
        log[self.i].completed = self.completed;
    }
}

impl Reconciler<ConfigMap> for Recorder {
    type Error = String;

    async fn reconcile(&self, obj: Arc<ConfigMap>, _: &Context) -> Result<Action, String> {
        let name = obj.metadata.name.clone().unwrap_or_default();
        let i = {
            let mut log = self.log.lock();
            log.push(Span {
                replica: self.me.clone(),
                name: name.clone(),
                start: Instant::now(),
                end: None,
                completed: false,
            });
            log.len() - 1
        };
        let mut end = End {
            log: self.log.clone(),
            i,
            completed: false,
        };
        // Long enough for handoffs to meet running reconciles.
        let ms = 5 + name.bytes().map(u64::from).sum::<u64>() % 25;
        tokio::time::sleep(Duration::from_millis(ms)).await;
        end.completed = true;
        drop(end);
        Ok(Action::requeue_after(self.requeue))
    }
}

/// A replica: its own runtime (a process), its ring handle, a graceful stop.
struct Replica {
    id: String,
    rt: Option<tokio::runtime::Runtime>,
    ring: ShardRing,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    done: Option<tokio::task::JoinHandle<()>>,
}

impl Replica {
    fn start(server: &FakeApiServer, id: &str, log: &Log, requeue: Duration) -> Replica {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let ring = {
            let _in = rt.enter();
            let client = support::client(server);
            ShardRing::new(
                client,
                MembershipConfig::new("cms", id, "default").timing(LEASE, RENEW_DEADLINE, RETRY),
            )
            .handoff_timeout(Duration::from_millis(500))
        };
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let reconciler = Recorder {
            me: id.to_owned(),
            log: log.clone(),
            requeue,
        };
        let config = server.client_config();
        let r = ring.clone();
        let done = rt.spawn(async move {
            let mut config = config;
            config.default_retry = false;
            let client = kube::Client::try_from(config).unwrap();
            let factory = SharedInformerFactory::builder(client)
                .namespace("default")
                .reflector(fast_reflector())
                .sharded(r.scope())
                .build();
            let result = Controller::<ConfigMap>::for_kind(&factory)
                .workers(4)
                .shard_ring(r)
                .run(reconciler, async {
                    let _ = rx.await;
                })
                .await;
            if let Err(e) = result {
                panic!("controller stopped: {e}");
            }
        });
        Replica {
            id: id.to_owned(),
            rt: Some(rt),
            ring,
            stop: Some(tx),
            done: Some(done),
        }
    }

    /// A crash: every task of the replica stops where it is; its Lease stays until it expires.
    fn kill(&mut self) -> Instant {
        let at = Instant::now();
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
        at
    }

    /// A graceful stop (SIGTERM): the queue drains, the ring is left.
    async fn stop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(done) = self.done.take() {
            tokio::time::timeout(Duration::from_secs(20), done)
                .await
                .expect("the replica stops")
                .expect("the replica's task");
        }
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

/// Checks that no object was in a reconcile on two replicas at once. Spans of a killed replica
/// end at its kill.
fn assert_no_overlap(log: &[Span], killed: &BTreeMap<String, Instant>) {
    let mut by_name: BTreeMap<&str, Vec<(Instant, Instant, &str)>> = BTreeMap::new();
    let now = Instant::now();
    for s in log {
        let mut end = s.end.unwrap_or(now);
        if let Some(k) = killed.get(&s.replica) {
            end = end.min(*k);
        }
        by_name
            .entry(&s.name)
            .or_default()
            .push((s.start, end, &s.replica));
    }
    let mut checked = 0;
    for (name, mut spans) in by_name {
        spans.sort();
        for (i, a) in spans.iter().enumerate() {
            for b in &spans[i + 1..] {
                if b.0 >= a.1 {
                    break;
                }
                assert_eq!(
                    a.2, b.2,
                    "{name} reconciled by {} ({:?}..{:?}) and {} ({:?}..{:?}) at once",
                    a.2, a.0, a.1, b.2, b.0, b.1
                );
            }
        }
        checked += spans.len();
    }
    assert!(checked > 0);
}

async fn server_with(n: usize) -> (FakeApiServer, Vec<ConfigMap>) {
    let s = FakeApiServer::builder()
        .shard_selectors(true)
        .start()
        .await
        .unwrap();
    let api: Api<ConfigMap> = Api::namespaced(support::client(&s), "default");
    let mut made = Vec::new();
    for i in 0..n {
        made.push(
            api.create(&PostParams::default(), &cm(&format!("cm-{i}"), "0"))
                .await
                .unwrap(),
        );
    }
    (s, made)
}

/// Waits until the live replicas' allowed ranges partition the space.
async fn settled(replicas: &[&Replica], what: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let sets: Vec<RangeSet> = replicas.iter().map(|r| r.ring.allowed()).collect();
        let total: u128 = sets.iter().map(RangeSet::size).sum();
        if total == 1 << 64 && sets.iter().all(|s| !s.is_empty()) {
            return;
        }
        assert!(Instant::now() < deadline, "not settled: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn reconciled_since(log: &Log, name: &str, since: Instant, by: &[&str]) -> bool {
    log.lock().iter().any(|s| {
        s.name == name && s.start >= since && s.completed && by.contains(&s.replica.as_str())
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_replicas_objects_are_taken_over_within_the_lease_duration_and_5s() {
    let (server, made) = server_with(120).await;
    let log: Log = Arc::default();
    // Reconciles happen on events and handoffs only, so the takeover is what reconciles.
    let requeue = Duration::from_secs(3600);
    let mut rs: Vec<Replica> = ["a", "b", "c"]
        .iter()
        .map(|id| Replica::start(&server, id, &log, requeue))
        .collect();
    settled(&[&rs[0], &rs[1], &rs[2]], "three replicas").await;
    // Every object reconciled once, by its owner.
    let all: BTreeSet<String> = made
        .iter()
        .map(|c| c.metadata.name.clone().unwrap())
        .collect();
    support::eventually("every object reconciled", || {
        let seen: BTreeSet<String> = log
            .lock()
            .iter()
            .filter(|s| s.completed)
            .map(|s| s.name.clone())
            .collect();
        let ok = seen == all;
        async move { ok }
    })
    .await;
    // Shares are of the objects (the split table follows their hashes), not of the hash space,
    // which may be far from a third when uids cluster; the first table is the even split of the
    // space, so wait for the rebalance (one lease duration here) before judging.
    let shares = |rs: &[Replica]| -> Vec<(String, f64)> {
        rs.iter()
            .map(|r| {
                let allowed = r.ring.allowed();
                let mine = made
                    .iter()
                    .filter(|c| allowed.contains(object_hash(*c, ShardKey::Uid)))
                    .count();
                (r.id.to_string(), mine as f64 / made.len() as f64)
            })
            .collect()
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !shares(&rs).iter().all(|(_, s)| (0.2..0.47).contains(s)) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "shares of the objects not near a third: {:?}",
            shares(&rs)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let victim_ranges = rs[2].ring.allowed();
    let victims: Vec<String> = made
        .iter()
        .filter(|c| victim_ranges.contains(object_hash(*c, ShardKey::Uid)))
        .map(|c| c.metadata.name.clone().unwrap())
        .collect();
    assert!(!victims.is_empty());
    let killed_at = rs[2].kill();
    let killed: BTreeMap<String, Instant> = [("c".to_owned(), killed_at)].into();
    let limit = LEASE + Duration::from_secs(5);
    loop {
        let missing: Vec<&String> = victims
            .iter()
            .filter(|n| !reconciled_since(&log, n, killed_at, &["a", "b"]))
            .collect();
        if missing.is_empty() {
            break;
        }
        assert!(
            killed_at.elapsed() < limit,
            "{} of c's {} objects not reconciled by a survivor {limit:?} after the kill: {missing:?}",
            missing.len(),
            victims.len()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let took = killed_at.elapsed();
    eprintln!(
        "c's {} objects reconciled by a and b {took:?} after the kill",
        victims.len()
    );
    settled(&[&rs[0], &rs[1]], "two replicas").await;
    assert_no_overlap(&log.lock(), &killed);
    for r in &mut rs[..2] {
        r.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scaling_3_4_2_under_churn_never_overlaps_and_leaves_nothing_unreconciled() {
    let (server, made) = server_with(90).await;
    let log: Log = Arc::default();
    let requeue = Duration::from_millis(700);
    let mut rs: BTreeMap<String, Replica> = ["a", "b", "c"]
        .iter()
        .map(|id| (id.to_string(), Replica::start(&server, id, &log, requeue)))
        .collect();
    settled(&rs.values().collect::<Vec<_>>(), "three replicas").await;
    // Churn: an update every few milliseconds, each queuing its object's reconcile.
    let api: Api<ConfigMap> = Api::namespaced(support::client(&server), "default");
    let names: Vec<String> = made
        .iter()
        .map(|c| c.metadata.name.clone().unwrap())
        .collect();
    let (churn_stop, mut churn_rx) = tokio::sync::watch::channel(false);
    // How many updates so far: the churn goes on until enough were made, however loaded the
    // machine (a fixed time made few on a busy one).
    let made = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let churn = tokio::spawn({
        let (api, names, made) = (api.clone(), names.clone(), made.clone());
        async move {
            let mut i = 0usize;
            while !*churn_rx.borrow_and_update() {
                let name = &names[(i * 7) % names.len()];
                if let Ok(mut c) = api.get(name).await {
                    c.data = Some([("k".to_owned(), i.to_string())].into());
                    let _ = api.replace(name, &PostParams::default(), &c).await;
                }
                i += 1;
                made.store(i, std::sync::atomic::Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            i
        }
    });
    tokio::time::sleep(Duration::from_millis(800)).await;
    // 3 -> 4.
    rs.insert("d".into(), Replica::start(&server, "d", &log, requeue));
    tokio::time::sleep(Duration::from_millis(1200)).await;
    // 4 -> 2 before the four may have settled: b stops gracefully, c crashes.
    let mut killed = BTreeMap::new();
    let stop_b = {
        let mut b = rs.remove("b").unwrap();
        tokio::spawn(async move {
            b.stop().await;
        })
    };
    killed.insert("c".to_owned(), rs.get_mut("c").unwrap().kill());
    let last_change = Instant::now();
    stop_b.await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let enough = Instant::now() + Duration::from_secs(30);
    while made.load(std::sync::atomic::Ordering::Relaxed) <= 50 && Instant::now() < enough {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    churn_stop.send_replace(true);
    let updates = churn.await.unwrap();
    assert!(updates > 50, "churn made {updates} updates");
    let live: Vec<&Replica> = ["a", "d"].iter().map(|n| &rs[*n]).collect();
    settled(&live, "two replicas").await;
    // None left unreconciled: every object reconciled by a survivor after the last change.
    let deadline = last_change + LEASE + Duration::from_secs(8);
    loop {
        let missing: Vec<&String> = names
            .iter()
            .filter(|n| !reconciled_since(&log, n, last_change, &["a", "d"]))
            .collect();
        if missing.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "not reconciled after the last change: {missing:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let spans = log.lock().clone();
    assert_no_overlap(&spans, &killed);
    let by: BTreeMap<&str, usize> = spans.iter().fold(BTreeMap::new(), |mut m, s| {
        *m.entry(s.replica.as_str()).or_default() += 1;
        m
    });
    eprintln!("reconciles by replica: {by:?}; {updates} updates");
    for r in ["a", "b", "c", "d"] {
        assert!(
            by.get(r).copied().unwrap_or(0) > 0,
            "{r} reconciled nothing"
        );
    }
    for r in rs.values_mut() {
        if !killed.contains_key(&r.id) {
            r.stop().await;
        }
    }
}
