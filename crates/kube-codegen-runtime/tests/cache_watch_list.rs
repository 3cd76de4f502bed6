//! The streaming watch-list (`sendInitialEvents=true`) against the in-memory API server: the
//! first sync without a LIST, the same stream going on as the watch, the fall back to LIST when
//! the server refuses it, a watch-list cut before its end bookmark, a 410 on a watch-list, the
//! switch that turns it off, and the first LIST's resourceVersion.

use crate::support;

use std::collections::HashMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;
use kube::api::{Api, DeleteParams, ListParams, ObjectList, PostParams, WatchParams};
use kube::core::{Status, TypeMeta};
use kube_codegen_runtime::cache::{
    EventHandlerFns, InformerOptions, ListWatch, Reflector, SharedIndexInformer, Store, WatchStream,
};
use kube_fake_apiserver::{FakeApiServer, RecordedRequest};
use parking_lot::Mutex;
use support::{client, cm, eventually, fast_reflector, within};

const PATH: &str = "/api/v1/configmaps";

/// A request's query as a map (a repeated key keeps its last value).
fn query(r: &RecordedRequest) -> HashMap<String, String> {
    url_pairs(&r.query)
}

fn url_pairs(q: &str) -> HashMap<String, String> {
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (k.to_owned(), v.to_owned()),
            None => (p.to_owned(), String::new()),
        })
        .collect()
}

/// The list and watch requests for every namespace's config maps, in order.
fn reads(server: &FakeApiServer) -> Vec<RecordedRequest> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.path == PATH && (r.verb == "list" || r.verb == "watch"))
        .collect()
}

fn is_watch_list(r: &RecordedRequest) -> bool {
    let q = query(r);
    r.verb == "watch" && q.get("sendInitialEvents").is_some_and(|v| v == "true")
}

async fn server_with(names: &[&str]) -> (FakeApiServer, Api<ConfigMap>) {
    let server = FakeApiServer::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(server.in_process_client(), "default");
    for n in names {
        api.create(&PostParams::default(), &cm(n, n)).await.unwrap();
    }
    (server, api)
}

/// An informer over every namespace's config maps with fast retries, running.
fn informer(
    server: &FakeApiServer,
    options: InformerOptions<ConfigMap>,
) -> (SharedIndexInformer<ConfigMap>, tokio::task::JoinHandle<()>) {
    let informer = SharedIndexInformer::new(Api::<ConfigMap>::all(client(server)), options);
    let run = {
        let informer = informer.clone();
        tokio::spawn(async move { informer.run().await })
    };
    (informer, run)
}

fn fast() -> InformerOptions<ConfigMap> {
    InformerOptions::default().reflector(fast_reflector())
}

fn sorted_keys(informer: &SharedIndexInformer<ConfigMap>) -> Vec<String> {
    let mut k = informer.store().list_keys();
    k.sort();
    k
}

/// Records each handler call as a line.
#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<String>>>);

impl Lines {
    fn handler(&self) -> EventHandlerFns<ConfigMap> {
        let (a, u, d) = (self.0.clone(), self.0.clone(), self.0.clone());
        let name = |o: &ConfigMap| o.metadata.name.clone().unwrap_or_default();
        EventHandlerFns::new()
            .on_add(move |o, initial| a.lock().push(format!("add {} {initial}", name(o))))
            .on_update(move |_, n| u.lock().push(format!("update {}", name(n))))
            .on_delete(move |gone| d.lock().push(format!("delete {}", name(gone.object()))))
    }

    fn get(&self) -> Vec<String> {
        self.0.lock().clone()
    }
}

#[tokio::test]
async fn the_first_sync_is_a_watch_list_and_its_stream_goes_on_as_the_watch() {
    let (server, api) = server_with(&["a", "b", "c"]).await;
    let (informer, run) = informer(&server, fast());
    let lines = Lines::default();
    informer.add_event_handler(lines.handler()).unwrap();
    within("the sync", informer.wait_for_sync()).await;
    assert_eq!(
        sorted_keys(&informer),
        ["default/a", "default/b", "default/c"]
    );

    api.create(&PostParams::default(), &cm("d", "d"))
        .await
        .unwrap();
    api.delete("a", &DeleteParams::default()).await.unwrap();
    eventually("d cached and a gone", || async {
        sorted_keys(&informer) == ["default/b", "default/c", "default/d"]
    })
    .await;
    eventually("the handler saw the changes", || async {
        lines.get().len() == 5
    })
    .await;
    let mut initial = lines.get()[..3].to_vec();
    initial.sort();
    assert_eq!(initial, ["add a true", "add b true", "add c true"]);
    assert_eq!(lines.get()[3..], ["add d false", "delete a"]);

    let reads = reads(&server);
    assert_eq!(reads.len(), 1, "one request, no LIST: {reads:?}");
    let q = query(&reads[0]);
    assert!(is_watch_list(&reads[0]), "{q:?}");
    assert_eq!(q["resourceVersionMatch"], "NotOlderThan");
    assert_eq!(q["allowWatchBookmarks"], "true");
    assert_eq!(q["resourceVersion"], "", "a consistent read the first time");
    run.abort();
}

#[tokio::test]
async fn a_refused_watch_list_falls_back_to_a_list_then_a_watch() {
    for code in [403, 400] {
        let (server, _api) = server_with(&["a", "b"]).await;
        server.faults().fail_next_matching(1, code, PATH);
        let (informer, run) = informer(&server, fast());
        within("the sync after the fallback", informer.wait_for_sync()).await;
        assert_eq!(sorted_keys(&informer), ["default/a", "default/b"]);
        assert!(informer.last_error().is_none(), "a fallback is no failure");

        eventually("the watch after the list", || async {
            reads(&server).len() >= 3
        })
        .await;
        let reads = reads(&server);
        assert!(is_watch_list(&reads[0]), "{code}: {reads:?}");
        assert_eq!(reads[1].verb, "list", "{code}: {reads:?}");
        let list = query(&reads[1]);
        assert_eq!(list.get("resourceVersion").map(String::as_str), Some("0"));
        assert!(!list.contains_key("limit"), "read whole: {list:?}");
        assert!(reads[2].verb == "watch" && !is_watch_list(&reads[2]));
        assert_ne!(query(&reads[2])["resourceVersion"], "");
        run.abort();
    }
}

#[tokio::test]
async fn with_watch_list_off_the_first_list_reads_the_watch_cache_whole() {
    let (server, api) = server_with(&["a"]).await;
    let (informer, run) = informer(&server, fast().watch_list(false));
    within("the sync", informer.wait_for_sync()).await;
    api.create(&PostParams::default(), &cm("b", "b"))
        .await
        .unwrap();
    eventually("b cached", || async {
        sorted_keys(&informer) == ["default/a", "default/b"]
    })
    .await;
    let reads = reads(&server);
    assert!(reads.iter().all(|r| !is_watch_list(r)), "{reads:?}");
    assert_eq!(reads[0].verb, "list");
    let q = query(&reads[0]);
    assert_eq!(q["resourceVersion"], "0");
    assert!(!q.contains_key("limit"), "{q:?}");
    run.abort();
}

#[tokio::test]
async fn a_consistent_first_list_is_read_in_pages() {
    let names: Vec<String> = (0..5).map(|i| format!("cm-{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let (server, _api) = server_with(&refs).await;
    let options = fast_reflector()
        .watch_list(false)
        .consistent_first_list(true)
        .page_size(2);
    let (informer, run) = informer(&server, InformerOptions::default().reflector(options));
    within("the sync", informer.wait_for_sync()).await;
    assert_eq!(informer.store().len(), 5);
    let lists: Vec<_> = reads(&server)
        .into_iter()
        .filter(|r| r.verb == "list")
        .collect();
    assert_eq!(lists.len(), 3, "5 objects in pages of 2: {lists:?}");
    assert!(lists.iter().all(|r| query(r)["limit"] == "2"));
    assert!(!query(&lists[0]).contains_key("resourceVersion"));
    run.abort();
}

#[tokio::test]
async fn a_watch_list_cut_before_its_end_bookmark_stores_nothing_and_starts_again() {
    let (server, _api) = server_with(&["a", "b", "c", "d", "e"]).await;
    // Every watch ends after 3 events: never reaching the end bookmark (the 6th).
    server.faults().end_watches_after(Some(3));
    let (informer, run) = informer(&server, fast());
    let lines = Lines::default();
    informer.add_event_handler(lines.handler()).unwrap();
    eventually("three cut watch-lists", || async {
        reads(&server).iter().filter(|r| is_watch_list(r)).count() >= 3
    })
    .await;
    assert!(!informer.has_synced(), "synced on a partial state");
    assert_eq!(informer.store().len(), 0, "a partial state was stored");
    assert!(informer.lister().list(&Default::default()).is_err());
    assert!(lines.get().is_empty(), "handlers saw {:?}", lines.get());

    server.faults().end_watches_after(None);
    within("the sync once watches last", informer.wait_for_sync()).await;
    assert_eq!(informer.store().len(), 5);
    eventually("five initial adds", || async { lines.get().len() == 5 }).await;
    assert!(lines.get().iter().all(|l| l.ends_with(" true")));
    assert!(
        reads(&server).iter().all(|r| r.verb == "watch"),
        "no fallback to a LIST"
    );
    run.abort();
}

#[tokio::test]
async fn a_410_on_a_rewatch_and_on_the_watch_list_ends_in_a_consistent_watch_list() {
    let (server, api) = server_with(&["a", "b"]).await;
    let (informer, run) = informer(&server, fast());
    within("the sync", informer.wait_for_sync()).await;
    let synced_at = informer
        .store()
        .get_by_key("default/b")
        .unwrap()
        .metadata
        .resource_version
        .clone()
        .unwrap();
    server.faults().clear_requests();
    // The re-watch after the drop gets 410 (relist), then so does the watch-list from the
    // informer's resourceVersion: the next one must ask for a consistent read.
    server.faults().fail_next_matching(2, 410, PATH);
    server.faults().drop_watches();
    eventually("three watch requests", || async {
        reads(&server).len() >= 3
    })
    .await;
    // The third goes on as the watch.
    api.create(&PostParams::default(), &cm("c", "c"))
        .await
        .unwrap();
    eventually("c cached", || async {
        sorted_keys(&informer) == ["default/a", "default/b", "default/c"]
    })
    .await;
    let reads = reads(&server);
    assert_eq!(reads.len(), 3, "{reads:?}");
    assert!(!is_watch_list(&reads[0]) && query(&reads[0])["resourceVersion"] == synced_at);
    assert!(is_watch_list(&reads[1]) && query(&reads[1])["resourceVersion"] == synced_at);
    assert!(
        is_watch_list(&reads[2]) && query(&reads[2])["resourceVersion"].is_empty(),
        "{reads:?}"
    );
    assert!(
        reads.iter().all(|r| r.verb == "watch"),
        "no LIST: {reads:?}"
    );
    run.abort();
}

/// An in-process source that serves lists and answers every watch-list with an error status,
/// and every plain watch with a stream that stays open.
struct Refusing {
    supports: bool,
    watches: Mutex<Vec<WatchParams>>,
    lists: Mutex<usize>,
}

impl ListWatch<ConfigMap> for Refusing {
    fn list<'a>(
        &'a self,
        _: &'a ListParams,
    ) -> BoxFuture<'a, Result<ObjectList<ConfigMap>, kube::Error>> {
        *self.lists.lock() += 1;
        let mut one = cm("a", "a");
        one.metadata.namespace = Some("default".into());
        one.metadata.resource_version = Some("5".into());
        let list = ObjectList {
            types: TypeMeta::list::<ConfigMap>(),
            metadata: ListMeta {
                resource_version: Some("5".into()),
                ..ListMeta::default()
            },
            items: vec![one],
        };
        async move { Ok(list) }.boxed()
    }

    fn watch<'a>(
        &'a self,
        params: &'a WatchParams,
        _: &'a str,
    ) -> BoxFuture<'a, Result<WatchStream<ConfigMap>, kube::Error>> {
        self.watches.lock().push(params.clone());
        let refuse = params.send_initial_events;
        async move {
            if refuse {
                let status =
                    Status::failure("watch-list not served here", "BadRequest").with_code(400);
                return Err(kube::Error::Api(Box::new(status)));
            }
            let stream: WatchStream<ConfigMap> = futures::stream::pending().boxed();
            Ok(stream)
        }
        .boxed()
    }

    fn supports_watch_list(&self) -> bool {
        self.supports
    }
}

#[tokio::test]
async fn an_in_process_source_that_refuses_is_listed_and_one_without_support_never_asked() {
    for supports in [true, false] {
        let source = Arc::new(Refusing {
            supports,
            watches: Mutex::new(Vec::new()),
            lists: Mutex::new(0),
        });
        let store = Arc::new(Store::with_namespace_index());
        let reflector =
            Reflector::from_shared(source.clone(), store.clone()).with_options(fast_reflector());
        let mut synced = reflector.synced();
        let task = tokio::spawn(reflector.run());
        assert!(within("the sync", synced.wait()).await);
        assert_eq!(store.list_keys(), ["default/a"]);
        eventually("the watch after the list", || async {
            source.watches.lock().iter().any(|p| !p.send_initial_events)
        })
        .await;
        let asked: Vec<bool> = source
            .watches
            .lock()
            .iter()
            .map(|p| p.send_initial_events)
            .collect();
        let want: &[bool] = if supports { &[true, false] } else { &[false] };
        assert_eq!(asked, want, "supports_watch_list = {supports}");
        assert_eq!(*source.lists.lock(), 1);
        task.abort();
    }
}

/// An in-process source whose watches replay scripted streams, one per watch request.
struct Scripted {
    streams: Mutex<Vec<Vec<kube::api::WatchEvent<ConfigMap>>>>,
    asked: Mutex<Vec<(bool, String)>>,
}

impl ListWatch<ConfigMap> for Scripted {
    fn list<'a>(
        &'a self,
        _: &'a ListParams,
    ) -> BoxFuture<'a, Result<ObjectList<ConfigMap>, kube::Error>> {
        async { panic!("a watch-list source is never listed here") }.boxed()
    }

    fn watch<'a>(
        &'a self,
        params: &'a WatchParams,
        rv: &'a str,
    ) -> BoxFuture<'a, Result<WatchStream<ConfigMap>, kube::Error>> {
        self.asked
            .lock()
            .push((params.send_initial_events, rv.to_owned()));
        let mut streams = self.streams.lock();
        let events = if streams.is_empty() {
            None
        } else {
            Some(streams.remove(0))
        };
        async move {
            let stream: WatchStream<ConfigMap> = match events {
                // Then stay open, as a quiet watch does.
                Some(events) => futures::stream::iter(events.into_iter().map(Ok))
                    .chain(futures::stream::pending())
                    .boxed(),
                None => futures::stream::pending().boxed(),
            };
            Ok(stream)
        }
        .boxed()
    }

    fn supports_watch_list(&self) -> bool {
        true
    }
}

/// Records every replace the reflector makes.
#[derive(Default)]
struct Replaces(Mutex<Vec<(Vec<String>, String)>>);

impl kube_codegen_runtime::cache::ReflectorStore<ConfigMap> for Replaces {
    fn replace(&self, objects: Vec<ConfigMap>, rv: &str) {
        let names = objects
            .into_iter()
            .filter_map(|o| o.metadata.name)
            .collect();
        self.0.lock().push((names, rv.to_owned()));
    }
    fn add(&self, _: ConfigMap) {}
    fn update(&self, _: ConfigMap) {}
    fn delete(&self, _: ConfigMap) {}
}

fn bookmark(rv: &str, end: bool) -> kube::api::WatchEvent<ConfigMap> {
    let annotations = if end {
        r#","annotations":{"k8s.io/initial-events-end":"true"}"#
    } else {
        ""
    };
    let json = format!(
        r#"{{"kind":"ConfigMap","apiVersion":"v1","metadata":{{"resourceVersion":"{rv}"{annotations}}}}}"#
    );
    kube::api::WatchEvent::Bookmark(serde_json::from_str(&json).unwrap())
}

fn added(name: &str, rv: &str) -> kube::api::WatchEvent<ConfigMap> {
    let mut c = cm(name, name);
    c.metadata.namespace = Some("default".into());
    c.metadata.resource_version = Some(rv.into());
    kube::api::WatchEvent::Added(c)
}

#[tokio::test]
async fn only_the_annotated_bookmark_ends_the_initial_events_and_a_410_in_them_retries_at_a_consistent_read()
 {
    use kube::api::WatchEvent;
    let gone = || {
        let status = Status::failure("too old resource version", "Expired").with_code(410);
        WatchEvent::Error(Box::new(status))
    };
    let source = Arc::new(Scripted {
        streams: Mutex::new(vec![
            // Synced at 9, then the watch part of the stream expires: relist.
            vec![added("a", "3"), bookmark("9", true), gone()],
            // The watch-list from 9: a plain bookmark inside the initial events, then a 410.
            vec![added("a", "3"), bookmark("10", false), gone()],
            // From "": complete.
            vec![added("a", "3"), added("b", "11"), bookmark("12", true)],
        ]),
        asked: Mutex::new(Vec::new()),
    });
    let store = Arc::new(Replaces::default());
    let reflector =
        Reflector::from_shared(source.clone(), store.clone()).with_options(fast_reflector());
    let task = tokio::spawn(reflector.run());
    eventually("two replaces", || async { store.0.lock().len() >= 2 }).await;
    let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        *store.0.lock(),
        [
            (names(&["a"]), "9".to_owned()),
            (names(&["a", "b"]), "12".to_owned())
        ],
        "nothing stored from the watch-list the 410 cut"
    );
    let asked = source.asked.lock().clone();
    assert_eq!(
        asked,
        [
            (true, String::new()),
            (true, "9".to_owned()),
            (true, String::new())
        ],
        "the relist from the last version, then from a consistent read; no LIST"
    );
    task.abort();
}
