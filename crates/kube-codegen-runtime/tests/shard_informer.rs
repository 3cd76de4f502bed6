//! Sharded informers against the in-memory API server with and without `shardSelector`
//! support: the same objects cached either way, fewer received where the server filters,
//! deletes and adds when the ranges change; and ring membership through Leases.
#![cfg(feature = "sharding")]

use crate::support;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, ObjectList, PostParams, WatchEvent, WatchParams};
use kube_codegen_runtime::cache::{
    Deleted, EventHandlerFns, InformerOptions, ListWatch, ShardedList, SharedIndexInformer,
    WatchStream,
};
use kube_codegen_runtime::shard::{
    Assignment, HashRange, Membership, MembershipConfig, RangeSet, ShardKey, ShardScope,
    object_hash,
};
use kube_fake_apiserver::FakeApiServer;
use parking_lot::Mutex;
use support::{client, cm, eventually, fast_reflector, within};

/// Counts the objects a source hands the reflector (list items and watch events).
struct Counting {
    api: Api<ConfigMap>,
    objects: Arc<AtomicUsize>,
}

impl ListWatch<ConfigMap> for Counting {
    fn list<'a>(
        &'a self,
        p: &'a ListParams,
    ) -> BoxFuture<'a, Result<ObjectList<ConfigMap>, kube::Error>> {
        async move {
            let l = self.api.list(p).await?;
            self.objects.fetch_add(l.items.len(), Ordering::Relaxed);
            Ok(l)
        }
        .boxed()
    }
    fn watch<'a>(
        &'a self,
        p: &'a WatchParams,
        rv: &'a str,
    ) -> BoxFuture<'a, Result<WatchStream<ConfigMap>, kube::Error>> {
        async move { Ok(self.count(ListWatch::watch(&self.api, p, rv).await?)) }.boxed()
    }
    fn supports_watch_list(&self) -> bool {
        true
    }
    fn list_sharded<'a>(
        &'a self,
        p: &'a ListParams,
        sel: &'a str,
    ) -> BoxFuture<'a, Result<ShardedList<ConfigMap>, kube::Error>> {
        async move {
            let (l, echo) = self.api.list_sharded(p, sel).await?;
            self.objects.fetch_add(l.items.len(), Ordering::Relaxed);
            Ok((l, echo))
        }
        .boxed()
    }
    fn watch_sharded<'a>(
        &'a self,
        p: &'a WatchParams,
        rv: &'a str,
        sel: &'a str,
    ) -> BoxFuture<'a, Result<WatchStream<ConfigMap>, kube::Error>> {
        async move { Ok(self.count(self.api.watch_sharded(p, rv, sel).await?)) }.boxed()
    }
}

impl Counting {
    fn count(&self, s: WatchStream<ConfigMap>) -> WatchStream<ConfigMap> {
        let n = self.objects.clone();
        s.inspect(move |e| {
            if matches!(
                e,
                Ok(WatchEvent::Added(_) | WatchEvent::Modified(_) | WatchEvent::Deleted(_))
            ) {
                n.fetch_add(1, Ordering::Relaxed);
            }
        })
        .boxed()
    }
}

const N: usize = 60;

async fn server_with_configmaps(shards: bool) -> (FakeApiServer, kube::Client, Vec<ConfigMap>) {
    let s = FakeApiServer::builder()
        .shard_selectors(shards)
        .start()
        .await
        .unwrap();
    let c = client(&s);
    let api: Api<ConfigMap> = Api::namespaced(c.clone(), "default");
    let mut made = Vec::new();
    for i in 0..N {
        made.push(
            api.create(&PostParams::default(), &cm(&format!("cm-{i}"), "v"))
                .await
                .unwrap(),
        );
    }
    (s, c, made)
}

fn lower_half() -> RangeSet {
    RangeSet::from_ranges(HashRange::new(0, 1 << 63))
}

fn names<O: std::ops::Deref<Target = ConfigMap>>(
    objs: impl IntoIterator<Item = O>,
) -> BTreeSet<String> {
    objs.into_iter()
        .map(|o| o.metadata.name.clone().unwrap())
        .collect()
}

fn owned(made: &[ConfigMap], ranges: &RangeSet) -> BTreeSet<String> {
    names(
        made.iter()
            .filter(|o| ranges.contains(object_hash(*o, ShardKey::Uid))),
    )
}

struct Run {
    informer: SharedIndexInformer<ConfigMap>,
    received: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

fn start(c: &kube::Client, watch_list: bool, rx: tokio::sync::watch::Receiver<Assignment>) -> Run {
    let received = Arc::new(AtomicUsize::new(0));
    let source = Counting {
        api: Api::namespaced(c.clone(), "default"),
        objects: received.clone(),
    };
    let options = InformerOptions::default().reflector(
        fast_reflector()
            .watch_list(watch_list)
            .sharded(ShardScope::new(ShardKey::Uid, rx)),
    );
    let informer = SharedIndexInformer::new(source, options);
    let task = tokio::spawn({
        let i = informer.clone();
        async move { i.run().await }
    });
    Run {
        informer,
        received,
        task,
    }
}

#[tokio::test]
async fn same_cache_from_both_server_kinds_fewer_objects_from_the_filtering_one() {
    for watch_list in [true, false] {
        let mut received = Vec::new();
        for shards in [true, false] {
            let (_s, c, made) = server_with_configmaps(shards).await;
            let want = owned(&made, &lower_half());
            assert!(!want.is_empty() && want.len() < N);
            let (_tx, rx) = tokio::sync::watch::channel(Assignment::fixed(lower_half()));
            let run = start(&c, watch_list, rx);
            within("sync", run.informer.wait_for_sync()).await;
            assert_eq!(
                names(run.informer.store().list()),
                want,
                "server filters: {shards}, watch-list: {watch_list}"
            );
            // Later changes: only owned objects are cached.
            let api: Api<ConfigMap> = Api::namespaced(c.clone(), "default");
            let extra = api
                .create(&PostParams::default(), &cm("late", "v"))
                .await
                .unwrap();
            let mine = lower_half().contains(object_hash(&extra, ShardKey::Uid));
            let mut expect = want.clone();
            if mine {
                expect.insert("late".into());
            }
            eventually("the late object is seen", || {
                let got = names(run.informer.store().list());
                let expect = expect.clone();
                async move { got == expect }
            })
            .await;
            received.push(run.received.load(Ordering::Relaxed));
            run.task.abort();
        }
        let (filtered, unfiltered) = (received[0], received[1]);
        println!(
            "watch-list {watch_list}: objects received {filtered} (server filters) vs {unfiltered}"
        );
        assert!(unfiltered >= N, "{unfiltered}");
        assert!(
            filtered * 10 <= unfiltered * 7,
            "server filtering should cut what is received: {filtered} vs {unfiltered}"
        );
    }
}

#[tokio::test]
async fn changed_ranges_delete_what_was_given_away_and_add_what_was_taken() {
    for shards in [true, false] {
        let (_s, c, made) = server_with_configmaps(shards).await;
        let (tx, rx) = tokio::sync::watch::channel(Assignment::fixed(lower_half()));
        let run = start(&c, true, rx);
        let log: Arc<Mutex<Vec<(char, String)>>> = Arc::default();
        let (adds, dels) = (log.clone(), log.clone());
        run.informer
            .add_event_handler(
                EventHandlerFns::new()
                    .on_add(move |o: &Arc<ConfigMap>, _| {
                        adds.lock().push(('+', o.metadata.name.clone().unwrap()))
                    })
                    .on_delete(move |d: &Deleted<ConfigMap>| {
                        dels.lock()
                            .push(('-', d.object().metadata.name.clone().unwrap()))
                    }),
            )
            .unwrap();
        within("sync", run.informer.wait_for_sync()).await;
        let lower = owned(&made, &lower_half());
        eventually("initial adds", || {
            let n = log.lock().len();
            let want = lower.len();
            async move { n == want }
        })
        .await;
        log.lock().clear();
        // Hand the lower half away and take the upper.
        let upper = RangeSet::full().difference(&lower_half());
        tx.send_replace(Assignment {
            generation: 2,
            ranges: upper.clone(),
            ..Assignment::default()
        });
        let upper_names = owned(&made, &upper);
        eventually("the cache follows the new ranges", || {
            let got = names(run.informer.store().list());
            let want = upper_names.clone();
            async move { got == want }
        })
        .await;
        eventually("handlers saw the change", || {
            let l = log.lock().clone();
            let (lower, upper) = (lower.clone(), upper_names.clone());
            async move {
                let deleted: BTreeSet<String> = l
                    .iter()
                    .filter(|(k, _)| *k == '-')
                    .map(|(_, n)| n.clone())
                    .collect();
                let added: BTreeSet<String> = l
                    .iter()
                    .filter(|(k, _)| *k == '+')
                    .map(|(_, n)| n.clone())
                    .collect();
                deleted == lower && added == upper && l.len() == lower.len() + upper.len()
            }
        })
        .await;
        // Owning nothing empties the cache.
        tx.send_replace(Assignment {
            generation: 3,
            ..Assignment::default()
        });
        eventually("an empty cache", || {
            let n = run.informer.store().len();
            async move { n == 0 }
        })
        .await;
        run.task.abort();
    }
}

#[tokio::test]
async fn leases_split_the_space_and_survivors_take_over() {
    let s = FakeApiServer::start().await.unwrap();
    let c = client(&s);
    let config = |id: &str| {
        MembershipConfig::new("foos", id, "default").timing(
            Duration::from_millis(1500),
            Duration::from_millis(1000),
            Duration::from_millis(100),
        )
    };
    let members: Vec<Membership> = ["a", "b", "c"]
        .iter()
        .map(|id| Membership::new(c.clone(), config(id)))
        .collect();
    let tasks: Vec<_> = members
        .iter()
        .map(|m| {
            let m = m.clone();
            tokio::spawn(async move { m.run().await })
        })
        .collect();
    let partition = |ms: &[&Membership], n: usize| {
        let a: Vec<Assignment> = ms.iter().map(|m| m.assignment()).collect();
        let total: u128 = a.iter().map(|x| x.ranges.size()).sum();
        let union = a.iter().fold(RangeSet::empty(), |u, x| u.union(&x.ranges));
        a.iter()
            .all(|x| x.members.len() == n && x.ring_id == a[0].ring_id)
            && total == 1 << 64
            && union == RangeSet::full()
    };
    eventually("three members split the space", || {
        let ok = partition(&[&members[0], &members[1], &members[2]], 3);
        async move { ok }
    })
    .await;
    let before = members[0].assignment();
    // Kill c without leaving: a and b take its ranges once its Lease expires.
    tasks[2].abort();
    eventually("two members split the space", || {
        let ok = partition(&[&members[0], &members[1]], 2);
        async move { ok }
    })
    .await;
    let after = members[0].assignment();
    assert!(after.generation > before.generation);
    assert_eq!(before.ranges.difference(&after.ranges), RangeSet::empty());
    // The acknowledgement reaches the Lease.
    members[0].acknowledge(after.ring_id);
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> =
        Api::namespaced(c.clone(), "default");
    eventually("the acknowledged ring on a's Lease", || {
        let leases = leases.clone();
        async move {
            leases
                .get("foos-a")
                .await
                .ok()
                .and_then(|l| l.metadata.annotations)
                .is_some_and(|a| {
                    a.get(kube_codegen_runtime::shard::RING_ACK_ANNOTATION)
                        == Some(&format!("{:016x}", after.ring_id))
                })
        }
    })
    .await;
    // Leaving hands everything to the last one at once.
    members[1].leave().await;
    tasks[1].abort();
    eventually("one member owns everything", || {
        let full = members[0].assignment().ranges == RangeSet::full();
        async move { full }
    })
    .await;
    tasks[0].abort();
}

#[tokio::test]
async fn a_ring_share_as_the_selector() {
    // A member of a 3-member ring owns ~680 ranges: a selector sent whole (MAX_SELECTOR_TERMS).
    let ring = kube_codegen_runtime::shard::Ring::new(
        ["a", "b", "c"],
        kube_codegen_runtime::shard::DEFAULT_VIRTUAL_POINTS,
    );
    let share = ring.ranges_of("b");
    let sent = kube_codegen_runtime::shard::range::coarsen(
        &share,
        kube_codegen_runtime::shard::range::MAX_SELECTOR_TERMS,
    );
    let of_space = |r: &RangeSet| r.size() as f64 / 18446744073709551616.0;
    println!(
        "ring share: {} ranges, {:.3} of the space; selector sent: {} ranges, {:.3} of the space",
        share.ranges().len(),
        of_space(&share),
        sent.ranges().len(),
        of_space(&sent)
    );
    assert!(sent.ranges().len() <= kube_codegen_runtime::shard::range::MAX_SELECTOR_TERMS);
    assert_eq!(share.difference(&sent), RangeSet::empty());
    for shards in [true, false] {
        let (_s, c, made) = server_with_configmaps(shards).await;
        let (_tx, rx) = tokio::sync::watch::channel(Assignment::fixed(share.clone()));
        let run = start(&c, true, rx);
        within("sync", run.informer.wait_for_sync()).await;
        assert_eq!(names(run.informer.store().list()), owned(&made, &share));
        run.task.abort();
    }
}
