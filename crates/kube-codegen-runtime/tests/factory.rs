//! The shared informer factory against the in-memory API server: sharing, scope, start and
//! shutdown, and the options that apply to every informer (list-params tweak, metadata
//! transform, per-kind resync).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::{Api, PostParams};
use kube::core::Selector;
use kube_codegen_runtime::SharedInformerFactory;
use kube_codegen_runtime::cache::{EventHandlerFns, SharedIndexInformer};
use kube_fake_apiserver::FakeApiServer;

use crate::support;
use support::{client, fast_reflector, within};

/// Polls `check` every 10 ms until it holds, for at most 10 s.
async fn until(what: &str, mut check: impl FnMut() -> bool) {
    within(what, async {
        while !check() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}

/// What a generated clientset is to the factory: something that turns into a `kube::Client`.
struct Clientset(kube::Client);

impl From<Clientset> for kube::Client {
    fn from(c: Clientset) -> Self {
        c.0
    }
}

/// Creates `default/<name>` labelled `app=<app>`.
async fn create_labelled(server: &FakeApiServer, name: &str, app: &str) {
    let api: Api<ConfigMap> = Api::namespaced(client(server), "default");
    let mut c = ConfigMap::default();
    c.metadata.name = Some(name.to_owned());
    c.metadata.labels = Some([("app".to_owned(), app.to_owned())].into());
    api.create(&PostParams::default(), &c).await.unwrap();
}

/// Creates `default/<name>`, a Secret.
async fn create_secret(server: &FakeApiServer, name: &str) {
    let api: Api<Secret> = Api::namespaced(client(server), "default");
    let mut s = Secret::default();
    s.metadata.name = Some(name.to_owned());
    api.create(&PostParams::default(), &s).await.unwrap();
}

/// Counts the updates `informer` delivers.
fn count_updates<K>(informer: &SharedIndexInformer<K>) -> Arc<AtomicUsize>
where
    K: kube::Resource
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let updates = Arc::new(AtomicUsize::new(0));
    let counter = updates.clone();
    informer
        .add_event_handler(EventHandlerFns::new().on_update(move |_, _| {
            counter.fetch_add(1, Ordering::SeqCst);
        }))
        .unwrap();
    updates
}

async fn create_cm(server: &FakeApiServer, ns: &str, name: &str) {
    let api: Api<ConfigMap> = Api::namespaced(client(server), ns);
    let mut c = ConfigMap::default();
    c.metadata.name = Some(name.to_owned());
    api.create(&PostParams::default(), &c).await.unwrap();
}

async fn create_ns(server: &FakeApiServer, name: &str) {
    let api: Api<Namespace> = Api::all(client(server));
    let mut n = Namespace::default();
    n.metadata.name = Some(name.to_owned());
    api.create(&PostParams::default(), &n).await.unwrap();
}

/// A request that reads a whole collection: a LIST, or a watch-list (the factory's default).
fn is_initial_read(r: &kube_fake_apiserver::RecordedRequest) -> bool {
    r.verb == "list" || (r.verb == "watch" && r.query.contains("sendInitialEvents=true"))
}

fn names(list: Vec<Arc<ConfigMap>>) -> Vec<String> {
    let mut n: Vec<String> = list
        .iter()
        .map(|c| {
            format!(
                "{}/{}",
                c.metadata.namespace.as_deref().unwrap_or(""),
                c.metadata.name.as_deref().unwrap_or("")
            )
        })
        .collect();
    n.sort();
    n
}

#[tokio::test]
async fn one_informer_per_kind_shared_by_every_caller() {
    let server = FakeApiServer::start().await.unwrap();
    create_cm(&server, "default", "a").await;
    let factory = SharedInformerFactory::new(client(&server));
    let cms = factory.informer_for::<ConfigMap>();
    let again = factory.clone().informer_for::<ConfigMap>();
    assert!(
        cms.store().is_same_cache(&again.store()),
        "one cache per kind"
    );
    let secrets = factory.informer_for::<Secret>();
    factory.start();
    factory.start(); // idempotent
    tokio::time::timeout(Duration::from_secs(10), factory.wait_for_cache_sync())
        .await
        .expect("every informer syncs");
    assert!(cms.has_synced() && secrets.has_synced());
    assert_eq!(
        names(cms.lister().list(&Selector::default()).unwrap()),
        ["default/a"]
    );
    let list_requests = server
        .requests()
        .iter()
        .filter(|r| r.path == "/api/v1/configmaps" && is_initial_read(r))
        .count();
    assert_eq!(list_requests, 1, "listed once for both callers");
}

#[tokio::test]
async fn a_namespace_restricts_namespaced_kinds_only() {
    let server = FakeApiServer::start().await.unwrap();
    create_ns(&server, "other").await;
    create_cm(&server, "default", "a").await;
    create_cm(&server, "other", "b").await;
    let factory = SharedInformerFactory::builder(client(&server))
        .namespace("other")
        .build();
    let cms = factory.informer_for::<ConfigMap>();
    let namespaces = factory.informer_for::<Namespace>();
    factory.start();
    within("the cache sync", factory.wait_for_cache_sync()).await;
    assert_eq!(
        names(cms.lister().list(&Selector::default()).unwrap()),
        ["other/b"]
    );
    let mut ns: Vec<String> = namespaces.store().list_keys();
    ns.sort();
    assert!(
        ns.contains(&"default".to_owned()) && ns.contains(&"other".to_owned()),
        "cluster-scoped kinds are listed whole: {ns:?}"
    );
    assert!(
        server
            .requests()
            .iter()
            .any(|r| is_initial_read(r) && r.path == "/api/v1/namespaces/other/configmaps")
    );
}

#[tokio::test]
async fn start_picks_up_informers_asked_for_later_and_shutdown_stops_them() {
    let server = FakeApiServer::start().await.unwrap();
    let factory = SharedInformerFactory::builder(client(&server))
        .reflector(fast_reflector())
        .build();
    let cms = factory.informer_for::<ConfigMap>();
    factory.start();
    within(
        "the ConfigMap informer's sync",
        factory.wait_for_cache_sync(),
    )
    .await;
    let secrets = factory.informer_for::<Secret>();
    assert!(!secrets.has_synced());
    factory.start();
    within("the Secret informer's sync", factory.wait_for_cache_sync()).await;
    assert!(secrets.has_synced());

    create_cm(&server, "default", "seen").await;
    until("the watch to cache default/seen", || {
        cms.store().get_by_key("default/seen").is_some()
    })
    .await;
    factory.shutdown();
    tokio::time::sleep(Duration::from_millis(50)).await;
    create_cm(&server, "default", "unseen").await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        cms.store().get_by_key("default/unseen").is_none(),
        "a stopped informer hears nothing"
    );
}

#[tokio::test]
async fn a_list_params_tweak_filters_the_list_and_the_watch() {
    let server = FakeApiServer::start().await.unwrap();
    create_labelled(&server, "web-1", "web").await;
    create_labelled(&server, "db-1", "db").await;
    let factory = SharedInformerFactory::builder(Clientset(client(&server)))
        .reflector(fast_reflector())
        .tweak_list_params(|p| {
            p.label_selector = Some("app=web".to_owned());
            // Paging and versions are the reflector's: these must not reach the server.
            p.limit = Some(1);
            p.resource_version = Some("1".to_owned());
        })
        .build();
    let cms = factory.informer_for::<ConfigMap>();
    factory.start();
    within("the cache sync", factory.wait_for_cache_sync()).await;
    let lister = cms.lister();
    let all = Selector::default();
    assert_eq!(names(lister.list(&all).unwrap()), ["default/web-1"]);

    // db-2 first: one watch delivers events in order, so had it not been filtered, db-2
    // would be cached by the time web-2 is.
    create_labelled(&server, "db-2", "db").await;
    create_labelled(&server, "web-2", "web").await;
    until("the watch to cache web-2", || {
        matches!(lister.namespace("default").get("web-2"), Ok(Some(_)))
    })
    .await;
    assert_eq!(
        names(lister.list(&all).unwrap()),
        ["default/web-1", "default/web-2"],
        "objects outside the selector are never cached"
    );
    let reads: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.path == "/api/v1/configmaps" && (r.verb == "list" || r.verb == "watch"))
        .collect();
    assert!(
        reads.iter().any(is_initial_read),
        "listed (by a watch-list): {reads:?}"
    );
    assert!(
        reads
            .iter()
            .all(|r| r.query.contains("labelSelector=app%3Dweb")),
        "every list and watch carries the selector: {reads:?}"
    );
    assert!(
        reads.iter().all(|r| {
            r.query
                .split('&')
                .all(|pair| pair != "limit=1" && pair != "resourceVersion=1")
        }),
        "the tweak changes selectors only: {reads:?}"
    );
}

#[tokio::test]
async fn a_metadata_transform_runs_on_every_kind_before_caching() {
    let server = FakeApiServer::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client(&server), "default");
    let mut noisy = ConfigMap::default();
    noisy.metadata.name = Some("noisy".to_owned());
    noisy.metadata.labels = Some([("keep".to_owned(), "yes".to_owned())].into());
    noisy.metadata.annotations = Some([("note".to_owned(), "long".to_owned())].into());
    // A named field manager makes the server record managedFields.
    let pp = PostParams {
        field_manager: Some("factory-test".to_owned()),
        ..PostParams::default()
    };
    let created = api.create(&pp, &noisy).await.unwrap();
    assert!(
        created.metadata.managed_fields.is_some(),
        "the server records managedFields, so dropping them is observable"
    );
    let secrets: Api<Secret> = Api::namespaced(client(&server), "default");
    let mut secret = Secret::default();
    secret.metadata.name = Some("s".to_owned());
    secret.metadata.annotations = Some([("note".to_owned(), "long".to_owned())].into());
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();

    let factory = SharedInformerFactory::builder(client(&server))
        .reflector(fast_reflector())
        .transform(|meta| {
            meta.managed_fields = None;
            meta.annotations = None;
        })
        .build();
    let cms = factory.informer_for::<ConfigMap>();
    let secret_informer = factory.informer_for::<Secret>();
    factory.start();
    within("the cache sync", factory.wait_for_cache_sync()).await;

    let lister = cms.lister().namespace("default");
    let cached = lister.get("noisy").unwrap().unwrap();
    assert_eq!(
        cached.metadata.managed_fields, None,
        "listed objects are transformed"
    );
    assert_eq!(cached.metadata.annotations, None);
    assert_eq!(
        cached.metadata.labels, noisy.metadata.labels,
        "what the transform leaves is kept"
    );
    let cached = secret_informer
        .lister()
        .namespace("default")
        .get("s")
        .unwrap()
        .unwrap();
    assert_eq!(
        cached.metadata.annotations, None,
        "every kind is transformed"
    );
    assert_eq!(cached.metadata.managed_fields, None);

    let mut changed = created;
    changed.data = Some([("k".to_owned(), "v2".to_owned())].into());
    api.replace("noisy", &pp, &changed).await.unwrap();
    until(
        "the watch to cache the update of noisy",
        || matches!(lister.get("noisy"), Ok(Some(c)) if c.data == changed.data),
    )
    .await;
    let cached = lister.get("noisy").unwrap().unwrap();
    assert_eq!(
        cached.metadata.managed_fields, None,
        "watched objects are transformed"
    );
    assert_eq!(cached.metadata.annotations, None);
}

#[tokio::test]
async fn a_custom_resync_applies_to_its_kind_only() {
    let server = FakeApiServer::start().await.unwrap();
    create_cm(&server, "default", "a").await;
    create_secret(&server, "s").await;
    let factory = SharedInformerFactory::builder(client(&server))
        .custom_resync::<ConfigMap>(Duration::from_secs(1))
        .build();
    let cm_updates = count_updates(&factory.informer_for::<ConfigMap>());
    let secret_updates = count_updates(&factory.informer_for::<Secret>());
    factory.start();
    within("the cache sync", factory.wait_for_cache_sync()).await;
    // Nothing is written after the sync, so every update is a resync.
    until("two ConfigMap resyncs", || {
        cm_updates.load(Ordering::SeqCst) >= 2
    })
    .await;
    assert_eq!(
        secret_updates.load(Ordering::SeqCst),
        0,
        "Secrets have no resync: none by default, and the custom period is ConfigMap's"
    );
}

#[tokio::test]
async fn a_zero_custom_resync_turns_the_default_off_for_its_kind() {
    let server = FakeApiServer::start().await.unwrap();
    create_cm(&server, "default", "a").await;
    create_secret(&server, "s").await;
    let factory = SharedInformerFactory::builder(client(&server))
        .resync(Duration::from_secs(1))
        .custom_resync::<Secret>(Duration::ZERO)
        .build();
    let cm_updates = count_updates(&factory.informer_for::<ConfigMap>());
    let secret_updates = count_updates(&factory.informer_for::<Secret>());
    factory.start();
    within("the cache sync", factory.wait_for_cache_sync()).await;
    until("two ConfigMap resyncs at the default period", || {
        cm_updates.load(Ordering::SeqCst) >= 2
    })
    .await;
    assert_eq!(
        secret_updates.load(Ordering::SeqCst),
        0,
        "a zero custom period means no resync for Secrets"
    );
}
