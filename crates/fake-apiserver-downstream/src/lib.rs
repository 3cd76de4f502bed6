//! A stand-in for a crate that tests its controller against `kube-fake-apiserver` with default
//! features off: the library alone, without the binary's command-line dependencies.
//! `tests/dependencies.rs` checks that claim on the dependency tree.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use kube_fake_apiserver::FakeApiServer;

/// Starts a server, creates a ConfigMap through `kube::Api` and reads back its name.
pub async fn create_one_config_map() -> Result<String, Box<dyn std::error::Error>> {
    let server = FakeApiServer::start().await?;
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let cm: ConfigMap = config_map("hello");
    let created = api.create(&PostParams::default(), &cm).await?;
    server.shutdown().await;
    Ok(created.metadata.name.unwrap_or_default())
}

fn config_map(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        data: Some([("greeting".to_string(), "hi".to_string())].into()),
        ..Default::default()
    }
}
