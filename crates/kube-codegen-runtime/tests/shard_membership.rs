//! Issue 34: ring membership watches the ring's Leases. With a retry period of 30 s (the
//! polling cadence), a replica joining and one leaving are seen by the other member, and the
//! joiner takes its share, long before the next poll could have read them: only the watch
//! (waking a read) and the renewal a new acknowledgement triggers explain it.
#![cfg(feature = "sharding")]

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ListParams, ObjectList, WatchParams};
use kube_codegen_runtime::cache::{InformerOptions, ListWatch, SharedIndexInformer, WatchStream};
use kube_codegen_runtime::shard::{MembershipConfig, ShardRing};
use kube_fake_apiserver::FakeApiServer;
use tokio::time::Instant;

const LEASE: Duration = Duration::from_secs(90);
const RENEW_DEADLINE: Duration = Duration::from_secs(60);
const RETRY: Duration = Duration::from_secs(30);

fn ring(server: &FakeApiServer, id: &str) -> ShardRing {
    ShardRing::new(
        support::client(server),
        MembershipConfig::new("members", id, "default").timing(LEASE, RENEW_DEADLINE, RETRY),
    )
}

async fn until(what: &str, limit: Duration, mut check: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    while !check() {
        assert!(
            start.elapsed() < limit,
            "{what} not within {limit:?} (the retry period is {RETRY:?})"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    start.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_and_a_leave_are_seen_before_the_next_poll() {
    let server = FakeApiServer::start().await.unwrap();
    let a = ring(&server, "a");
    let run_a = tokio::spawn({
        let a = a.clone();
        async move { a.run().await }
    });
    // Alone, `a` owns the whole space once it has acknowledged its first table.
    until("a owning the space", Duration::from_secs(10), || {
        a.allowed().size() == 1 << 64
    })
    .await;
    let limit = RETRY / 3;
    let b = ring(&server, "b");
    let run_b = tokio::spawn({
        let b = b.clone();
        async move { b.run().await }
    });
    let seen = until("a seeing b join", limit, || {
        a.membership().view().borrow().members == ["a", "b"]
    })
    .await;
    // The table moves half to b; a acknowledges it at once (a renewal of its own), and b
    // takes its share on reading that.
    let taken = until("b taking its share", limit, || {
        let (sa, sb) = (a.allowed().size(), b.allowed().size());
        sb > 0 && sa + sb == 1 << 64
    })
    .await;
    eprintln!("join seen after {seen:?}, share taken after {taken:?}");
    run_b.abort();
    b.leave().await;
    let gone = until("a seeing b leave", limit, || {
        a.membership().view().borrow().members == ["a"]
    })
    .await;
    until("a owning the space again", limit, || {
        a.allowed().size() == 1 << 64
    })
    .await;
    eprintln!("leave seen after {gone:?}");
    run_a.abort();
}

/// A source that never lists: every request fails (counted).
struct Broken(Arc<AtomicUsize>);

impl ListWatch<ConfigMap> for Broken {
    fn list<'a>(
        &'a self,
        _: &'a ListParams,
    ) -> BoxFuture<'a, Result<ObjectList<ConfigMap>, kube::Error>> {
        self.0.fetch_add(1, Ordering::Relaxed);
        async { Err(kube::Error::LinesCodecMaxLineLengthExceeded) }.boxed()
    }
    fn watch<'a>(
        &'a self,
        _: &'a WatchParams,
        _: &'a str,
    ) -> BoxFuture<'a, Result<WatchStream<ConfigMap>, kube::Error>> {
        self.0.fetch_add(1, Ordering::Relaxed);
        async { Err(kube::Error::LinesCodecMaxLineLengthExceeded) }.boxed()
    }
}

/// A table is acknowledged once the sharded informers listed the ranges being taken; one that
/// cannot list must not hold the ring's handoffs forever: after the handoff timeout the table
/// is acknowledged anyway (and the share taken).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_informer_that_cannot_list_holds_the_acknowledgement_only_for_the_handoff_timeout() {
    let server = FakeApiServer::start().await.unwrap();
    let timeout = Duration::from_secs(2);
    let a = ShardRing::new(
        support::client(&server),
        MembershipConfig::new("broken", "a", "default").timing(
            Duration::from_secs(10),
            Duration::from_secs(5),
            Duration::from_millis(100),
        ),
    )
    .handoff_timeout(timeout);
    let tried = Arc::new(AtomicUsize::new(0));
    let informer = SharedIndexInformer::new(
        Broken(tried.clone()),
        InformerOptions::default().reflector(support::fast_reflector().sharded(a.scope())),
    );
    let run_informer = tokio::spawn({
        let i = informer.clone();
        async move { i.run().await }
    });
    // The reflector exists before the ring runs (owning nothing yet, it stored an empty
    // cache without a request).
    until("the informer running", Duration::from_secs(10), || {
        informer.has_synced()
    })
    .await;
    let started = Instant::now();
    let run_a = tokio::spawn({
        let a = a.clone();
        async move { a.run().await }
    });
    let took = until("a owning the space", Duration::from_secs(20), || {
        a.allowed().size() == 1 << 64
    })
    .await;
    assert!(
        tried.load(Ordering::Relaxed) > 0,
        "the informer never tried to list"
    );
    assert!(
        started.elapsed() >= timeout,
        "acknowledged after {took:?}, before the informer listed or the timeout passed"
    );
    run_a.abort();
    run_informer.abort();
}

/// A crashed member's keys go to the survivors in the table that replaces it, split between
/// them by the load it last published (its Lease, expired, still holds it), and nothing the
/// survivors held moves. Without that load the table could only split the crashed member's
/// ranges by their size in the hash space, which says nothing of where its keys are (300
/// namespaces `ns-1` .. `ns-300` hash in clusters): the shares would be uneven until a drift
/// rebalance moved the survivors' keys too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_members_keys_are_shared_by_its_last_load_and_nothing_else_moves() {
    use kube_codegen_runtime::shard::ShardKey;

    let server = FakeApiServer::start().await.unwrap();
    let keys: Arc<Vec<u64>> = Arc::new(
        (1..=300)
            .map(|i| ShardKey::Namespace.hash("", &format!("ns-{i}")))
            .collect(),
    );
    let member = |id: &str| {
        let mut config = MembershipConfig::new("crash", id, "default").timing(
            Duration::from_secs(3),
            Duration::from_secs(2),
            Duration::from_millis(100),
        );
        // Short, so the three settle even; the replacing table is read as soon as it holds,
        // before a drift rebalance (which waits for the survivors' loads under it and then
        // this long) could change it.
        config.rebalance_interval = Duration::from_secs(1);
        let ring = ShardRing::new(support::client(&server), config);
        // Each member caches (and reports) the keys of its ranges, 10 objects a key.
        let (r, k) = (ring.clone(), keys.clone());
        ring.membership().add_load_source(move || {
            let allowed = r.allowed();
            k.iter()
                .filter(|h| allowed.contains(**h))
                .map(|h| (*h, 10))
                .collect()
        });
        let run = tokio::spawn({
            let ring = ring.clone();
            async move { ring.run().await }
        });
        (ring, run)
    };
    let (a, run_a) = member("a");
    let (b, run_b) = member("b");
    let (c, run_c) = member("c");
    let held = |r: &ShardRing| {
        let allowed = r.allowed();
        keys.iter()
            .filter(|h| allowed.contains(**h))
            .copied()
            .collect::<Vec<u64>>()
    };
    let balanced = |rings: &[&ShardRing], per: std::ops::RangeInclusive<usize>| {
        let total: u128 = rings.iter().map(|r| r.allowed().size()).sum();
        total == 1 << 64 && rings.iter().all(|r| per.contains(&held(r).len()))
    };
    until(
        "three members sharing the keys",
        Duration::from_secs(30),
        || balanced(&[&a, &b, &c], 95..=105),
    )
    .await;
    // Their loads of this table published (renewals every 100 ms).
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (before_a, before_b) = (held(&a), held(&b));
    run_c.abort();
    let _ = run_c.await;
    until(
        "a and b taking c's keys over",
        Duration::from_secs(30),
        || {
            let total: u128 = [&a, &b].iter().map(|r| r.allowed().size()).sum();
            total == 1 << 64
        },
    )
    .await;
    let (after_a, after_b) = (held(&a), held(&b));
    eprintln!(
        "a {} -> {}, b {} -> {} keys",
        before_a.len(),
        after_a.len(),
        before_b.len(),
        after_b.len()
    );
    assert!(
        before_a.iter().all(|h| after_a.contains(h))
            && before_b.iter().all(|h| after_b.contains(h)),
        "a survivor's key moved"
    );
    for (id, n) in [("a", after_a.len()), ("b", after_b.len())] {
        assert!(
            (145..=155).contains(&n),
            "{id} holds {n} of 300 keys once c is gone"
        );
    }
    run_a.abort();
    run_b.abort();
}

/// A member's published load is its share of the table it acknowledged, whatever else it still
/// caches (ranges given away stay cached until the next table is acknowledged): counting those
/// keys too would count them twice, with the member that took them, and skew the next cut.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_published_load_holds_only_the_members_share() {
    use k8s_openapi::api::coordination::v1::Lease;
    use kube::Api;
    use kube_codegen_runtime::shard::{Load, RING_LOAD_ANNOTATION, ShardKey};

    let server = FakeApiServer::start().await.unwrap();
    let keys: Arc<Vec<u64>> = Arc::new(
        (1..=100)
            .map(|i| ShardKey::Namespace.hash("", &format!("team-{i}")))
            .collect(),
    );
    let member = |id: &str| {
        let config = MembershipConfig::new("loads", id, "default").timing(
            Duration::from_secs(3),
            Duration::from_secs(2),
            Duration::from_millis(100),
        );
        let ring = ShardRing::new(support::client(&server), config);
        // A cache that holds every key, whatever the share.
        let k = keys.clone();
        ring.membership()
            .add_load_source(move || k.iter().map(|h| (*h, 1)).collect());
        let run = tokio::spawn({
            let ring = ring.clone();
            async move { ring.run().await }
        });
        (ring, run)
    };
    let (a, run_a) = member("a");
    let (b, run_b) = member("b");
    until("a and b sharing the space", Duration::from_secs(30), || {
        let (sa, sb) = (a.allowed().size(), b.allowed().size());
        sa > 0 && sb > 0 && sa + sb == 1 << 64
    })
    .await;
    let leases: Api<Lease> = Api::namespaced(support::client(&server), "default");
    for (id, ring) in [("a", &a), ("b", &b)] {
        let share = ring.allowed();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let lease = leases.get(&format!("loads-{id}")).await.unwrap();
            let published = lease
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(RING_LOAD_ANNOTATION))
                .and_then(|v| Load::decode(v.split_once(';')?.1));
            // Renewals every 100 ms: the load of the current share comes within a few.
            if let Some(load) = published
                && !load.points().is_empty()
                && load.points().iter().all(|(h, _)| share.contains(*h))
            {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{id}'s load holds keys outside its share: {:?}",
                lease.metadata.annotations
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    run_a.abort();
    run_b.abort();
}
