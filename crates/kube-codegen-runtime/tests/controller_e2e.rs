//! The runtime's pieces as a controller uses them, against the in-memory API server: a shared
//! informer feeds `namespace/name` keys into a rate-limited workqueue; workers read the object
//! back from the lister and reconcile a Secret that mirrors each ConfigMap. Transient API
//! errors are retried with backoff; deletes reach the workers as keys with no cached object.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, PostParams};
use kube_codegen_runtime::cache::{
    EventHandlerFns, InformerOptions, SharedIndexInformer, key_of, split_key,
};
use kube_codegen_runtime::workqueue::{
    Action, BucketRateLimiter, ItemExponentialFailureRateLimiter, MaxOfRateLimiter, WorkQueue,
    run_workers,
};
use kube_fake_apiserver::FakeApiServer;

use crate::support;
use support::{client, eventually, fast_reflector, within};

fn cm(name: &str, value: &str) -> ConfigMap {
    let mut c = ConfigMap::default();
    c.metadata.name = Some(name.to_owned());
    c.data = Some([("value".to_owned(), value.to_owned())].into());
    c
}

/// The Secret the controller keeps for a ConfigMap: same name, `value` copied.
async fn reconcile(
    key: String,
    lister: kube_codegen_runtime::cache::Lister<ConfigMap>,
    client: kube::Client,
) -> Result<Action, kube::Error> {
    let (ns, name) = split_key(&key).expect("keys come from key_of");
    let secrets: Api<Secret> = Api::namespaced(client, ns);
    // Workers start after the sync; a read before it would be retried, never taken as a
    // delete.
    let Ok(cached) = lister.namespace(ns).get(name) else {
        return Ok(Action::RequeueAfter(Duration::from_millis(100)));
    };
    let Some(source) = cached else {
        // Gone from the cache: the ConfigMap was deleted, so is its Secret.
        return match secrets.delete(name, &DeleteParams::default()).await {
            Ok(_) => Ok(Action::Done),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(Action::Done),
            Err(e) => Err(e),
        };
    };
    let value = source
        .data
        .as_ref()
        .and_then(|d| d.get("value"))
        .cloned()
        .unwrap_or_default();
    let mut want = Secret::default();
    want.metadata.name = Some(name.to_owned());
    want.data = Some([("value".to_owned(), ByteString(value.into_bytes()))].into());
    match secrets.get_opt(name).await? {
        None => {
            secrets.create(&PostParams::default(), &want).await?;
        }
        Some(have) if have.data != want.data => {
            want.metadata.resource_version = have.metadata.resource_version;
            secrets.replace(name, &PostParams::default(), &want).await?;
        }
        Some(_) => {}
    }
    Ok(Action::Done)
}

/// The mirrored value: `Ok(None)` when there is no Secret, `Err` while the server fails the
/// read (the test's faults hit its own reads too).
async fn secret_value(api: &Api<Secret>, name: &str) -> Result<Option<String>, kube::Error> {
    let Some(s) = api.get_opt(name).await? else {
        return Ok(None);
    };
    let bytes = s.data.and_then(|d| d.get("value").map(|b| b.0.clone()));
    Ok(bytes.map(|b| String::from_utf8(b).unwrap()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn informer_queue_and_workers_reconcile_through_errors_and_deletes() {
    let server = FakeApiServer::start().await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client(&server), "default");
    let secrets: Api<Secret> = Api::namespaced(client(&server), "default");
    cms.create(&PostParams::default(), &cm("before-start", "1"))
        .await
        .unwrap();

    let informer = SharedIndexInformer::new(
        Api::<ConfigMap>::all(client(&server)),
        InformerOptions::default().reflector(fast_reflector()),
    );
    // Fast retries so the test does not wait out the default 5 ms..1000 s backoff.
    let queue: WorkQueue<String> = WorkQueue::builder()
        .name("configmap-mirror")
        .rate_limiter(MaxOfRateLimiter::new(vec![
            Box::new(ItemExponentialFailureRateLimiter::new(
                Duration::from_millis(5),
                Duration::from_millis(100),
            )),
            Box::new(BucketRateLimiter::new(f64::INFINITY, 100)),
        ]))
        .build();
    let enqueue = |q: WorkQueue<String>| {
        move |o: &Arc<ConfigMap>| {
            if let Ok(k) = key_of(&**o) {
                q.add(k);
            }
        }
    };
    let (on_add, on_update) = (enqueue(queue.clone()), enqueue(queue.clone()));
    let deletes = queue.clone();
    informer
        .add_event_handler(
            EventHandlerFns::new()
                .on_add(move |o, _| on_add(o))
                .on_update(move |_, new| on_update(new))
                .on_delete(move |d| {
                    if let Ok(k) = key_of(&**d.object()) {
                        deletes.add(k);
                    }
                }),
        )
        .unwrap();
    let run = {
        let informer = informer.clone();
        tokio::spawn(async move { informer.run().await })
    };
    within("the informer's first list", informer.wait_for_sync()).await;
    let errors = Arc::new(AtomicUsize::new(0));
    let workers = {
        let (lister, client, errors) = (informer.lister(), client(&server), errors.clone());
        tokio::spawn(run_workers(queue.clone(), 2, move |key: String| {
            let (lister, client, errors) = (lister.clone(), client.clone(), errors.clone());
            async move {
                let result = reconcile(key, lister, client).await;
                if result.is_err() {
                    errors.fetch_add(1, Ordering::SeqCst);
                }
                result
            }
        }))
    };

    eventually("the pre-existing ConfigMap is mirrored", || async {
        matches!(secret_value(&secrets, "before-start").await, Ok(Some(v)) if v == "1")
    })
    .await;

    // The next three Secret writes fail: the workers retry with backoff until they pass.
    server
        .faults()
        .fail_next_matching(3, 500, "/api/v1/namespaces/default/secrets");
    cms.create(&PostParams::default(), &cm("flaky", "a"))
        .await
        .unwrap();
    // No reads of our own until the workers have met all three, so the faults are theirs.
    eventually("three failed attempts", || async {
        errors.load(Ordering::SeqCst) == 3
    })
    .await;
    eventually("mirrored despite three 500s", || async {
        matches!(secret_value(&secrets, "flaky").await, Ok(Some(v)) if v == "a")
    })
    .await;

    let mut changed = cms.get("flaky").await.unwrap();
    changed.data = Some([("value".to_owned(), "b".to_owned())].into());
    cms.replace("flaky", &PostParams::default(), &changed)
        .await
        .unwrap();
    eventually("an update is mirrored", || async {
        matches!(secret_value(&secrets, "flaky").await, Ok(Some(v)) if v == "b")
    })
    .await;

    cms.delete("before-start", &DeleteParams::default())
        .await
        .unwrap();
    eventually("a delete removes the mirror", || async {
        matches!(secret_value(&secrets, "before-start").await, Ok(None))
    })
    .await;

    within(
        "shutdown_with_drain to return (every key reconciled)",
        queue.shutdown_with_drain(),
    )
    .await;
    tokio::time::timeout(Duration::from_secs(5), workers)
        .await
        .expect("workers stop after the drain")
        .unwrap();
    run.abort();
}
