//! The cost of a create and a list does not grow with the number of kinds served. Ignored by
//! default (it measures, it does not check); run it with
//! `cargo test -p kube-fake-apiserver --release --test all -- request_cost:: --ignored --nocapture`.
use std::time::{Duration, Instant};

use kube_fake_apiserver::{FakeApiServer, KindSpec};
use serde_json::json;

const CREATES: usize = 400;
const LISTS: usize = 200;

/// Median of per-request wall times.
fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// A server serving `kinds` kinds (ConfigMaps among them, the rest filler kinds), and the median
/// create and list latency of ConfigMaps through it.
async fn measure(kinds: usize) -> (Duration, Duration) {
    let srv = FakeApiServer::builder()
        .builtins(false)
        .start()
        .await
        .expect("server starts");
    let mut cm = KindSpec::namespaced("", "v1", "ConfigMap", "configmaps");
    cm.status = false;
    cm.generation = false;
    srv.register_kind(cm).expect("configmaps");
    // The CRD resource is always served: `kinds` counts it.
    for i in 0..kinds.saturating_sub(2) {
        srv.register_kind(KindSpec::namespaced(
            "bench.example.com",
            "v1",
            &format!("Filler{i}"),
            &format!("filler{i}s"),
        ))
        .expect("filler kind");
    }
    let client = srv.client();
    let path = "/api/v1/namespaces/default/configmaps";
    let mut creates = Vec::with_capacity(CREATES);
    for i in 0..CREATES {
        let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
                          "metadata": {"name": format!("cm-{i}")}, "data": {"k": "v"}});
        let req = http::Request::post(path)
            .header("Content-Type", "application/json")
            .body(serde_json::to_vec(&body).unwrap())
            .unwrap();
        let t = Instant::now();
        client.request_text(req).await.expect("created");
        creates.push(t.elapsed());
    }
    let mut lists = Vec::with_capacity(LISTS);
    for _ in 0..LISTS {
        let req = http::Request::get(format!("{path}?limit=50"))
            .body(Vec::new())
            .unwrap();
        let t = Instant::now();
        client.request_text(req).await.expect("listed");
        lists.push(t.elapsed());
    }
    srv.shutdown().await;
    (median(creates), median(lists))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "measures request latency; run with --ignored --nocapture"]
async fn request_cost_does_not_grow_with_kinds() {
    // Warm up (the first server pays for lazy statics).
    measure(10).await;
    for kinds in [10, 70, 10, 70] {
        let (create, list) = measure(kinds).await;
        println!("kinds={kinds:3} create_median={create:?} list50_median={list:?}");
    }
}
