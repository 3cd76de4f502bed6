//! The shared informer factory against the in-memory API server.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::{Api, PostParams};
use kube::core::Selector;
use kube_codegen_runtime::SharedInformerFactory;
use kube_fake_apiserver::FakeApiServer;

mod support;
use support::{client, fast_reflector};

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
        Arc::ptr_eq(&cms.store(), &again.store()),
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
        names(cms.lister().list(&Selector::default())),
        ["default/a"]
    );
    let list_requests = server
        .requests()
        .iter()
        .filter(|r| r.verb == "list" && r.path == "/api/v1/configmaps")
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
    factory.wait_for_cache_sync().await;
    assert_eq!(names(cms.lister().list(&Selector::default())), ["other/b"]);
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
            .any(|r| r.verb == "list" && r.path == "/api/v1/namespaces/other/configmaps")
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
    factory.wait_for_cache_sync().await;
    let secrets = factory.informer_for::<Secret>();
    assert!(!secrets.has_synced());
    factory.start();
    factory.wait_for_cache_sync().await;
    assert!(secrets.has_synced());

    create_cm(&server, "default", "seen").await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while cms.store().get_by_key("default/seen").is_none() {
        assert!(tokio::time::Instant::now() < deadline, "event never cached");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    factory.shutdown();
    tokio::time::sleep(Duration::from_millis(50)).await;
    create_cm(&server, "default", "unseen").await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        cms.store().get_by_key("default/unseen").is_none(),
        "a stopped informer hears nothing"
    );
}
