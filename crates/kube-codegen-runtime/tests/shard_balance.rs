//! Issue 34: shares of the objects, not of the hash space. Namespaces named as clusters name
//! them (`s0` .. `s19`) hash close together under FNV-1a (the same top bits), so a ring that
//! cuts the hash space evenly gave one replica all twenty and the others none. Three replicas
//! in ring mode, sharded by namespace, on the in-memory server: each ends with 6 or 7
//! namespaces, every object is reconciled by the replica that owns it at the end, and no
//! object is ever reconciled by two replicas at once while the ranges move. The rebalance
//! interval is longer than the test: a new ring's first table (cut before anything was cached)
//! is rebalanced as soon as every member reported its load of it.
#![cfg(feature = "sharding")]

use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, PostParams};
use kube_codegen_runtime::SharedInformerFactory;
use kube_codegen_runtime::controller::{Action, Context, Controller, Reconciler};
use kube_codegen_runtime::shard::{MembershipConfig, RING_LABEL, RangeSet, ShardKey, ShardRing};
use kube_fake_apiserver::FakeApiServer;
use parking_lot::Mutex;
use support::{cm, fast_reflector};

// Long enough that the Leases created before the replicas start are still live when they do
// (no replica fails here).
const LEASE: Duration = Duration::from_secs(10);
const RENEW_DEADLINE: Duration = Duration::from_secs(5);
const RETRY: Duration = Duration::from_millis(100);

/// One reconcile: replica, `namespace/name`, start, end.
type Log = Arc<Mutex<Vec<(String, String, Instant, Option<Instant>)>>>;

struct Recorder {
    me: String,
    log: Log,
}

impl Reconciler<ConfigMap> for Recorder {
    type Error = String;

    async fn reconcile(&self, obj: Arc<ConfigMap>, _: &Context) -> Result<Action, String> {
        let key = format!(
            "{}/{}",
            obj.metadata.namespace.as_deref().unwrap_or(""),
            obj.metadata.name.as_deref().unwrap_or("")
        );
        let i = {
            let mut log = self.log.lock();
            log.push((self.me.clone(), key, Instant::now(), None));
            log.len() - 1
        };
        tokio::time::sleep(Duration::from_millis(3)).await;
        self.log.lock()[i].3 = Some(Instant::now());
        Ok(Action::requeue_after(Duration::from_secs(3600)))
    }
}

/// A replica in a runtime of its own; dropped, it stops where it is.
struct Replica {
    rt: Option<tokio::runtime::Runtime>,
    ring: ShardRing,
}

impl Drop for Replica {
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

fn start(server: &FakeApiServer, id: &str, log: &Log) -> Replica {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let ring = {
        let _in = rt.enter();
        let mut config =
            MembershipConfig::new("cms", id, "default").timing(LEASE, RENEW_DEADLINE, RETRY);
        // Longer than the test waits: a new ring's first rebalance must not wait for it.
        config.rebalance_interval = Duration::from_secs(120);
        ShardRing::new(support::client(server), config)
            .key(ShardKey::Namespace)
            .handoff_timeout(Duration::from_millis(500))
    };
    let reconciler = Recorder {
        me: id.to_owned(),
        log: log.clone(),
    };
    let client = support::client(server);
    let r = ring.clone();
    rt.spawn(async move {
        let factory = SharedInformerFactory::builder(client)
            .reflector(fast_reflector())
            .sharded(r.scope())
            .build();
        let _ = Controller::<ConfigMap>::for_kind(&factory)
            .workers(2)
            .shard_ring(r)
            .run(reconciler, std::future::pending::<()>())
            .await;
    });
    Replica { rt: Some(rt), ring }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequential_namespaces_are_shared_six_or_seven_each() {
    let server = FakeApiServer::builder()
        .shard_selectors(true)
        .start()
        .await
        .unwrap();
    let client = support::client(&server);
    let namespaces: Vec<String> = (0..20).map(|i| format!("s{i}")).collect();
    let mut keys = BTreeSet::new();
    for ns in &namespaces {
        let mut n = Namespace::default();
        n.metadata.name = Some(ns.clone());
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &n)
            .await
            .unwrap();
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
        for j in 0..10 {
            let name = format!("cm-{j}");
            api.create(&PostParams::default(), &cm(&name, "0"))
                .await
                .unwrap();
            keys.insert(format!("{ns}/{name}"));
        }
    }
    // The three members' Leases exist before any replica runs (a ring restarted at once, or
    // replicas started together): the first table has all three and no loads, so it is an even
    // cut of the space, 10/0/10 here, until the first rebalance.
    for id in ["a", "b", "c"] {
        let mut lease = Lease::default();
        lease.metadata.name = Some(format!("cms-{id}"));
        lease.metadata.labels = Some([(RING_LABEL.to_owned(), "cms".to_owned())].into());
        lease.spec = Some(LeaseSpec {
            holder_identity: Some(id.to_owned()),
            lease_duration_seconds: Some(2),
            renew_time: Some(MicroTime(k8s_openapi::jiff::Timestamp::now())),
            ..LeaseSpec::default()
        });
        Api::<Lease>::namespaced(client.clone(), "default")
            .create(&PostParams::default(), &lease)
            .await
            .unwrap();
    }
    let log: Log = Arc::default();
    let mut replicas: BTreeMap<&str, Replica> = ["a", "b", "c"]
        .into_iter()
        .map(|id| (id, start(&server, id, &log)))
        .collect();
    let hash = |ns: &str| ShardKey::Namespace.hash("", ns);
    // The namespaces each replica may reconcile, once the allowed ranges partition the space.
    let shares = || -> Option<BTreeMap<&str, Vec<&str>>> {
        let sets: Vec<(&str, RangeSet)> = replicas
            .iter()
            .map(|(id, r)| (*id, r.ring.allowed()))
            .collect();
        let total: u128 = sets.iter().map(|(_, s)| s.size()).sum();
        (total == 1 << 64).then(|| {
            sets.iter()
                .map(|(id, s)| {
                    let mine = namespaces
                        .iter()
                        .filter(|ns| s.contains(hash(ns)))
                        .map(String::as_str)
                        .collect();
                    (*id, mine)
                })
                .collect()
        })
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    let settled = loop {
        let s = shares();
        if let Some(s) = &s
            && s.values().all(|n| (6..=7).contains(&n.len()))
        {
            break s.clone();
        }
        assert!(
            Instant::now() < deadline,
            "namespaces per replica never 6 or 7: {s:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    eprintln!("namespaces per replica: {settled:?}");
    // Every object reconciled by its final owner (the gained ranges' objects are queued).
    let owner: BTreeMap<&str, &str> = settled
        .iter()
        .flat_map(|(id, nss)| nss.iter().map(move |ns| (*ns, *id)))
        .collect();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let done: BTreeSet<String> = log
            .lock()
            .iter()
            .filter(|(r, k, _, end)| {
                end.is_some() && owner.get(k.split('/').next().unwrap()) == Some(&r.as_str())
            })
            .map(|(_, k, _, _)| k.clone())
            .collect();
        if done == keys {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{} of {} objects not reconciled by their owner",
            keys.len() - done.len(),
            keys.len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // No object in two replicas' reconciles at once.
    let log = log.lock().clone();
    let now = Instant::now();
    let mut by_key: BTreeMap<&str, Vec<(Instant, Instant, &str)>> = BTreeMap::new();
    for (r, k, s, e) in &log {
        by_key.entry(k).or_default().push((*s, e.unwrap_or(now), r));
    }
    for (k, mut spans) in by_key {
        spans.sort();
        for (i, a) in spans.iter().enumerate() {
            for b in spans[i + 1..].iter().take_while(|b| b.0 < a.1) {
                assert_eq!(a.2, b.2, "{k} reconciled by {} and {} at once", a.2, b.2);
            }
        }
    }

    // `c` crashes (its runtime shut down, nothing cleaned up). Once its Lease expires, the
    // survivors' table shares c's namespaces between them at once (c's last published load is
    // kept for it) and moves none of theirs: no drift rebalance can follow within the test
    // (the interval is 120 s), so the first table of two is the last.
    drop(replicas.remove("c"));
    let deadline = Instant::now() + LEASE + Duration::from_secs(20);
    let after: BTreeMap<&str, &str> = loop {
        let sets: Vec<(&str, RangeSet)> = replicas
            .iter()
            .map(|(id, r)| (*id, r.ring.allowed()))
            .collect();
        let total: u128 = sets.iter().map(|(_, s)| s.size()).sum();
        if total == 1 << 64 {
            break namespaces
                .iter()
                .map(|ns| {
                    let (id, _) = sets.iter().find(|(_, s)| s.contains(hash(ns))).unwrap();
                    (ns.as_str(), *id)
                })
                .collect();
        }
        assert!(
            Instant::now() < deadline,
            "a and b never took c's ranges over"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    eprintln!("after c's crash: {after:?}");
    for (ns, was) in &owner {
        if *was != "c" {
            assert_eq!(
                after[ns], *was,
                "{ns} moved from {was}, which is still live"
            );
        }
    }
    for id in ["a", "b"] {
        let n = after.values().filter(|o| **o == id).count();
        assert!(
            (9..=11).contains(&n),
            "{id} holds {n} of 20 namespaces: {after:?}"
        );
    }
}
