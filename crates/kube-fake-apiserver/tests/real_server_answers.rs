//! Answers checked against a genuine kube-apiserver 1.35 (issue 28 items 4-7), through kube-rs:
//! `storageVersionHash` in discovery, the scale subresource's type check, a conversion webhook
//! whose service does not exist, and the request body and etcd size limits.
use crate::common;

use common::{call, with_widgets};
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube_fake_apiserver::FakeApiServer;
use serde_json::{Value, json};

/// The `Status` of a refused call (panics on success or another error).
fn refused<T: std::fmt::Debug>(r: Result<T, kube::Error>) -> kube::core::Status {
    match r {
        Err(kube::Error::Api(st)) => *st,
        other => panic!("expected an API error, got {other:?}"),
    }
}

// ---- item 4: storageVersionHash ----

/// `discovery.StorageVersionHash("example.com", "v1", "Widget")`, computed independently.
const WIDGET_V1_HASH: &str = "gIwvi5rymmg=";

#[tokio::test]
async fn discovery_carries_the_storage_version_hash() {
    let (_s, c) = with_widgets().await;
    for gv in ["example.com/v1", "example.com/v2"] {
        let list = c.list_api_group_resources(gv).await.unwrap();
        let main = list.resources.iter().find(|r| r.name == "widgets").unwrap();
        // Every served version names the storage version's hash.
        assert_eq!(
            main.storage_version_hash.as_deref(),
            Some(WIDGET_V1_HASH),
            "{gv}"
        );
        for sub in ["widgets/status", "widgets/scale"] {
            let r = list.resources.iter().find(|r| r.name == sub).unwrap();
            assert_eq!(r.storage_version_hash, None, "{gv} {sub}");
        }
    }
    // Built-ins hash what they are stored as: both Event APIs store core v1 Events.
    let core = c.list_core_api_resources("v1").await.unwrap();
    let hash = |list: &k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResourceList,
                name: &str| {
        list.resources
            .iter()
            .find(|r| r.name == name)
            .and_then(|r| r.storage_version_hash.clone())
    };
    assert_eq!(hash(&core, "pods").as_deref(), Some("xPOwRZ+Yhw8="));
    assert_eq!(hash(&core, "events").as_deref(), Some("r2yiGXH7wu8="));
    let events = c
        .list_api_group_resources("events.k8s.io/v1")
        .await
        .unwrap();
    assert_eq!(hash(&events, "events").as_deref(), Some("r2yiGXH7wu8="));
    let apps = c.list_api_group_resources("apps/v1").await.unwrap();
    assert_eq!(hash(&apps, "deployments").as_deref(), Some("8aSe+NMegvE="));
    assert_eq!(hash(&apps, "deployments/status"), None);
}

#[tokio::test]
async fn no_hash_while_the_storage_version_is_not_served() {
    let s = FakeApiServer::start().await.unwrap();
    let mut crd = common::widget_crd();
    crd["spec"]["versions"][0]["served"] = json!(false);
    s.register_crd(crd).unwrap();
    let list = s
        .client()
        .list_api_group_resources("example.com/v2")
        .await
        .unwrap();
    let main = list.resources.iter().find(|r| r.name == "widgets").unwrap();
    assert_eq!(main.storage_version_hash, None);
}

// ---- item 6: a conversion webhook whose service does not exist ----

/// tekton's `stepactions.tekton.dev` as far as conversion goes: v1alpha1 served, v1beta1 the
/// storage version, a webhook by service (no port: 443, no path) and review versions of which
/// the server knows only `v1beta1`.
fn step_action_crd() -> Value {
    let version = |name: &str, storage: bool| {
        json!({"name": name, "served": true, "storage": storage,
               "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                   "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}})
    };
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "stepactions.tekton.dev"},
        "spec": {
            "group": "tekton.dev",
            "scope": "Namespaced",
            "names": {"plural": "stepactions", "singular": "stepaction", "kind": "StepAction",
                      "categories": ["tekton", "tekton-pipelines"]},
            "versions": [version("v1alpha1", false), version("v1beta1", true)],
            "conversion": {"strategy": "Webhook", "webhook": {
                "conversionReviewVersions": ["v1alpha1", "v1beta1"],
                "clientConfig": {"service": {"name": "tekton-pipelines-webhook", "namespace": "tekton-pipelines"}}}}
        }
    })
}

fn step_actions(c: &kube::Client, version: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("tekton.dev", version, "StepAction");
    Api::namespaced_with(c.clone(), "default", &ApiResource::from_gvk(&gvk))
}

fn step_action(version: &str, name: &str) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": format!("tekton.dev/{version}"), "kind": "StepAction",
        "metadata": {"name": name}, "spec": {"image": "alpine"}
    }))
    .unwrap()
}

const NO_SERVICE: &str = "conversion webhook for tekton.dev/v1alpha1, Kind=StepAction failed: Post \"https://tekton-pipelines-webhook.tekton-pipelines.svc:443/?timeout=30s\": service \"tekton-pipelines-webhook\" not found";

#[tokio::test]
async fn a_webhook_by_a_missing_service_fails_writes_and_reads_that_convert() {
    let s = FakeApiServer::start().await.unwrap();
    s.register_crd(step_action_crd()).unwrap();
    let c = s.client();
    let alpha = step_actions(&c, "v1alpha1");
    let beta = step_actions(&c, "v1beta1");

    // A write in the non-storage version needs a conversion: the real server's 500.
    let st = refused(
        alpha
            .create(&PostParams::default(), &step_action("v1alpha1", "a"))
            .await,
    );
    assert_eq!((st.code, st.reason.as_str()), (500, ""));
    assert_eq!(st.message, NO_SERVICE);
    // So does server-side apply creating it.
    let apply = Patch::Apply(
        json!({"apiVersion": "tekton.dev/v1alpha1", "kind": "StepAction",
        "metadata": {"name": "a"}, "spec": {"image": "alpine"}}),
    );
    let st = refused(alpha.patch("a", &PatchParams::apply("t"), &apply).await);
    assert_eq!((st.code, st.message.as_str()), (500, NO_SERVICE));
    assert!(
        alpha
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );

    // In the storage version nothing is converted.
    beta.create(&PostParams::default(), &step_action("v1beta1", "b"))
        .await
        .unwrap();
    assert_eq!(
        beta.get("b").await.unwrap().metadata.name.as_deref(),
        Some("b")
    );

    // Reading it through v1alpha1 converts from v1beta1: the same failure, named from there.
    let from_beta = NO_SERVICE.replace("v1alpha1, Kind", "v1beta1, Kind");
    for st in [
        refused(alpha.get("b").await),
        refused(alpha.list(&ListParams::default()).await),
        refused(
            alpha
                .patch(
                    "b",
                    &PatchParams::default(),
                    &Patch::Merge(json!({"spec": {"x": 1}})),
                )
                .await,
        ),
    ] {
        assert_eq!((st.code, st.message.as_str()), (500, from_beta.as_str()));
    }
    // The object is untouched.
    assert!(beta.get("b").await.unwrap().data["spec"].get("x").is_none());
}

// ---- item 7: sizes ----

fn crontab_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "crontabs.stable.example.com"},
        "spec": {
            "group": "stable.example.com",
            "scope": "Namespaced",
            "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {"cronSpec": {"type": "string"}}}}}}}]
        }
    })
}

fn crontabs(c: &kube::Client) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("stable.example.com", "v1", "CronTab");
    Api::namespaced_with(c.clone(), "default", &ApiResource::from_gvk(&gvk))
}

fn crontab(name: &str, spec_bytes: usize) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "stable.example.com/v1", "kind": "CronTab",
        "metadata": {"name": name}, "spec": {"cronSpec": "x".repeat(spec_bytes)}
    }))
    .unwrap()
}

const MIB: usize = 1024 * 1024;

async fn crontab_server(
    builder: kube_fake_apiserver::ServerBuilder,
) -> (FakeApiServer, Api<DynamicObject>) {
    let s = builder.start().await.unwrap();
    s.register_crd(crontab_crd()).unwrap();
    let api = crontabs(&s.client());
    (s, api)
}

#[tokio::test]
async fn objects_too_large_for_etcd_are_refused_as_a_real_server_refuses_them() {
    let (_s, api) = crontab_server(FakeApiServer::builder()).await;
    let pp = PostParams::default();
    // 1 MiB: created.
    api.create(&pp, &crontab("one", MIB)).await.unwrap();

    // 2 MiB: the etcd client does not send the transaction.
    let st = refused(api.create(&pp, &crontab("two", 2 * MIB)).await);
    assert_eq!((st.code, st.reason.as_str()), (500, ""));
    let size: usize = st
        .message
        .strip_prefix(
            "rpc error: code = ResourceExhausted desc = trying to send message larger than max (",
        )
        .and_then(|rest| rest.strip_suffix(" vs. 2097152)"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{}", st.message));
    // The object's JSON and the transaction around it (the real server said 2097564 for its
    // own 2 MiB CronTab).
    assert!((2 * MIB + 200..2 * MIB + 1000).contains(&size), "{size}");
    assert_eq!(refused(api.get("two").await).code, 404);

    // Between etcd's 1.5 MiB and the client's 2 MiB: etcd's own refusal.
    let st = refused(api.create(&pp, &crontab("big", 1_700_000)).await);
    assert_eq!(
        (st.code, st.reason.as_str(), st.message.as_str()),
        (500, "", "etcdserver: request is too large")
    );

    // An update that grows the object is refused alike, and the object stays as it was.
    let patch = Patch::Merge(json!({"spec": {"cronSpec": "y".repeat(1_700_000)}}));
    let st = refused(api.patch("one", &PatchParams::default(), &patch).await);
    assert_eq!(
        (st.code, st.message.as_str()),
        (500, "etcdserver: request is too large")
    );
    assert_eq!(
        api.get("one").await.unwrap().data["spec"]["cronSpec"]
            .as_str()
            .map(str::len),
        Some(MIB)
    );

    // A dry run never reaches etcd.
    let dry = PostParams {
        dry_run: true,
        ..Default::default()
    };
    api.create(&dry, &crontab("dry", 2 * MIB)).await.unwrap();
}

#[tokio::test]
async fn the_etcd_limit_is_an_option() {
    let (_s, api) = crontab_server(FakeApiServer::builder().etcd_max_request_bytes(8 * MIB)).await;
    let pp = PostParams::default();
    api.create(&pp, &crontab("big", 1_700_000)).await.unwrap();
    // The client's 2 MiB stays whatever etcd takes.
    let st = refused(api.create(&pp, &crontab("two", 2 * MIB)).await);
    assert!(st.message.ends_with(" vs. 2097152)"), "{}", st.message);
}

#[tokio::test]
async fn bodies_over_3_mib_are_413_for_every_write() {
    let (s, api) = crontab_server(FakeApiServer::builder()).await;
    api.create(&PostParams::default(), &crontab("a", 10))
        .await
        .unwrap();
    let too_large = |st: kube::core::Status| {
        assert_eq!(
            (st.code, st.reason.as_str(), st.message.as_str()),
            (
                413,
                "RequestEntityTooLarge",
                "Request entity too large: limit is 3145728"
            )
        );
    };
    too_large(refused(
        api.create(&PostParams::default(), &crontab("b", 4 * MIB))
            .await,
    ));
    too_large(refused(
        api.replace("a", &PostParams::default(), &crontab("a", 4 * MIB))
            .await,
    ));
    let patch = Patch::Merge(json!({"spec": {"cronSpec": "y".repeat(4 * MIB)}}));
    too_large(refused(
        api.patch("a", &PatchParams::default(), &patch).await,
    ));
    let apply = Patch::Apply(
        json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
        "metadata": {"name": "a"}, "spec": {"cronSpec": "y".repeat(4 * MIB)}}),
    );
    too_large(refused(
        api.patch("a", &PatchParams::apply("t"), &apply).await,
    ));
    // A delete's body (DeleteOptions) is read through the same limit.
    let c = s.client();
    let r = call(
        &c,
        "DELETE",
        "/apis/stable.example.com/v1/namespaces/default/crontabs/a",
        "application/json",
        Some(&json!({"kind": "DeleteOptions", "apiVersion": "v1", "pad": "z".repeat(4 * MIB)})),
    )
    .await;
    assert_eq!(
        (r.code, r.body["reason"].as_str()),
        (413, Some("RequestEntityTooLarge"))
    );
    // Nothing changed; a body of exactly the limit is read (and then too large for etcd).
    assert_eq!(
        api.get("a").await.unwrap().data["spec"]["cronSpec"],
        "x".repeat(10)
    );
    let body = |pad: usize| {
        json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
               "metadata": {"name": "c"}, "spec": {"cronSpec": "x".repeat(pad)}})
    };
    let pad = 3 * MIB - serde_json::to_vec(&body(0)).unwrap().len();
    assert_eq!(serde_json::to_vec(&body(pad)).unwrap().len(), 3 * MIB);
    let r = call(
        &c,
        "POST",
        "/apis/stable.example.com/v1/namespaces/default/crontabs",
        "application/json",
        Some(&body(pad)),
    )
    .await;
    assert_eq!(r.code, 500, "{}", r.body);
    // The limit is an option (0: none).
    let (_s, api) = crontab_server(FakeApiServer::builder().max_request_body_bytes(1000)).await;
    let st = refused(
        api.create(&PostParams::default(), &crontab("d", 2000))
            .await,
    );
    assert_eq!(
        (st.code, st.message.as_str()),
        (413, "Request entity too large: limit is 1000")
    );
}

// ---- item 5: the scale subresource's type check ----

fn widgets(c: &kube::Client) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("example.com", "v1", "Widget");
    Api::namespaced_with(c.clone(), "default", &ApiResource::from_gvk(&gvk))
}

fn widget_with(name: &str, replicas: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": name}, "spec": {"replicas": replicas, "color": "red"}
    }))
    .unwrap()
}

/// `(field, reason, message)` of each cause.
fn causes(st: &kube::core::Status) -> Vec<(String, String, String)> {
    st.details
        .as_ref()
        .map(|d| {
            d.causes
                .iter()
                .map(|c| (c.field.clone(), c.reason.clone(), c.message.clone()))
                .collect()
        })
        .unwrap_or_default()
}

fn cause(field: &str, reason: &str, message: &str) -> (String, String, String) {
    (field.into(), reason.into(), message.into())
}

#[tokio::test]
async fn scale_paths_are_type_checked_beside_the_schema() {
    let (_s, c) = with_widgets().await;
    let api = widgets(&c);
    let pp = PostParams::default();

    // The schema's own cause, then the scale check's (`unstructured.NestedInt64`'s error, as
    // the source has it and kube-apiserver 1.35.7 answered in the 2026-11-28 observations),
    // with the CRD's leading dot.
    let st = refused(api.create(&pp, &widget_with("a", json!("3"))).await);
    assert_eq!((st.code, st.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        causes(&st),
        [
            cause(
                "spec.replicas",
                "FieldValueTypeInvalid",
                "Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\""
            ),
            cause(
                ".spec.replicas",
                "FieldValueInvalid",
                "Invalid value: 0: .spec.replicas accessor error: 3 is of the type string, expected int64"
            ),
        ]
    );
    assert_eq!(
        st.message,
        "Widget.example.com \"a\" is invalid: [spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\", .spec.replicas: Invalid value: 0: .spec.replicas accessor error: 3 is of the type string, expected int64]"
    );

    // A count the schema allows but a Scale cannot hold.
    let st = refused(api.create(&pp, &widget_with("a", json!(-1))).await);
    assert_eq!(
        causes(&st),
        [cause(
            ".spec.replicas",
            "FieldValueInvalid",
            "Invalid value: -1: should be a non-negative integer"
        )]
    );

    // The status subresource checks the status side.
    api.create(&pp, &widget_with("a", json!(1))).await.unwrap();
    let status = Patch::Merge(json!({"status": {"replicas": -2}}));
    let st = refused(
        api.patch_status("a", &PatchParams::default(), &status)
            .await,
    );
    assert_eq!(
        causes(&st),
        [cause(
            ".status.replicas",
            "FieldValueInvalid",
            "Invalid value: -2: should be a non-negative integer"
        )]
    );
    // An update of the main resource with a good count passes.
    let good = Patch::Merge(json!({"spec": {"replicas": 2}}));
    api.patch("a", &PatchParams::default(), &good)
        .await
        .unwrap();
}
