//! Both `Foo` versions through the in-memory API server calling this example's conversion
//! webhook: the runtime's `WebhookServer` serving the generated conversions with the renamed
//! field's hooks, as `sample-conversion-webhook` does. Created in `v1alpha1`, stored in
//! `v1beta1` (the hub), read, listed, watched and patched through the other version; with the
//! webhook gone, the server's 500.

use std::time::{Duration, Instant};

use base64::Engine as _;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::api::{
    ApiResource, DynamicObject, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube_codegen_runtime::conversion::{Converter, WebhookServer};
use kube_fake_apiserver::FakeApiServer;
use serde_json::{Value, json};

fn resource(version: &str) -> ApiResource {
    ApiResource {
        group: "samplecontroller.k8s.io".into(),
        version: version.into(),
        api_version: format!("samplecontroller.k8s.io/{version}"),
        kind: "Foo".into(),
        plural: "foos".into(),
    }
}

fn foos(client: &kube::Client, version: &str) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), "default", &resource(version))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_versions_through_the_generated_conversions_and_the_runtime_webhook() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ck = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).expect("cert");
    let (cert, key) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
    std::fs::write(&cert, ck.cert.pem()).expect("write cert");
    std::fs::write(&key, ck.signing_key.serialize_pem()).expect("write key");
    let mut converter = Converter::new();
    converter.register(sample_controller::conversion::foo_conversion());
    let webhook = WebhookServer::builder(converter)
        .listen("127.0.0.1:0".parse().expect("addr"))
        .tls_files(&cert, &key)
        .bind()
        .await
        .expect("webhook binds");
    let addr = webhook.local_addr();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(webhook.serve(async {
        let _ = stopped.await;
    }));

    let mut crd: Value = serde_saphyr::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/artifacts/crd-conversion.yaml"
        ))
        .expect("crd-conversion.yaml"),
    )
    .expect("crd parses");
    crd["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
    "conversionReviewVersions": ["v1"],
    "clientConfig": {
        "url": format!("https://{addr}/convert"),
        "caBundle": base64::engine::general_purpose::STANDARD.encode(ck.cert.pem()),
    }}});
    let srv = FakeApiServer::start().await.expect("server starts");
    let client = srv.client();
    let crd: CustomResourceDefinition = serde_json::from_value(crd).expect("crd type");
    Api::<CustomResourceDefinition>::all(client.clone())
        .create(&PostParams::default(), &crd)
        .await
        .expect("CRD created");

    let alpha = foos(&client, "v1alpha1");
    let beta = foos(&client, "v1beta1");
    let old_style: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo",
        "metadata": {"name": "old-style", "namespace": "default"},
        "spec": {"deploymentName": "old-style", "replicas": 2}
    }))
    .expect("object");
    // The CRD is served once established.
    let deadline = Instant::now() + Duration::from_secs(20);
    let created = loop {
        match alpha.create(&PostParams::default(), &old_style).await {
            Ok(o) => break o,
            Err(e) if Instant::now() < deadline => {
                let _ = e;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("create through v1alpha1: {e}"),
        }
    };
    assert_eq!(created.data["spec"]["deploymentName"], "old-style");

    // Stored in the hub: read and listed through v1beta1 with the field renamed.
    let hub = beta.get("old-style").await.expect("get v1beta1");
    assert_eq!(
        hub.types.as_ref().map(|t| t.api_version.as_str()),
        Some("samplecontroller.k8s.io/v1beta1")
    );
    assert_eq!(hub.data["spec"]["deployment"]["name"], "old-style");
    assert_eq!(hub.data["spec"]["replicas"], 2);
    assert!(hub.data["spec"].get("deploymentName").is_none());
    let listed = beta.list(&Default::default()).await.expect("list v1beta1");
    assert_eq!(listed.items.len(), 1);
    assert_eq!(
        listed.items[0].data["spec"]["deployment"]["name"],
        "old-style"
    );

    // Watched through v1alpha1, patched through v1alpha1, read back in the hub.
    let mut events = alpha
        .watch(&WatchParams::default(), "0")
        .await
        .expect("watch v1alpha1")
        .boxed();
    match events.try_next().await.expect("watch event") {
        Some(WatchEvent::Added(o)) => assert_eq!(o.data["spec"]["deploymentName"], "old-style"),
        other => panic!("expected the Foo added in v1alpha1, got {other:?}"),
    }
    alpha
        .patch(
            "old-style",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"deploymentName": "renamed", "replicas": 3}})),
        )
        .await
        .expect("merge patch through v1alpha1");
    match events.try_next().await.expect("watch event") {
        Some(WatchEvent::Modified(o)) => assert_eq!(o.data["spec"]["deploymentName"], "renamed"),
        other => panic!("expected the patched Foo in v1alpha1, got {other:?}"),
    }
    let hub = beta.get("old-style").await.expect("get v1beta1");
    assert_eq!(hub.data["spec"]["deployment"]["name"], "renamed");
    assert_eq!(hub.data["spec"]["replicas"], 3);

    // The webhook gone: the server's 500, and the storage version still reads.
    let _ = stop.send(());
    serving.await.expect("webhook stops");
    let err = alpha.get("old-style").await.expect_err("no webhook");
    match err {
        kube::Error::Api(s) => {
            assert_eq!(s.code, 500, "{s:?}");
            assert!(
                s.message.starts_with(&format!(
                    "conversion webhook for samplecontroller.k8s.io/v1beta1, Kind=Foo failed: Post \"https://{addr}/convert?timeout=30s\""
                )),
                "{}",
                s.message
            );
        }
        other => panic!("expected the server's 500, got {other}"),
    }
    assert_eq!(
        beta.get("old-style")
            .await
            .expect("v1beta1 needs no webhook")
            .data["spec"]["replicas"],
        3
    );
}
