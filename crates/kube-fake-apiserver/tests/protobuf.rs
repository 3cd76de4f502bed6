//! Protobuf as client-go v0.35 speaks it for built-in kinds: request bodies in the `k8s\0`
//! envelope, answers when `Accept` prefers protobuf, and length-framed watch events. The bodies
//! sent are encoded by prost (k8s-pb's types, generated from k8s.io/api's generated.proto).
use crate::common;

use std::time::Duration;

use common::*;
use http_body_util::BodyExt;
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use kube_fake_apiserver::{FakeApiServer, KindSpec};
use prost::Message;
use serde_json::{Value, json};

const PB: &str = "application/vnd.kubernetes.protobuf";
const GO_ACCEPT: &str = "application/vnd.kubernetes.protobuf, application/json";

struct Raw {
    code: u16,
    ct: String,
    body: Vec<u8>,
}

async fn send(
    c: &kube::Client,
    method: &str,
    path: &str,
    ct: &str,
    accept: &str,
    body: Vec<u8>,
) -> Raw {
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", ct)
        .header("accept", accept)
        .body(kube::client::Body::from(body))
        .unwrap();
    let resp = c.send(req).await.expect("request sent");
    let code = resp.status().as_u16();
    let ct = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let body = resp
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes()
        .to_vec();
    Raw { code, ct, body }
}

fn envelope<M: Message>(api_version: &str, kind: &str, m: &M) -> Vec<u8> {
    let unk = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some(api_version.into()),
            kind: Some(kind.into()),
        }),
        raw: Some(m.encode_to_vec()),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    [b"k8s\x00".to_vec(), unk.encode_to_vec()].concat()
}

fn open<M: Message + Default>(body: &[u8]) -> (String, M) {
    let unk =
        Unknown::decode(body.strip_prefix(b"k8s\x00").expect("k8s envelope")).expect("Unknown");
    let kind = unk.type_meta.and_then(|t| t.kind).unwrap_or_default();
    (
        kind,
        M::decode(unk.raw.unwrap_or_default().as_slice()).expect("message decodes"),
    )
}

/// What the stored objects share once the server-set metadata is gone.
fn comparable(v: Value) -> Value {
    // What the server derives from the object's own uid and name (a Job's generated selector
    // and labels) differs by copy too.
    let (uid, name) = (v["metadata"]["uid"].clone(), v["metadata"]["name"].clone());
    let mut text = v.to_string();
    for (own, placeholder) in [(uid, "\"<uid>\""), (name, "\"<name>\"")] {
        if own.as_str().is_some_and(|s| !s.is_empty()) {
            text = text.replace(&own.to_string(), placeholder);
        }
    }
    let mut v: Value = serde_json::from_str(&text).expect("JSON");
    if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        for k in [
            "name",
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "managedFields",
            "generation",
        ] {
            m.remove(k);
        }
    }
    if v["kind"] == "Service" && v["spec"]["clusterIP"] != "None" {
        // Allocated per Service.
        v["spec"]["clusterIP"] = Value::Null;
        v["spec"]["clusterIPs"] = Value::Null;
    }
    if v["kind"] == "CustomResourceDefinition" {
        // Its group differs by copy, and its status is the CRD controller's, written later.
        v["spec"]["group"] = Value::Null;
        v["status"] = Value::Null;
    }
    v
}

fn path_of(api_version: &str, plural: &str, namespaced: bool) -> String {
    let base = if api_version.contains('/') {
        format!("/apis/{api_version}")
    } else {
        format!("/api/{api_version}")
    };
    if namespaced {
        format!("{base}/namespaces/default/{plural}")
    } else {
        format!("{base}/{plural}")
    }
}

async fn server() -> (FakeApiServer, kube::Client) {
    let s = FakeApiServer::start().await.expect("server starts");
    // Kinds the served table may not have yet on this branch.
    for spec in [
        KindSpec::namespaced("apps", "v1", "StatefulSet", "statefulsets"),
        KindSpec::namespaced("batch", "v1", "Job", "jobs"),
        KindSpec::namespaced("batch", "v1", "CronJob", "cronjobs"),
        KindSpec::namespaced("rbac.authorization.k8s.io", "v1", "Role", "roles"),
        KindSpec {
            namespaced: false,
            status: false,
            generation: true,
            ..KindSpec::namespaced(
                "admissionregistration.k8s.io",
                "v1",
                "ValidatingWebhookConfiguration",
                "validatingwebhookconfigurations",
            )
        },
    ] {
        let _ = s.register_kind(spec);
    }
    let c = s.in_process_client();
    (s, c)
}

/// Sends `json` once as JSON and once as protobuf (prost's encoding of the same object) and
/// checks both are stored alike; then reads the protobuf-created one back as protobuf.
async fn same_as_json<M: Message + Default + PartialEq + std::fmt::Debug>(
    c: &kube::Client,
    plural: &str,
    namespaced: bool,
    json: Value,
) -> Value {
    let api_version = json["apiVersion"].as_str().unwrap().to_string();
    let kind = json["kind"].as_str().unwrap().to_string();
    let path = path_of(&api_version, plural, namespaced);
    let name = json["metadata"]["name"].as_str().unwrap().to_string();
    let (jn, pn) = (format!("{name}-json"), format!("{name}-pb"));
    let crd = kind == "CustomResourceDefinition";
    // A CRD's name is plural.group: each copy gets a group of its own.
    let (jn, pn) = if crd {
        (
            "foos.json.example.com".to_string(),
            "foos.pb.example.com".to_string(),
        )
    } else {
        (jn, pn)
    };
    let mut via_json = json.clone();
    via_json["metadata"]["name"] = json!(jn);
    if crd {
        via_json["spec"]["group"] = json!(jn.trim_start_matches("foos."));
    }
    let r = post(c, &path, via_json).await;
    assert_eq!(r.code, 201, "{kind} as JSON: {}", r.body);

    // The protobuf body: the object as prost types, from a protobuf form of the JSON.
    let mut via_pb = json.clone();
    via_pb["metadata"]["name"] = json!(pn);
    if crd {
        via_pb["spec"]["group"] = json!(pn.trim_start_matches("foos."));
    }
    let typed: M = prost_of(&via_pb);
    let r = send(
        c,
        "POST",
        &path,
        PB,
        GO_ACCEPT,
        envelope(&api_version, &kind, &typed),
    )
    .await;
    assert_eq!(
        r.code,
        201,
        "{kind} as protobuf: {}",
        String::from_utf8_lossy(&r.body)
    );
    assert_eq!(r.ct, PB, "{kind}: the answer is protobuf");
    let (answered_kind, answered): (String, M) = open(&r.body);
    assert_eq!(answered_kind, kind);
    drop(answered);

    let a = get(c, &format!("{path}/{jn}")).await.body;
    let b = get(c, &format!("{path}/{pn}")).await.body;
    assert_eq!(comparable(b.clone()), comparable(a), "{kind}: stored alike");

    // Read back in protobuf: decodes into the prost type, and equals the typed form of the JSON read.
    let r = send(c, "GET", &format!("{path}/{pn}"), "", GO_ACCEPT, Vec::new()).await;
    assert_eq!(r.code, 200);
    let (_, got): (String, M) = open(&r.body);
    assert_eq!(got, prost_of::<M>(&b), "{kind}: protobuf answer");
    b
}

/// The prost form of a JSON object: the server's own encoder, checked by prost decoding it (a
/// wrong field number or wire type fails to decode or lands in the wrong field, which the
/// JSON comparisons then show).
fn prost_of<M: Message + Default>(json: &Value) -> M {
    let bytes = kube_fake_apiserver_encode(json);
    open::<M>(&bytes).1
}

fn kube_fake_apiserver_encode(v: &Value) -> Vec<u8> {
    kube_fake_apiserver::protobuf::encode(v).expect("a built-in kind")
}

#[tokio::test]
async fn built_in_kinds_round_trip_through_protobuf_as_client_go_sends_them() {
    use k8s_pb::api::{
        admissionregistration::v1 as adm, apps::v1 as apps, batch::v1 as batch,
        coordination::v1 as coord, core::v1 as core, events::v1 as events, rbac::v1 as rbac,
    };
    use k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiext;
    let (_s, c) = server().await;
    let template = json!({"metadata": {"labels": {"app": "a"}},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.27",
            "ports": [{"containerPort": 8080, "name": "http"}],
            "env": [{"name": "A", "value": "1"}, {"name": "P", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
            "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 5},
            "volumeMounts": [{"name": "conf", "mountPath": "/etc/conf"}]}],
            "volumes": [{"name": "conf", "configMap": {"name": "conf", "defaultMode": 420}}]}});
    let selector = json!({"matchLabels": {"app": "a"}});
    same_as_json::<apps::Deployment>(&c, "deployments", true, json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "x", "labels": {"app": "a"}},
        "spec": {"replicas": 0, "selector": selector, "template": template,
                 "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}}}})).await;
    same_as_json::<apps::StatefulSet>(&c, "statefulsets", true, json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "x"},
        "spec": {"replicas": 3, "serviceName": "db", "selector": selector, "template": template,
            "volumeClaimTemplates": [{"metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}})).await;
    same_as_json::<batch::Job>(&c, "jobs", true, json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "x"},
        "spec": {"backoffLimit": 0, "ttlSecondsAfterFinished": 60,
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox", "command": ["sh", "-c", "true"]}]}}}})).await;
    same_as_json::<batch::CronJob>(&c, "cronjobs", true, json!({"apiVersion": "batch/v1", "kind": "CronJob",
        "metadata": {"name": "x"},
        "spec": {"schedule": "*/5 * * * *", "suspend": false, "jobTemplate": {"spec": {
            "template": {"spec": {"restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "busybox"}]}}}}}})).await;
    same_as_json::<core::Pod>(
        &c,
        "pods",
        true,
        json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "x", "annotations": {"a": "b"}}, "spec": template["spec"].clone()}),
    )
    .await;
    same_as_json::<core::Service>(&c, "services", true, json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "x"},
        "spec": {"selector": {"app": "a"}, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}})).await;
    same_as_json::<core::ConfigMap>(
        &c,
        "configmaps",
        true,
        json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "x"}, "data": {"a": "1", "b": ""}, "binaryData": {"bin": "AAEC/w=="}}),
    )
    .await;
    let secret = same_as_json::<core::Secret>(
        &c,
        "secrets",
        true,
        json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "x"}, "type": "Opaque", "data": {"key": "AP8BAg=="}}),
    )
    .await;
    assert_eq!(secret["data"]["key"], "AP8BAg==");
    let lease = same_as_json::<coord::Lease>(&c, "leases", true, json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "x"},
        "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15, "leaseTransitions": 0,
                 "acquireTime": "2026-01-02T03:04:05.123456Z", "renewTime": "2026-01-02T03:04:15.000001Z"}})).await;
    assert_eq!(lease["spec"]["renewTime"], "2026-01-02T03:04:15.000001Z");
    same_as_json::<events::Event>(&c, "events", true, json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": "x"}, "eventTime": "2026-01-02T03:04:05.000000Z", "reportingController": "me/ctl",
        "reportingInstance": "me-1", "action": "Sync", "reason": "Synced", "type": "Normal", "note": "done",
        "regarding": {"kind": "Pod", "name": "p", "namespace": "default"}})).await;
    same_as_json::<core::Event>(&c, "events", true, json!({"apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "y"}, "reason": "Started", "message": "m", "type": "Normal", "count": 2,
        "firstTimestamp": "2026-01-02T03:04:05Z", "lastTimestamp": "2026-01-02T03:04:06Z",
        "source": {"component": "kubelet"}, "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"}})).await;
    same_as_json::<rbac::Role>(
        &c,
        "roles",
        true,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "x"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}]}),
    )
    .await;
    same_as_json::<adm::ValidatingWebhookConfiguration>(&c, "validatingwebhookconfigurations", false, json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "x"},
        "webhooks": [{"name": "v.example.com", "admissionReviewVersions": ["v1"], "sideEffects": "None",
            "clientConfig": {"service": {"namespace": "default", "name": "wh", "path": "/validate"}, "caBundle": "AAEC"},
            "rules": [{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}],
            "failurePolicy": "Fail", "timeoutSeconds": 5}]})).await;
    let crd = same_as_json::<apiext::CustomResourceDefinition>(&c, "customresourcedefinitions", false, json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "foos.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "foos", "singular": "foo", "kind": "Foo", "listKind": "FooList"},
            "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object",
                    "x-kubernetes-validations": [{"rule": "self.size >= 0"}],
                    "properties": {"size": {"type": "integer", "default": 1},
                                   "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                                   "tags": {"type": "object", "additionalProperties": {"type": "string"}}}}}}}}]}})).await;
    assert_eq!(
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
            ["size"]["default"],
        1
    );
}

#[tokio::test]
async fn lists_errors_deletes_and_scale_speak_protobuf() {
    use k8s_pb::api::apps::v1 as apps;
    use k8s_pb::api::autoscaling::v1::Scale;
    use k8s_pb::api::core::v1 as core;
    use k8s_pb::apimachinery::pkg::apis::meta::v1::{DeleteOptions, Status};
    let (_s, c) = server().await;
    let cms = "/api/v1/namespaces/default/configmaps";
    for n in ["a", "b"] {
        post(
            &c,
            cms,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": n}}),
        )
        .await;
    }
    let r = send(&c, "GET", cms, "", GO_ACCEPT, Vec::new()).await;
    let (kind, list): (String, core::ConfigMapList) = open(&r.body);
    assert_eq!(kind, "ConfigMapList");
    assert_eq!(list.items.len(), 2);
    assert!(list.metadata.unwrap().resource_version.is_some());

    let r = send(
        &c,
        "GET",
        &format!("{cms}/missing"),
        "",
        GO_ACCEPT,
        Vec::new(),
    )
    .await;
    assert_eq!((r.code, r.ct.as_str()), (404, PB));
    let (kind, status): (String, Status) = open(&r.body);
    assert_eq!(kind, "Status");
    assert_eq!(status.code, Some(404));
    assert_eq!(status.reason.as_deref(), Some("NotFound"));
    assert_eq!(
        status.message.as_deref(),
        Some("configmaps \"missing\" not found")
    );

    // DeleteOptions in protobuf, with a failing precondition.
    let opts = DeleteOptions {
        preconditions: Some(k8s_pb::apimachinery::pkg::apis::meta::v1::Preconditions {
            uid: Some("not-the-uid".into()),
            resource_version: None,
        }),
        ..Default::default()
    };
    let r = send(
        &c,
        "DELETE",
        &format!("{cms}/a"),
        PB,
        GO_ACCEPT,
        envelope("v1", "DeleteOptions", &opts),
    )
    .await;
    assert_eq!(r.code, 409, "{}", String::from_utf8_lossy(&r.body));
    let opts = DeleteOptions {
        propagation_policy: Some("Background".into()),
        ..Default::default()
    };
    let r = send(
        &c,
        "DELETE",
        &format!("{cms}/a"),
        PB,
        GO_ACCEPT,
        envelope("meta.k8s.io/v1", "DeleteOptions", &opts),
    )
    .await;
    assert_eq!(r.code, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(get(&c, &format!("{cms}/a")).await.code, 404);

    // The scale subresource.
    let deploys = "/apis/apps/v1/namespaces/default/deployments";
    let d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "d"}},
                 "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}});
    assert_eq!(post(&c, deploys, d).await.code, 201);
    let r = send(
        &c,
        "GET",
        &format!("{deploys}/d/scale"),
        "",
        GO_ACCEPT,
        Vec::new(),
    )
    .await;
    let (kind, mut scale): (String, Scale) = open(&r.body);
    assert_eq!(kind, "Scale");
    assert_eq!(scale.spec.as_ref().unwrap().replicas, Some(2));
    scale.spec.as_mut().unwrap().replicas = Some(0);
    let r = send(
        &c,
        "PUT",
        &format!("{deploys}/d/scale"),
        PB,
        GO_ACCEPT,
        envelope("autoscaling/v1", "Scale", &scale),
    )
    .await;
    assert_eq!(r.code, 200, "{}", String::from_utf8_lossy(&r.body));
    let got = get(&c, &format!("{deploys}/d")).await.body;
    assert_eq!(got["spec"]["replicas"], 0);
    // client-go types a Deployment's DeleteOptions in the Deployment's group version.
    let dry = DeleteOptions {
        dry_run: vec!["All".into()],
        ..Default::default()
    };
    let r = send(
        &c,
        "DELETE",
        &format!("{deploys}/d"),
        PB,
        GO_ACCEPT,
        envelope("apps/v1", "DeleteOptions", &dry),
    )
    .await;
    assert_eq!(r.code, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(
        get(&c, &format!("{deploys}/d")).await.code,
        200,
        "a dry run deletes nothing"
    );
    // A status update in protobuf.
    let (_, mut dep): (String, apps::Deployment) = open(
        &send(
            &c,
            "GET",
            &format!("{deploys}/d"),
            "",
            GO_ACCEPT,
            Vec::new(),
        )
        .await
        .body,
    );
    dep.status = Some(apps::DeploymentStatus {
        observed_generation: Some(2),
        replicas: Some(0),
        ..Default::default()
    });
    let r = send(
        &c,
        "PUT",
        &format!("{deploys}/d/status"),
        PB,
        GO_ACCEPT,
        envelope("apps/v1", "Deployment", &dep),
    )
    .await;
    assert_eq!(r.code, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(
        get(&c, &format!("{deploys}/d")).await.body["status"]["observedGeneration"],
        2
    );
}

#[tokio::test]
async fn a_protobuf_watch_stream_decodes_as_client_go_reads_it() {
    use k8s_pb::api::core::v1::ConfigMap;
    use k8s_pb::apimachinery::pkg::apis::meta::v1::WatchEvent;
    let (_s, c) = server().await;
    let cms = "/api/v1/namespaces/default/configmaps";
    post(&c, cms, json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}})).await;
    let req = http::Request::builder()
        .uri(format!("{cms}?watch=true&timeoutSeconds=2"))
        .header("accept", GO_ACCEPT)
        .body(kube::client::Body::empty())
        .unwrap();
    let resp = c.send(req).await.unwrap();
    assert_eq!(
        resp.headers()["content-type"],
        "application/vnd.kubernetes.protobuf;stream=watch"
    );
    let c2 = c.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        post(
            &c2,
            cms,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}}),
        )
        .await;
    });
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    let mut rest = &bytes[..];
    let mut seen = Vec::new();
    while rest.len() >= 4 {
        let n = u32::from_be_bytes(rest[..4].try_into().unwrap()) as usize;
        let ev = WatchEvent::decode(&rest[4..4 + n]).expect("WatchEvent");
        let raw = ev.object.unwrap().raw.unwrap();
        let (kind, cm): (String, ConfigMap) = open(&raw);
        assert_eq!(kind, "ConfigMap");
        seen.push((ev.r#type.unwrap(), cm.metadata.unwrap().name.unwrap()));
        rest = &rest[4 + n..];
    }
    assert!(rest.is_empty());
    assert_eq!(
        seen,
        vec![
            ("ADDED".to_string(), "a".to_string()),
            ("ADDED".to_string(), "b".to_string())
        ]
    );
}

#[tokio::test]
async fn custom_resources_never_speak_protobuf() {
    let (_s, c) = with_widgets().await;
    // A protobuf body: kube-apiserver decodes into unstructured.Unstructured, which is no
    // protobuf message (`transformDecodeError` makes it a 400).
    let body = envelope(
        "example.com/v1",
        "Widget",
        &k8s_pb::api::core::v1::ConfigMap::default(),
    );
    let r = send(&c, "POST", WIDGETS, PB, "application/json", body).await;
    assert_eq!(r.code, 400);
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(
        v["message"],
        "Widget in version \"v1\" cannot be handled as a Widget: object *unstructured.Unstructured does not implement the protobuf marshalling interface and cannot be encoded to a protobuf message"
    );
    // Accept preferring protobuf: 406 (the encoder fails), as a protobuf Status.
    assert_eq!(post(&c, WIDGETS, widget("w", 1)).await.code, 201);
    let r = send(
        &c,
        "GET",
        &format!("{WIDGETS}/w"),
        "",
        GO_ACCEPT,
        Vec::new(),
    )
    .await;
    assert_eq!((r.code, r.ct.as_str()), (406, PB));
    let (_, status): (String, k8s_pb::apimachinery::pkg::apis::meta::v1::Status) = open(&r.body);
    assert_eq!(status.reason.as_deref(), Some("NotAcceptable"));
    // Metadata clients ask for protobuf PartialObjectMetadata first and JSON second: JSON answers.
    let meta = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
    let r = send(&c, "GET", WIDGETS, "", meta, Vec::new()).await;
    assert_eq!((r.code, r.ct.as_str()), (200, "application/json"));
    let v: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(v["kind"], "PartialObjectMetadataList");
    // The same request on a built-in answers protobuf.
    let r = send(&c, "GET", "/api/v1/namespaces", "", meta, Vec::new()).await;
    assert_eq!((r.code, r.ct.as_str()), (200, PB));
    let (kind, _): (
        String,
        k8s_pb::apimachinery::pkg::apis::meta::v1::PartialObjectMetadataList,
    ) = open(&r.body);
    assert_eq!(kind, "PartialObjectMetadataList");
}

/// Not a check: what protobuf costs next to JSON (`cargo test -p kube-fake-apiserver
/// --all-features --test all -- protobuf:: --ignored --nocapture`; figures in ARCHITECTURE.md).
#[tokio::test]
#[ignore]
async fn measure_protobuf_against_json() {
    use std::time::Instant;
    let (_s, c) = server().await;
    let deploy = |name: &str| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": {"app": "a"}},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "a"}},
                "template": {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "nginx",
                    "ports": [{"containerPort": 80}], "resources": {"requests": {"cpu": "100m"}},
                    "env": [{"name": "A", "value": "1"}]}]}}}})
    };
    let n = 500;
    let path = "/apis/apps/v1/namespaces/default/deployments";
    let t = Instant::now();
    for i in 0..n {
        let body = serde_json::to_vec(&deploy(&format!("j{i}"))).unwrap();
        assert_eq!(
            send(
                &c,
                "POST",
                path,
                "application/json",
                "application/json",
                body
            )
            .await
            .code,
            201
        );
    }
    let json_create = t.elapsed() / n;
    let bodies: Vec<Vec<u8>> = (0..n)
        .map(|i| kube_fake_apiserver_encode(&deploy(&format!("p{i}"))))
        .collect();
    let t = Instant::now();
    for b in bodies {
        assert_eq!(send(&c, "POST", path, PB, GO_ACCEPT, b).await.code, 201);
    }
    let pb_create = t.elapsed() / n;
    let t = Instant::now();
    for i in 0..n {
        assert_eq!(
            send(
                &c,
                "GET",
                &format!("{path}/j{i}"),
                "",
                "application/json",
                Vec::new()
            )
            .await
            .code,
            200
        );
    }
    let json_get = t.elapsed() / n;
    let t = Instant::now();
    for i in 0..n {
        assert_eq!(
            send(
                &c,
                "GET",
                &format!("{path}/j{i}"),
                "",
                GO_ACCEPT,
                Vec::new()
            )
            .await
            .code,
            200
        );
    }
    let pb_get = t.elapsed() / n;
    let t = Instant::now();
    assert_eq!(
        send(&c, "GET", path, "", "application/json", Vec::new())
            .await
            .code,
        200
    );
    let json_list = t.elapsed();
    let t = Instant::now();
    assert_eq!(
        send(&c, "GET", path, "", GO_ACCEPT, Vec::new()).await.code,
        200
    );
    let pb_list = t.elapsed();
    let obj = get(&c, &format!("{path}/j0")).await.body;
    let rounds = 2_000u32;
    let t = Instant::now();
    for _ in 0..rounds {
        let b = kube_fake_apiserver_encode(&obj);
        kube_fake_apiserver::protobuf::decode(&b).unwrap();
    }
    let codec = t.elapsed() / rounds;
    println!(
        "create: JSON {json_create:?}, protobuf {pb_create:?}; get: JSON {json_get:?}, protobuf {pb_get:?}; \
         list of {}: JSON {json_list:?}, protobuf {pb_list:?}; encode+decode of one stored Deployment: {codec:?}",
        2 * n
    );
}

/// A metadata informer's watch-list on a built-in (client-go's metadata client asks for protobuf
/// `PartialObjectMetadata` first): protobuf frames, the initial objects as metadata, then the
/// initial-events-end bookmark.
#[tokio::test]
async fn a_metadata_watch_list_of_a_built_in_is_protobuf() {
    use k8s_pb::apimachinery::pkg::apis::meta::v1::{PartialObjectMetadata, WatchEvent};
    let (_s, c) = server().await;
    let cms = "/api/v1/namespaces/default/configmaps";
    post(&c, cms, json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "labels": {"x": "y"}}})).await;
    let req = http::Request::builder()
        .uri(format!(
            "{cms}?watch=true&timeoutSeconds=1&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
        ))
        .header(
            "accept",
            "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json",
        )
        .body(kube::client::Body::empty())
        .unwrap();
    let resp = c.send(req).await.unwrap();
    assert_eq!(
        resp.headers()["content-type"],
        "application/vnd.kubernetes.protobuf;stream=watch"
    );
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    let mut rest = &bytes[..];
    let mut seen = Vec::new();
    while rest.len() >= 4 {
        let n = u32::from_be_bytes(rest[..4].try_into().unwrap()) as usize;
        let ev = WatchEvent::decode(&rest[4..4 + n]).expect("WatchEvent");
        let raw = ev.object.unwrap().raw.unwrap();
        let (kind, m): (String, PartialObjectMetadata) = open(&raw);
        let meta = m.metadata.unwrap();
        seen.push((
            ev.r#type.unwrap(),
            kind,
            meta.name.unwrap_or_default(),
            meta.labels.len(),
        ));
        rest = &rest[4 + n..];
    }
    assert_eq!(
        seen[0],
        (
            "ADDED".into(),
            "PartialObjectMetadata".into(),
            "a".into(),
            1
        )
    );
    assert_eq!(seen[1].0, "BOOKMARK");
}
