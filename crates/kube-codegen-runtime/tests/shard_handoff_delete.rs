//! Issue 34: a delete during a range's handoff is not lost. Replica `a` owns everything; `b`
//! joins (a bare ring with no informers, so the new owner knows nothing of the objects), and
//! while `a` still drains the range it gives away (reconciles of `block-*` objects there are
//! held), objects of that range are deleted. The new owner's list never held them, so only the
//! old owner can reconcile those deletes: it does, before it acknowledges the new table.
#![cfg(feature = "sharding")]

use crate::support;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, PostParams};
use kube_codegen_runtime::SharedInformerFactory;
use kube_codegen_runtime::controller::{Action, Context, Controller, Reconciler};
use kube_codegen_runtime::shard::{MembershipConfig, RangeSet, ShardKey, ShardRing, object_hash};
use kube_fake_apiserver::FakeApiServer;
use parking_lot::Mutex;
use support::{cm, eventually, fast_reflector};
use tokio::sync::watch;

const LEASE: Duration = Duration::from_secs(10);
const RENEW_DEADLINE: Duration = Duration::from_secs(5);
const RETRY: Duration = Duration::from_millis(100);

struct Holding {
    /// Names reconciled as deleted.
    deleted: Arc<Mutex<BTreeSet<String>>>,
    /// `block-*` reconciles wait until this is true.
    release: watch::Receiver<bool>,
}

impl Reconciler<ConfigMap> for Holding {
    type Error = String;

    async fn reconcile(&self, obj: Arc<ConfigMap>, ctx: &Context) -> Result<Action, String> {
        let name = obj.metadata.name.clone().unwrap_or_default();
        if ctx.is_deleted() {
            self.deleted.lock().insert(name);
            return Ok(Action::done());
        }
        if name.starts_with("block-") {
            let mut release = self.release.clone();
            let _ = release.wait_for(|r| *r).await;
        }
        Ok(Action::done())
    }
}

fn ring(server: &FakeApiServer, id: &str) -> ShardRing {
    ShardRing::new(
        support::client(server),
        MembershipConfig::new("deletes", id, "default").timing(LEASE, RENEW_DEADLINE, RETRY),
    )
    .key(ShardKey::Uid)
    .handoff_timeout(Duration::from_secs(60))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_during_the_handoff_is_reconciled_by_the_old_owner() {
    let server = FakeApiServer::builder()
        .shard_selectors(true)
        .start()
        .await
        .unwrap();
    let client = support::client(&server);
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let mut made = Vec::new();
    for i in 0..40 {
        made.push(
            api.create(&PostParams::default(), &cm(&format!("block-{i}"), "0"))
                .await
                .unwrap(),
        );
    }
    for i in 0..30 {
        made.push(
            api.create(&PostParams::default(), &cm(&format!("x-{i}"), "0"))
                .await
                .unwrap(),
        );
    }
    let deleted: Arc<Mutex<BTreeSet<String>>> = Arc::default();
    let (release, held) = watch::channel(false);
    let a = ring(&server, "a");
    let controller = tokio::spawn({
        let (a, client, deleted) = (a.clone(), client.clone(), deleted.clone());
        async move {
            let factory = SharedInformerFactory::builder(client)
                .reflector(fast_reflector())
                .sharded(a.scope())
                .build();
            let _ = Controller::<ConfigMap>::for_kind(&factory)
                .workers(48)
                .shard_ring(a)
                .run(
                    Holding {
                        deleted,
                        release: held,
                    },
                    std::future::pending::<()>(),
                )
                .await;
        }
    });
    eventually("a owning the space", || {
        let full = a.allowed().size() == 1 << 64;
        async move { full }
    })
    .await;
    let b = ring(&server, "b");
    let run_b = tokio::spawn({
        let b = b.clone();
        async move { b.run().await }
    });
    eventually("a giving part of the space to b", || {
        let shrunk = a.allowed().size() < 1 << 64;
        async move { shrunk }
    })
    .await;
    let given = RangeSet::full().difference(&a.allowed());
    let in_given = |name: &str| {
        made.iter()
            .find(|o| o.metadata.name.as_deref() == Some(name))
            .is_some_and(|o| given.contains(object_hash(o, ShardKey::Uid)))
    };
    // Held reconciles there keep a from acknowledging: the handoff is under way.
    assert!((0..40).any(|i| in_given(&format!("block-{i}"))));
    let gone: BTreeSet<String> = (0..30)
        .map(|i| format!("x-{i}"))
        .filter(|n| in_given(n))
        .collect();
    assert!(!gone.is_empty(), "no x-* in the range given away");
    for name in &gone {
        api.delete(name, &DeleteParams::default()).await.unwrap();
    }
    eventually(
        "the old owner reconciling the deletes of the range given away",
        || {
            let done = gone.is_subset(&deleted.lock());
            async move { done }
        },
    )
    .await;
    release.send_replace(true);
    run_b.abort();
    controller.abort();
}
