//! `managedFields` of create, update and patch through `kube::Api`, as a real kube-apiserver 1.35
//! records them (issue 28 item 3): the creator of a custom resource owns the fields the schema
//! defaulted and the maps it added (the `.` entries), so a later apply of one of them by another
//! manager is a 409 unless forced; built-in kinds created as kubectl creates them; an update's
//! ownership against a later apply; metadata the server sets is no one's.
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use kube_fake_apiserver::FakeApiServer;
use serde_json::{Value, json};

fn widget_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "size": {"type": "integer"},
                        "color": {"type": "string", "default": "blue"}
                    }},
                    "status": {"type": "object", "properties": {"phase": {"type": "string"}}}
                }}}
            }]
        }
    })
}

async fn server() -> (FakeApiServer, Api<DynamicObject>) {
    let srv = FakeApiServer::start().await.expect("server starts");
    srv.register_crd(widget_crd()).expect("CRD registered");
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("example.com", "v1", "Widget"));
    let api = Api::namespaced_with(srv.client(), "default", &ar);
    (srv, api)
}

fn widget(metadata: Value, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": metadata, "spec": spec}))
    .unwrap()
}

fn post(manager: &str) -> PostParams {
    PostParams {
        field_manager: Some(manager.into()),
        ..Default::default()
    }
}

/// The managedFields entries of `obj` as JSON.
fn entries<K: serde::Serialize>(obj: &K) -> Vec<Value> {
    let v = serde_json::to_value(obj).unwrap();
    v["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn entry_of<K: serde::Serialize>(obj: &K, manager: &str, operation: &str) -> Value {
    entries(obj)
        .into_iter()
        .find(|e| e["manager"] == manager && e["operation"] == operation)
        .unwrap_or_else(|| panic!("no {operation} entry for {manager}: {:#?}", entries(obj)))
}

fn fields_of<K: serde::Serialize>(obj: &K, manager: &str, operation: &str) -> Value {
    entry_of(obj, manager, operation)["fieldsV1"].clone()
}

fn api_error(err: kube::Error) -> kube::core::Status {
    match err {
        kube::Error::Api(s) => *s,
        other => panic!("not an API error: {other:?}"),
    }
}

#[tokio::test]
async fn the_creator_owns_defaulted_fields_and_an_apply_of_one_conflicts_unless_forced() {
    let (_srv, api) = server().await;
    let created = api
        .create(
            &post("creator"),
            &widget(
                json!({"name": "w", "labels": {"tier": "web"}}),
                json!({"size": 3}),
            ),
        )
        .await
        .expect("created");
    assert_eq!(created.data["spec"], json!({"size": 3, "color": "blue"}));
    // Exactly what a genuine 1.35 server records for this create.
    let e = entry_of(&created, "creator", "Update");
    assert_eq!(
        e["fieldsV1"],
        json!({"f:metadata": {"f:labels": {".": {}, "f:tier": {}}},
               "f:spec": {".": {}, "f:color": {}, "f:size": {}}})
    );
    assert_eq!(e["apiVersion"], "example.com/v1");
    assert_eq!(e["fieldsType"], "FieldsV1");
    assert!(e["time"].as_str().is_some_and(|t| t.ends_with('Z')), "{e}");
    assert!(e.get("subresource").is_none(), "{e}");
    assert_eq!(entries(&created).len(), 1);

    // Another manager applies spec.color without force: the creator owns it (defaulted).
    let config = json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w"}, "spec": {"color": "green"}});
    let err = api
        .patch("w", &PatchParams::apply("painter"), &Patch::Apply(&config))
        .await
        .expect_err("conflict with the creator");
    let status = api_error(err);
    assert_eq!((status.code, status.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        status.message,
        "Apply failed with 1 conflict: conflict with \"creator\" using example.com/v1: .spec.color"
    );
    let unchanged = api.get("w").await.unwrap();
    assert_eq!(unchanged.data["spec"]["color"], "blue");
    assert_eq!(
        unchanged.metadata.resource_version,
        created.metadata.resource_version
    );

    // Applying the value it already has is no conflict: the two share it.
    let same = json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w"}, "spec": {"color": "blue"}});
    let shared = api
        .patch("w", &PatchParams::apply("painter"), &Patch::Apply(&same))
        .await
        .expect("same value applies");
    assert_eq!(
        fields_of(&shared, "painter", "Apply"),
        json!({"f:spec": {"f:color": {}}})
    );
    assert_eq!(
        fields_of(&shared, "creator", "Update")["f:spec"],
        json!({".": {}, "f:color": {}, "f:size": {}})
    );
    // Apply entries come first.
    assert_eq!(entries(&shared)[0]["manager"], "painter");

    // Forced, the painter changes it and takes it from the creator.
    let forced = api
        .patch(
            "w",
            &PatchParams::apply("painter").force(),
            &Patch::Apply(&config),
        )
        .await
        .expect("forced apply");
    assert_eq!(forced.data["spec"]["color"], "green");
    assert_eq!(
        fields_of(&forced, "painter", "Apply"),
        json!({"f:spec": {"f:color": {}}})
    );
    assert_eq!(
        fields_of(&forced, "creator", "Update"),
        json!({"f:metadata": {"f:labels": {".": {}, "f:tier": {}}},
               "f:spec": {".": {}, "f:size": {}}})
    );
}

#[tokio::test]
async fn an_update_owns_what_it_changed_and_a_later_apply_of_it_conflicts() {
    let (_srv, api) = server().await;
    api.create(
        &post("creator"),
        &widget(json!({"name": "w"}), json!({"size": 1})),
    )
    .await
    .expect("created");
    // A read-modify-write (PUT) by `editor` changing size and adding a label.
    let mut obj = api.get("w").await.unwrap();
    obj.data["spec"]["size"] = json!(2);
    obj.metadata.labels = Some([("team".to_string(), "a".to_string())].into());
    let updated = api
        .replace("w", &post("editor"), &obj)
        .await
        .expect("updated");
    assert_eq!(
        fields_of(&updated, "editor", "Update"),
        json!({"f:metadata": {"f:labels": {".": {}, "f:team": {}}}, "f:spec": {"f:size": {}}})
    );
    assert_eq!(
        fields_of(&updated, "creator", "Update"),
        json!({"f:spec": {".": {}, "f:color": {}}})
    );
    // The PUT sent back the managedFields it read; they are the stored ones, so nothing else moved.
    assert_eq!(entries(&updated).len(), 2);

    let err = api
        .patch(
            "w",
            &PatchParams::apply("applier"),
            &Patch::Apply(json!({"apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"name": "w"}, "spec": {"size": 5}})),
        )
        .await
        .expect_err("editor owns size");
    assert_eq!(
        api_error(err).message,
        "Apply failed with 1 conflict: conflict with \"editor\" using example.com/v1: .spec.size"
    );

    // A merge patch by the same manager merges into its entry (one entry per manager, operation,
    // subresource and apiVersion); a field it removes leaves every owner.
    let patched = api
        .patch(
            "w",
            &PatchParams {
                field_manager: Some("editor".into()),
                ..Default::default()
            },
            &Patch::Merge(
                json!({"metadata": {"labels": {"team": null}}, "spec": {"color": "red"}}),
            ),
        )
        .await
        .expect("merge patch");
    assert_eq!(
        entries(&patched)
            .iter()
            .filter(|e| e["manager"] == "editor")
            .count(),
        1
    );
    // The label is gone from editor's set; the (now empty) labels map it added stays its own.
    assert_eq!(
        fields_of(&patched, "editor", "Update"),
        json!({"f:metadata": {"f:labels": {}}, "f:spec": {"f:color": {}, "f:size": {}}})
    );
    // The creator keeps only spec itself, which it added.
    assert_eq!(
        fields_of(&patched, "creator", "Update"),
        json!({"f:spec": {}})
    );

    // A status write is recorded with its subresource, and owns only status.
    let status = api
        .patch_status(
            "w",
            &PatchParams {
                field_manager: Some("ctl".into()),
                ..Default::default()
            },
            &Patch::Merge(json!({"status": {"phase": "Ready"}, "spec": {"size": 9}})),
        )
        .await
        .expect("status patch");
    assert_eq!(status.data["spec"]["size"], 2);
    let e = entry_of(&status, "ctl", "Update");
    assert_eq!(e["subresource"], "status");
    assert_eq!(e["fieldsV1"], json!({"f:status": {".": {}, "f:phase": {}}}));
}

#[tokio::test]
async fn server_set_metadata_is_stripped_and_generate_name_is_owned() {
    let (_srv, api) = server().await;
    let created = api
        .create(
            &post("maker"),
            &widget(
                json!({"generateName": "w-", "finalizers": ["example.com/keep"],
                       "annotations": {"a": "1"}}),
                json!({}),
            ),
        )
        .await
        .expect("created");
    assert_eq!(
        fields_of(&created, "maker", "Update"),
        json!({"f:metadata": {
                   "f:annotations": {".": {}, "f:a": {}},
                   "f:finalizers": {".": {}, "v:\"example.com/keep\"": {}},
                   "f:generateName": {}},
               "f:spec": {".": {}, "f:color": {}}})
    );
}

#[tokio::test]
async fn managed_fields_sent_by_the_client_are_kept_or_reset_as_the_server_does() {
    let (_srv, api) = server().await;
    // Sent on create, valid: they are the starting entries, but a create adds every field, so
    // each sent entry loses what the object has (here all it owned) and goes.
    let mut w = widget(json!({"name": "w"}), json!({"size": 1}));
    w.metadata.managed_fields = serde_json::from_value(json!([{
        "manager": "previous-owner", "operation": "Apply", "apiVersion": "example.com/v1",
        "time": "2024-01-01T00:00:00Z", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:spec": {"f:size": {}}}}]))
    .unwrap();
    let created = api.create(&post("creator"), &w).await.expect("created");
    let managers: Vec<Value> = entries(&created)
        .iter()
        .map(|e| e["manager"].clone())
        .collect();
    assert_eq!(managers, [json!("creator")]);

    // Sent on an update that changes nothing else, valid: they replace the stored ones.
    let mut obj = api.get("w").await.unwrap();
    obj.metadata.managed_fields = serde_json::from_value(json!([{
        "manager": "handed-over", "operation": "Update", "apiVersion": "example.com/v1",
        "time": "2024-01-01T00:00:00Z", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:spec": {"f:size": {}}}}]))
    .unwrap();
    let handed = api.replace("w", &post("client"), &obj).await.unwrap();
    assert_eq!(
        entries(&handed),
        [
            json!({"manager": "handed-over", "operation": "Update", "apiVersion": "example.com/v1",
            "time": "2024-01-01T00:00:00Z", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {"f:size": {}}}})
        ]
    );
    // Sent but not decodable (an unknown operation): the stored ones stay.
    let mut obj = api.get("w").await.unwrap();
    obj.metadata.managed_fields = serde_json::from_value(json!([{
        "manager": "x", "operation": "Patch", "apiVersion": "example.com/v1",
        "fieldsType": "FieldsV1", "fieldsV1": {}}]))
    .unwrap();
    let kept = api.replace("w", &post("client"), &obj).await.unwrap();
    assert_eq!(entries(&kept), entries(&handed));
    assert_eq!(
        kept.metadata.resource_version,
        handed.metadata.resource_version
    );

    // `[{}]` on an update resets them; the update itself then records nothing (it changed nothing).
    let mut obj = api.get("w").await.unwrap();
    obj.metadata.managed_fields = serde_json::from_value(json!([{}])).unwrap();
    let reset = api.replace("w", &post("resetter"), &obj).await.unwrap();
    assert!(entries(&reset).is_empty(), "{:#?}", entries(&reset));
    assert_ne!(
        reset.metadata.resource_version, kept.metadata.resource_version,
        "a write that changes managedFields is a write"
    );

    // An apply may not carry managedFields.
    let err = api
        .patch(
            "w",
            &PatchParams::apply("a"),
            &Patch::Apply(json!({"apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"name": "w", "managedFields": []}})),
        )
        .await
        .expect_err("refused");
    let status = api_error(err);
    assert_eq!(
        (status.code, status.message.as_str()),
        (400, "metadata.managedFields must be nil")
    );
}

#[tokio::test]
async fn built_in_kinds_created_as_kubectl_creates_them() {
    let srv = FakeApiServer::start().await.expect("server starts");
    // `kubectl create configmap cfg --from-literal=k=v` (labelled).
    let cms: Api<ConfigMap> = Api::namespaced(srv.client(), "default");
    let cm: ConfigMap = serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cfg", "labels": {"app": "web"}}, "data": {"k": "v"}}))
    .unwrap();
    let cm = cms.create(&post("kubectl-create"), &cm).await.unwrap();
    assert_eq!(
        fields_of(&cm, "kubectl-create", "Update"),
        json!({"f:data": {".": {}, "f:k": {}}, "f:metadata": {"f:labels": {".": {}, "f:app": {}}}})
    );

    // `kubectl create deployment web --image=nginx`: the defaults the server fills are the
    // creator's; spec, strategy and the template's metadata and spec are there in the empty
    // Deployment, so they are owned through their fields only (no `.`).
    let deps: Api<Deployment> = Api::namespaced(srv.client(), "default");
    let d: Deployment =
        serde_json::from_value(json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
            "strategy": {},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx", "resources": {}}]}}}}))
        .unwrap();
    let d = deps.create(&post("kubectl-create"), &d).await.unwrap();
    assert_eq!(
        fields_of(&d, "kubectl-create", "Update"),
        json!({
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {
                "f:progressDeadlineSeconds": {}, "f:replicas": {}, "f:revisionHistoryLimit": {},
                "f:selector": {},
                "f:strategy": {"f:rollingUpdate": {".": {}, "f:maxSurge": {}, "f:maxUnavailable": {}}, "f:type": {}},
                "f:template": {
                    "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                    "f:spec": {
                        "f:containers": {"k:{\"name\":\"nginx\"}": {".": {}, "f:image": {},
                            "f:imagePullPolicy": {}, "f:name": {}, "f:resources": {},
                            "f:terminationMessagePath": {}, "f:terminationMessagePolicy": {}}},
                        "f:dnsPolicy": {}, "f:restartPolicy": {}, "f:schedulerName": {},
                        "f:securityContext": {}, "f:terminationGracePeriodSeconds": {}
                    }
                }
            }
        })
    );
    // `kubectl scale`-like apply of replicas by an HPA-style manager conflicts with the creator.
    let err = deps
        .patch(
            "web",
            &PatchParams::apply("autoscaler"),
            &Patch::Apply(json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "web"}, "spec": {"replicas": 3}})),
        )
        .await
        .expect_err("creator owns replicas");
    assert_eq!(
        api_error(err).message,
        "Apply failed with 1 conflict: conflict with \"kubectl-create\" using apps/v1: .spec.replicas"
    );
}
