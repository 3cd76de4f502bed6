//! Admission webhooks called as kube-apiserver 1.35 calls them: a small HTTPS webhook started
//! here (its rcgen certificate given as `caBundle`) denies, patches, warns, is slow or is not
//! there, and the server answers as the real one does (messages from
//! `admission/plugin/webhook/{errors,mutating,validating}`).
use crate::common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use common::{Resp, call, get, json_patch, merge_patch, post};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use kube_fake_apiserver::FakeApiServer;
use parking_lot::Mutex;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::{Value, json};

const CM: &str = "/api/v1/namespaces/default/configmaps";

/// The test webhook: what it does depends on the path it is called at.
/// `/allow`, `/deny`, `/label` (adds label `patched: yes` and a warning), `/count` (allows,
/// adds nothing), `/annotate` (adds an annotation once), `/slow` (answers after 3 s).
struct Webhook {
    addr: SocketAddr,
    ca_pem: String,
    /// (path, review) for every call.
    calls: Arc<Mutex<Vec<(String, Value)>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Webhook {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn patch_of(ops: Value) -> String {
    base64::engine::general_purpose::STANDARD.encode(ops.to_string())
}

async fn answer(path: &str, review: &Value) -> Value {
    let req = &review["request"];
    let mut response = json!({"uid": req["uid"], "allowed": true});
    match path {
        "/deny" => {
            response["allowed"] = json!(false);
            response["status"] = json!({"code": 403, "reason": "Forbidden", "message": "configmaps named bad are refused"});
        }
        "/label" => {
            let has_labels = req["object"]["metadata"]["labels"].is_object();
            let ops = if has_labels {
                json!([{"op": "add", "path": "/metadata/labels/patched", "value": "yes"}])
            } else {
                json!([{"op": "add", "path": "/metadata/labels", "value": {"patched": "yes"}}])
            };
            response["patchType"] = json!("JSONPatch");
            response["patch"] = json!(patch_of(ops));
            response["warnings"] = json!(["labelled by the test webhook"]);
            response["auditAnnotations"] = json!({"labelled": "patched"});
        }
        "/annotate" if req["object"]["metadata"]["annotations"]["annotated"].is_null() => {
            let ops = if req["object"]["metadata"]["annotations"].is_object() {
                json!([{"op": "add", "path": "/metadata/annotations/annotated", "value": "yes"}])
            } else {
                json!([{"op": "add", "path": "/metadata/annotations", "value": {"annotated": "yes"}}])
            };
            response["patchType"] = json!("JSONPatch");
            response["patch"] = json!(patch_of(ops));
        }
        "/slow" => tokio::time::sleep(Duration::from_secs(3)).await,
        "/baduid" => response["uid"] = json!("not-the-request"),
        _ => {}
    }
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})
}

impl Webhook {
    async fn start() -> Webhook {
        let ck = rcgen::generate_simple_self_signed(vec![
            "127.0.0.1".to_string(),
            "hooks.default.svc".to_string(),
        ])
        .unwrap();
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(ck.signing_key.serialize_der()));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![CertificateDer::from(ck.cert.der().to_vec())], key)
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let calls = Arc::new(Mutex::new(Vec::new()));
        let recorded = calls.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let (acceptor, recorded) = (acceptor.clone(), recorded.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(stream).await else {
                        return;
                    };
                    let svc = hyper::service::service_fn(
                        move |req: http::Request<hyper::body::Incoming>| {
                            let recorded = recorded.clone();
                            async move {
                                let path = req.uri().path().to_string();
                                let query = req.uri().query().unwrap_or("").to_string();
                                let body = req.into_body().collect().await?.to_bytes();
                                let review: Value =
                                    serde_json::from_slice(&body).unwrap_or_default();
                                let mut seen = review.clone();
                                seen["query"] = json!(query);
                                recorded.lock().push((path.clone(), seen));
                                let out = answer(&path, &review).await;
                                Ok::<_, hyper::Error>(
                                    http::Response::builder()
                                        .header("content-type", "application/json")
                                        .body(Full::new(Bytes::from(out.to_string())))
                                        .unwrap(),
                                )
                            }
                        },
                    );
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), svc)
                        .await;
                });
            }
        });
        Webhook {
            addr,
            ca_pem: ck.cert.pem(),
            calls,
            task,
        }
    }

    fn client_config(&self, path: &str) -> Value {
        json!({
            "url": format!("https://127.0.0.1:{}{path}", self.addr.port()),
            "caBundle": base64::engine::general_purpose::STANDARD.encode(&self.ca_pem),
        })
    }

    fn calls_to(&self, path: &str) -> Vec<Value> {
        self.calls
            .lock()
            .iter()
            .filter(|(p, _)| p == path)
            .map(|(_, r)| r.clone())
            .collect()
    }
}

/// A webhook entry on configmaps for `operations`.
fn hook(name: &str, client_config: Value, operations: Value, extra: Value) -> Value {
    let mut w = json!({
        "name": name,
        "clientConfig": client_config,
        "rules": [{"operations": operations, "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    });
    if let (Some(w), Some(extra)) = (w.as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            w.insert(k.clone(), v.clone());
        }
    }
    w
}

async fn configure(c: &kube::Client, kind: &str, name: &str, hooks: Vec<Value>) {
    let plural = match kind {
        "MutatingWebhookConfiguration" => "mutatingwebhookconfigurations",
        _ => "validatingwebhookconfigurations",
    };
    let r = post(
        c,
        &format!("/apis/admissionregistration.k8s.io/v1/{plural}"),
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
            "metadata": {"name": name}, "webhooks": hooks,
        }),
    )
    .await;
    assert_eq!(r.code, 201, "{kind} {name} created: {}", r.body);
}

fn configmap(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"app": "demo"}}, "data": {"a": "1"}})
}

fn warnings(r: &Resp) -> Vec<String> {
    r.headers
        .get_all("warning")
        .iter()
        .map(|v| v.to_str().unwrap_or("").to_string())
        .collect()
}

async fn server() -> (FakeApiServer, kube::Client) {
    let srv = FakeApiServer::start().await.expect("server starts");
    let c = srv.client();
    (srv, c)
}

#[tokio::test]
async fn a_validating_webhook_denies_with_the_servers_message() {
    let hook_server = Webhook::start().await;
    let (_srv, c) = server().await;
    configure(
        &c,
        "ValidatingWebhookConfiguration",
        "deny",
        vec![hook(
            "deny.example.com",
            hook_server.client_config("/deny"),
            json!(["CREATE"]),
            json!({"objectSelector": {"matchLabels": {"app": "demo"}}}),
        )],
    )
    .await;
    let r = post(&c, CM, configmap("bad")).await;
    assert_eq!(r.code, 403, "{}", r.body);
    assert_eq!(r.body["reason"], "Forbidden");
    assert_eq!(
        r.body["message"],
        "admission webhook \"deny.example.com\" denied the request: configmaps named bad are refused"
    );
    assert_eq!(
        get(&c, &format!("{CM}/bad")).await.code,
        404,
        "nothing stored"
    );

    // The review kube-apiserver sends.
    let review = hook_server
        .calls_to("/deny")
        .pop()
        .expect("the webhook was called");
    assert_eq!(review["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(review["query"], "timeout=10s");
    let req = &review["request"];
    assert_eq!(
        req["kind"],
        json!({"group": "", "version": "v1", "kind": "ConfigMap"})
    );
    assert_eq!(
        req["resource"],
        json!({"group": "", "version": "v1", "resource": "configmaps"})
    );
    assert_eq!(req["requestKind"], req["kind"]);
    assert_eq!(req["operation"], "CREATE");
    assert_eq!(req["namespace"], "default");
    assert_eq!(req["name"], "bad");
    assert_eq!(req["object"]["data"], json!({"a": "1"}));
    assert_eq!(req["oldObject"], Value::Null);
    assert_eq!(req["dryRun"], false);
    assert_eq!(req["options"]["kind"], "CreateOptions");
    assert_eq!(req["userInfo"]["username"], "system:admin");
    assert!(req["uid"].as_str().is_some_and(|u| !u.is_empty()));

    // The object selector: an object without the label is not sent.
    let mut plain = configmap("plain");
    plain["metadata"]["labels"] = json!({});
    assert_eq!(post(&c, CM, plain).await.code, 201);
    assert_eq!(hook_server.calls_to("/deny").len(), 1);
    // UPDATE is not in the rule: an update of a labelled object passes.
    let r = merge_patch(
        &c,
        &format!("{CM}/plain"),
        json!({"metadata": {"labels": {"app": "demo"}}}),
    )
    .await;
    assert_eq!(r.code, 200, "{}", r.body);
}

#[tokio::test]
async fn a_mutating_webhook_patches_and_warns_and_validation_sees_the_result() {
    let hook_server = Webhook::start().await;
    let (_srv, c) = server().await;
    configure(
        &c,
        "MutatingWebhookConfiguration",
        "label",
        vec![hook(
            "label.example.com",
            hook_server.client_config("/label"),
            json!(["CREATE", "UPDATE"]),
            json!({}),
        )],
    )
    .await;
    configure(
        &c,
        "ValidatingWebhookConfiguration",
        "count",
        vec![hook(
            "count.example.com",
            hook_server.client_config("/count"),
            json!(["*"]),
            json!({}),
        )],
    )
    .await;
    let r = post(&c, CM, configmap("cm")).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["metadata"]["labels"]["patched"], "yes");
    assert_eq!(
        warnings(&r),
        vec!["299 - \"labelled by the test webhook\"".to_string()]
    );
    let stored = get(&c, &format!("{CM}/cm")).await;
    assert_eq!(
        stored.body["metadata"]["labels"],
        json!({"app": "demo", "patched": "yes"})
    );
    // The validating webhook saw the patched, created object (with its uid).
    let seen = hook_server.calls_to("/count").pop().unwrap();
    assert_eq!(
        seen["request"]["object"]["metadata"]["labels"]["patched"],
        "yes"
    );
    assert!(seen["request"]["object"]["metadata"]["uid"].is_string());

    // An update: UPDATE with the old object; the mutating webhook labels again.
    let r = merge_patch(
        &c,
        &format!("{CM}/cm"),
        json!({"metadata": {"labels": {"patched": null}}, "data": {"b": "2"}}),
    )
    .await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["metadata"]["labels"]["patched"], "yes");
    let seen = hook_server.calls_to("/label").pop().unwrap();
    assert_eq!(seen["request"]["operation"], "UPDATE");
    assert_eq!(seen["request"]["options"]["kind"], "PatchOptions");
    assert_eq!(seen["request"]["oldObject"]["data"], json!({"a": "1"}));
    assert_eq!(
        seen["request"]["object"]["data"],
        json!({"a": "1", "b": "2"})
    );

    // A dry run calls the webhooks (side effects None) and stores nothing.
    let r = call(
        &c,
        "POST",
        &format!("{CM}?dryRun=All"),
        "application/json",
        Some(&configmap("dry")),
    )
    .await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["metadata"]["labels"]["patched"], "yes");
    assert_eq!(
        hook_server.calls_to("/count").pop().unwrap()["request"]["dryRun"],
        true
    );
    assert_eq!(get(&c, &format!("{CM}/dry")).await.code, 404);

    // DELETE reaches the validating webhook with the old object.
    let r = call(&c, "DELETE", &format!("{CM}/cm"), "application/json", None).await;
    assert_eq!(r.code, 200, "{}", r.body);
    let seen = hook_server.calls_to("/count").pop().unwrap();
    assert_eq!(seen["request"]["operation"], "DELETE");
    assert_eq!(seen["request"]["object"], Value::Null);
    assert_eq!(seen["request"]["oldObject"]["metadata"]["name"], "cm");
    assert_eq!(seen["request"]["options"]["kind"], "DeleteOptions");
}

#[tokio::test]
async fn webhook_calls_are_annotated_on_the_audit_event() {
    let hook_server = Webhook::start().await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.log");
    // Metadata for ConfigMaps in `default`, Request in `team`: the patch annotation is a
    // Request-level one.
    let policy = "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Request\n  namespaces: [team]\n- level: Metadata\n  resources: [{group: '', resources: [configmaps]}]\n";
    let srv = FakeApiServer::builder()
        .audit(policy, &log)
        .start()
        .await
        .expect("server starts");
    let c = srv.client();
    configure(
        &c,
        "MutatingWebhookConfiguration",
        "labels",
        vec![hook(
            "label.example.com",
            hook_server.client_config("/label"),
            json!(["CREATE"]),
            json!({}),
        )],
    )
    .await;
    // Webhooks nobody answers, under `Ignore`: each leaves a failed-open annotation.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let down = json!({
        "url": format!("https://127.0.0.1:{closed}/x"),
        "caBundle": base64::engine::general_purpose::STANDARD.encode(&hook_server.ca_pem),
    });
    let ignore = json!({"failurePolicy": "Ignore"});
    for (kind, name) in [
        ("MutatingWebhookConfiguration", "mdown.example.com"),
        ("ValidatingWebhookConfiguration", "vdown.example.com"),
    ] {
        let h = hook(name, down.clone(), json!(["CREATE"]), ignore.clone());
        configure(&c, kind, "z-down", vec![h]).await;
    }
    assert_eq!(post(&c, CM, configmap("audited")).await.code, 201);
    assert_eq!(
        post(
            &c,
            "/api/v1/namespaces",
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
        )
        .await
        .code,
        201
    );
    assert_eq!(
        post(
            &c,
            "/api/v1/namespaces/team/configmaps",
            configmap("audited")
        )
        .await
        .code,
        201
    );
    let events: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|e: &Value| e["verb"] == "create" && e["objectRef"]["resource"] == "configmaps")
        .collect();
    assert_eq!(events.len(), 2, "{events:#?}");
    let mutation =
        json!({"configuration": "labels", "webhook": "label.example.com", "mutated": true});
    for e in &events {
        let a = &e["annotations"];
        assert_eq!(a["label.example.com/labelled"], "patched", "{e:#}");
        let m: Value = serde_json::from_str(
            a["mutation.webhook.admission.k8s.io/round_0_index_0"]
                .as_str()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(m, mutation);
        // The second mutating webhook (index 1, in configuration-name order) failed open.
        assert_eq!(
            a["failed-open.mutation.webhook.admission.k8s.io/round_0_index_1"],
            "mdown.example.com"
        );
        let m: Value = serde_json::from_str(
            a["mutation.webhook.admission.k8s.io/round_0_index_1"]
                .as_str()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(m["mutated"], false);
        assert_eq!(
            a["failed-open.validating.webhook.admission.k8s.io/round_0_index_0"],
            "vdown.example.com"
        );
    }
    assert!(
        events[0]["annotations"]
            .get("patch.webhook.admission.k8s.io/round_0_index_0")
            .is_none(),
        "Metadata level"
    );
    let patch: Value = serde_json::from_str(
        events[1]["annotations"]["patch.webhook.admission.k8s.io/round_0_index_0"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        patch,
        json!({"configuration": "labels", "webhook": "label.example.com", "patchType": "JSONPatch",
               "patch": [{"op": "add", "path": "/metadata/labels/patched", "value": "yes"}]})
    );
}

#[tokio::test]
async fn if_needed_webhooks_are_reinvoked_after_a_later_change() {
    let hook_server = Webhook::start().await;
    let (_srv, c) = server().await;
    // "a-..." sorts first: it runs, then "b-..." changes the object, so "a-..." runs again.
    configure(
        &c,
        "MutatingWebhookConfiguration",
        "a-count",
        vec![hook(
            "count.example.com",
            hook_server.client_config("/count"),
            json!(["CREATE"]),
            json!({"reinvocationPolicy": "IfNeeded"}),
        )],
    )
    .await;
    configure(
        &c,
        "MutatingWebhookConfiguration",
        "b-annotate",
        vec![hook(
            "annotate.example.com",
            hook_server.client_config("/annotate"),
            json!(["CREATE"]),
            json!({"reinvocationPolicy": "IfNeeded"}),
        )],
    )
    .await;
    let r = post(&c, CM, configmap("cm")).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["metadata"]["annotations"]["annotated"], "yes");
    let counted = hook_server.calls_to("/count");
    assert_eq!(counted.len(), 2, "reinvoked once");
    assert_eq!(
        counted[1]["request"]["object"]["metadata"]["annotations"]["annotated"],
        "yes"
    );
    // The webhook that made the change is not reinvoked for its own change.
    assert_eq!(hook_server.calls_to("/annotate").len(), 1);
}

#[tokio::test]
async fn failures_follow_the_failure_policy() {
    let hook_server = Webhook::start().await;
    let (_srv, c) = server().await;
    // Nothing listens on a port just freed.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let down = json!({
        "url": format!("https://127.0.0.1:{closed}/x"),
        "caBundle": base64::engine::general_purpose::STANDARD.encode(&hook_server.ca_pem),
    });
    configure(
        &c,
        "ValidatingWebhookConfiguration",
        "down-ignore",
        vec![hook(
            "ignore.example.com",
            down.clone(),
            json!(["CREATE"]),
            json!({"failurePolicy": "Ignore"}),
        )],
    )
    .await;
    assert_eq!(post(&c, CM, configmap("passes")).await.code, 201);

    configure(
        &c,
        "ValidatingWebhookConfiguration",
        "down-fail",
        vec![hook(
            "fail.example.com",
            down,
            json!(["CREATE"]),
            json!({"failurePolicy": "Fail"}),
        )],
    )
    .await;
    let r = post(&c, CM, configmap("refused")).await;
    assert_eq!(r.code, 500, "{}", r.body);
    assert_eq!(r.body["reason"], "InternalError");
    assert_eq!(
        r.body["message"],
        format!(
            "Internal error occurred: failed calling webhook \"fail.example.com\": failed to call webhook: Post \"https://127.0.0.1:{closed}/x?timeout=10s\": dial tcp 127.0.0.1:{closed}: connect: connection refused"
        )
    );
}

#[tokio::test]
async fn a_slow_webhook_times_out() {
    let hook_server = Webhook::start().await;
    let (_srv, c) = server().await;
    configure(
        &c,
        "ValidatingWebhookConfiguration",
        "slow",
        vec![hook(
            "slow.example.com",
            hook_server.client_config("/slow"),
            json!(["CREATE"]),
            json!({"timeoutSeconds": 1}),
        )],
    )
    .await;
    let r = post(&c, CM, configmap("late")).await;
    assert_eq!(r.code, 500, "{}", r.body);
    assert_eq!(
        r.body["message"],
        format!(
            "Internal error occurred: failed calling webhook \"slow.example.com\": failed to call webhook: Post \"https://127.0.0.1:{}/slow?timeout=1s\": context deadline exceeded",
            hook_server.addr.port()
        )
    );
    assert_eq!(hook_server.calls_to("/slow")[0]["query"], "timeout=1s");
}

#[tokio::test]
async fn match_conditions_and_namespace_selectors_pick_the_requests() {
    let hook_server = Webhook::start().await;
    let (_srv, c) = server().await;
    assert_eq!(
        post(&c, "/api/v1/namespaces", json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "guarded", "labels": {"guard": "on"}}})).await.code,
        201
    );
    configure(
        &c,
        "ValidatingWebhookConfiguration",
        "deny",
        vec![hook(
            "deny.example.com",
            hook_server.client_config("/deny"),
            json!(["CREATE"]),
            json!({
                "namespaceSelector": {"matchExpressions": [{"key": "guard", "operator": "In", "values": ["on"]}]},
                "matchConditions": [{"name": "not-exempt", "expression": "!has(object.metadata.annotations) || !('exempt' in object.metadata.annotations)"}],
            }),
        )],
    )
    .await;
    // Outside the selected namespace: not called.
    assert_eq!(post(&c, CM, configmap("a")).await.code, 201);
    let guarded = "/api/v1/namespaces/guarded/configmaps";
    assert_eq!(post(&c, guarded, configmap("b")).await.code, 403);
    let mut exempt = configmap("c");
    exempt["metadata"]["annotations"] = json!({"exempt": "yes"});
    assert_eq!(post(&c, guarded, exempt).await.code, 201);
    assert_eq!(hook_server.calls_to("/deny").len(), 1);
}

const VAP: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies";
const VAPB: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings";

async fn policy(c: &kube::Client, name: &str, spec: Value, binding: Value) {
    let r = post(
        c,
        VAP,
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy", "metadata": {"name": name}, "spec": spec}),
    )
    .await;
    assert_eq!(r.code, 201, "policy {name}: {}", r.body);
    let r = post(
        c,
        VAPB,
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": format!("{name}-binding")}, "spec": binding}),
    )
    .await;
    assert_eq!(r.code, 201, "binding {name}: {}", r.body);
}

fn configmap_rules() -> Value {
    json!({"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["configmaps"]}]})
}

#[tokio::test]
async fn a_validating_admission_policy_with_params_denies_as_the_server_does() {
    let (_srv, c) = server().await;
    policy(
        &c,
        "max-keys",
        json!({
            "failurePolicy": "Fail",
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConstraints": {
                "resourceRules": configmap_rules()["resourceRules"],
                "excludeResourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["*"], "resources": ["configmaps"], "resourceNames": ["limits"]}],
            },
            "matchConditions": [{"name": "not-exempt", "expression": "!has(object.metadata.annotations) || !('exempt' in object.metadata.annotations)"}],
            "variables": [{"name": "count", "expression": "has(object.data) ? size(object.data) : 0"}],
            "validations": [{
                "expression": "variables.count <= int(params.data.max)",
                "messageExpression": "'at most ' + params.data.max + ' keys, got ' + string(variables.count)",
                "reason": "Forbidden",
            }],
        }),
        json!({
            "policyName": "max-keys",
            "validationActions": ["Deny"],
            "paramRef": {"name": "limits", "namespace": "default", "parameterNotFoundAction": "Deny"},
        }),
    )
    .await;
    // No params yet: the binding cannot be configured, and failurePolicy Fail denies.
    let r = post(&c, CM, configmap("early")).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(r.body["reason"], "Invalid");
    let inner = "ValidatingAdmissionPolicy 'max-keys' with binding 'max-keys-binding' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction";
    assert_eq!(
        r.body["message"],
        format!("configmaps \"early\" is forbidden: {inner}")
    );
    assert_eq!(r.body["details"]["causes"], json!([{"message": inner}]));

    // The params object itself is excluded by name.
    let mut limits = configmap("limits");
    limits["data"] = json!({"max": "2"});
    assert_eq!(post(&c, CM, limits).await.code, 201);

    let mut big = configmap("big");
    big["data"] = json!({"a": "1", "b": "2", "c": "3"});
    let r = post(&c, CM, big).await;
    assert_eq!(r.code, 403, "{}", r.body);
    assert_eq!(r.body["reason"], "Forbidden");
    assert_eq!(
        r.body["message"],
        "configmaps \"big\" is forbidden: ValidatingAdmissionPolicy 'max-keys' with binding 'max-keys-binding' denied request: at most 2 keys, got 3"
    );
    assert_eq!(post(&c, CM, configmap("small")).await.code, 201);
    // A match condition that is false leaves the object alone.
    let mut exempt = configmap("exempt");
    exempt["metadata"]["annotations"] = json!({"exempt": "yes"});
    exempt["data"] = json!({"a": "1", "b": "2", "c": "3"});
    assert_eq!(post(&c, CM, exempt).await.code, 201);
    // An update is judged too (the policy's rule names UPDATE).
    let r = merge_patch(
        &c,
        &format!("{CM}/small"),
        json!({"data": {"b": "2", "c": "3"}}),
    )
    .await;
    assert_eq!(r.code, 403, "{}", r.body);
}

#[tokio::test]
async fn policy_actions_warn_and_default_messages_follow_the_server() {
    let (_srv, c) = server().await;
    policy(
        &c,
        "team-label",
        json!({
            "matchConstraints": configmap_rules(),
            "validations": [{"expression": "has(object.metadata.labels) && 'team' in object.metadata.labels", "message": "a team label is expected"}],
        }),
        json!({"policyName": "team-label", "validationActions": ["Warn", "Audit"]}),
    )
    .await;
    let r = post(&c, CM, configmap("warned")).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(
        warnings(&r),
        vec!["299 - \"Validation failed for ValidatingAdmissionPolicy 'team-label' with binding 'team-label-binding': a team label is expected\"".to_string()]
    );

    // A validation without a message is named by its expression; the default reason is
    // Invalid (422). The binding's matchResources narrows the policy to one namespace.
    assert_eq!(
        post(&c, "/api/v1/namespaces", json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "strict", "labels": {"policy": "on"}}})).await.code,
        201
    );
    policy(
        &c,
        "no-x",
        json!({
            "matchConstraints": configmap_rules(),
            "validations": [{"expression": "!has(object.data.x)"}],
        }),
        json!({
            "policyName": "no-x",
            "validationActions": ["Deny"],
            "matchResources": {"namespaceSelector": {"matchLabels": {"policy": "on"}}},
        }),
    )
    .await;
    let mut x = configmap("x");
    x["data"] = json!({"x": "1"});
    assert_eq!(
        post(&c, CM, x.clone()).await.code,
        201,
        "default is not selected"
    );
    let r = post(&c, "/api/v1/namespaces/strict/configmaps", x).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "configmaps \"x\" is forbidden: ValidatingAdmissionPolicy 'no-x' with binding 'no-x-binding' denied request: failed expression: !has(object.data.x)"
    );
}

#[tokio::test]
async fn audit_annotation_errors_deny_by_the_failure_policy_whatever_the_actions() {
    let (_srv, c) = server().await;
    // Warn-only bindings: a failed validation only warns, but an audit annotation that cannot
    // be computed denies (`AuditAnnotationActionError` is appended to the denials directly).
    for (name, failure_policy, value) in [
        ("annotate-fail", "Fail", "'owner: ' + object.data.owner"),
        ("annotate-ignore", "Ignore", "'owner: ' + object.data.owner"),
        (
            "annotate-int",
            "Ignore",
            "has(object.data) ? size(object.data) : null",
        ),
    ] {
        policy(
            &c,
            name,
            json!({
                "failurePolicy": failure_policy,
                "matchConstraints": configmap_rules(),
                "matchConditions": [{"name": "mine", "expression": format!("object.metadata.name.startsWith('{name}')")}],
                "auditAnnotations": [
                    {"key": "empty", "valueExpression": "'  '"},
                    {"key": "none", "valueExpression": "null"},
                    {"key": "value", "valueExpression": value},
                ],
            }),
            json!({"policyName": name, "validationActions": ["Warn"]}),
        )
        .await;
    }
    let with_owner = |name: &str| {
        let mut cm = configmap(name);
        cm["data"] = json!({"owner": "team-a"});
        cm
    };
    // Values that compute (a string, or null for an object without data) admit.
    assert_eq!(post(&c, CM, with_owner("annotate-fail-1")).await.code, 201);
    let mut no_data = configmap("annotate-int-0");
    no_data.as_object_mut().map(|m| m.remove("data"));
    let r = post(&c, CM, no_data).await;
    assert_eq!(r.code, 201, "{}", r.body);

    let r = post(&c, CM, configmap("annotate-fail-2")).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "configmaps \"annotate-fail-2\" is forbidden: ValidatingAdmissionPolicy 'annotate-fail' with binding 'annotate-fail-binding' denied request: expression ''owner: ' + object.data.owner' resulted in error: no such key: owner"
    );
    // Under Ignore the evaluation error is left out...
    assert_eq!(post(&c, CM, configmap("annotate-ignore-1")).await.code, 201);
    // ...but a value of another type than string or null is an error under either policy.
    let r = post(&c, CM, with_owner("annotate-int-1")).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "configmaps \"annotate-int-1\" is forbidden: ValidatingAdmissionPolicy 'annotate-int' with binding 'annotate-int-binding' denied request: valueExpression 'has(object.data) ? size(object.data) : null' resulted in unsupported return type: int. Return type must be either string or null."
    );
}

#[tokio::test]
async fn the_status_controller_type_checks_policies_against_the_matched_kinds() {
    let (_srv, c) = common::with_widgets().await;
    let rules = json!({"resourceRules": [
        {"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["deployments"]},
        {"apiGroups": ["example.com"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["widgets", "widgets/status"]},
        // Wildcards are not type-checked.
        {"apiGroups": ["*"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]},
    ]});
    let r = post(
        &c,
        VAP,
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "typed"}, "spec": {
            "matchConstraints": rules.clone(),
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "variables": [{"name": "spec", "expression": "object.spec"}],
            "validations": [
                {"expression": "object.spec.replica > 1"},
                {"expression": "object.spec.replicas > 1 && object.metadata.labels['app'] == params.data.app",
                 "messageExpression": "'too few: ' + variables.spec.replicas"},
                {"expression": "has(params.data) && request.operation == 'CREATE' && namespaceObject.metadata.name != ''"},
            ],
        }}),
    )
    .await;
    assert_eq!(r.code, 201, "{}", r.body);
    let path = format!("{VAP}/typed");
    let observed = |generation: i64| {
        let c = c.clone();
        let path = path.clone();
        async move {
            let r = get(&c, &path).await;
            (r.body["status"]["observedGeneration"] == generation).then_some(r.body)
        }
    };
    let policy = common::eventually("the policy's status", || observed(1)).await;
    let both = |issue: &str| {
        format!("apps/v1, Kind=Deployment: {issue}\n\nexample.com/v1, Kind=Widget: {issue}\n")
    };
    assert_eq!(
        policy["status"]["typeChecking"],
        json!({"expressionWarnings": [
            {"fieldRef": "spec.validations[0].expression",
             "warning": both("ERROR: <input>:1:12: undefined field 'replica'\n | object.spec.replica > 1\n | ...........^")},
            {"fieldRef": "spec.validations[1].messageExpression",
             "warning": both("ERROR: <input>:1:13: found no matching overload for '_+_' applied to '(string, int)'\n | 'too few: ' + variables.spec.replicas\n | ............^")},
        ]})
    );
    let entry = policy["metadata"]["managedFields"]
        .as_array()
        .and_then(|m| m.iter().find(|e| e["subresource"] == "status"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        entry["manager"], "validatingadmissionpolicy-status-controller",
        "{entry}"
    );
    assert_eq!(entry["operation"], "Apply");

    // A corrected policy is checked again at its new generation: no warnings left.
    let r = json_patch(
        &c,
        &path,
        json!([
            {"op": "replace", "path": "/spec/validations/0/expression", "value": "object.spec.replicas > 1"},
            {"op": "remove", "path": "/spec/validations/1/messageExpression"},
        ]),
    )
    .await;
    assert_eq!(r.code, 200, "{}", r.body);
    let policy = common::eventually("the new generation's status", || observed(2)).await;
    // The applied `typeChecking: {}` takes the warnings away. (Whether the emptied map then
    // stays, as a typed Go status would show it, is left to the server-side apply model,
    // which drops a map emptied by removing what its applier no longer owns.)
    assert!(
        policy["status"]
            .pointer("/typeChecking/expressionWarnings")
            .is_none(),
        "{}",
        policy["status"]
    );
    // A policy without warnings from its first generation: `typeChecking: {}`.
    let r = post(
        &c,
        VAP,
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "clean"}, "spec": {
            "matchConstraints": rules,
            "validations": [{"expression": "object.spec.replicas > 1"}],
        }}),
    )
    .await;
    assert_eq!(r.code, 201, "{}", r.body);
    let clean = common::eventually("the clean policy's status", || {
        let c = c.clone();
        async move {
            let r = get(&c, &format!("{VAP}/clean")).await;
            (r.body["status"]["observedGeneration"] == 1).then_some(r.body)
        }
    })
    .await;
    assert_eq!(clean["status"]["typeChecking"], json!({}));
}

/// A Role allowing `verb` on `resource` in `default`, bound to the user `bob`.
async fn grant_bob(admin: &kube::Client, resource: &str, verb: &str) {
    let rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces/default";
    let name = format!("bob-{resource}-{verb}");
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": name, "namespace": "default"},
        "rules": [{"apiGroups": [""], "resources": [resource], "verbs": [verb]}]});
    assert_eq!(post(admin, &format!("{rbac}/roles"), role).await.code, 201);
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": name, "namespace": "default"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bob"}]});
    assert_eq!(
        post(admin, &format!("{rbac}/rolebindings"), binding)
            .await
            .code,
        201
    );
}

#[tokio::test]
async fn policies_ask_the_authorizer_about_the_requests_user() {
    let srv = FakeApiServer::builder()
        .rbac(true)
        .token_auth_file("bob-token,bob,1002\n")
        .start()
        .await
        .expect("server starts");
    let admin = srv.client();
    // bob may create ConfigMaps in default, and nothing else.
    grant_bob(&admin, "configmaps", "create").await;
    policy(
        &admin,
        "secret-readers",
        json!({
            "matchConstraints": configmap_rules(),
            "validations": [
                {"expression": "authorizer.requestResource.check('create').allowed()"},
                {"expression": "!authorizer.serviceAccount('kube-system', 'nobody').group('apps').resource('deployments').check('list').allowed()"},
                // `serviceAccount()` is `serviceaccount.UserInfo`: not in `system:authenticated`,
                // so `system:discovery`'s binding does not let it read `/api`.
                {"expression": "!authorizer.serviceAccount('kube-system', 'nobody').path('/api').check('get').allowed()"},
                {"expression": "authorizer.group('').resource('secrets').namespace(object.metadata.namespace).check('get').allowed()",
                 "messageExpression": "'only secret readers may write this: ' + authorizer.group('').resource('secrets').namespace('default').check('get').reason()"},
            ],
        }),
        json!({"policyName": "secret-readers", "validationActions": ["Deny"]}),
    )
    .await;
    // The admin (system:masters) passes every check.
    assert_eq!(post(&admin, CM, configmap("by-admin")).await.code, 201);
    let bob = kube::Client::try_from(srv.client_config_with_token("bob-token")).unwrap();
    let r = post(&bob, CM, configmap("by-bob")).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "configmaps \"by-bob\" is forbidden: ValidatingAdmissionPolicy 'secret-readers' with binding 'secret-readers-binding' denied request: only secret readers may write this:"
    );
    // With the right to read Secrets, bob passes.
    grant_bob(&admin, "secrets", "get").await;
    let r = post(&bob, CM, configmap("by-bob")).await;
    assert_eq!(r.code, 201, "{}", r.body);
}

#[tokio::test]
async fn equivalent_versions_are_converted_and_subresources_matched() {
    let hook_server = Webhook::start().await;
    let (_srv, c) = common::with_widgets().await;
    let widgets_rule = |versions: Value, resources: Value, ops: Value| json!([{"operations": ops, "apiGroups": ["example.com"], "apiVersions": versions, "resources": resources}]);
    let mut equivalent = hook(
        "label.example.com",
        hook_server.client_config("/label"),
        json!([]),
        json!({}),
    );
    equivalent["rules"] = widgets_rule(json!(["v2"]), json!(["widgets"]), json!(["CREATE"]));
    let mut exact = hook(
        "exact.example.com",
        hook_server.client_config("/count"),
        json!([]),
        json!({"matchPolicy": "Exact"}),
    );
    exact["rules"] = widgets_rule(json!(["v2"]), json!(["widgets"]), json!(["CREATE"]));
    configure(
        &c,
        "MutatingWebhookConfiguration",
        "widgets",
        vec![equivalent, exact],
    )
    .await;
    let mut status = hook(
        "status.example.com",
        hook_server.client_config("/count"),
        json!([]),
        json!({}),
    );
    status["rules"] = widgets_rule(
        json!(["*"]),
        json!(["*/status", "widgets/scale"]),
        json!(["UPDATE"]),
    );
    configure(
        &c,
        "ValidatingWebhookConfiguration",
        "widget-status",
        vec![status],
    )
    .await;

    let r = post(&c, common::WIDGETS, common::widget("w1", 1)).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["apiVersion"], "example.com/v1");
    assert_eq!(r.body["metadata"]["labels"]["patched"], "yes");
    let seen = hook_server.calls_to("/label").pop().unwrap();
    let req = &seen["request"];
    assert_eq!(
        req["kind"],
        json!({"group": "example.com", "version": "v2", "kind": "Widget"})
    );
    assert_eq!(
        req["requestKind"],
        json!({"group": "example.com", "version": "v1", "kind": "Widget"})
    );
    assert_eq!(req["resource"]["version"], "v2");
    assert_eq!(req["object"]["apiVersion"], "example.com/v2");
    assert!(
        hook_server.calls_to("/count").is_empty(),
        "Exact does not reach v1 requests"
    );

    // The main resource's update is not a status update.
    let w1 = format!("{}/w1", common::WIDGETS);
    assert_eq!(
        merge_patch(&c, &w1, json!({"spec": {"color": "blue"}}))
            .await
            .code,
        200
    );
    assert!(hook_server.calls_to("/count").is_empty());
    let r = merge_patch(
        &c,
        &format!("{w1}/status"),
        json!({"status": {"phase": "Ready"}}),
    )
    .await;
    assert_eq!(r.code, 200, "{}", r.body);
    let seen = hook_server.calls_to("/count").pop().unwrap();
    assert_eq!(seen["request"]["subResource"], "status");
    assert_eq!(seen["request"]["object"]["status"]["phase"], "Ready");
    assert_eq!(seen["request"]["oldObject"]["spec"]["color"], "blue");

    // /scale: the webhook sees autoscaling/v1 Scale objects.
    let r = merge_patch(&c, &format!("{w1}/scale"), json!({"spec": {"replicas": 3}})).await;
    assert_eq!(r.code, 200, "{}", r.body);
    let seen = hook_server.calls_to("/count").pop().unwrap();
    assert_eq!(seen["request"]["subResource"], "scale");
    assert_eq!(
        seen["request"]["kind"],
        json!({"group": "autoscaling", "version": "v1", "kind": "Scale"})
    );
    assert_eq!(seen["request"]["object"]["spec"]["replicas"], 3);
    assert_eq!(seen["request"]["oldObject"]["spec"]["replicas"], 1);
}

/// What a ConfigMap create costs with each kind of admission configured. Ignored by default (it
/// measures, it does not check); run it with `cargo test -p kube-fake-apiserver --release
/// --test all -- admission::measure --ignored --nocapture`. Prints min/median/max over 5 runs of
/// each run's median of 100 creates.
#[tokio::test]
#[ignore]
async fn measure_admission_cost() {
    const RUNS: usize = 5;
    const CREATES: usize = 100;
    let hook_server = Webhook::start().await;
    let setups = [
        "none",
        "webhook on another resource",
        "policy (allows)",
        "validating webhook (allows)",
        "mutating webhook (patches)",
    ];
    for (i, setup) in setups.iter().enumerate() {
        let (_srv, c) = server().await;
        match i {
            1 => {
                let mut h = hook("other.example.com", hook_server.client_config("/allow"), json!(["*"]), json!({}));
                h["rules"][0]["resources"] = json!(["secrets"]);
                configure(&c, "ValidatingWebhookConfiguration", "other", vec![h]).await;
            }
            2 => {
                policy(
                    &c,
                    "allow",
                    json!({"matchConstraints": configmap_rules(), "validations": [{"expression": "object.metadata.name.size() < 64"}]}),
                    json!({"policyName": "allow", "validationActions": ["Deny"]}),
                )
                .await
            }
            3 => {
                configure(&c, "ValidatingWebhookConfiguration", "allow", vec![hook("allow.example.com", hook_server.client_config("/allow"), json!(["*"]), json!({}))]).await
            }
            4 => {
                configure(&c, "MutatingWebhookConfiguration", "label", vec![hook("label.example.com", hook_server.client_config("/label"), json!(["*"]), json!({}))]).await
            }
            _ => {}
        }
        let mut medians = Vec::new();
        for run in 0..RUNS {
            let mut times = Vec::with_capacity(CREATES);
            for n in 0..CREATES {
                let t = std::time::Instant::now();
                let r = post(&c, CM, configmap(&format!("cm-{run}-{n}"))).await;
                times.push(t.elapsed());
                assert_eq!(r.code, 201);
            }
            times.sort();
            medians.push(times[CREATES / 2]);
        }
        medians.sort();
        println!(
            "{setup:<30} create median per run: min {:?} median {:?} max {:?}",
            medians[0],
            medians[RUNS / 2],
            medians[RUNS - 1]
        );
    }
}

/// The policy and binding of kubernetes.io's "Validating Admission Policy" page.
const DEMO_POLICY: &str = r#"apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: "demo-policy.example.com"
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups:   ["apps"]
      apiVersions: ["v1"]
      operations:  ["CREATE", "UPDATE"]
      resources:   ["deployments"]
  validations:
    - expression: "object.spec.replicas <= 5"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: "demo-binding-test.example.com"
spec:
  policyName: "demo-policy.example.com"
  validationActions: [Deny]
  matchResources:
    namespaceSelector:
      matchLabels:
        environment: test
"#;

/// kubectl (as in `tests/kubectl.rs`: /usr/bin/kubectl, or a `SKIPPED` line when it is
/// missing outside CI) prints the documented refusal of the documentation's policy.
#[tokio::test]
async fn kubectl_prints_the_documented_policy_refusal() {
    let Some(bin) = ["/usr/bin/kubectl"]
        .iter()
        .map(std::path::PathBuf::from)
        .find(|p| p.is_file())
    else {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("kubectl is not installed; CI=true requires it");
        }
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED kubectl_prints_the_documented_policy_refusal: no /usr/bin/kubectl"
        );
        return;
    };
    let srv = FakeApiServer::start().await.expect("server starts");
    let dir = tempfile::tempdir().unwrap();
    srv.write_kubeconfig(&dir.path().join("kubeconfig"))
        .unwrap();
    let kubectl = |args: &[&str], stdin: Option<&str>| {
        let mut c = std::process::Command::new(&bin);
        c.arg("--kubeconfig")
            .arg(dir.path().join("kubeconfig"))
            .arg("--cache-dir")
            .arg(dir.path().join("cache"))
            .arg("--request-timeout=20s")
            .args(args)
            .env("HOME", dir.path())
            .env_remove("KUBECONFIG")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let text = stdin.map(str::to_string);
        async move {
            tokio::task::spawn_blocking(move || {
                let mut child = c.spawn().expect("kubectl starts");
                if let (Some(mut pipe), Some(text)) = (child.stdin.take(), text) {
                    use std::io::Write;
                    pipe.write_all(text.as_bytes()).unwrap();
                }
                child.wait_with_output().expect("kubectl ran")
            })
            .await
            .unwrap()
        }
    };
    let out = kubectl(&["apply", "-f", "-"], Some(DEMO_POLICY)).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = kubectl(&["create", "namespace", "test"], None).await;
    assert!(out.status.success());
    let out = kubectl(&["label", "namespace", "test", "environment=test"], None).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = kubectl(
        &[
            "create",
            "deployment",
            "nginx",
            "--image=nginx",
            "--replicas=6",
            "-n",
            "test",
        ],
        None,
    )
    .await;
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "error: failed to create deployment: deployments.apps \"nginx\" is forbidden: ValidatingAdmissionPolicy 'demo-policy.example.com' with binding 'demo-binding-test.example.com' denied request: failed expression: object.spec.replicas <= 5"
    );
    // Outside the selected namespace, and within the limit, it is created.
    let out = kubectl(
        &[
            "create",
            "deployment",
            "nginx",
            "--image=nginx",
            "--replicas=6",
        ],
        None,
    )
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = kubectl(
        &[
            "create",
            "deployment",
            "small",
            "--image=nginx",
            "--replicas=2",
            "-n",
            "test",
        ],
        None,
    )
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn server_side_apply_is_admitted_as_a_create_then_an_update() {
    let hook_server = Webhook::start().await;
    let (_srv, c) = server().await;
    configure(
        &c,
        "MutatingWebhookConfiguration",
        "label",
        vec![hook(
            "label.example.com",
            hook_server.client_config("/label"),
            json!(["CREATE", "UPDATE"]),
            json!({}),
        )],
    )
    .await;
    let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  a: \"1\"\n";
    let path = format!("{CM}/applied?fieldManager=tester");
    let r = common::apply(&c, &path, yaml).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["metadata"]["labels"]["patched"], "yes");
    let seen = hook_server.calls_to("/label").pop().unwrap();
    assert_eq!(seen["request"]["operation"], "CREATE");
    assert_eq!(seen["request"]["name"], "applied");
    assert_eq!(
        seen["request"]["options"],
        json!({"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1", "fieldManager": "tester"})
    );
    let r = common::apply(&c, &format!("{path}&force=true"), yaml).await;
    assert_eq!(r.code, 200, "{}", r.body);
    let seen = hook_server.calls_to("/label").pop().unwrap();
    assert_eq!(seen["request"]["operation"], "UPDATE");
    assert_eq!(seen["request"]["options"]["kind"], "PatchOptions");
    assert_eq!(seen["request"]["options"]["force"], true);
    assert_eq!(
        seen["request"]["oldObject"]["metadata"]["labels"]["patched"],
        "yes"
    );
}

#[tokio::test]
async fn a_collection_delete_is_judged_item_by_item() {
    let hook_server = Webhook::start().await;
    let (_srv, c) = server().await;
    assert_eq!(post(&c, CM, configmap("one")).await.code, 201);
    let mut other = configmap("two");
    other["metadata"]["labels"] = json!({"app": "other"});
    assert_eq!(post(&c, CM, other).await.code, 201);
    configure(
        &c,
        "ValidatingWebhookConfiguration",
        "deny-delete",
        vec![hook(
            "deny.example.com",
            hook_server.client_config("/deny"),
            json!(["DELETE"]),
            json!({"objectSelector": {"matchLabels": {"app": "demo"}}}),
        )],
    )
    .await;
    let r = call(&c, "DELETE", CM, "application/json", None).await;
    assert_eq!(r.code, 403, "{}", r.body);
    assert_eq!(
        get(&c, &format!("{CM}/one")).await.code,
        200,
        "nothing deleted"
    );
    assert_eq!(
        get(&c, &format!("{CM}/two")).await.code,
        200,
        "nothing deleted"
    );
    let seen = hook_server.calls_to("/deny").pop().unwrap();
    assert_eq!(seen["request"]["operation"], "DELETE");
    assert_eq!(seen["request"]["oldObject"]["metadata"]["name"], "one");
    assert!(
        seen["request"].get("name").is_none(),
        "a collection delete names no object"
    );
    // Only the unselected object is left to a narrower collection delete.
    let r = call(
        &c,
        "DELETE",
        &format!("{CM}?labelSelector=app%3Dother"),
        "application/json",
        None,
    )
    .await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(get(&c, &format!("{CM}/two")).await.code, 404);
}

#[tokio::test]
async fn a_service_webhook_is_reached_through_the_resolver_and_its_answer_checked() {
    let hook_server = Webhook::start().await;
    let addr = hook_server.addr;
    let srv = FakeApiServer::builder()
        .resolve_service(move |ns, name, port| {
            (ns == "default" && name == "hooks" && port == 8443).then_some(addr)
        })
        .start()
        .await
        .expect("server starts");
    let c = srv.client();
    let ca = base64::engine::general_purpose::STANDARD.encode(&hook_server.ca_pem);
    let service = |path: &str| json!({"service": {"namespace": "default", "name": "hooks", "path": path, "port": 8443}, "caBundle": ca});
    configure(
        &c,
        "ValidatingWebhookConfiguration",
        "by-service",
        vec![hook(
            "deny.example.com",
            service("/deny"),
            json!(["CREATE"]),
            json!({}),
        )],
    )
    .await;
    let r = post(&c, CM, configmap("bad")).await;
    assert_eq!(r.code, 403, "{}", r.body);
    assert_eq!(hook_server.calls_to("/deny")[0]["query"], "timeout=10s");

    // An answer for another request is a call failure.
    let (_srv2, c2) = server().await;
    configure(
        &c2,
        "ValidatingWebhookConfiguration",
        "bad-uid",
        vec![hook(
            "uid.example.com",
            hook_server.client_config("/baduid"),
            json!(["CREATE"]),
            json!({}),
        )],
    )
    .await;
    let r = post(&c2, CM, configmap("x")).await;
    assert_eq!(r.code, 500, "{}", r.body);
    let uid = hook_server.calls_to("/baduid")[0]["request"]["uid"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        r.body["message"],
        format!(
            "Internal error occurred: failed calling webhook \"uid.example.com\": received invalid webhook response: expected response.uid=\"{uid}\", got \"not-the-request\""
        )
    );

    // A missing service under Fail.
    let (_srv3, c3) = server().await;
    configure(
        &c3,
        "ValidatingWebhookConfiguration",
        "missing",
        vec![hook(
            "missing.example.com",
            service("/deny"),
            json!(["CREATE"]),
            json!({}),
        )],
    )
    .await;
    let r = post(&c3, CM, configmap("y")).await;
    assert_eq!(
        r.body["message"],
        "Internal error occurred: failed calling webhook \"missing.example.com\": failed to call webhook: Post \"https://hooks.default.svc:8443/deny?timeout=10s\": service \"hooks\" not found"
    );
}

#[tokio::test]
async fn mutating_webhooks_see_the_decoded_defaulted_object() {
    let hook_server = Webhook::start().await;
    let (_srv, c) = server().await;
    let mut h = hook(
        "count.example.com",
        hook_server.client_config("/count"),
        json!(["CREATE"]),
        json!({}),
    );
    h["rules"] = json!([{"operations": ["CREATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"]}]);
    configure(&c, "MutatingWebhookConfiguration", "count", vec![h]).await;
    let deployments = "/apis/apps/v1/namespaces/default/deployments";
    let deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "nginx"}]}},
            "unknownField": true,
        },
    });
    let r = post(&c, deployments, deployment.clone()).await;
    assert_eq!(r.code, 201, "{}", r.body);
    // The server's default fieldValidation (Warn) warns once.
    assert_eq!(
        warnings(&r),
        vec!["299 - \"unknown field \\\"spec.unknownField\\\"\"".to_string()]
    );
    let seen = hook_server.calls_to("/count").pop().unwrap();
    let obj = &seen["request"]["object"];
    assert_eq!(obj["spec"]["replicas"], 1);
    assert_eq!(obj["spec"]["strategy"]["type"], "RollingUpdate");
    assert_eq!(obj["spec"]["template"]["spec"]["restartPolicy"], "Always");
    assert!(
        obj["spec"].get("unknownField").is_none(),
        "dropped by decoding"
    );
    // Strict decoding refuses before any webhook is called.
    let mut strict = deployment;
    strict["metadata"]["name"] = json!("strict");
    let r = call(
        &c,
        "POST",
        &format!("{deployments}?fieldValidation=Strict"),
        "application/json",
        Some(&strict),
    )
    .await;
    assert_eq!(r.code, 400, "{}", r.body);
    assert_eq!(hook_server.calls_to("/count").len(), 1);
}

#[tokio::test]
async fn a_match_condition_that_fails_follows_the_failure_policy() {
    let hook_server = Webhook::start().await;
    let (_srv, c) = server().await;
    let condition = json!([{"name": "missing", "expression": "object.data.missing == 'x'"}]);
    configure(
        &c,
        "ValidatingWebhookConfiguration",
        "ignore",
        vec![hook(
            "ignore.example.com",
            hook_server.client_config("/deny"),
            json!(["CREATE"]),
            json!({"failurePolicy": "Ignore", "matchConditions": condition}),
        )],
    )
    .await;
    assert_eq!(post(&c, CM, configmap("passes")).await.code, 201);
    configure(
        &c,
        "ValidatingWebhookConfiguration",
        "fail",
        vec![hook(
            "fail.example.com",
            hook_server.client_config("/deny"),
            json!(["CREATE"]),
            json!({"matchConditions": condition}),
        )],
    )
    .await;
    let r = post(&c, CM, configmap("refused")).await;
    assert_eq!(r.code, 403, "{}", r.body);
    let message = r.body["message"].as_str().unwrap();
    assert!(
        message.starts_with("configmaps \"refused\" is forbidden: expression 'object.data.missing == 'x'' resulted in error: "),
        "{message}"
    );
    assert!(
        hook_server.calls_to("/deny").is_empty(),
        "neither webhook was called"
    );
}

/// MutatingAdmissionPolicies run before the mutating webhooks (1.35's plugin order), and an
/// `IfNeeded` policy runs again after a webhook changed the object (the chain's second pass).
#[tokio::test]
async fn mutating_policies_run_before_webhooks_and_again_after_them() {
    let hook_server = Webhook::start().await;
    let srv = FakeApiServer::builder()
        .feature_gates(kube_fake_apiserver::feature_gates::FeatureGates {
            mutating_admission_policy: true,
            ..Default::default()
        })
        .runtime_config(vec!["admissionregistration.k8s.io/v1beta1".into()])
        .start()
        .await
        .expect("server starts");
    let c = srv.client();
    let r = post(
        &c,
        "/apis/admissionregistration.k8s.io/v1beta1/mutatingadmissionpolicies",
        json!({"apiVersion": "admissionregistration.k8s.io/v1beta1", "kind": "MutatingAdmissionPolicy", "metadata": {"name": "copy"},
            "spec": {"matchConstraints": configmap_rules(), "reinvocationPolicy": "IfNeeded",
                "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression":
                    "Object{metadata: Object.metadata{labels: {'copy': has(object.metadata.annotations) && 'annotated' in object.metadata.annotations ? object.metadata.annotations['annotated'] : 'none'}}}"}}]}}),
    )
    .await;
    assert_eq!(r.code, 201, "{}", r.body);
    let r = post(
        &c,
        "/apis/admissionregistration.k8s.io/v1beta1/mutatingadmissionpolicybindings",
        json!({"apiVersion": "admissionregistration.k8s.io/v1beta1", "kind": "MutatingAdmissionPolicyBinding", "metadata": {"name": "copy"}, "spec": {"policyName": "copy"}}),
    )
    .await;
    assert_eq!(r.code, 201, "{}", r.body);
    configure(
        &c,
        "MutatingWebhookConfiguration",
        "a-count",
        vec![hook(
            "count.example.com",
            hook_server.client_config("/count"),
            json!(["CREATE"]),
            json!({"reinvocationPolicy": "IfNeeded"}),
        )],
    )
    .await;
    configure(
        &c,
        "MutatingWebhookConfiguration",
        "b-annotate",
        vec![hook(
            "annotate.example.com",
            hook_server.client_config("/annotate"),
            json!(["CREATE"]),
            json!({}),
        )],
    )
    .await;
    let r = post(&c, CM, configmap("cm")).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["metadata"]["annotations"]["annotated"], "yes");
    // The policy ran again after the webhook annotated the object.
    assert_eq!(r.body["metadata"]["labels"]["copy"], "yes");
    let counted = hook_server.calls_to("/count");
    // The first webhook call already saw the policy's mutation; the second (reinvoked, the
    // object having changed since) saw the policy's second one.
    let copies: Vec<&Value> = counted
        .iter()
        .map(|r| &r["request"]["object"]["metadata"]["labels"]["copy"])
        .collect();
    assert_eq!(copies, [&json!("none"), &json!("yes")]);
    assert_eq!(hook_server.calls_to("/annotate").len(), 1);
}
