//! Behaviour controllers depend on, through `kube::Client`: garbage collection by owner uid
//! (Background, Foreground, Orphan, dangling owners, cluster-scoped owners, collector off),
//! namespace lifecycle, continue tokens that expire (and the fault forcing it), aggregated
//! discovery, CRD conditions over time and the deployment stand-in.
use crate::common;

use std::time::Duration;

use common::*;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube_fake_apiserver::{FakeApiServer, KindSpec};
use serde_json::{Value, json};

fn widgets(c: &kube::Client) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("example.com", "v1", "Widget"));
    Api::namespaced_with(c.clone(), "default", &ar)
}

async fn create_widget(c: &kube::Client, name: &str) -> DynamicObject {
    let w: DynamicObject = serde_json::from_value(widget(name, 1)).unwrap();
    widgets(c)
        .create(&PostParams::default(), &w)
        .await
        .unwrap_or_else(|e| panic!("widget {name} created: {e}"))
}

fn owner_ref(owner: &DynamicObject, block: bool) -> OwnerReference {
    let types = owner.types.clone().expect("owner has type meta");
    OwnerReference {
        api_version: types.api_version,
        kind: types.kind,
        name: owner.metadata.name.clone().expect("owner name"),
        uid: owner.metadata.uid.clone().expect("owner uid"),
        block_owner_deletion: Some(block),
        controller: None,
    }
}

/// A ConfigMap in `default` owned through `owners`, with `finalizers`.
async fn dependent(
    c: &kube::Client,
    name: &str,
    owners: Vec<OwnerReference>,
    finalizers: &[&str],
) -> ConfigMap {
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            owner_references: Some(owners),
            finalizers: (!finalizers.is_empty())
                .then(|| finalizers.iter().map(|f| f.to_string()).collect()),
            ..Default::default()
        },
        ..Default::default()
    };
    Api::<ConfigMap>::default_namespaced(c.clone())
        .create(&PostParams::default(), &cm)
        .await
        .unwrap_or_else(|e| panic!("configmap {name} created: {e}"))
}

fn cms(c: &kube::Client) -> Api<ConfigMap> {
    Api::default_namespaced(c.clone())
}

async fn gone<K>(api: &Api<K>, name: &str)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    eventually(&format!("{name} deleted"), || async {
        api.get_opt(name)
            .await
            .expect("get")
            .is_none()
            .then_some(())
    })
    .await
}

/// `name` exists, and has done so for a while (what the collector must leave alone).
async fn stays(api: &Api<ConfigMap>, name: &str) -> ConfigMap {
    tokio::time::sleep(Duration::from_millis(300)).await;
    api.get_opt(name)
        .await
        .expect("get")
        .unwrap_or_else(|| panic!("{name} was deleted"))
}

fn owners_of(cm: &ConfigMap) -> Vec<String> {
    cm.metadata
        .owner_references
        .iter()
        .flatten()
        .map(|r| r.name.clone())
        .collect()
}

#[tokio::test]
async fn background_is_the_default_for_custom_resources() {
    let (_s, c) = with_widgets().await;
    let owner = create_widget(&c, "owner").await;
    dependent(&c, "d1", vec![owner_ref(&owner, false)], &[]).await;
    dependent(&c, "d2", vec![owner_ref(&owner, true)], &[]).await;
    let r = widgets(&c)
        .delete("owner", &DeleteParams::default())
        .await
        .expect("delete");
    assert!(r.is_left(), "a widget DELETE answers with the object");
    assert!(widgets(&c).get_opt("owner").await.unwrap().is_none());
    gone(&cms(&c), "d1").await;
    gone(&cms(&c), "d2").await;
}

#[tokio::test]
async fn foreground_keeps_the_owner_until_blocking_dependents_are_gone() {
    let (_s, c) = with_widgets().await;
    let owner = create_widget(&c, "owner").await;
    dependent(
        &c,
        "blocker",
        vec![owner_ref(&owner, true)],
        &["example.com/hold"],
    )
    .await;
    dependent(&c, "free", vec![owner_ref(&owner, false)], &[]).await;

    let r = widgets(&c)
        .delete("owner", &DeleteParams::foreground())
        .await
        .expect("delete");
    let pending = r.left().expect("the owner comes back while it waits");
    assert!(pending.metadata.deletion_timestamp.is_some());
    assert!(
        pending
            .metadata
            .finalizers
            .iter()
            .flatten()
            .any(|f| f == "foregroundDeletion"),
        "{:?}",
        pending.metadata.finalizers
    );

    // Dependents are deleted; the blocking one is held by its own finalizer, and so the owner.
    gone(&cms(&c), "free").await;
    eventually("the blocker marked for deletion", || async {
        let b = cms(&c).get("blocker").await.expect("blocker");
        b.metadata.deletion_timestamp.map(|_| ())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let held = widgets(&c).get("owner").await.expect("owner still there");
    assert_eq!(
        held.metadata.finalizers,
        Some(vec!["foregroundDeletion".to_string()])
    );

    cms(&c)
        .patch(
            "blocker",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .expect("finalizer removed");
    gone(&cms(&c), "blocker").await;
    gone(&widgets(&c), "owner").await;
}

/// The reference a ConfigMap dependent holds to ConfigMap `owner`.
fn cm_owner_ref(owner: &ConfigMap) -> OwnerReference {
    OwnerReference {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: owner.metadata.name.clone().expect("name"),
        uid: owner.metadata.uid.clone().expect("uid"),
        block_owner_deletion: Some(true),
        controller: None,
    }
}

#[tokio::test]
async fn foreground_cascades_through_dependents_that_have_dependents() {
    let (_s, c) = with_widgets().await;
    let owner = create_widget(&c, "owner").await;
    let child = dependent(&c, "child", vec![owner_ref(&owner, true)], &[]).await;
    dependent(
        &c,
        "grandchild",
        vec![cm_owner_ref(&child)],
        &["example.com/hold"],
    )
    .await;
    widgets(&c)
        .delete("owner", &DeleteParams::foreground())
        .await
        .expect("delete");
    // The child has a dependent of its own, so it is deleted in the foreground too: it waits
    // for the grandchild, which its finalizer holds.
    let held = eventually("the child waiting for its dependent", || async {
        let ch = cms(&c).get("child").await.expect("child");
        let waiting = ch
            .metadata
            .finalizers
            .iter()
            .flatten()
            .any(|f| f == "foregroundDeletion");
        waiting.then_some(ch)
    })
    .await;
    assert!(held.metadata.deletion_timestamp.is_some());
    assert!(
        widgets(&c).get_opt("owner").await.unwrap().is_some(),
        "the owner waits too"
    );
    cms(&c)
        .patch(
            "grandchild",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .expect("finalizer removed");
    gone(&cms(&c), "grandchild").await;
    gone(&cms(&c), "child").await;
    gone(&widgets(&c), "owner").await;
}

#[tokio::test]
async fn orphan_removes_the_owner_reference_from_dependents() {
    let (_s, c) = with_widgets().await;
    let owner = create_widget(&c, "owner").await;
    let other = create_widget(&c, "other").await;
    dependent(
        &c,
        "both",
        vec![owner_ref(&owner, true), owner_ref(&other, false)],
        &[],
    )
    .await;
    dependent(&c, "only", vec![owner_ref(&owner, true)], &[]).await;

    let r = widgets(&c)
        .delete("owner", &DeleteParams::orphan())
        .await
        .expect("delete");
    let pending = r.left().expect("object while the orphan finalizer runs");
    assert_eq!(
        pending.metadata.finalizers,
        Some(vec!["orphan".to_string()])
    );
    gone(&widgets(&c), "owner").await;

    let both = stays(&cms(&c), "both").await;
    assert_eq!(owners_of(&both), ["other"]);
    let only = stays(&cms(&c), "only").await;
    assert_eq!(only.metadata.owner_references, None);
}

#[tokio::test]
async fn owners_are_matched_by_uid_and_dangling_dependents_collected() {
    let (_s, c) = with_widgets().await;
    let owner = create_widget(&c, "owner").await;
    let mut impostor = owner_ref(&owner, false);
    impostor.uid = "00000000-0000-4000-8000-000000000000".into();
    // Same name, another uid: a re-created owner does not adopt the old one's dependents.
    dependent(&c, "stale", vec![impostor], &[]).await;
    dependent(&c, "owned", vec![owner_ref(&owner, false)], &[]).await;
    gone(&cms(&c), "stale").await;
    stays(&cms(&c), "owned").await;

    // An owner of a kind nobody serves: the collector cannot tell, so it leaves it.
    let mut unknown = owner_ref(&owner, false);
    unknown.api_version = "nowhere.example.com/v1".into();
    unknown.kind = "Ghost".into();
    dependent(&c, "unknown-owner", vec![unknown], &[]).await;
    stays(&cms(&c), "unknown-owner").await;
}

#[tokio::test]
async fn a_kind_registered_later_is_seen_by_the_collector() {
    let (s, c) = with_widgets().await;
    let gadget = |name: &str, uid: &str| OwnerReference {
        api_version: "late.example.com/v1".into(),
        kind: "Gadget".into(),
        name: name.into(),
        uid: uid.into(),
        block_owner_deletion: None,
        controller: None,
    };
    // Nobody serves Gadgets yet: the collector cannot tell whether the owner exists.
    dependent(
        &c,
        "waits-for-kind",
        vec![gadget("never", "00000000-0000-4000-8000-000000000001")],
        &[],
    )
    .await;
    stays(&cms(&c), "waits-for-kind").await;

    // Served from now on, with no write to wake it: the owner never existed, so it goes.
    s.register_kind(KindSpec::namespaced(
        "late.example.com",
        "v1",
        "Gadget",
        "gadgets",
    ))
    .unwrap();
    gone(&cms(&c), "waits-for-kind").await;

    // And owners of the new kind hold and release dependents as any other.
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("late.example.com", "v1", "Gadget"));
    let gadgets: Api<DynamicObject> = Api::namespaced_with(c.clone(), "default", &ar);
    let owner: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "late.example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}}))
    .unwrap();
    let owner = gadgets
        .create(&PostParams::default(), &owner)
        .await
        .unwrap();
    let uid = owner.metadata.uid.clone().expect("uid");
    dependent(&c, "held-by-gadget", vec![gadget("g", &uid)], &[]).await;
    stays(&cms(&c), "held-by-gadget").await;
    gadgets.delete("g", &DeleteParams::default()).await.unwrap();
    gone(&cms(&c), "held-by-gadget").await;
}

#[tokio::test]
async fn cluster_scoped_owners_hold_namespaced_dependents() {
    let (s, c) = with_widgets().await;
    let mut spec = KindSpec::namespaced("example.com", "v1", "Cluster", "clusters");
    spec.namespaced = false;
    s.register_kind(spec).unwrap();
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("example.com", "v1", "Cluster"));
    let clusters: Api<DynamicObject> = Api::all_with(c.clone(), &ar);
    let owner: DynamicObject = serde_json::from_value(
        json!({"apiVersion": "example.com/v1", "kind": "Cluster", "metadata": {"name": "big"}}),
    )
    .unwrap();
    let owner = clusters
        .create(&PostParams::default(), &owner)
        .await
        .expect("cluster created");
    dependent(&c, "in-default", vec![owner_ref(&owner, false)], &[]).await;
    stays(&cms(&c), "in-default").await;
    clusters
        .delete("big", &DeleteParams::default())
        .await
        .expect("delete");
    gone(&cms(&c), "in-default").await;
}

#[tokio::test]
async fn without_the_collector_owners_go_and_dependents_stay() {
    let s = FakeApiServer::builder()
        .garbage_collector(false)
        .start()
        .await
        .unwrap();
    s.register_crd(widget_crd()).unwrap();
    let c = s.in_process_client();
    let owner = create_widget(&c, "owner").await;
    dependent(&c, "orphan", vec![owner_ref(&owner, true)], &[]).await;
    let r = widgets(&c)
        .delete("owner", &DeleteParams::foreground())
        .await
        .expect("delete");
    let last = r.left().expect("the deleted object");
    assert_eq!(
        last.metadata.finalizers, None,
        "no GC finalizer without a GC"
    );
    assert!(widgets(&c).get_opt("owner").await.unwrap().is_none());
    let cm = stays(&cms(&c), "orphan").await;
    assert_eq!(owners_of(&cm), ["owner"]);
}

#[tokio::test]
async fn delete_options_are_validated() {
    let (_s, c) = with_widgets().await;
    create_widget(&c, "w").await;
    let r = delete_with(
        &c,
        &format!("{WIDGETS}/w"),
        json!({"propagationPolicy": "Sideways"}),
    )
    .await;
    assert_status(&r, 422, "Invalid");
    assert_eq!(
        r.body["message"],
        "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: \"Sideways\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""
    );
    // The deprecated orphanDependents=false asks for cascading: 202 while finalizers hold.
    let mut held = widget("held", 1);
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    post(&c, WIDGETS, held).await;
    let r = delete_with(
        &c,
        &format!("{WIDGETS}/held"),
        json!({"orphanDependents": false}),
    )
    .await;
    assert_eq!(r.code, 202, "{}", r.body);
}

/// Namespace `name` and, in `default`, a ConfigMap it owns; and a ConfigMap inside it.
async fn owning_namespace(c: &kube::Client, name: &str, dependent: &str) -> Namespace {
    let nss: Api<Namespace> = Api::all(c.clone());
    let ns = nss
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": name}})).unwrap(),
        )
        .await
        .unwrap();
    let owner = OwnerReference {
        api_version: "v1".into(),
        kind: "Namespace".into(),
        name: name.into(),
        uid: ns.metadata.uid.clone().expect("uid"),
        block_owner_deletion: Some(true),
        controller: None,
    };
    let dep: ConfigMap = serde_json::from_value(json!({"metadata": {
        "name": dependent, "ownerReferences": [owner], "finalizers": ["example.com/hold"]}}))
    .unwrap();
    cms(c).create(&PostParams::default(), &dep).await.unwrap();
    let inside: Api<ConfigMap> = Api::namespaced(c.clone(), name);
    let content: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "content"}})).unwrap();
    inside
        .create(&PostParams::default(), &content)
        .await
        .unwrap();
    ns
}

async fn release(c: &kube::Client, name: &str) {
    cms(c)
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn a_namespace_delete_policy_governs_its_dependents_and_its_contents_always_go() {
    let s = FakeApiServer::start().await.unwrap();
    let c = s.in_process_client();
    let nss: Api<Namespace> = Api::all(c.clone());
    let ns_finalizers = |ns: &Namespace| ns.metadata.finalizers.clone().unwrap_or_default();

    // Orphan: the namespace carries `orphan`; its dependent elsewhere loses the reference and
    // stays; its contents are deleted all the same.
    owning_namespace(&c, "orphaning", "orphaned").await;
    let dp = DeleteParams::orphan();
    let first = nss.delete("orphaning", &dp).await.unwrap().left().unwrap();
    assert_eq!(ns_finalizers(&first), ["orphan"]);
    gone(&nss, "orphaning").await;
    gone(
        &Api::<ConfigMap>::namespaced(c.clone(), "orphaning"),
        "content",
    )
    .await;
    let kept = stays(&cms(&c), "orphaned").await;
    assert!(owners_of(&kept).is_empty(), "{kept:?}");
    release(&c, "orphaned").await;

    // Foreground: the namespace waits (with `foregroundDeletion`) for its blocking dependent,
    // which the collector deletes; a finalizer on that dependent holds both.
    owning_namespace(&c, "waiting", "blocker").await;
    let first = nss
        .delete("waiting", &DeleteParams::foreground())
        .await
        .unwrap()
        .left()
        .unwrap();
    assert_eq!(ns_finalizers(&first), ["foregroundDeletion"]);
    eventually("the blocking dependent marked for deletion", || async {
        let cm = cms(&c).get("blocker").await.unwrap();
        cm.metadata.deletion_timestamp.is_some().then_some(())
    })
    .await;
    gone(
        &Api::<ConfigMap>::namespaced(c.clone(), "waiting"),
        "content",
    )
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let held = nss
        .get("waiting")
        .await
        .expect("the namespace waits for its dependent");
    assert_eq!(ns_finalizers(&held), ["foregroundDeletion"]);
    release(&c, "blocker").await;
    gone(&cms(&c), "blocker").await;
    gone(&nss, "waiting").await;

    // No policy (Background): no collector finalizer; the dependent is collected once the
    // namespace is gone.
    owning_namespace(&c, "plain", "follower").await;
    let first = nss
        .delete("plain", &DeleteParams::default())
        .await
        .unwrap()
        .left()
        .unwrap();
    assert!(ns_finalizers(&first).is_empty(), "{first:?}");
    gone(&nss, "plain").await;
    eventually(
        "the dependent of the deleted namespace marked for deletion",
        || async {
            let cm = cms(&c).get("follower").await.unwrap();
            cm.metadata.deletion_timestamp.is_some().then_some(())
        },
    )
    .await;
    release(&c, "follower").await;
    gone(&cms(&c), "follower").await;
}

#[tokio::test]
async fn namespaces_terminate_refuse_new_content_and_go() {
    let s = FakeApiServer::start().await.unwrap();
    let c = s.in_process_client();
    let nss: Api<Namespace> = Api::all(c.clone());
    for n in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        let ns = nss.get(n).await.unwrap_or_else(|e| panic!("{n}: {e}"));
        assert_eq!(ns.status.and_then(|s| s.phase).as_deref(), Some("Active"));
    }
    let r = delete(&c, "/api/v1/namespaces/kube-system").await;
    assert_status(&r, 403, "Forbidden");
    assert_eq!(
        r.body["message"],
        "namespaces \"kube-system\" is forbidden: this namespace may not be deleted"
    );

    let team: Namespace = serde_json::from_value(json!({"metadata": {"name": "team"}})).unwrap();
    nss.create(&PostParams::default(), &team).await.unwrap();
    let in_team: Api<ConfigMap> = Api::namespaced(c.clone(), "team");
    let cm = |name: &str, finalizers: Value| -> ConfigMap {
        serde_json::from_value(json!({"metadata": {"name": name, "finalizers": finalizers}}))
            .unwrap()
    };
    in_team
        .create(&PostParams::default(), &cm("plain", json!([])))
        .await
        .unwrap();
    in_team
        .create(
            &PostParams::default(),
            &cm("held", json!(["example.com/hold"])),
        )
        .await
        .unwrap();

    let r = delete(&c, "/api/v1/namespaces/team").await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["status"]["phase"], "Terminating");
    assert!(r.body["metadata"]["deletionTimestamp"].is_string());

    let r = post(
        &c,
        "/api/v1/namespaces/team/configmaps",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "late"}}),
    )
    .await;
    assert_status(&r, 403, "Forbidden");
    assert_eq!(
        r.body["message"],
        "configmaps \"late\" is forbidden: unable to create new content in namespace team because it is being terminated"
    );
    assert_eq!(
        r.body["details"],
        json!({"name": "late", "kind": "configmaps", "causes": [{
            "reason": "NamespaceTerminating",
            "message": "namespace team is being terminated",
            "field": "metadata.namespace"
        }]})
    );
    // Through kube: the same error, typed.
    let err = in_team
        .create(&PostParams::default(), &cm("late", json!([])))
        .await
        .expect_err("refused");
    assert!(
        matches!(err, kube::Error::Api(ref e) if e.code == 403 && e.reason == "Forbidden"),
        "{err}"
    );

    let r = delete(&c, "/api/v1/namespaces/team").await;
    assert_status(&r, 409, "Conflict");
    assert_eq!(
        r.body["message"],
        "Operation cannot be fulfilled on namespaces \"team\": The system is ensuring all content is removed from this namespace.  Upon completion, this namespace will automatically be purged by the system."
    );

    gone(&in_team, "plain").await;
    eventually("the held configmap marked for deletion", || async {
        in_team
            .get("held")
            .await
            .unwrap()
            .metadata
            .deletion_timestamp
            .map(|_| ())
    })
    .await;
    let still = eventually("the remaining content reported", || async {
        let ns = nss
            .get("team")
            .await
            .expect("team kept while content remains");
        let reported = ns
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| {
                c.iter()
                    .any(|c| c.type_ == "NamespaceFinalizersRemaining" && c.status == "True")
            });
        reported.then_some(ns)
    })
    .await;
    let status = still.status.unwrap();
    assert_eq!(status.phase.as_deref(), Some("Terminating"));
    let conditions: Vec<(String, String, String)> = status
        .conditions
        .unwrap()
        .into_iter()
        .map(|c| (c.type_, c.status, c.message.unwrap_or_default()))
        .collect();
    let t = |ty: &str, st: &str, m: &str| (ty.to_string(), st.to_string(), m.to_string());
    assert_eq!(
        conditions,
        [
            t(
                "NamespaceDeletionDiscoveryFailure",
                "False",
                "All resources successfully discovered"
            ),
            t(
                "NamespaceDeletionGroupVersionParsingFailure",
                "False",
                "All legacy kube types successfully parsed"
            ),
            t(
                "NamespaceDeletionContentFailure",
                "False",
                "All content successfully deleted, may be waiting on finalization"
            ),
            t(
                "NamespaceContentRemaining",
                "True",
                "Some resources are remaining: configmaps. has 1 resource instances"
            ),
            t(
                "NamespaceFinalizersRemaining",
                "True",
                "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"
            ),
        ]
    );

    in_team
        .patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .unwrap();
    gone(&nss, "team").await;
}

/// Five widgets w0..w4; returns the first page of two and its continue token.
async fn first_page(c: &kube::Client) -> (Vec<String>, String) {
    for i in 0..5 {
        create_widget(c, &format!("w{i}")).await;
    }
    let page = widgets(c)
        .list(&ListParams::default().limit(2))
        .await
        .expect("first page");
    let names = page
        .items
        .iter()
        .map(|w| w.metadata.name.clone().unwrap())
        .collect();
    (names, page.metadata.continue_.expect("a continue token"))
}

fn names_of(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap().to_string())
        .collect()
}

const TOO_OLD_CONTINUE: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

/// The 410 of an expired continue token: a Status whose metadata carries the next token.
fn assert_expired_continue(r: &Resp) {
    assert_eq!(r.code, 410, "{}", r.body);
    assert_eq!(
        (
            &r.body["kind"],
            &r.body["status"],
            &r.body["reason"],
            &r.body["code"]
        ),
        (
            &json!("Status"),
            &json!("Failure"),
            &json!("Expired"),
            &json!(410)
        ),
        "{}",
        r.body
    );
    assert_eq!(r.body["message"], TOO_OLD_CONTINUE);
    let next = r.body["metadata"]["continue"]
        .as_str()
        .expect("metadata.continue");
    let raw =
        base64::engine::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, next)
            .expect("token is unpadded URL-safe base64");
    let v: Value = serde_json::from_slice(&raw).expect("token is JSON");
    assert_eq!(v["rv"], -1, "continues at the newest revision: {v}");
}

#[tokio::test]
async fn continue_tokens_expire_after_compaction() {
    let (s, c) = with_widgets().await;
    let (names, token) = first_page(&c).await;
    assert_eq!(names, ["w0", "w1"]);
    create_widget(&c, "w1a").await;
    s.faults().compact();

    let r = get(&c, &format!("{WIDGETS}?limit=2&continue={token}")).await;
    assert_expired_continue(&r);
    let inconsistent = r.body["metadata"]["continue"]
        .as_str()
        .expect("the inconsistent-continue token")
        .to_string();
    // kube sees the 410 as an Expired API error.
    let err = widgets(&c)
        .list(&ListParams::default().limit(2).continue_token(&token))
        .await
        .expect_err("expired");
    assert!(
        matches!(err, kube::Error::Api(ref e) if e.code == 410 && e.reason == "Expired"),
        "{err}"
    );

    // The inconsistent token continues at the newest state: w1a (created after page one) shows.
    let rest = get(&c, &format!("{WIDGETS}?limit=10&continue={inconsistent}")).await;
    assert_eq!(rest.code, 200, "{}", rest.body);
    assert_eq!(names_of(&rest.body), ["w1a", "w2", "w3", "w4"]);
    assert_eq!(rest.body["metadata"]["resourceVersion"], s_rv(&c).await);

    // A list at an exact resourceVersion from before the compaction.
    let old = token_rv(&token);
    let r = get(
        &c,
        &format!("{WIDGETS}?resourceVersion={old}&resourceVersionMatch=Exact"),
    )
    .await;
    assert_status(&r, 410, "Expired");
    assert_eq!(
        r.body["message"],
        "The resourceVersion for the provided list is too old."
    );
    // A limit with a resourceVersion and no match is the legacy exact list: the same.
    let r = get(&c, &format!("{WIDGETS}?resourceVersion={old}&limit=1")).await;
    assert_status(&r, 410, "Expired");
    // Without a limit it is "not older than": served.
    assert_eq!(
        get(&c, &format!("{WIDGETS}?resourceVersion={old}"))
            .await
            .code,
        200
    );
    drop(s);
}

/// The resourceVersion of the widget list now.
async fn s_rv(c: &kube::Client) -> String {
    rv_of(&get(c, WIDGETS).await.body)
}

/// The `rv` inside a continue token.
fn token_rv(token: &str) -> u64 {
    use base64::Engine;
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .expect("token is unpadded URL-safe base64");
    let v: Value = serde_json::from_slice(&raw).expect("token is JSON");
    assert_eq!(v["v"], "meta.k8s.io/v1");
    v["rv"].as_u64().expect("rv")
}

#[tokio::test]
async fn the_expire_lists_fault_forces_both_410s() {
    let (s, c) = with_widgets().await;
    let (_, token) = first_page(&c).await;
    let rv = token_rv(&token);
    s.faults().expire_lists(2);
    // A list that cannot expire neither fails nor counts.
    assert_eq!(get(&c, WIDGETS).await.code, 200);
    let r = get(&c, &format!("{WIDGETS}?limit=2&continue={token}")).await;
    assert_expired_continue(&r);
    let r = get(
        &c,
        &format!("{WIDGETS}?resourceVersion={rv}&resourceVersionMatch=Exact"),
    )
    .await;
    assert_status(&r, 410, "Expired");
    // Used up: the same token works again (the history was never compacted).
    let r = get(&c, &format!("{WIDGETS}?limit=2&continue={token}")).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(names_of(&r.body), ["w2", "w3"]);
}

const AGGREGATED_V2: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

#[tokio::test]
async fn aggregated_discovery_answers_when_asked() {
    let (_s, c) = with_widgets().await;
    let accept = format!(
        "{AGGREGATED_V2},application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
    );
    let r = get_accept(&c, "/apis", &accept).await;
    assert_eq!(r.code, 200);
    assert_eq!(r.headers["content-type"], AGGREGATED_V2);
    assert_eq!(r.body["kind"], "APIGroupDiscoveryList");
    assert_eq!(r.body["apiVersion"], "apidiscovery.k8s.io/v2");
    let groups = r.body["items"].as_array().expect("items");
    let group = |name: &str| {
        groups
            .iter()
            .find(|g| g["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("group {name} in {groups:?}"))
    };
    let apps = &group("apps")["versions"][0];
    assert_eq!(apps["version"], "v1");
    assert_eq!(apps["freshness"], "Current");
    let deploy = apps["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .find(|r| r["resource"] == "deployments")
        .expect("deployments in apps/v1");
    assert_eq!(deploy["scope"], "Namespaced");
    assert_eq!(deploy["singularResource"], "deployment");
    assert_eq!(
        deploy["responseKind"],
        json!({"group": "apps", "version": "v1", "kind": "Deployment"})
    );
    assert_eq!(deploy["shortNames"], json!(["deploy"]));
    assert_eq!(
        deploy["subresources"][0],
        json!({"subresource": "scale", "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
               "verbs": ["get", "patch", "update"]})
    );
    let example = group("example.com")["versions"].as_array().unwrap();
    let versions: Vec<&str> = example
        .iter()
        .map(|v| v["version"].as_str().unwrap())
        .collect();
    assert_eq!(versions, ["v2", "v1"]);
    assert_eq!(example[1]["resources"][0]["shortNames"], json!(["wd"]));
    assert_eq!(example[1]["resources"][0]["categories"], json!(["all"]));

    let core = get_accept(&c, "/api", &accept).await;
    assert_eq!(core.headers["content-type"], AGGREGATED_V2);
    let items = core.body["items"].as_array().unwrap();
    assert_eq!(items.len(), 1);
    assert!(items[0]["metadata"].get("name").is_none());
    let v1 = &items[0]["versions"][0];
    assert_eq!(v1["version"], "v1");
    assert!(
        v1["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["resource"] == "configmaps" && r["scope"] == "Namespaced")
    );

    let beta = get_accept(
        &c,
        "/apis",
        "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList",
    )
    .await;
    assert_eq!(beta.body["apiVersion"], "apidiscovery.k8s.io/v2beta1");
    // Plain JSON first: the plain documents.
    let plain = get_accept(&c, "/apis", &format!("application/json,{AGGREGATED_V2}")).await;
    assert_eq!(plain.body["kind"], "APIGroupList");
    assert_eq!(plain.headers["content-type"], "application/json");
    assert_eq!(get(&c, "/api").await.body["kind"], "APIVersions");
}

fn crd_condition(crd: &Value, ty: &str) -> Value {
    crd["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == ty))
        .cloned()
        .unwrap_or(Value::Null)
}

const WIDGET_CRD: &str =
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com";

#[tokio::test]
async fn deleting_a_crd_deletes_its_custom_resources_then_the_crd() {
    let (_s, c) = with_widgets().await;
    create_widget(&c, "plain").await;
    let held: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "held", "finalizers": ["example.com/hold"]}}))
    .unwrap();
    widgets(&c)
        .create(&PostParams::default(), &held)
        .await
        .unwrap();

    // The first DELETE marks the CRD; nothing is gone yet.
    let r = delete(&c, WIDGET_CRD).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(
        r.body["metadata"]["finalizers"],
        json!(["customresourcecleanup.apiextensions.k8s.io"])
    );
    assert!(r.body["metadata"]["deletionTimestamp"].is_string());
    let term = crd_condition(&r.body, "Terminating");
    assert_eq!(
        (&term["status"], &term["reason"], &term["message"]),
        (
            &json!("True"),
            &json!("InstanceDeletionPending"),
            &json!(
                "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon"
            )
        )
    );

    // The finalizer controller deletes the objects; the one with a finalizer holds the CRD.
    gone(&widgets(&c), "plain").await;
    let crd = eventually("Terminating reason InstanceDeletionInProgress", || async {
        let crd = get(&c, WIDGET_CRD).await.body;
        (crd_condition(&crd, "Terminating")["reason"] == "InstanceDeletionInProgress")
            .then_some(crd)
    })
    .await;
    assert_eq!(
        crd_condition(&crd, "Terminating")["message"],
        "CustomResource deletion is in progress"
    );
    let held = widgets(&c).get("held").await.unwrap();
    assert!(held.metadata.deletion_timestamp.is_some(), "{held:?}");

    // No new objects while it terminates.
    let r = post(&c, WIDGETS, widget("late", 1)).await;
    assert_status(&r, 405, "MethodNotAllowed");
    assert_eq!(
        r.body["message"],
        "create not allowed while custom resource definition is terminating"
    );

    // Once the last object goes, so does the CRD, and its resource is no longer served.
    widgets(&c)
        .patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .unwrap();
    eventually("the CRD deleted", || async {
        (get(&c, WIDGET_CRD).await.code == 404).then_some(())
    })
    .await;
    assert_eq!(get(&c, WIDGETS).await.code, 404);
}

#[tokio::test]
async fn crds_are_established_after_the_delay() {
    let s = FakeApiServer::builder()
        .crd_establish_delay(Duration::from_millis(1500))
        .start()
        .await
        .unwrap();
    let c = s.in_process_client();
    s.register_crd(widget_crd()).expect("CRD created");
    let crd = get(&c, WIDGET_CRD).await.body;
    assert_eq!(crd_condition(&crd, "NamesAccepted")["status"], "True");
    let est = crd_condition(&crd, "Established");
    assert_eq!(
        (&est["status"], &est["reason"], &est["message"]),
        (
            &json!("False"),
            &json!("Installing"),
            &json!("the initial names have been accepted")
        )
    );
    assert_eq!(
        get(&c, WIDGETS).await.code,
        404,
        "not served before it is established"
    );
    eventually("widgets served", || async {
        (get(&c, WIDGETS).await.code == 200).then_some(())
    })
    .await;
    let crd = get(&c, WIDGET_CRD).await.body;
    let est = crd_condition(&crd, "Established");
    assert_eq!(
        (&est["status"], &est["reason"]),
        (&json!("True"), &json!("InitialNamesAccepted"))
    );
}

#[tokio::test]
async fn a_kind_taken_in_the_group_is_not_accepted() {
    let (s, c) = with_widgets().await;
    let mut gadgets = widget_crd();
    gadgets["metadata"]["name"] = json!("gadgets.example.com");
    gadgets["spec"]["names"] = json!({"plural": "gadgets", "kind": "Widget"});
    s.register_crd(gadgets)
        .expect("stored even with a conflict");
    let path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.example.com";
    let crd = get(&c, path).await.body;
    let names = crd_condition(&crd, "NamesAccepted");
    // Kind and listKind both conflict; the last check names the reason, as the real controller.
    assert_eq!(
        (&names["status"], &names["reason"], &names["message"]),
        (
            &json!("False"),
            &json!("ListKindConflict"),
            &json!("\"WidgetList\" is already in use")
        )
    );
    let est = crd_condition(&crd, "Established");
    assert_eq!(
        (&est["status"], &est["reason"]),
        (&json!("False"), &json!("NotAccepted"))
    );
    assert_eq!(crd["status"]["acceptedNames"]["plural"], "gadgets");
    assert_eq!(crd["status"]["acceptedNames"]["kind"], "");
    let gadgets_path = "/apis/example.com/v1/namespaces/default/gadgets";
    assert_eq!(get(&c, gadgets_path).await.code, 404);

    // Once the widgets CRD is gone its names are free, and gadgets are served.
    assert_eq!(delete(&c, WIDGET_CRD).await.code, 200);
    eventually("gadgets accepted and served", || async {
        (get(&c, gadgets_path).await.code == 200).then_some(())
    })
    .await;
    let crd = get(&c, path).await.body;
    assert_eq!(
        crd_condition(&crd, "NamesAccepted")["reason"],
        "NoConflicts"
    );
    assert_eq!(crd_condition(&crd, "Established")["status"], "True");
}

fn deployment(name: &str, replicas: i32) -> Deployment {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}
    }))
    .unwrap()
}

fn counts(d: &Deployment) -> (Option<i64>, [Option<i32>; 4]) {
    let s = d.status.clone().unwrap_or_default();
    (
        s.observed_generation,
        [
            s.replicas,
            s.updated_replicas,
            s.ready_replicas,
            s.available_replicas,
        ],
    )
}

#[tokio::test]
async fn deployments_become_available_after_the_delay() {
    let s = FakeApiServer::builder()
        .deployments_become_available(Some(Duration::from_millis(2500)))
        .start()
        .await
        .unwrap();
    let c = s.in_process_client();
    let deps: Api<Deployment> = Api::default_namespaced(c.clone());
    let created = deps
        .create(&PostParams::default(), &deployment("web", 3))
        .await
        .unwrap();
    let rv = created.metadata.resource_version.clone().unwrap();
    let mut events = deps
        .watch(&WatchParams::default(), &rv)
        .await
        .expect("watch")
        .boxed();

    // The generation is observed at once; the replicas only after the delay.
    let observed = eventually("observedGeneration 1", || async {
        let d = deps.get("web").await.unwrap();
        (counts(&d).0 == Some(1)).then_some(d)
    })
    .await;
    assert_eq!(counts(&observed).1, [None; 4], "available before the delay");
    let three = Some(3);
    eventually("3 replicas available", || async {
        let d = deps.get("web").await.unwrap();
        (counts(&d) == (Some(1), [three; 4])).then_some(())
    })
    .await;
    // Watchers see it as a MODIFIED event with its own resourceVersion.
    let seen = tokio::time::timeout(EVENTUALLY, async {
        while let Some(e) = events.try_next().await.expect("watch event") {
            if let WatchEvent::Modified(d) = e
                && counts(&d).1 == [three; 4]
            {
                return d;
            }
        }
        panic!("the watch ended before the available status")
    })
    .await
    .expect("a MODIFIED event with the available status");
    assert_ne!(seen.metadata.resource_version, Some(rv));
    let cond = &seen.status.unwrap().conditions.unwrap()[0];
    assert_eq!(
        (cond.type_.as_str(), cond.status.as_str()),
        ("Available", "True")
    );

    // Scaling is a new generation: observed, then available again.
    deps.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 5}})),
    )
    .await
    .unwrap();
    eventually("5 replicas available at generation 2", || async {
        let d = deps.get("web").await.unwrap();
        (counts(&d) == (Some(2), [Some(5); 4])).then_some(())
    })
    .await;
}

#[tokio::test]
async fn by_default_only_observed_generation_follows_the_spec() {
    // The deployment controller writes `observedGeneration` on every sync; without the switch
    // the replica counts are the test's to write.
    let s = FakeApiServer::start().await.unwrap();
    let deps: Api<Deployment> = Api::default_namespaced(s.in_process_client());
    deps.create(&PostParams::default(), &deployment("quiet", 2))
        .await
        .unwrap();
    eventually("observedGeneration 1 on a new deployment", || async {
        let d = deps.get("quiet").await.unwrap();
        (counts(&d) == (Some(1), [None; 4])).then_some(())
    })
    .await;

    // A status the client wrote is kept; a new generation is observed on top of it.
    deps.patch_status(
        "quiet",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"replicas": 2}})),
    )
    .await
    .unwrap();
    deps.patch(
        "quiet",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 4}})),
    )
    .await
    .unwrap();
    eventually("observedGeneration 2 after the scale", || async {
        let d = deps.get("quiet").await.unwrap();
        (counts(&d) == (Some(2), [Some(2), None, None, None])).then_some(())
    })
    .await;

    // A status-only write is no new generation: nothing more is written.
    let settled = deps.get("quiet").await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let later = deps.get("quiet").await.unwrap();
    assert_eq!(
        later.metadata.resource_version, settled.metadata.resource_version,
        "the stand-in wrote again with nothing to observe"
    );
}
