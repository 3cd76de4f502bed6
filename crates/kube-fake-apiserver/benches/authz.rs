//! What authentication and RBAC add to a request: `GET` of one ConfigMap over HTTP, 2,000
//! times per run, 5 runs, with RBAC off, on for the admin (`system:masters`: no rule is
//! read), and on for a ServiceAccount allowed by a RoleBinding among 1,000 unrelated
//! RoleBindings and 100 ClusterRoleBindings (every binding is visited: the worst case of the
//! per-request scan). Prints min / median / max microseconds per request.
//!
//! `cargo bench -p kube-fake-apiserver --bench authz`
use std::time::Instant;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube_fake_apiserver::FakeApiServer;
use serde_json::json;

const REQUESTS: usize = 2_000;
const RUNS: usize = 5;

async fn per_request_us(client: kube::Client) -> Vec<f64> {
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    cms.get("c").await.expect("warm-up get");
    let mut out = Vec::new();
    for _ in 0..RUNS {
        let t = Instant::now();
        for _ in 0..REQUESTS {
            cms.get("c").await.expect("get");
        }
        out.push(t.elapsed().as_secs_f64() * 1e6 / REQUESTS as f64);
    }
    out.sort_by(f64::total_cmp);
    out
}

async fn create(client: &kube::Client, path: &str, body: serde_json::Value) {
    let req = http::Request::post(path)
        .header("content-type", "application/json")
        .body(body.to_string().into_bytes())
        .unwrap();
    client
        .request::<serde_json::Value>(req)
        .await
        .unwrap_or_else(|e| panic!("POST {path}: {e}"));
}

fn report(name: &str, xs: &[f64]) {
    println!(
        "{name}: min {:.1} / median {:.1} / max {:.1} us per request ({RUNS} runs of {REQUESTS})",
        xs[0],
        xs[xs.len() / 2],
        xs[xs.len() - 1]
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let off = FakeApiServer::start().await.unwrap();
    create(
        &off.client(),
        "/api/v1/namespaces/default/configmaps",
        json!({"metadata": {"name": "c"}}),
    )
    .await;
    report("rbac off", &per_request_us(off.client()).await);

    let on = FakeApiServer::builder().rbac(true).start().await.unwrap();
    let admin = on.client();
    create(
        &admin,
        "/api/v1/namespaces/default/configmaps",
        json!({"metadata": {"name": "c"}}),
    )
    .await;
    report("rbac on, admin", &per_request_us(admin.clone()).await);

    let rb = "/apis/rbac.authorization.k8s.io/v1";
    create(
        &admin,
        "/api/v1/namespaces/default/serviceaccounts",
        json!({"metadata": {"name": "sa"}}),
    )
    .await;
    create(
        &admin,
        &format!("{rb}/namespaces/default/roles"),
        json!({"metadata": {"name": "cm"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]}),
    )
    .await;
    for i in 0..1_000 {
        create(
            &admin,
            &format!("{rb}/namespaces/default/rolebindings"),
            json!({"metadata": {"name": format!("other-{i:04}")},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm"},
            "subjects": [{"kind": "User", "name": format!("user-{i}")}]}),
        )
        .await;
    }
    for i in 0..100 {
        create(&admin, &format!("{rb}/clusterrolebindings"), json!({"metadata": {"name": format!("other-{i:03}")},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "User", "name": format!("user-{i}")}]})).await;
    }
    // Sorted after every `other-*`: the allowing binding is the last one visited.
    create(
        &admin,
        &format!("{rb}/namespaces/default/rolebindings"),
        json!({"metadata": {"name": "zz-sa"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm"},
        "subjects": [{"kind": "ServiceAccount", "name": "sa"}]}),
    )
    .await;
    let tr: serde_json::Value = admin
        .request(
            http::Request::post("/api/v1/namespaces/default/serviceaccounts/sa/token")
                .header("content-type", "application/json")
                .body(b"{\"spec\":{}}".to_vec())
                .unwrap(),
        )
        .await
        .unwrap();
    let token = tr["status"]["token"].as_str().unwrap();
    let sa = kube::Client::try_from(on.client_config_with_token(token)).unwrap();
    report(
        "rbac on, ServiceAccount, 1,100 bindings",
        &per_request_us(sa).await,
    );
}
