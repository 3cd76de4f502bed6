//! Raw-HTTP behaviour: status codes and Status bodies, CRUD, conflicts, finalizers, subresources,
//! patches, dryRun, lists and pagination, CRD registration and removal, discovery.
use crate::common;

use common::*;
use kube_fake_apiserver::FakeApiServer;
use serde_json::{Value, json};

#[tokio::test]
async fn create_get_update_delete_with_server_fields() {
    let (_s, c) = with_widgets().await;
    let r = post(&c, WIDGETS, widget("a", 1)).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let m = &r.body["metadata"];
    assert_eq!(m["namespace"], "default");
    assert_eq!(m["generation"], 1);
    assert_eq!(m["uid"].as_str().unwrap().len(), 36);
    assert!(m["creationTimestamp"].as_str().unwrap().ends_with('Z'));
    let rv1: u64 = m["resourceVersion"].as_str().unwrap().parse().unwrap();

    let got = get(&c, &format!("{WIDGETS}/a")).await;
    assert_eq!(got.code, 200);
    assert_eq!(got.body["spec"]["replicas"], 1);

    let mut upd = got.body.clone();
    upd["spec"]["replicas"] = json!(2);
    let r = put(&c, &format!("{WIDGETS}/a"), upd.clone()).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["metadata"]["generation"], 2);
    let rv2: u64 = rv_of(&r.body).parse().unwrap();
    assert!(rv2 > rv1);

    // Stale resourceVersion: 409 Conflict with the exact message.
    let r = put(&c, &format!("{WIDGETS}/a"), upd).await;
    assert_status(&r, 409, "Conflict");
    assert_eq!(
        r.body["message"],
        "Operation cannot be fulfilled on widgets.example.com \"a\": the object has been modified; please apply your changes to the latest version and try again"
    );
    assert_eq!(
        r.body["details"],
        json!({"name": "a", "group": "example.com", "kind": "widgets"})
    );

    // A metadata-only change does not bump generation.
    let mut cur = get(&c, &format!("{WIDGETS}/a")).await.body;
    cur["metadata"]["labels"]["x"] = json!("y");
    let r = put(&c, &format!("{WIDGETS}/a"), cur).await;
    assert_eq!(r.body["metadata"]["generation"], 2);

    let r = delete(&c, &format!("{WIDGETS}/a")).await;
    assert_eq!(r.code, 200);
    assert_eq!(r.body["metadata"]["name"], "a");
    let r = get(&c, &format!("{WIDGETS}/a")).await;
    assert_status(&r, 404, "NotFound");
    assert_eq!(r.body["message"], "widgets.example.com \"a\" not found");
}

#[tokio::test]
async fn error_statuses() {
    let (_s, c) = with_widgets().await;
    assert_eq!(post(&c, WIDGETS, widget("a", 1)).await.code, 201);
    let r = post(&c, WIDGETS, widget("a", 1)).await;
    assert_status(&r, 409, "AlreadyExists");
    assert_eq!(
        r.body["message"],
        "widgets.example.com \"a\" already exists"
    );

    let r = post(
        &c,
        WIDGETS,
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {}}),
    )
    .await;
    assert_status(&r, 422, "Invalid");
    assert_eq!(r.body["details"]["causes"][0]["field"], "metadata.name");

    let r = post(&c, WIDGETS, widget("Bad_Name", 1)).await;
    assert_status(&r, 422, "Invalid");

    let r = post(
        &c,
        WIDGETS,
        json!({"apiVersion": "other.io/v1", "kind": "Widget", "metadata": {"name": "x"}}),
    )
    .await;
    assert_status(&r, 400, "BadRequest");

    let r = call(&c, "POST", WIDGETS, "text/plain", Some(&json!("hello"))).await;
    assert_status(&r, 415, "UnsupportedMediaType");

    let r = call(
        &c,
        "POST",
        &format!("{WIDGETS}/a"),
        "application/json",
        Some(&widget("a", 1)),
    )
    .await;
    assert_status(&r, 405, "MethodNotAllowed");

    let r = get(&c, "/apis/example.com/v1/namespaces/default/nothings").await;
    assert_status(&r, 404, "NotFound");
    assert_eq!(
        r.body["message"],
        "the server could not find the requested resource"
    );

    let r = put(&c, &format!("{WIDGETS}/zzz"), widget("zzz", 1)).await;
    assert_status(&r, 404, "NotFound");
    let r = put(&c, &format!("{WIDGETS}/a"), widget("b", 1)).await;
    assert_status(&r, 400, "BadRequest");

    let r = post(
        &c,
        "/apis/example.com/v1/namespaces/other/widgets",
        widget("n", 1),
    )
    .await;
    assert_eq!(r.code, 201);
    let mut w = widget("m", 1);
    w["metadata"]["namespace"] = json!("other");
    let r = post(&c, WIDGETS, w).await;
    assert_status(&r, 400, "BadRequest");

    // Custom resources have no protobuf form: kube-apiserver's 406, its `Status` in protobuf.
    let r = get_accept(&c, WIDGETS, "application/vnd.kubernetes.protobuf").await;
    assert_eq!(r.code, 406);
    assert_eq!(
        r.headers["content-type"],
        "application/vnd.kubernetes.protobuf"
    );
    assert!(r.body.as_str().unwrap().contains("NotAcceptable"));

    let r = get(&c, &format!("{WIDGETS}?labelSelector=a%20in%20(b")).await;
    assert_status(&r, 400, "BadRequest");
}

#[tokio::test]
async fn schema_validation_is_422_with_causes() {
    let (_s, c) = with_widgets().await;
    let r = post(&c, WIDGETS, widget("big", 11)).await;
    assert_status(&r, 422, "Invalid");
    assert_eq!(r.body["details"]["kind"], "Widget");
    assert_eq!(r.body["details"]["group"], "example.com");
    let causes = r.body["details"]["causes"].as_array().unwrap();
    assert!(
        causes.iter().any(|c| c["field"] == "spec.replicas"),
        "{}",
        r.body
    );
    assert!(
        r.body["message"]
            .as_str()
            .unwrap()
            .starts_with("Widget.example.com \"big\" is invalid: ")
    );
}

#[tokio::test]
async fn status_subresource_rules_and_generation() {
    let (_s, c) = with_widgets().await;
    let mut w = widget("s", 1);
    w["status"] = json!({"phase": "Dropped"});
    let r = post(&c, WIDGETS, w).await;
    assert!(
        r.body.get("status").is_none(),
        "status is dropped on create: {}",
        r.body
    );

    // /status ignores everything but status, and does not bump generation.
    let mut cur = r.body.clone();
    cur["status"] = json!({"phase": "Ready", "replicas": 1});
    cur["spec"]["replicas"] = json!(7);
    let r = put(&c, &format!("{WIDGETS}/s/status"), cur).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["status"]["phase"], "Ready");
    assert_eq!(r.body["spec"]["replicas"], 1);
    assert_eq!(r.body["metadata"]["generation"], 1);

    // The main resource ignores status.
    let mut cur = r.body.clone();
    cur["status"]["phase"] = json!("Ignored");
    cur["spec"]["replicas"] = json!(3);
    let r = put(&c, &format!("{WIDGETS}/s"), cur).await;
    assert_eq!(r.body["status"]["phase"], "Ready");
    assert_eq!(r.body["spec"]["replicas"], 3);
    assert_eq!(r.body["metadata"]["generation"], 2);

    // Merge patch on /status.
    let r = merge_patch(
        &c,
        &format!("{WIDGETS}/s/status"),
        json!({"status": {"phase": "Done"}, "spec": {"replicas": 9}}),
    )
    .await;
    assert_eq!(r.body["status"]["phase"], "Done");
    assert_eq!(r.body["spec"]["replicas"], 3);
}

#[tokio::test]
async fn scale_subresource() {
    let (_s, c) = with_widgets().await;
    post(&c, WIDGETS, widget("sc", 2)).await;
    let r = get(&c, &format!("{WIDGETS}/sc/scale")).await;
    assert_eq!(r.body["kind"], "Scale");
    assert_eq!(r.body["apiVersion"], "autoscaling/v1");
    assert_eq!(r.body["spec"]["replicas"], 2);
    let mut sc = r.body.clone();
    sc["spec"]["replicas"] = json!(5);
    let r = put(&c, &format!("{WIDGETS}/sc/scale"), sc.clone()).await;
    assert_eq!(r.body["spec"]["replicas"], 5, "{}", r.body);
    assert_eq!(
        get(&c, &format!("{WIDGETS}/sc")).await.body["spec"]["replicas"],
        5
    );
    let r = put(&c, &format!("{WIDGETS}/sc/scale"), sc).await;
    assert_status(&r, 409, "Conflict");
    let r = patch_replicas(&c, &format!("{WIDGETS}/sc/scale"), 4).await;
    assert_eq!(r.body["spec"]["replicas"], 4);
    // The Deployment built-in has scale too.
    let d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                   "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "d"}},
                            "template": {"metadata": {"labels": {"app": "d"}},
                                         "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
    assert_eq!(
        post(&c, "/apis/apps/v1/namespaces/default/deployments", d)
            .await
            .code,
        201
    );
    let r = get(&c, "/apis/apps/v1/namespaces/default/deployments/d/scale").await;
    assert_eq!(r.body["spec"]["replicas"], 1);
    assert_eq!(r.body["status"]["selector"], "app=d");
}

#[tokio::test]
async fn finalizers_delay_deletion() {
    let (_s, c) = with_widgets().await;
    let mut w = widget("f", 1);
    w["metadata"]["finalizers"] = json!(["example.com/hold"]);
    post(&c, WIDGETS, w).await;
    // Kept while the finalizer is there: 200 with the object, as the real server answers.
    let r = delete(&c, &format!("{WIDGETS}/f")).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert!(r.body["metadata"]["deletionTimestamp"].is_string());
    let cur = get(&c, &format!("{WIDGETS}/f")).await.body;
    assert!(cur["metadata"]["deletionTimestamp"].is_string());
    // No new finalizers on an object being deleted.
    let r = merge_patch(
        &c,
        &format!("{WIDGETS}/f"),
        json!({"metadata": {"finalizers": ["example.com/hold", "x/y"]}}),
    )
    .await;
    assert_status(&r, 422, "Invalid");
    // Removing the last finalizer deletes it.
    let r = json_patch(
        &c,
        &format!("{WIDGETS}/f"),
        json!([{"op": "remove", "path": "/metadata/finalizers"}]),
    )
    .await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(get(&c, &format!("{WIDGETS}/f")).await.code, 404);
}

#[tokio::test]
async fn delete_preconditions_and_collection() {
    let (_s, c) = with_widgets().await;
    for n in ["a", "b", "c"] {
        post(&c, WIDGETS, widget(n, 1)).await;
    }
    let body =
        json!({"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": "nope"}});
    let r = delete_with(&c, &format!("{WIDGETS}/a"), body).await;
    assert_status(&r, 409, "Conflict");
    let uid = get(&c, &format!("{WIDGETS}/a")).await.body["metadata"]["uid"].clone();
    assert_eq!(
        r.body["message"],
        format!(
            "Operation cannot be fulfilled on widgets.example.com \"a\": Precondition failed: UID in precondition: nope, UID in object meta: {}",
            uid.as_str().unwrap()
        )
    );
    let stale = json!({"preconditions": {"resourceVersion": "1"}});
    let r = delete_with(&c, &format!("{WIDGETS}/a"), stale).await;
    assert_status(&r, 409, "Conflict");
    let rv = rv_of(&get(&c, &format!("{WIDGETS}/a")).await.body);
    assert_eq!(
        r.body["message"],
        format!(
            "Operation cannot be fulfilled on widgets.example.com \"a\": Precondition failed: ResourceVersion in precondition: 1, ResourceVersion in object meta: {rv}"
        )
    );
    let mut other = widget("other", 1);
    other["metadata"]["labels"] = json!({"app": "other"});
    post(&c, WIDGETS, other).await;
    let r = delete(&c, &format!("{WIDGETS}?labelSelector=app%3Dw")).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["items"].as_array().unwrap().len(), 3);
    let left = get(&c, WIDGETS).await.body;
    assert_eq!(left["items"].as_array().unwrap().len(), 1);
    assert_eq!(left["items"][0]["metadata"]["name"], "other");
    // ConfigMaps return a success Status on delete.
    post(
        &c,
        "/api/v1/namespaces/default/configmaps",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}}),
    )
    .await;
    let r = delete(&c, "/api/v1/namespaces/default/configmaps/cm").await;
    assert_eq!(r.body["kind"], "Status");
    assert_eq!(r.body["status"], "Success");
}

#[tokio::test]
async fn patches_merge_json_apply_and_strategic() {
    let (_s, c) = with_widgets().await;
    post(&c, WIDGETS, widget("p", 1)).await;
    let path = format!("{WIDGETS}/p");
    let r = merge_patch(&c, &path, json!({"spec": {"color": null, "replicas": 2}})).await;
    assert_eq!(r.body["spec"], json!({"replicas": 2}));
    let r = json_patch(
        &c,
        &path,
        json!([{"op": "add", "path": "/spec/color", "value": "blue"}]),
    )
    .await;
    assert_eq!(r.body["spec"]["color"], "blue");
    let r = json_patch(
        &c,
        &path,
        json!([{"op": "test", "path": "/spec/color", "value": "green"}]),
    )
    .await;
    assert_eq!(r.code, 422, "{}", r.body);
    let r = patch(
        &c,
        &path,
        "application/strategic-merge-patch+json",
        json!({"spec": {"replicas": 3}}),
    )
    .await;
    assert_status(&r, 415, "UnsupportedMediaType");
    assert!(
        r.body["message"]
            .as_str()
            .unwrap()
            .contains("application/merge-patch+json")
    );
    // Merge patch on a stale resourceVersion: conflict.
    let r = merge_patch(&c, &path, json!({"metadata": {"resourceVersion": "1"}})).await;
    assert_status(&r, 409, "Conflict");
    let r = merge_patch(&c, &format!("{WIDGETS}/missing"), json!({})).await;
    assert_status(&r, 404, "NotFound");

    // Server-side apply: fieldManager required; create-or-merge; managedFields recorded.
    let applied =
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: sa\nspec:\n  replicas: 4\n";
    let r = apply(&c, &format!("{WIDGETS}/sa"), applied).await;
    assert_status(&r, 422, "Invalid");
    assert_eq!(r.body["details"]["causes"][0]["field"], "fieldManager");
    let r = apply(&c, &format!("{WIDGETS}/sa?fieldManager=me"), applied).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let mf = &r.body["metadata"]["managedFields"][0];
    assert_eq!(mf["manager"], "me");
    assert_eq!(mf["operation"], "Apply");
    assert_eq!(mf["fieldsV1"]["f:spec"]["f:replicas"], json!({}));
    let again =
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: sa\nspec:\n  color: green\n";
    let r = apply(
        &c,
        &format!("{WIDGETS}/sa?fieldManager=me&force=true"),
        again,
    )
    .await;
    assert_eq!(r.code, 200, "{}", r.body);
    // `replicas` is no longer applied by "me" and nobody else owns it: removed, as SSA does.
    assert_eq!(r.body["spec"], json!({"color": "green"}));

    // Strategic merge works (as a merge) on built-ins.
    post(&c, "/api/v1/namespaces/default/configmaps", json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"a": "1"}})).await;
    let r = patch(
        &c,
        "/api/v1/namespaces/default/configmaps/cm",
        "application/strategic-merge-patch+json",
        json!({"data": {"b": "2"}}),
    )
    .await;
    assert_eq!(r.body["data"], json!({"a": "1", "b": "2"}));
}

#[tokio::test]
async fn dry_run_persists_nothing() {
    let (s, c) = with_widgets().await;
    let r = post(&c, &format!("{WIDGETS}?dryRun=All"), widget("d", 1)).await;
    assert_eq!(r.code, 201);
    assert_eq!(r.body["metadata"]["name"], "d");
    assert_eq!(get(&c, &format!("{WIDGETS}/d")).await.code, 404);
    post(&c, WIDGETS, widget("d", 1)).await;
    let r = patch_replicas(&c, &format!("{WIDGETS}/d?dryRun=All"), 5).await;
    assert_eq!(r.body["spec"]["replicas"], 5);
    assert_eq!(
        get(&c, &format!("{WIDGETS}/d")).await.body["spec"]["replicas"],
        1
    );
    let r = delete(&c, &format!("{WIDGETS}/d?dryRun=All")).await;
    assert_eq!(r.code, 200);
    assert_eq!(get(&c, &format!("{WIDGETS}/d")).await.code, 200);
    let r = post(&c, &format!("{WIDGETS}?dryRun=Some"), widget("e", 1)).await;
    assert_eq!(r.code, 400);
    drop(s);
}

#[tokio::test]
async fn generate_name_and_multi_version() {
    let (_s, c) = with_widgets().await;
    let r = post(&c, WIDGETS, json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"generateName": "gen-"}})).await;
    let name = r.body["metadata"]["name"].as_str().unwrap().to_string();
    assert!(name.starts_with("gen-") && name.len() == 9, "{name}");
    // Stored once, served through v2 with only apiVersion rewritten.
    let r = get(
        &c,
        &format!("/apis/example.com/v2/namespaces/default/widgets/{name}"),
    )
    .await;
    assert_eq!(r.body["apiVersion"], "example.com/v2");
    assert_eq!(r.body["metadata"]["name"], name.as_str());
    let l = get(&c, "/apis/example.com/v2/widgets").await;
    assert_eq!(l.body["apiVersion"], "example.com/v2");
    assert_eq!(l.body["kind"], "WidgetList");
    assert_eq!(l.body["items"][0]["apiVersion"], "example.com/v2");
}

#[tokio::test]
async fn lists_selectors_pagination_and_resource_versions() {
    let (_s, c) = with_widgets().await;
    for i in 0..5 {
        let mut w = widget(&format!("w{i}"), i);
        w["metadata"]["labels"] =
            json!({"app": "w", "tier": if i % 2 == 0 { "even" } else { "odd" }});
        post(&c, WIDGETS, w).await;
    }
    let r = get(&c, &format!("{WIDGETS}?labelSelector=tier%3Deven")).await;
    assert_eq!(names_of(&r.body), ["w0", "w2", "w4"]);
    let r = get(
        &c,
        &format!("{WIDGETS}?labelSelector=tier%20notin%20(even),app"),
    )
    .await;
    assert_eq!(names_of(&r.body), ["w1", "w3"]);
    let r = get(&c, &format!("{WIDGETS}?fieldSelector=metadata.name%3Dw3")).await;
    assert_eq!(names_of(&r.body), ["w3"]);

    let first = get(&c, &format!("{WIDGETS}?limit=2")).await.body;
    assert_eq!(names_of(&first), ["w0", "w1"]);
    assert_eq!(first["metadata"]["remainingItemCount"], 3);
    let rv = rv_of(&first);
    // A change between pages does not show up: the continue token pins the snapshot.
    post(&c, WIDGETS, widget("w2a", 1)).await;
    let token = first["metadata"]["continue"].as_str().unwrap();
    let second = get(&c, &format!("{WIDGETS}?limit=2&continue={}", enc(token)))
        .await
        .body;
    assert_eq!(names_of(&second), ["w2", "w3"]);
    assert_eq!(second["metadata"]["resourceVersion"], rv.as_str());
    let token = second["metadata"]["continue"].as_str().unwrap();
    let third = get(&c, &format!("{WIDGETS}?limit=2&continue={}", enc(token)))
        .await
        .body;
    assert_eq!(names_of(&third), ["w4"]);
    assert!(third["metadata"].get("continue").is_none());
    let r = get(&c, &format!("{WIDGETS}?continue=garbage")).await;
    assert_eq!(r.code, 400);

    // Exact list at an older resourceVersion.
    let r = get(
        &c,
        &format!("{WIDGETS}?resourceVersion={rv}&resourceVersionMatch=Exact"),
    )
    .await;
    assert_eq!(names_of(&r.body).len(), 5);
    let r = get(
        &c,
        &format!("{WIDGETS}?resourceVersion={rv}&resourceVersionMatch=NotOlderThan"),
    )
    .await;
    assert_eq!(names_of(&r.body).len(), 6);
    let r = get(&c, &format!("{WIDGETS}?resourceVersionMatch=Exact")).await;
    assert_eq!(r.code, 422);
    let r = get(&c, &format!("{WIDGETS}?resourceVersion=999999")).await;
    assert_eq!(r.code, 504);
}

fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn names_of(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn table_and_partial_metadata_output() {
    let (_s, c) = with_widgets().await;
    post(&c, WIDGETS, widget("t", 1)).await;
    let r = get_accept(
        &c,
        WIDGETS,
        "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
    )
    .await;
    assert_eq!(r.body["kind"], "Table", "{}", r.body);
    assert_eq!(r.body["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(r.body["rows"].as_array().unwrap().len(), 1);
    let r = get_accept(
        &c,
        WIDGETS,
        "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
    )
    .await;
    assert_eq!(r.body["kind"], "PartialObjectMetadataList");
    assert_eq!(r.body["items"][0]["kind"], "PartialObjectMetadata");
    assert_eq!(r.body["items"][0]["metadata"]["name"], "t");
    assert!(r.body["items"][0].get("spec").is_none());
    let r = get_accept(
        &c,
        &format!("{WIDGETS}/t"),
        "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
    )
    .await;
    assert_eq!(r.body["kind"], "PartialObjectMetadata");
    // A representation the server does not have falls through to the next acceptable one.
    let r = get_accept(
        &c,
        "/apis",
        "application/json;g=example.com;v=v9;as=Nothing,application/json",
    )
    .await;
    assert_eq!(r.body["kind"], "APIGroupList");
}

#[tokio::test]
async fn crd_registration_status_and_removal() {
    let (s, c) = with_widgets().await;
    let crd = get(
        &c,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com",
    )
    .await
    .body;
    let conds = crd["status"]["conditions"].as_array().unwrap();
    assert!(
        conds
            .iter()
            .any(|c| c["type"] == "Established" && c["status"] == "True")
    );
    assert!(
        conds
            .iter()
            .any(|c| c["type"] == "NamesAccepted" && c["status"] == "True")
    );
    assert_eq!(crd["status"]["acceptedNames"]["kind"], "Widget");
    assert_eq!(crd["spec"]["names"]["listKind"], "WidgetList");
    assert_eq!(crd["spec"]["names"]["singular"], "widget");

    post(&c, WIDGETS, widget("gone", 1)).await;
    let r = delete(
        &c,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com",
    )
    .await;
    assert_eq!(r.code, 200);
    assert_eq!(get(&c, WIDGETS).await.code, 404);
    // Re-registering does not bring the objects back.
    s.register_crd(widget_crd()).unwrap();
    assert_eq!(get(&c, WIDGETS).await.body["items"], json!([]));

    let mut bad = widget_crd();
    bad["metadata"]["name"] = json!("things.nodot");
    bad["spec"]["group"] = json!("nodot");
    bad["spec"]["names"]["plural"] = json!("things");
    let r = post(
        &c,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        bad,
    )
    .await;
    assert_status(&r, 422, "Invalid");
    assert!(
        r.body["message"]
            .as_str()
            .unwrap()
            .contains("should be a domain with at least one dot"),
        "{}",
        r.body
    );
    assert_eq!(r.body["details"]["kind"], "CustomResourceDefinition");

    // A cluster-scoped CRD via POST.
    let mut cl = widget_crd();
    cl["metadata"]["name"] = json!("gadgets.example.com");
    cl["spec"]["names"] = json!({"plural": "gadgets", "kind": "Gadget"});
    cl["spec"]["scope"] = json!("Cluster");
    assert_eq!(
        post(
            &c,
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            cl
        )
        .await
        .code,
        201
    );
    let r = post(&c, "/apis/example.com/v1/gadgets", json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g", "namespace": "x"}})).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert!(r.body["metadata"].get("namespace").is_none());
    assert_eq!(
        get(&c, "/apis/example.com/v1/namespaces/default/gadgets")
            .await
            .code,
        404
    );
}

#[tokio::test]
async fn discovery_documents() {
    let (_s, c) = with_widgets().await;
    let v = get(&c, "/version").await.body;
    assert_eq!(v["major"], "1");
    assert_eq!(get(&c, "/api").await.body["versions"], json!(["v1"]));
    let groups = get(&c, "/apis").await.body;
    let names: Vec<&str> = groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"apps")
            && names.contains(&"example.com")
            && names.contains(&"apiextensions.k8s.io")
    );
    let g = get(&c, "/apis/example.com").await.body;
    assert_eq!(g["kind"], "APIGroup");
    assert_eq!(g["preferredVersion"]["version"], "v2");
    let rl = get(&c, "/apis/example.com/v1").await.body;
    assert_eq!(rl["groupVersion"], "example.com/v1");
    let res = rl["resources"].as_array().unwrap();
    let main = res.iter().find(|r| r["name"] == "widgets").unwrap();
    assert_eq!(main["kind"], "Widget");
    assert_eq!(main["namespaced"], true);
    assert_eq!(main["shortNames"], json!(["wd"]));
    assert_eq!(main["categories"], json!(["all"]));
    assert!(main["verbs"].as_array().unwrap().contains(&json!("watch")));
    assert!(res.iter().any(|r| r["name"] == "widgets/status"));
    assert!(
        res.iter()
            .any(|r| r["name"] == "widgets/scale" && r["kind"] == "Scale")
    );
    let core = get(&c, "/api/v1").await.body;
    assert!(
        core["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["name"] == "namespaces" && r["namespaced"] == false)
    );
    assert_eq!(get(&c, "/apis/nope.io").await.code, 404);
    assert_eq!(get(&c, "/healthz").await.code, 200);
    assert_eq!(get(&c, "/readyz").await.code, 200);
    assert_eq!(get(&c, "/livez").await.code, 200);
    assert_eq!(get(&c, "/openapi/v2").await.body["swagger"], "2.0");
    assert!(get(&c, "/openapi/v3").await.body["paths"].is_object());
    assert_eq!(
        get(&c, "/api/v1/namespaces/default").await.body["metadata"]["name"],
        "default"
    );
}

#[tokio::test]
async fn binary_style_builder_options_and_kubeconfig() {
    let s = FakeApiServer::builder()
        .builtins(false)
        .history_limit(3)
        .start()
        .await
        .unwrap();
    let c = s.in_process_client();
    assert_eq!(get(&c, "/api/v1/namespaces").await.code, 404);
    let kc = s.kubeconfig_yaml();
    assert!(kc.contains(&format!("server: {}", s.url())));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kubeconfig");
    s.write_kubeconfig(&path).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), kc);
    s.shutdown().await;
}

#[tokio::test]
async fn deprecated_version_sends_warning() {
    let s = FakeApiServer::start().await.unwrap();
    let mut crd = widget_crd();
    crd["spec"]["versions"][1]["deprecated"] = json!(true);
    crd["spec"]["versions"][1]["deprecationWarning"] = json!("example.com/v2 Widget is going away");
    s.register_crd(crd).unwrap();
    let c = s.in_process_client();
    let r = get(&c, "/apis/example.com/v2/namespaces/default/widgets").await;
    let w = r.headers.get("warning").unwrap().to_str().unwrap();
    assert!(w.contains("example.com/v2 Widget is going away"), "{w}");
    assert!(get(&c, WIDGETS).await.headers.get("warning").is_none());
}

/// A length-delimited protobuf field (all payloads here are shorter than 128 bytes).
fn pb(n: u8, payload: &[u8]) -> Vec<u8> {
    let mut v = vec![(n << 3) | 2, payload.len() as u8];
    v.extend_from_slice(payload);
    v
}

#[tokio::test]
async fn protobuf_bodies_of_builtins_as_kubectl_create_sends() {
    let s = FakeApiServer::start().await.unwrap();
    let c = s.in_process_client();
    let meta = pb(1, b"ns-from-proto");
    let raw = pb(1, &meta);
    let type_meta = [pb(1, b"v1"), pb(2, b"Namespace")].concat();
    let body = [b"k8s\x00".to_vec(), pb(1, &type_meta), pb(2, &raw)].concat();
    let text = String::from_utf8(body).unwrap();
    let r = call(
        &c,
        "POST",
        "/api/v1/namespaces",
        "application/vnd.kubernetes.protobuf",
        Some(&json!(text)),
    )
    .await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["metadata"]["name"], "ns-from-proto");
    // Built-in defaults the server fills.
    assert_eq!(r.body["status"]["phase"], "Active");
    assert_eq!(r.body["spec"]["finalizers"], json!(["kubernetes"]));
    let r = call(
        &c,
        "POST",
        "/api/v1/namespaces",
        "application/vnd.kubernetes.protobuf",
        Some(&json!("k8s\u{0}\u{a}")),
    )
    .await;
    assert_eq!(r.code, 400);
}

#[tokio::test]
async fn namespaces_required_and_deleted_with_their_contents() {
    let s = FakeApiServer::builder()
        .require_namespaces(true)
        .start()
        .await
        .unwrap();
    s.register_crd(widget_crd()).unwrap();
    let c = s.in_process_client();
    let r = post(
        &c,
        "/apis/example.com/v1/namespaces/team/widgets",
        widget("a", 1),
    )
    .await;
    assert_status(&r, 404, "NotFound");
    assert_eq!(r.body["message"], "namespaces \"team\" not found");
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}});
    assert_eq!(post(&c, "/api/v1/namespaces", ns).await.code, 201);
    assert_eq!(
        post(
            &c,
            "/apis/example.com/v1/namespaces/team/widgets",
            widget("a", 1)
        )
        .await
        .code,
        201
    );
    assert_eq!(post(&c, WIDGETS, widget("kept", 1)).await.code, 201);
    assert_eq!(delete(&c, "/api/v1/namespaces/team").await.code, 200);
    // The namespace controller empties it, then it goes.
    eventually("the namespace and its widget deleted", || async {
        let w = get(&c, "/apis/example.com/v1/namespaces/team/widgets/a").await;
        let ns = get(&c, "/api/v1/namespaces/team").await;
        (w.code == 404 && ns.code == 404).then_some(())
    })
    .await;
    assert_eq!(get(&c, &format!("{WIDGETS}/kept")).await.code, 200);
}

#[tokio::test]
async fn server_side_apply_ownership_conflicts_and_removal() {
    let (_s, c) = with_widgets().await;
    let apply_as = |mgr: &str, force: bool, yaml: &str| {
        let path = format!(
            "{WIDGETS}/o?fieldManager={mgr}{}",
            if force { "&force=true" } else { "" }
        );
        let (c, yaml) = (c.clone(), yaml.to_string());
        async move { apply(&c, &path, &yaml).await }
    };
    let head = "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: o\n";
    let r = apply_as(
        "alice",
        false,
        &format!("{head}spec:\n  replicas: 1\n  color: red\n"),
    )
    .await;
    assert_eq!(r.code, 201, "{}", r.body);
    // Another manager changing alice's field: 409 with the conflict spelled out.
    let r = apply_as("bob", false, &format!("{head}spec:\n  replicas: 2\n")).await;
    assert_status(&r, 409, "Conflict");
    assert_eq!(
        r.body["message"],
        "Apply failed with 1 conflict: conflict with \"alice\": .spec.replicas"
    );
    assert_eq!(
        r.body["details"]["causes"][0]["reason"],
        "FieldManagerConflict"
    );
    // The same value is shared ownership; force takes the field over.
    assert_eq!(
        apply_as("bob", false, &format!("{head}spec:\n  replicas: 1\n"))
            .await
            .code,
        200
    );
    let r = apply_as("bob", true, &format!("{head}spec:\n  replicas: 3\n")).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["spec"]["replicas"], 3);
    // alice stops applying color: it is removed; replicas (now bob's) stays.
    let r = apply_as("alice", false, &format!("{head}spec: {{}}\n")).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["spec"], json!({"replicas": 3}));
    // An Update by someone else takes ownership of what it changed.
    patch_replicas(&c, &format!("{WIDGETS}/o?fieldManager=carol"), 4).await;
    let r = apply_as("bob", false, &format!("{head}spec:\n  replicas: 5\n")).await;
    assert_eq!(r.code, 409, "{}", r.body);
    assert!(r.body["message"].as_str().unwrap().contains("\"carol\""));
}

#[tokio::test]
async fn hostile_inputs_get_errors_not_panics() {
    let (_s, c) = with_widgets().await;
    post(&c, WIDGETS, widget("x", 1)).await;
    let obj = format!("{WIDGETS}/x");
    let bodies = [
        json!([1, 2]),
        json!("text"),
        json!(null),
        json!({"metadata": "nope"}),
        json!({"metadata": {"name": 5, "labels": [1]}}),
        json!({"apiVersion": 3, "kind": {}, "metadata": {"name": "x", "finalizers": "f"}}),
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "x"}, "spec": "flat"}),
    ];
    for b in &bodies {
        for (method, path, ct) in [
            ("POST", WIDGETS, "application/json"),
            ("PUT", obj.as_str(), "application/json"),
            ("PUT", &format!("{obj}/status"), "application/json"),
            ("PUT", &format!("{obj}/scale"), "application/json"),
            ("PATCH", obj.as_str(), "application/merge-patch+json"),
            ("PATCH", obj.as_str(), "application/json-patch+json"),
            (
                "PATCH",
                &format!("{obj}/scale"),
                "application/merge-patch+json",
            ),
            (
                "PATCH",
                &format!("{obj}?fieldManager=m"),
                "application/apply-patch+yaml",
            ),
            ("DELETE", obj.as_str(), "application/json"),
            (
                "POST",
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                "application/json",
            ),
            (
                "POST",
                "/api/v1/namespaces/default/configmaps",
                "application/vnd.kubernetes.protobuf",
            ),
        ] {
            let r = call(&c, method, path, ct, Some(b)).await;
            assert!(r.code < 500, "{method} {path} {b}: {} {}", r.code, r.body);
        }
    }
    // The DELETEs above removed it.
    post(&c, WIDGETS, widget("x", 1)).await;
    let r = call(
        &c,
        "PATCH",
        &obj,
        "application/json-patch+json",
        Some(&json!([{"op": "replace", "path": "", "value": 5}])),
    )
    .await;
    assert!(r.code == 400 || r.code == 422, "{}", r.body);
    for q in [
        "limit=x",
        "resourceVersion=abc",
        "continue=%%%",
        "timeoutSeconds=x&watch=1",
        "resourceVersionMatch=Bogus&resourceVersion=1",
    ] {
        let r = get(&c, &format!("{WIDGETS}?{q}")).await;
        assert!((400..500).contains(&r.code), "{q}: {} {}", r.code, r.body);
    }
    // Still serving.
    assert_eq!(get(&c, &obj).await.code, 200);
}

#[tokio::test]
async fn defaults_apply_on_read_through_each_version() {
    let s = FakeApiServer::start().await.unwrap();
    let mut crd = widget_crd();
    // Only v2 has a default for spec.color.
    crd["spec"]["versions"][1]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["color"]
        ["default"] = json!("green");
    s.register_crd(crd).unwrap();
    let c = s.in_process_client();
    let mut w = widget("d", 1);
    w["spec"].as_object_mut().unwrap().remove("color");
    let r = post(&c, WIDGETS, w).await;
    assert!(r.body["spec"].get("color").is_none(), "{}", r.body);
    let r = get(&c, "/apis/example.com/v2/namespaces/default/widgets/d").await;
    assert_eq!(r.body["spec"]["color"], "green", "{}", r.body);
    assert!(
        get(&c, &format!("{WIDGETS}/d")).await.body["spec"]
            .get("color")
            .is_none()
    );
}

#[tokio::test]
async fn field_validation_strict_warn_ignore() {
    let (_s, c) = with_widgets().await;
    let mut w = widget("fv", 1);
    w["spec"]["bogus"] = json!(1);
    let r = post(&c, &format!("{WIDGETS}?fieldValidation=Strict"), w.clone()).await;
    assert_status(&r, 400, "BadRequest");
    assert_eq!(
        r.body["message"],
        "Widget in version \"v1\" cannot be handled as a Widget: strict decoding error: unknown field \"spec.bogus\""
    );
    let r = post(&c, &format!("{WIDGETS}?fieldValidation=Nope"), w.clone()).await;
    assert_status(&r, 422, "Invalid");
    assert_eq!(r.body["details"]["kind"], "CreateOptions");
    // Warn (the default): stored pruned, with a Warning header.
    let r = post(&c, WIDGETS, w.clone()).await;
    assert_eq!(r.code, 201);
    assert!(r.body["spec"].get("bogus").is_none());
    let warning = r.headers.get("warning").unwrap().to_str().unwrap();
    assert_eq!(warning, r#"299 - "unknown field \"spec.bogus\"""#);
    let r = merge_patch(
        &c,
        &format!("{WIDGETS}/fv?fieldValidation=Ignore"),
        json!({"spec": {"bogus": 2}}),
    )
    .await;
    assert_eq!(r.code, 200);
    assert!(r.headers.get("warning").is_none());
    assert!(r.body["spec"].get("bogus").is_none());
}

#[tokio::test]
async fn numbers_round_trip_like_the_server_and_crd_tables() {
    let s = FakeApiServer::start().await.unwrap();
    let mut crd = widget_crd();
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["free"] =
        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    s.register_crd(crd).unwrap();
    let c = s.in_process_client();
    let body = r#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"n"},
        "spec":{"free":{"big":18446744073709551615,"exact":9007199254740993,"neg":-0.0,"one":1.0}}}"#;
    let r = call(&c, "POST", WIDGETS, "application/json", Some(&json!(body))).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let free = &r.body["spec"]["free"];
    assert_eq!(free["exact"], json!(9007199254740993i64));
    assert_eq!(free["big"].as_f64(), Some(18446744073709552000.0));
    assert_eq!(free["neg"], json!(0));
    assert_eq!(free["one"], json!(1));

    let accept = "application/json;as=Table;v=v1;g=meta.k8s.io";
    let r = get_accept(
        &c,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        accept,
    )
    .await;
    let cols: Vec<&str> = r.body["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(cols, ["Name", "Created At"]);
    let r = get_accept(&c, &format!("{WIDGETS}?includeObject=Everything"), accept).await;
    assert_status(&r, 400, "BadRequest");
}

#[tokio::test]
async fn extra_builtin_kinds_from_code() {
    let s = FakeApiServer::start().await.unwrap();
    s.register_kind(kube_fake_apiserver::KindSpec::namespaced(
        "batch", "v1", "Job", "jobs",
    ))
    .unwrap();
    let c = s.in_process_client();
    let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}},
        "status": {"active": 1}});
    let r = post(&c, "/apis/batch/v1/namespaces/default/jobs", job).await;
    assert_eq!(r.code, 201, "{}", r.body);
    // The Job strategy resets status on create (an empty struct).
    assert_eq!(r.body["status"], json!({}), "status reset on create");
    assert_eq!(r.body["metadata"]["generation"], 1);
    let rl = get(&c, "/apis/batch/v1").await.body;
    assert!(
        rl["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["name"] == "jobs/status")
    );
    s.register_crd(widget_crd()).unwrap();
    let clash = kube_fake_apiserver::KindSpec::namespaced("example.com", "v1", "Widget", "widgets");
    assert!(s.register_kind(clash).is_err());
}

#[tokio::test]
async fn custom_resources_are_selected_by_their_selectable_fields() {
    let s = FakeApiServer::start().await.unwrap();
    let mut crd = widget_crd();
    // v1 selects by colour; v2 has no selectable fields. (Their schemas differ: identical ones
    // are hoisted to the spec, and per-version selectable fields are then refused.)
    crd["spec"]["versions"][0]["selectableFields"] = json!([{"jsonPath": ".spec.color"}]);
    crd["spec"]["versions"][1]["schema"]["openAPIV3Schema"]["description"] = json!("v2");
    s.register_crd(crd).unwrap();
    let c = s.in_process_client();
    post(&c, WIDGETS, widget("red", 1)).await;
    let mut blue = widget("blue", 2);
    blue["spec"]["color"] = json!("blue");
    post(&c, WIDGETS, blue).await;
    let r = get(&c, &format!("{WIDGETS}?fieldSelector=spec.color%3Dblue")).await;
    assert_eq!(names_of(&r.body), ["blue"], "{}", r.body);
    let r = get(
        &c,
        &format!("{WIDGETS}?watch=true&fieldSelector=spec.replicas%3D1"),
    )
    .await;
    assert_status(&r, 400, "BadRequest");
    assert_eq!(
        r.body["message"],
        "field label not supported: spec.replicas"
    );
    let v2 = "/apis/example.com/v2/namespaces/default/widgets";
    let r = get(&c, &format!("{v2}?fieldSelector=spec.color%3Dblue")).await;
    assert_status(&r, 400, "BadRequest");
    assert_eq!(r.body["message"], "field label not supported: spec.color");
    let r = get(
        &c,
        &format!("{v2}?fieldSelector=metadata.namespace%3Ddefault"),
    )
    .await;
    assert_eq!(names_of(&r.body), ["blue", "red"], "{}", r.body);
}
