//! `managedFields` of writes through `/scale` and of namespace creation, through `kube::Api`, as
//! kube-apiserver 1.35's sources record them: apimachinery's `ScaleHandler` (a built-in kind's
//! replicas owned by the scaler with `subresource: scale`; a custom resource's taken from every
//! manager, kubernetes#131892) and the namespace strategy (`PrepareForCreate`, `Canonicalize`,
//! `SetDefaults_Namespace`).
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use kube_fake_apiserver::FakeApiServer;
use serde_json::{Value, json};

fn entries<K: serde::Serialize>(obj: &K) -> Vec<Value> {
    let v = serde_json::to_value(obj).unwrap();
    v["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn by(entries: &[Value], manager: &str) -> Option<Value> {
    entries.iter().find(|e| e["manager"] == manager).cloned()
}

fn post(manager: &str) -> PostParams {
    PostParams {
        field_manager: Some(manager.into()),
        ..Default::default()
    }
}

fn patch(manager: &str) -> PatchParams {
    PatchParams {
        field_manager: Some(manager.into()),
        ..Default::default()
    }
}

#[tokio::test]
async fn a_deployment_scaled_through_scale_is_owned_by_the_scaler_with_subresource_scale() {
    let srv = FakeApiServer::start().await.unwrap();
    let api: Api<Deployment> = Api::namespaced(srv.client(), "default");
    let d: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "d"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "d"}},
                 "template": {"metadata": {"labels": {"app": "d"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
    }))
    .unwrap();
    let created = api.create(&post("creator"), &d).await.unwrap();
    let creator = by(&entries(&created), "creator").unwrap();
    assert!(creator["fieldsV1"]["f:spec"].get("f:replicas").is_some());

    api.patch_scale(
        "d",
        &patch("scaler"),
        &Patch::Merge(json!({"spec": {"replicas": 3}})),
    )
    .await
    .unwrap();
    let after = api.get("d").await.unwrap();
    assert_eq!(after.spec.as_ref().unwrap().replicas, Some(3));
    let all = entries(&after);
    assert_eq!(
        by(&all, "scaler").unwrap(),
        json!({"manager": "scaler", "operation": "Update", "apiVersion": "apps/v1",
               "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}},
               "subresource": "scale"}),
        "{all:#?}"
    );
    let creator = by(&all, "creator").unwrap();
    assert!(
        creator["fieldsV1"]["f:spec"].get("f:replicas").is_none(),
        "{creator}"
    );
    assert!(creator["fieldsV1"]["f:spec"].get("f:selector").is_some());

    // The same replicas again through `/scale` is no write.
    let rv = after.metadata.resource_version.clone();
    api.patch_scale(
        "d",
        &patch("other"),
        &Patch::Merge(json!({"spec": {"replicas": 3}})),
    )
    .await
    .unwrap();
    let same = api.get("d").await.unwrap();
    assert_eq!(same.metadata.resource_version, rv);
    assert_eq!(entries(&same), all);

    // The scaler's ownership conflicts with a later apply of the replicas.
    let apply = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                       "spec": {"replicas": 5}});
    let err = api
        .patch("d", &patch("applier"), &Patch::Apply(apply))
        .await
        .unwrap_err();
    match err {
        kube::Error::Api(s) => {
            assert_eq!(s.code, 409);
            assert_eq!(
                s.message,
                "Apply failed with 1 conflict: conflict with \"scaler\" with subresource \"scale\" using apps/v1: .spec.replicas"
            );
        }
        other => panic!("{other:?}"),
    }
}

fn scaled_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "pools.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "pools", "singular": "pool", "kind": "Pool", "listKind": "PoolList"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}, "scale": {
                    "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "replicas": {"type": "integer"}, "size": {"type": "string"}}},
                    "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}
                }}}
            }]
        }
    })
}

#[tokio::test]
async fn a_custom_resource_scaled_through_scale_loses_the_replicas_owner() {
    let srv = FakeApiServer::start().await.unwrap();
    srv.register_crd(scaled_crd()).unwrap();
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("example.com", "v1", "Pool"));
    let api: Api<DynamicObject> = Api::namespaced_with(srv.client(), "default", &ar);
    let pool: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Pool", "metadata": {"name": "p"},
        "spec": {"replicas": 1, "size": "s"}
    }))
    .unwrap();
    let created = api.create(&post("creator"), &pool).await.unwrap();
    assert_eq!(
        by(&entries(&created), "creator").unwrap()["fieldsV1"]["f:spec"],
        json!({".": {}, "f:replicas": {}, "f:size": {}})
    );

    api.patch_scale(
        "p",
        &patch("scaler"),
        &Patch::Merge(json!({"spec": {"replicas": 2}})),
    )
    .await
    .unwrap();
    let after = api.get("p").await.unwrap();
    assert_eq!(after.data["spec"]["replicas"], 2);
    let all = entries(&after);
    assert!(by(&all, "scaler").is_none(), "{all:#?}");
    assert_eq!(
        by(&all, "creator").unwrap()["fieldsV1"]["f:spec"],
        json!({".": {}, "f:size": {}}),
        "{all:#?}"
    );

    // Apply through `/scale`: the CRD's type converter cannot type a Scale.
    let err = api
        .patch_scale(
            "p",
            &patch("scaler"),
            &Patch::Apply(json!({"apiVersion": "autoscaling/v1", "kind": "Scale",
                                 "metadata": {"name": "p", "namespace": "default"},
                                 "spec": {"replicas": 4}})),
        )
        .await
        .unwrap_err();
    match err {
        kube::Error::Api(s) => {
            assert_eq!(s.code, 500);
            assert_eq!(
                s.message,
                "failed to create typed patch object (default/p; autoscaling/v1, Kind=Scale): no corresponding type for autoscaling/v1, Kind=Scale"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_new_namespace_gets_its_name_label_and_the_kubernetes_finalizer_owned_by_no_one() {
    let srv = FakeApiServer::start().await.unwrap();
    let api: Api<Namespace> = Api::all(srv.client());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "team-a"}})).unwrap();
    let created = api.create(&post("creator"), &ns).await.unwrap();
    assert_eq!(
        created.metadata.labels.as_ref().unwrap()["kubernetes.io/metadata.name"],
        "team-a"
    );
    assert_eq!(
        created.spec.as_ref().unwrap().finalizers,
        Some(vec!["kubernetes".to_string()])
    );
    assert_eq!(
        created.status.as_ref().unwrap().phase.as_deref(),
        Some("Active")
    );
    // The label is a default (the creator owns it); the finalizer is set after the field manager.
    assert_eq!(
        entries(&created),
        vec![
            json!({"manager": "creator", "operation": "Update", "apiVersion": "v1",
                    "time": entries(&created)[0]["time"], "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:metadata": {"f:labels": {".": {},
                        "f:kubernetes.io/metadata.name": {}}}}})
        ]
    );

    // A generated name is labelled too, after the field manager: no one owns the label.
    let generated: Namespace =
        serde_json::from_value(json!({"metadata": {"generateName": "gen-"}})).unwrap();
    let created = api.create(&post("creator"), &generated).await.unwrap();
    let name = created.metadata.name.clone().unwrap();
    assert_eq!(
        created.metadata.labels.as_ref().unwrap()["kubernetes.io/metadata.name"],
        name
    );
    let all = entries(&created);
    assert_eq!(
        all.iter()
            .map(|e| e["fieldsV1"].clone())
            .collect::<Vec<_>>(),
        vec![json!({"f:metadata": {"f:generateName": {}}})],
        "{all:#?}"
    );

    // Finalizers the client sends are kept, `kubernetes` appended.
    let own: Namespace = serde_json::from_value(
        json!({"metadata": {"name": "own"}, "spec": {"finalizers": ["example.com/x"]}}),
    )
    .unwrap();
    let created = api.create(&post("creator"), &own).await.unwrap();
    assert_eq!(
        created.spec.as_ref().unwrap().finalizers,
        Some(vec!["example.com/x".to_string(), "kubernetes".to_string()])
    );
}
