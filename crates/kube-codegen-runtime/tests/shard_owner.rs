//! Issue 34: children follow their owner. Three replicas in ring mode sharded by uid, the
//! owned Deployments hashed by their controller owner's uid (`ShardRing::follow_owner`), on
//! the in-memory server: 20 namespaces with sequential names (`s0` .. `s19`), 10 owners each
//! (ConfigMaps stand in for Foos), each with its Deployment. Once the split table has settled
//! every replica reconciles a third of the owners (+-10%), no reconcile ever finds its
//! Deployment missing from the replica's cache (counted as a failure), and no owner is
//! reconciled by two replicas at once.
#![cfg(feature = "sharding")]

use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube_codegen_runtime::SharedInformerFactory;
use kube_codegen_runtime::cache::Lister;
use kube_codegen_runtime::controller::{Action, Context, Controller, Reconciler};
use kube_codegen_runtime::shard::{MembershipConfig, RangeSet, ShardKey, ShardRing};
use kube_fake_apiserver::FakeApiServer;
use parking_lot::Mutex;
use serde_json::json;
use support::{cm, fast_reflector};

const LEASE: Duration = Duration::from_millis(1500);
const RENEW_DEADLINE: Duration = Duration::from_millis(1000);
const RETRY: Duration = Duration::from_millis(100);

/// One reconcile: replica, `namespace/name`, start, end, whether the Deployment was cached.
type Log = Arc<Mutex<Vec<(String, String, Instant, Option<Instant>, bool)>>>;

struct Owner {
    me: String,
    log: Log,
    deployments: Lister<Deployment>,
}

impl Reconciler<ConfigMap> for Owner {
    type Error = String;

    async fn reconcile(&self, obj: Arc<ConfigMap>, _: &Context) -> Result<Action, String> {
        let ns = obj.metadata.namespace.clone().unwrap_or_default();
        let name = obj.metadata.name.clone().unwrap_or_default();
        // What sample-controller's sync reads: the owner's Deployment, from the cache.
        let cached = self
            .deployments
            .namespace(ns.clone())
            .get(&format!("{name}-web"))
            .map_err(|e| e.to_string())?
            .is_some();
        let i = {
            let mut log = self.log.lock();
            log.push((
                self.me.clone(),
                format!("{ns}/{name}"),
                Instant::now(),
                None,
                cached,
            ));
            log.len() - 1
        };
        tokio::time::sleep(Duration::from_millis(2)).await;
        self.log.lock()[i].3 = Some(Instant::now());
        Ok(Action::requeue_after(Duration::from_secs(3600)))
    }
}

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
        ShardRing::new(
            support::client(server),
            MembershipConfig::new("owners", id, "default").timing(LEASE, RENEW_DEADLINE, RETRY),
        )
        .key(ShardKey::Uid)
        .follow_owner::<Deployment, ConfigMap>()
        .handoff_timeout(Duration::from_millis(500))
    };
    let client = support::client(server);
    let (r, me, log) = (ring.clone(), id.to_owned(), log.clone());
    rt.spawn(async move {
        let factory = SharedInformerFactory::builder(client)
            .reflector(fast_reflector())
            .sharded(r.scope())
            .build();
        let reconciler = Owner {
            me,
            log,
            deployments: factory.informer_for::<Deployment>().lister(),
        };
        let _ = Controller::<ConfigMap>::for_kind(&factory)
            .owns::<Deployment>()
            .workers(2)
            .shard_ring(r)
            .run(reconciler, std::future::pending::<()>())
            .await;
    });
    Replica { rt: Some(rt), ring }
}

fn deployment(name: &str, owner: &ConfigMap) -> Deployment {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx"}]},
            },
        },
    }))
    .map(|mut d: Deployment| {
        d.metadata.owner_references = Some(vec![OwnerReference {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: owner.metadata.name.clone().unwrap(),
            uid: owner.metadata.uid.clone().unwrap(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }]);
        d
    })
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owners_are_shared_in_thirds_and_their_deployments_are_cached_with_them() {
    let server = FakeApiServer::builder()
        .shard_selectors(true)
        .start()
        .await
        .unwrap();
    let client = support::client(&server);
    // owner key -> hash of its uid
    let mut owners: BTreeMap<String, u64> = BTreeMap::new();
    for i in 0..20 {
        let ns = format!("s{i}");
        let mut n = Namespace::default();
        n.metadata.name = Some(ns.clone());
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &n)
            .await
            .unwrap();
        let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
        let deps: Api<Deployment> = Api::namespaced(client.clone(), &ns);
        for j in 0..10 {
            let name = format!("foo-{j}");
            let made = cms
                .create(&PostParams::default(), &cm(&name, "0"))
                .await
                .unwrap();
            deps.create(
                &PostParams::default(),
                &deployment(&format!("{name}-web"), &made),
            )
            .await
            .unwrap();
            let uid = made.metadata.uid.clone().unwrap();
            owners.insert(format!("{ns}/{name}"), ShardKey::Uid.hash(&uid, ""));
        }
    }
    let log: Log = Arc::default();
    let replicas: BTreeMap<&str, Replica> = ["a", "b", "c"]
        .into_iter()
        .map(|id| (id, start(&server, id, &log)))
        .collect();
    // Each replica's owners, once the allowed ranges partition the space.
    let shares = || -> Option<BTreeMap<&str, BTreeSet<&str>>> {
        let sets: Vec<(&str, RangeSet)> = replicas
            .iter()
            .map(|(id, r)| (*id, r.ring.allowed()))
            .collect();
        let total: u128 = sets.iter().map(|(_, s)| s.size()).sum();
        (total == 1 << 64).then(|| {
            sets.iter()
                .map(|(id, s)| {
                    let mine = owners
                        .iter()
                        .filter(|(_, h)| s.contains(**h))
                        .map(|(k, _)| k.as_str())
                        .collect();
                    (*id, mine)
                })
                .collect()
        })
    };
    // A third of 200 is 66.7: +-10% is 60 ..= 73.
    let fair = |n: usize| (60..=73).contains(&n);
    let deadline = Instant::now() + Duration::from_secs(30);
    let settled = loop {
        let s = shares();
        if let Some(s) = &s
            && s.values().all(|n| fair(n.len()))
        {
            break s.clone();
        }
        assert!(
            Instant::now() < deadline,
            "owners per replica never a third +-10%: {:?}",
            s.map(|s| s.values().map(BTreeSet::len).collect::<Vec<_>>())
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    eprintln!(
        "owners per replica: {:?}",
        settled.values().map(BTreeSet::len).collect::<Vec<_>>()
    );
    // Every owner changed once more: who reconciles it now is who owns it.
    let touched = Instant::now();
    for key in owners.keys() {
        let (ns, name) = key.split_once('/').unwrap();
        Api::<ConfigMap>::namespaced(client.clone(), ns)
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({"data": {"k": "1"}})),
            )
            .await
            .unwrap();
    }
    // Done when every owner was reconciled after the change by the replica owning it now (a
    // later rebalance may still move a few: then by their new owner), with fair shares.
    let deadline = Instant::now() + Duration::from_secs(20);
    let last = loop {
        let now_owned = shares();
        let done = now_owned.as_ref().map_or(0, |s| {
            let log = log.lock();
            s.iter()
                .flat_map(|(id, keys)| keys.iter().map(move |k| (*id, *k)))
                .filter(|(id, k)| {
                    log.iter().any(|(r, key, s, e, _)| {
                        r == id && key == k && *s >= touched && e.is_some()
                    })
                })
                .count()
        });
        if let Some(s) = now_owned
            && done == owners.len()
            && s.values().all(|n| fair(n.len()))
        {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "{done} of {} owners reconciled by their owner after the change",
            owners.len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let counts: Vec<usize> = last.values().map(BTreeSet::len).collect();
    eprintln!("owners per replica at the end: {counts:?}");
    let log = log.lock().clone();
    // Never a reconcile without the owner's Deployment in the replica's cache.
    let missing: Vec<_> = log
        .iter()
        .filter(|(.., cached)| !cached)
        .map(|(r, k, ..)| format!("{r}:{k}"))
        .collect();
    assert!(
        missing.is_empty(),
        "{} of {} reconciles found the Deployment missing: {missing:?}",
        missing.len(),
        log.len()
    );
    // No owner in two replicas' reconciles at once.
    let now = Instant::now();
    let mut by_key: BTreeMap<&str, Vec<(Instant, Instant, &str)>> = BTreeMap::new();
    for (r, k, s, e, _) in &log {
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
}
