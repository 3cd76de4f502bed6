//! The two CRD artifacts (issue 28 item 8): the default install (`artifacts/crd.yaml`) serves
//! one version, so a Foo written as upstream's sample-controller documents it keeps every
//! field; the two-version CRD (`artifacts/crd-conversion.yaml`, what `build.rs` generates
//! from) converts through the webhook, and its `v1alpha1` is the default install's.

// The kind is called Foo, so `foo` is the natural name, not a placeholder.
#![allow(clippy::disallowed_names)]

use kube::api::{ListParams, PostParams};
use kube_fake_apiserver::FakeApiServer;
use sample_controller::Clientset;
use sample_controller::samplecontroller::v1alpha1::Foo;
use serde_json::Value;

fn artifact(name: &str) -> Value {
    let path = format!("{}/artifacts/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn versions(crd: &Value) -> Vec<Value> {
    crd["spec"]["versions"]
        .as_array()
        .expect("versions")
        .clone()
}

#[test]
fn the_default_crd_serves_one_version_and_it_is_the_generated_v1alpha1() {
    let default = artifact("crd.yaml");
    let served: Vec<_> = versions(&default)
        .into_iter()
        .filter(|v| v["served"] == Value::Bool(true))
        .collect();
    assert_eq!(
        served.len(),
        1,
        "one served version: nothing to convert or prune"
    );
    assert_eq!(served[0]["name"], "v1alpha1");
    assert_eq!(served[0]["storage"], Value::Bool(true));

    let two = artifact("crd-conversion.yaml");
    assert_eq!(two["spec"]["conversion"]["strategy"], "Webhook");
    let mut alpha = versions(&two)
        .into_iter()
        .find(|v| v["name"] == "v1alpha1")
        .expect("crd-conversion.yaml serves v1alpha1");
    // The same version but for where it is stored: the generated v1alpha1 types are the
    // default install's.
    alpha["storage"] = Value::Bool(true);
    assert_eq!(alpha, served[0]);
    assert_eq!(two["spec"]["names"], default["spec"]["names"]);
    assert_eq!(two["spec"]["group"], default["spec"]["group"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v1alpha1_foo_written_through_the_default_install_keeps_its_deployment_name() {
    let server = FakeApiServer::start().await.expect("server starts");
    server
        .register_crd(artifact("crd.yaml"))
        .expect("CRD registers");
    let foos = Clientset::new(server.client())
        .samplecontroller_v1alpha1()
        .foos("default");
    // upstream's artifacts/examples/example-foo.yaml, as this example ships it
    let text = include_str!("../artifacts/example-foo.yaml");
    let foo: Foo = serde_saphyr::from_str(text).expect("example-foo.yaml");
    assert_eq!(
        foo.spec.as_ref().and_then(|s| s.deployment_name.as_deref()),
        Some("example-foo")
    );

    let created = foos
        .create(&PostParams::default(), &foo)
        .await
        .expect("created");
    let read = foos.get("example-foo").await.expect("read back");
    let listed = foos.list(&ListParams::default()).await.expect("listed");
    for (what, foo) in [
        ("created", &created),
        ("read", &read),
        ("listed", &listed.items[0]),
    ] {
        let spec = foo
            .spec
            .as_ref()
            .unwrap_or_else(|| panic!("{what}: no spec"));
        assert_eq!(
            spec.deployment_name.as_deref(),
            Some("example-foo"),
            "{what}: {foo:?}"
        );
        assert_eq!(spec.replicas, Some(1), "{what}: {foo:?}");
    }
}
