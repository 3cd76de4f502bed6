//! The reflector against the in-memory API server: list, watch, re-watch after a dropped
//! watch, relist after 410, retries after server errors, paginated lists. These pin the LIST
//! then WATCH path, so most turn the watch-list off (`cache_watch_list.rs` covers that one).

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, PostParams};
use kube_codegen_runtime::cache::{Reflector, Store};
use kube_fake_apiserver::FakeApiServer;

use crate::support;
use support::{client, cm, eventually, fast_reflector, within};

/// Starts a reflector over every namespace's config maps with fast retries, listing (no
/// watch-list) with a consistent first list in pages of `page_size`.
fn reflect(
    server: &FakeApiServer,
    page_size: u32,
) -> (Arc<Store<ConfigMap>>, tokio::task::JoinHandle<()>) {
    let store = Arc::new(Store::with_namespace_index());
    let options = fast_reflector()
        .watch_list(false)
        .consistent_first_list(true)
        .page_size(page_size);
    let reflector =
        Reflector::new(Api::<ConfigMap>::all(client(server)), store.clone()).with_options(options);
    (store, tokio::spawn(reflector.run()))
}

/// Waits until the store's keys, sorted, are `want`.
async fn eventually_keys(store: &Store<ConfigMap>, want: &[&str]) {
    eventually(&format!("store keys {want:?}"), || async {
        let mut keys = store.list_keys();
        keys.sort();
        keys == want
    })
    .await;
}

/// A server with config map `default/a` and a reflector whose store has it (so its watch has
/// seen an event: closing it is not a "very short" watch).
async fn following_one_object() -> (
    FakeApiServer,
    Api<ConfigMap>,
    Arc<Store<ConfigMap>>,
    tokio::task::JoinHandle<()>,
) {
    let server = FakeApiServer::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client(&server), "default");
    let (store, task) = reflect(&server, 500);
    api.create(&PostParams::default(), &cm("a", "a"))
        .await
        .unwrap();
    eventually_keys(&store, &["default/a"]).await;
    (server, api, store, task)
}

fn lists(server: &FakeApiServer) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| r.verb == "list" && r.path == "/api/v1/configmaps")
        .count()
}

#[tokio::test]
async fn lists_then_follows_creates_updates_and_deletes() {
    let server = FakeApiServer::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client(&server), "default");
    for n in ["a", "b"] {
        api.create(&PostParams::default(), &cm(n, n)).await.unwrap();
    }
    let store = Arc::new(Store::with_namespace_index());
    let reflector = Reflector::new(Api::<ConfigMap>::all(client(&server)), store.clone());
    let mut synced = reflector.synced();
    assert!(!synced.has_synced());
    let task = tokio::spawn(reflector.run());
    assert!(within("the reflector's first list", synced.wait()).await);
    assert_eq!(
        store.len(),
        2,
        "the first list is stored before synced flips"
    );

    api.create(&PostParams::default(), &cm("c", "c"))
        .await
        .unwrap();
    let mut b = api.get("b").await.unwrap();
    b.data = Some([("k".to_owned(), "changed".to_owned())].into());
    api.replace("b", &PostParams::default(), &b).await.unwrap();
    api.delete("a", &DeleteParams::default()).await.unwrap();
    eventually_keys(&store, &["default/b", "default/c"]).await;
    let cached = store.get_by_key("default/b").unwrap();
    assert_eq!(cached.data.as_ref().unwrap()["k"], "changed");
    task.abort();
}

#[tokio::test]
async fn a_dropped_watch_resumes_from_the_last_version_without_a_relist() {
    let (server, api, store, task) = following_one_object().await;
    let before = lists(&server);

    server.faults().drop_watches();
    api.create(&PostParams::default(), &cm("b", "b"))
        .await
        .unwrap();
    eventually_keys(&store, &["default/a", "default/b"]).await;
    assert_eq!(lists(&server), before, "re-watched, not relisted");
    let watches = server
        .requests()
        .into_iter()
        .filter(|r| r.verb == "watch")
        .collect::<Vec<_>>();
    assert!(watches.len() >= 2, "a second watch was opened");
    let last = watches.last().unwrap();
    assert!(
        last.query.contains("resourceVersion=") && !last.query.contains("resourceVersion=0&"),
        "the new watch starts from a known version: {}",
        last.query
    );
    assert!(last.query.contains("allowWatchBookmarks=true"));
    task.abort();
}

#[tokio::test]
async fn changes_missed_while_cut_off_are_caught_by_the_relist() {
    let server = FakeApiServer::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client(&server), "default");
    for n in ["a", "b", "c"] {
        api.create(&PostParams::default(), &cm(n, n)).await.unwrap();
    }
    let (store, task) = reflect(&server, 500);
    eventually_keys(&store, &["default/a", "default/b", "default/c"]).await;
    let before = lists(&server);

    // Cut the reflector off (its list and watch path fails), change things, forget history.
    let faults = server.faults();
    faults.fail_next_matching(usize::MAX, 503, "/api/v1/configmaps");
    faults.drop_watches();
    api.delete("b", &DeleteParams::default()).await.unwrap();
    api.create(&PostParams::default(), &cm("d", "d"))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await; // a few failed rounds
    faults.compact();
    faults.clear_failures();

    eventually_keys(&store, &["default/a", "default/c", "default/d"]).await;
    assert!(lists(&server) > before, "relisted");
    task.abort();
}

#[tokio::test]
async fn a_rewatch_from_a_compacted_version_gets_410_and_relists() {
    let (server, api, store, task) = following_one_object().await;
    let before = lists(&server);

    // Another kind moves the global resourceVersion past the reflector's; forgetting the
    // history then leaves the reflector's version too old to watch from.
    let secrets: Api<Secret> = Api::namespaced(client(&server), "default");
    let mut s = Secret::default();
    s.metadata.name = Some("s".into());
    secrets.create(&PostParams::default(), &s).await.unwrap();
    server.faults().compact();
    server.faults().drop_watches();
    api.create(&PostParams::default(), &cm("b", "b"))
        .await
        .unwrap();
    eventually_keys(&store, &["default/a", "default/b"]).await;
    assert_eq!(lists(&server), before + 1, "the 410 led to one relist");
    task.abort();
}

#[tokio::test]
async fn server_errors_on_the_first_list_are_retried() {
    let server = FakeApiServer::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client(&server), "default");
    api.create(&PostParams::default(), &cm("a", "a"))
        .await
        .unwrap();
    server
        .faults()
        .fail_next_matching(3, 500, "/api/v1/configmaps");
    let (store, task) = reflect(&server, 500);
    eventually_keys(&store, &["default/a"]).await;
    assert!(
        lists(&server) >= 4,
        "three failures, then a list that worked"
    );
    task.abort();
}

#[tokio::test]
async fn large_lists_are_read_in_pages() {
    let server = FakeApiServer::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(server.in_process_client(), "default");
    let names: Vec<String> = (0..25).map(|i| format!("cm-{i:02}")).collect();
    for n in &names {
        api.create(&PostParams::default(), &cm(n, n)).await.unwrap();
    }
    let (store, task) = reflect(&server, 10);
    let want: Vec<String> = names.iter().map(|n| format!("default/{n}")).collect();
    let want: Vec<&str> = want.iter().map(String::as_str).collect();
    eventually_keys(&store, &want).await;
    let pages: Vec<String> = server
        .requests()
        .into_iter()
        .filter(|r| r.verb == "list" && r.path == "/api/v1/configmaps")
        .map(|r| r.query)
        .collect();
    assert_eq!(pages.len(), 3, "25 objects in pages of 10: {pages:?}");
    assert!(pages.iter().all(|q| q.contains("limit=10")));
    // A consistent first list: no resourceVersion, in pages.
    assert!(!pages[0].contains("continue=") && !pages[0].contains("resourceVersion"));
    assert!(pages[1].contains("continue=") && !pages[1].contains("resourceVersion"));
    task.abort();
}

/// The watch error hook (client-go's `WatchErrorHandler`) sees every error that ends a round,
/// with the server's status intact, before the reflector retries.
#[tokio::test]
async fn the_watch_error_handler_sees_each_failed_round() {
    let server = FakeApiServer::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client(&server), "default");
    api.create(&PostParams::default(), &cm("a", "a"))
        .await
        .unwrap();
    server
        .faults()
        .fail_next_matching(3, 503, "/api/v1/configmaps");
    let seen = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let record = seen.clone();
    let store = Arc::new(Store::with_namespace_index());
    let options = fast_reflector()
        .watch_list(false)
        .watch_error_handler(move |e| {
            let code = match e {
                kube::Error::Api(s) => s.code,
                _ => 0,
            };
            record.lock().push(code);
        });
    let reflector =
        Reflector::new(Api::<ConfigMap>::all(client(&server)), store.clone()).with_options(options);
    let task = tokio::spawn(reflector.run());
    eventually_keys(&store, &["default/a"]).await;
    assert_eq!(*seen.lock(), [503, 503, 503]);
    task.abort();
}
