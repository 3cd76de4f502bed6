//! Helpers shared by the integration tests that run against `kube-fake-apiserver`.
#![allow(dead_code)] // each test module uses its own subset

pub mod foo;

use std::future::Future;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube_codegen_runtime::cache::ReflectorOptions;
use kube_fake_apiserver::FakeApiServer;

/// A client that does not retry by itself, so the runtime's own retries are what is tested.
pub fn client(server: &FakeApiServer) -> kube::Client {
    let mut config = server.client_config();
    config.default_retry = false;
    kube::Client::try_from(config).expect("client for a local server")
}

/// Reflector settings with fast retries, so tests do not wait out client-go's 800 ms backoff.
pub fn fast_reflector() -> ReflectorOptions {
    ReflectorOptions::default().backoff(Duration::from_millis(10), Duration::from_millis(50))
}

/// A config map named `name` with `data.k = value`.
pub fn cm(name: &str, value: &str) -> ConfigMap {
    let mut c = ConfigMap::default();
    c.metadata.name = Some(name.to_owned());
    c.data = Some([("k".to_owned(), value.to_owned())].into());
    c
}

/// How long a test waits for anything before it fails.
pub const DEADLINE: Duration = Duration::from_secs(10);

/// Runs `fut` for at most [`DEADLINE`]; on timeout fails the test naming `what` it waited for.
pub async fn within<T>(what: &str, fut: impl Future<Output = T>) -> T {
    within_for(DEADLINE, what, fut).await
}

/// Runs `fut` for at most `limit`; on timeout fails the test naming `what` it waited for.
pub async fn within_for<T>(limit: Duration, what: &str, fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(limit, fut)
        .await
        .unwrap_or_else(|_| panic!("timed out after {limit:?} waiting for {what}"))
}

/// Polls `check` every 10 ms until it holds; fails the test after 10 s, naming `what`.
pub async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + DEADLINE;
    while !check().await {
        assert!(tokio::time::Instant::now() < deadline, "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
