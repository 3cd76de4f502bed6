//! Helpers shared by the integration tests: raw requests through a `kube::Client`, watch readers, a test CRD.
#![allow(dead_code)]

pub mod kubectl;

use std::time::Duration;

use http_body_util::BodyExt;
use kube_fake_apiserver::FakeApiServer;
use serde_json::{Value, json};

pub struct Resp {
    pub code: u16,
    pub body: Value,
    pub headers: http::HeaderMap,
}

/// One raw request; `ct` is the Content-Type of `body`.
pub async fn call(
    c: &kube::Client,
    method: &str,
    path: &str,
    ct: &str,
    body: Option<&Value>,
) -> Resp {
    call_accept(c, method, path, ct, body, "application/json").await
}

pub async fn call_accept(
    c: &kube::Client,
    method: &str,
    path: &str,
    ct: &str,
    body: Option<&Value>,
    accept: &str,
) -> Resp {
    let bytes = match body {
        Some(Value::String(s)) => s.clone().into_bytes(),
        Some(v) => serde_json::to_vec(v).unwrap(),
        None => Vec::new(),
    };
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", ct)
        .header("accept", accept)
        .body(kube::client::Body::from(bytes))
        .unwrap();
    let resp = c.send(req).await.expect("request sent");
    let code = resp.status().as_u16();
    let headers = resp.headers().clone();
    let raw = resp.into_body().collect().await.expect("body").to_bytes();
    let body = serde_json::from_slice(&raw)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&raw).into()));
    Resp {
        code,
        body,
        headers,
    }
}

pub async fn get(c: &kube::Client, path: &str) -> Resp {
    call(c, "GET", path, "application/json", None).await
}
/// A GET asking for `accept` (Table, PartialObjectMetadata, protobuf, ...).
pub async fn get_accept(c: &kube::Client, path: &str, accept: &str) -> Resp {
    call_accept(c, "GET", path, "", None, accept).await
}
pub async fn post(c: &kube::Client, path: &str, body: Value) -> Resp {
    call(c, "POST", path, "application/json", Some(&body)).await
}
pub async fn put(c: &kube::Client, path: &str, body: Value) -> Resp {
    call(c, "PUT", path, "application/json", Some(&body)).await
}
pub async fn patch(c: &kube::Client, path: &str, ct: &str, body: Value) -> Resp {
    call(c, "PATCH", path, ct, Some(&body)).await
}
pub async fn delete(c: &kube::Client, path: &str) -> Resp {
    call(c, "DELETE", path, "application/json", None).await
}
/// A DELETE with `DeleteOptions` in the body.
pub async fn delete_with(c: &kube::Client, path: &str, options: Value) -> Resp {
    call(c, "DELETE", path, "application/json", Some(&options)).await
}
pub async fn merge_patch(c: &kube::Client, path: &str, body: Value) -> Resp {
    patch(c, path, "application/merge-patch+json", body).await
}
pub async fn json_patch(c: &kube::Client, path: &str, ops: Value) -> Resp {
    patch(c, path, "application/json-patch+json", ops).await
}
/// Merge patch of `spec.replicas`: the usual spec change (it bumps the generation).
pub async fn patch_replicas(c: &kube::Client, path: &str, replicas: i64) -> Resp {
    merge_patch(c, path, json!({"spec": {"replicas": replicas}})).await
}
/// Server-side apply of a YAML manifest.
pub async fn apply(c: &kube::Client, path: &str, yaml: &str) -> Resp {
    let body = Value::String(yaml.into());
    call(
        c,
        "PATCH",
        path,
        "application/apply-patch+yaml",
        Some(&body),
    )
    .await
}

/// `metadata.resourceVersion` of an object or a list.
pub fn rv_of(v: &Value) -> String {
    v["metadata"]["resourceVersion"]
        .as_str()
        .expect("resourceVersion is a string")
        .to_string()
}

/// A failure `Status` body with this code and reason, shaped as the real server sends it.
pub fn assert_status(r: &Resp, code: u16, reason: &str) {
    assert_eq!(r.code, code, "{}", r.body);
    assert_eq!(r.body["kind"], "Status", "{}", r.body);
    assert_eq!(r.body["apiVersion"], "v1");
    assert_eq!(r.body["status"], "Failure");
    assert_eq!(r.body["code"], code);
    assert_eq!(r.body["reason"], reason, "{}", r.body);
    assert_eq!(r.body["metadata"], json!({}));
}

/// Reads watch events until `max` arrived, the stream ended, or `wait` passed.
/// Returns the events and whether the stream ended by itself.
pub async fn watch(c: &kube::Client, path: &str, max: usize, wait: Duration) -> (Vec<Value>, bool) {
    let req = http::Request::builder()
        .uri(path)
        .body(kube::client::Body::empty())
        .unwrap();
    let resp = c.send(req).await.expect("watch request");
    assert_eq!(resp.status().as_u16(), 200, "watch {path}");
    let mut body = resp.into_body();
    let mut buf = Vec::new();
    let mut events = Vec::new();
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        if events.len() >= max {
            return (events, false);
        }
        let frame = match tokio::time::timeout_at(deadline, body.frame()).await {
            Err(_) => return (events, false),
            Ok(None) => return (events, true),
            Ok(Some(f)) => f.expect("watch frame"),
        };
        if let Ok(data) = frame.into_data() {
            buf.extend_from_slice(&data);
            while let Some(pos) = buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = buf.drain(..=pos).collect();
                events.push(serde_json::from_slice(&line).expect("watch line is JSON"));
            }
        }
    }
}

/// Runs [`watch`] on a task, so the test can change objects meanwhile, and gives it a moment to open.
pub async fn watch_in_background(
    c: &kube::Client,
    path: String,
    max: usize,
    wait: Duration,
) -> tokio::task::JoinHandle<(Vec<Value>, bool)> {
    let c = c.clone();
    let task = tokio::spawn(async move { watch(&c, &path, max, wait).await });
    tokio::time::sleep(Duration::from_millis(50)).await;
    task
}

pub fn types(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["type"].as_str().unwrap_or("").to_string())
        .collect()
}

pub fn names(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            e["object"]["metadata"]["name"]
                .as_str()
                .unwrap_or("")
                .to_string()
        })
        .collect()
}

/// `widgets.example.com`: namespaced, v1 (storage; status + scale; printer column) and v2 (served).
pub fn widget_crd() -> Value {
    let schema = json!({
        "type": "object",
        "properties": {
            "spec": {"type": "object", "properties": {
                "replicas": {"type": "integer", "maximum": 10},
                "color": {"type": "string"},
                "selector": {"type": "string"}
            }},
            "status": {"type": "object", "properties": {
                "replicas": {"type": "integer"},
                "phase": {"type": "string"}
            }}
        }
    });
    let version = |name: &str, storage: bool| {
        json!({
            "name": name, "served": true, "storage": storage,
            "schema": {"openAPIV3Schema": schema},
            "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}},
            "additionalPrinterColumns": [{"name": "Color", "type": "string", "jsonPath": ".spec.color"}]
        })
    };
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"], "categories": ["all"]},
            "versions": [version("v1", true), version("v2", false)]
        }
    })
}

pub const WIDGETS: &str = "/apis/example.com/v1/namespaces/default/widgets";

pub fn widget(name: &str, replicas: i64) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name, "labels": {"app": "w"}},
           "spec": {"replicas": replicas, "color": "red"}})
}

/// A server with the widget CRD registered, and an in-process client.
pub async fn with_widgets() -> (FakeApiServer, kube::Client) {
    let s = FakeApiServer::start().await.expect("server starts");
    s.register_crd(widget_crd()).expect("CRD registers");
    let c = s.in_process_client();
    (s, c)
}

/// How long [`eventually`] waits for the server's controllers.
pub const EVENTUALLY: Duration = Duration::from_secs(10);

/// Polls `check` every 20 ms until it returns `Some`; fails naming `what` after [`EVENTUALLY`].
pub async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + EVENTUALLY;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {EVENTUALLY:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
