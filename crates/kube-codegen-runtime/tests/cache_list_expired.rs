//! The reflector's two fallbacks when a LIST is answered `410 Gone` (client-go's
//! `isLastSyncResourceVersionUnavailable` and its pager's full list after an expired continue
//! token): a relist at the last resourceVersion that the server can no longer serve reads the
//! current state at `""`, and a paged list whose continue token expired is read again whole.
//! Both sources below keep answering 410 for as long as the reflector insists on the old
//! version or the old token, so a reflector without the fallback never converges and the
//! test fails at its deadline. A 504 "Too large resource version" (a watch cache behind the
//! version asked for) takes the first fallback too.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::FutureExt;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, ListParams, ObjectList, PostParams, VersionMatch, WatchParams};
use kube::core::Status;
use kube::core::response::{StatusCause, StatusDetails};
use kube_codegen_runtime::cache::{ListWatch, Reflector, Store, WatchStream};
use kube_fake_apiserver::{FakeApiServer, Faults};
use parking_lot::Mutex;

use crate::support;
use support::{cm, eventually, fast_reflector};

const PATH: &str = "/api/v1/configmaps";

/// Reads at a resourceVersion exactly (`resourceVersionMatch=Exact`), as a server does for a
/// list it cannot serve from its watch cache: a version older than its history is a 410.
struct ExactReads(Api<ConfigMap>);

impl ListWatch<ConfigMap> for ExactReads {
    fn list<'a>(
        &'a self,
        params: &'a ListParams,
    ) -> BoxFuture<'a, Result<ObjectList<ConfigMap>, kube::Error>> {
        async move {
            let mut params = params.clone();
            let at_a_version = params
                .resource_version
                .as_deref()
                .is_some_and(|rv| !rv.is_empty() && rv != "0");
            if params.continue_token.is_none() && at_a_version {
                params.version_match = Some(VersionMatch::Exact);
            }
            self.0.list(&params).await
        }
        .boxed()
    }

    fn watch<'a>(
        &'a self,
        params: &'a WatchParams,
        resource_version: &'a str,
    ) -> BoxFuture<'a, Result<WatchStream<ConfigMap>, kube::Error>> {
        ListWatch::watch(&self.0, params, resource_version)
    }
}

/// A server whose watch cache is behind every version the reflector has seen: a list at a
/// resourceVersion is answered as kube-apiserver's cacher answers one it cannot reach in time
/// (504, reason Timeout, cause `ResourceVersionTooLarge`). Records each list's version.
struct LaggingCache {
    api: Api<ConfigMap>,
    asked: Mutex<Vec<String>>,
}

impl ListWatch<ConfigMap> for LaggingCache {
    fn list<'a>(
        &'a self,
        params: &'a ListParams,
    ) -> BoxFuture<'a, Result<ObjectList<ConfigMap>, kube::Error>> {
        async move {
            let rv = params.resource_version.clone().unwrap_or_default();
            self.asked.lock().push(rv.clone());
            if rv.is_empty() || rv == "0" {
                return self.api.list(params).await;
            }
            let cause = StatusCause {
                reason: "ResourceVersionTooLarge".into(),
                message: "Too large resource version".into(),
                field: String::new(),
            };
            Err(kube::Error::Api(
                Status::failure(
                    &format!("Too large resource version: {rv}, current: 1"),
                    "Timeout",
                )
                .with_code(504)
                .with_details(StatusDetails {
                    name: String::new(),
                    group: String::new(),
                    kind: String::new(),
                    uid: String::new(),
                    causes: vec![cause],
                    retry_after_seconds: 1,
                })
                .boxed(),
            ))
        }
        .boxed()
    }

    fn watch<'a>(
        &'a self,
        params: &'a WatchParams,
        resource_version: &'a str,
    ) -> BoxFuture<'a, Result<WatchStream<ConfigMap>, kube::Error>> {
        ListWatch::watch(&self.api, params, resource_version)
    }
}

/// After every first page of a paged list, creates a config map and forgets the history, so
/// the page's continue token has expired (410) by the time the reflector uses it.
struct ExpiringContinue {
    api: Api<ConfigMap>,
    writer: Api<ConfigMap>,
    faults: Faults,
    writes: AtomicUsize,
}

impl ListWatch<ConfigMap> for ExpiringContinue {
    fn list<'a>(
        &'a self,
        params: &'a ListParams,
    ) -> BoxFuture<'a, Result<ObjectList<ConfigMap>, kube::Error>> {
        async move {
            let page = self.api.list(params).await?;
            let more = page
                .metadata
                .continue_
                .as_ref()
                .is_some_and(|c| !c.is_empty());
            if params.continue_token.is_none() && more {
                let n = self.writes.fetch_add(1, Ordering::Relaxed);
                let name = format!("during-list-{n}");
                self.writer
                    .create(&PostParams::default(), &cm(&name, "x"))
                    .await?;
                self.faults.compact();
            }
            Ok(page)
        }
        .boxed()
    }

    fn watch<'a>(
        &'a self,
        params: &'a WatchParams,
        resource_version: &'a str,
    ) -> BoxFuture<'a, Result<WatchStream<ConfigMap>, kube::Error>> {
        ListWatch::watch(&self.api, params, resource_version)
    }
}

/// The store's keys, sorted.
fn keys(store: &Store<ConfigMap>) -> Vec<String> {
    let mut keys = store.list_keys();
    keys.sort();
    keys
}

/// The queries of the config map lists the server received, in order.
fn list_queries(server: &FakeApiServer) -> Vec<String> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.verb == "list" && r.path == PATH)
        .map(|r| r.query)
        .collect()
}

#[tokio::test]
async fn a_relist_at_a_compacted_version_reads_again_at_the_current_state() {
    let server = FakeApiServer::start().await.unwrap();
    let client = server.in_process_client();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    for n in ["a", "b", "c"] {
        api.create(&PostParams::default(), &cm(n, n)).await.unwrap();
    }
    let failed = Arc::new(AtomicUsize::new(0));
    let count = failed.clone();
    let options = fast_reflector().page_size(2).watch_error_handler(move |_| {
        count.fetch_add(1, Ordering::Relaxed);
    });
    let store = Arc::new(Store::with_namespace_index());
    let reflector =
        Reflector::new(ExactReads(Api::all(client.clone())), store.clone()).with_options(options);
    let task = tokio::spawn(reflector.run());
    eventually("the first list: a, b, c", || async {
        keys(&store) == ["default/a", "default/b", "default/c"]
    })
    .await;

    // Cut the reflector off so it misses a delete and a create, then forget the history (a
    // Secret moves the server's version on too), so the version it knows cannot be read at.
    let faults = server.faults();
    faults.fail_next_matching(usize::MAX, 503, PATH);
    faults.drop_watches();
    api.delete("b", &DeleteParams::default()).await.unwrap();
    api.create(&PostParams::default(), &cm("d", "d"))
        .await
        .unwrap();
    let mut s = Secret::default();
    s.metadata.name = Some("s".into());
    Api::<Secret>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &s)
        .await
        .unwrap();
    eventually("a round failed while cut off", || async {
        failed.load(Ordering::Relaxed) > 0
    })
    .await;
    faults.compact();
    faults.clear_requests();
    faults.clear_failures();

    eventually(
        "the relist after the 410 to show a, c, d (a reflector that keeps relisting at the \
         compacted version never gets there)",
        || async { keys(&store) == ["default/a", "default/c", "default/d"] },
    )
    .await;
    let lists = list_queries(&server);
    let exact = lists
        .iter()
        .position(|q| q.contains("resourceVersionMatch=Exact"))
        .unwrap_or_else(|| panic!("no relist at the reflector's version: {lists:?}"));
    let next = lists
        .get(exact + 1)
        .unwrap_or_else(|| panic!("no list after the 410: {lists:?}"));
    assert!(
        !next.contains("resourceVersion") && !next.contains("continue="),
        "after the 410 the reflector reads at \"\" (a consistent read): {lists:?}"
    );
    assert!(next.contains("limit=2"), "in pages: {lists:?}");
    task.abort();
}

#[tokio::test]
async fn a_relist_the_watch_cache_is_too_far_behind_for_reads_again_at_the_current_state() {
    let server = FakeApiServer::start().await.unwrap();
    let client = server.in_process_client();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    for n in ["a", "b"] {
        api.create(&PostParams::default(), &cm(n, n)).await.unwrap();
    }
    let source = Arc::new(LaggingCache {
        api: Api::all(client.clone()),
        asked: Mutex::new(Vec::new()),
    });
    let store = Arc::new(Store::with_namespace_index());
    let reflector = Reflector::from_shared(source.clone(), store.clone())
        .with_options(fast_reflector().watch_list(false));
    let task = tokio::spawn(reflector.run());
    eventually("the first list: a, b", || async {
        keys(&store) == ["default/a", "default/b"]
    })
    .await;

    // Cut the reflector off (its next round relists at the version it knows), change things.
    let faults = server.faults();
    faults.fail_next_matching(usize::MAX, 503, PATH);
    faults.drop_watches();
    api.delete("a", &DeleteParams::default()).await.unwrap();
    api.create(&PostParams::default(), &cm("c", "c"))
        .await
        .unwrap();
    eventually("a relist at the reflector's version", || async {
        source
            .asked
            .lock()
            .iter()
            .any(|rv| !rv.is_empty() && rv != "0")
    })
    .await;
    faults.clear_failures();

    eventually(
        "the relist after the 504 to show b, c (a reflector that retries the same version \
         never gets there)",
        || async { keys(&store) == ["default/b", "default/c"] },
    )
    .await;
    let asked = source.asked.lock().clone();
    let too_large = asked
        .iter()
        .position(|rv| !rv.is_empty() && rv != "0")
        .expect("a list at a version");
    assert_eq!(
        asked.get(too_large + 1).map(String::as_str),
        Some(""),
        "after the 504 the reflector reads at \"\": {asked:?}"
    );
    task.abort();
}

#[tokio::test]
async fn a_paged_list_whose_continue_token_expired_is_read_again_whole() {
    let server = FakeApiServer::start().await.unwrap();
    let client = server.in_process_client();
    let writer: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    for i in 0..5 {
        let name = format!("cm-{i}");
        writer
            .create(&PostParams::default(), &cm(&name, "v"))
            .await
            .unwrap();
    }
    let source = ExpiringContinue {
        api: Api::all(client.clone()),
        writer: writer.clone(),
        faults: server.faults(),
        writes: AtomicUsize::new(0),
    };
    let store = Arc::new(Store::with_namespace_index());
    // A paged first list: the default reads the watch cache at "0" whole, which has no token.
    let reflector = Reflector::new(source, store.clone())
        .with_options(fast_reflector().page_size(2).consistent_first_list(true));
    let synced = reflector.synced();
    let task = tokio::spawn(reflector.run());

    let server_keys = Arc::new(Mutex::new(Vec::new()));
    eventually(
        "the cache to hold every config map, the one created mid-list included (a reflector \
         that gives up on the expired token lists page one again and again)",
        || {
            let (writer, server_keys, store) = (writer.clone(), server_keys.clone(), &store);
            async move {
                let mut want: Vec<String> = writer
                    .list(&ListParams::default())
                    .await
                    .unwrap()
                    .items
                    .iter()
                    .map(|c| format!("default/{}", c.metadata.name.as_deref().unwrap_or("")))
                    .collect();
                want.sort();
                let same = keys(store) == want;
                *server_keys.lock() = want;
                same
            }
        },
    )
    .await;
    assert!(synced.has_synced());
    assert!(
        server_keys
            .lock()
            .iter()
            .any(|k| k == "default/during-list-0"),
        "the list was changed between its pages: {:?}",
        server_keys.lock()
    );
    let lists = list_queries(&server);
    assert!(lists.len() >= 3, "{lists:?}");
    assert!(lists[0].contains("limit=2") && !lists[0].contains("continue="));
    assert!(lists[1].contains("limit=2") && lists[1].contains("continue="));
    assert!(
        !lists[2].contains("limit=") && !lists[2].contains("continue="),
        "after the expired token, one whole list: {lists:?}"
    );
    task.abort();
}
