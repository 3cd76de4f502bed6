//! `managedFields` below maps whose entries the schema does not declare, as structured-merge-
//! diff records them: an `additionalProperties` entry and a field under
//! `x-kubernetes-preserve-unknown-fields` are fields of their own, so one whose value is an
//! object gets a `.` entry beside its children (SMD's `visitMapItems` inserts the path of every
//! undeclared key); lists there are atomic. Checked for apply, create and update.
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use kube_fake_apiserver::FakeApiServer;
use serde_json::{Value, json};

fn crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "bags.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "bags", "singular": "bag", "kind": "Bag", "listKind": "BagList"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {
                    "type": "object",
                    "properties": {
                        "byName": {"type": "object", "additionalProperties": {
                            "type": "object", "properties": {"x": {"type": "string"}}}},
                        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                    }
                }}}}
            }]
        }
    })
}

fn bag(name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": "Bag",
        "metadata": {"name": name}, "spec": spec}))
    .unwrap()
}

fn spec_fields(obj: &DynamicObject, manager: &str) -> Value {
    let entries = obj.metadata.managed_fields.as_ref().expect("managedFields");
    let e = entries
        .iter()
        .find(|e| e.manager.as_deref() == Some(manager))
        .unwrap_or_else(|| panic!("no managedFields entry for {manager}: {entries:?}"));
    serde_json::to_value(e.fields_v1.as_ref().expect("fieldsV1")).unwrap()["f:spec"].clone()
}

async fn server() -> (FakeApiServer, Api<DynamicObject>) {
    let srv = FakeApiServer::start().await.expect("server starts");
    srv.register_crd(crd()).expect("CRD registered");
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("example.com", "v1", "Bag"));
    let api = Api::namespaced_with(srv.client(), "default", &ar);
    (srv, api)
}

fn spec() -> Value {
    json!({
        "byName": {"a": {"x": "1"}, "empty": {}},
        "free": {"a": {"b": 1, "deep": {"c": true}}, "l": [1, {"m": 2}], "s": "v"}
    })
}

/// What SMD records for [`spec`]: every undeclared key is a field, objects with a `.`.
fn spec_set() -> Value {
    json!({
        ".": {},
        "f:byName": {".": {}, "f:a": {".": {}, "f:x": {}}, "f:empty": {}},
        "f:free": {".": {},
            "f:a": {".": {}, "f:b": {}, "f:deep": {".": {}, "f:c": {}}},
            "f:l": {}, "f:s": {}}
    })
}

#[tokio::test]
async fn apply_owns_undeclared_entries_and_their_children() {
    let (_srv, api) = server().await;
    let obj = api
        .patch(
            "applied",
            &PatchParams::apply("applier"),
            &Patch::Apply(bag("applied", spec())),
        )
        .await
        .expect("applied");
    let mut want = spec_set();
    // An applied configuration owns exactly what it names: `spec` itself is not a field of it.
    want.as_object_mut().unwrap().remove(".");
    want["f:byName"].as_object_mut().unwrap().remove(".");
    want["f:free"].as_object_mut().unwrap().remove(".");
    assert_eq!(spec_fields(&obj, "applier"), want);

    // A second manager applying one undeclared entry's child conflicts on exactly that field.
    let err = api
        .patch(
            "applied",
            &PatchParams::apply("other"),
            &Patch::Apply(bag("applied", json!({"free": {"a": {"b": 2}}}))),
        )
        .await
        .expect_err("a conflict");
    let kube::Error::Api(status) = err else {
        panic!("{err:?}")
    };
    assert_eq!(status.code, 409, "{status:?}");
    assert!(
        status.message.contains(".spec.free.a.b"),
        "{}",
        status.message
    );
}

#[tokio::test]
async fn create_and_update_record_undeclared_entries_as_fields() {
    let (_srv, api) = server().await;
    let pp = |m: &str| PostParams {
        field_manager: Some(m.into()),
        ..Default::default()
    };
    let created = api
        .create(&pp("creator"), &bag("made", spec()))
        .await
        .expect("created");
    let got = spec_fields(&created, "creator");
    // Update (create) managers own the maps they set, `.` included where non-empty.
    assert_eq!(got["f:byName"], spec_set()["f:byName"], "{got}");
    assert_eq!(got["f:free"], spec_set()["f:free"], "{got}");

    // An update owns what it changed: a modified leaf under an undeclared entry, and an added
    // undeclared entry with its children.
    let mut next = created.clone();
    next.data["spec"]["free"]["a"]["b"] = json!(2);
    next.data["spec"]["free"]["added"] = json!({"d": 1});
    next.data["spec"]["byName"]["b"] = json!({"x": "y"});
    let updated = api
        .replace("made", &pp("updater"), &next)
        .await
        .expect("updated");
    assert_eq!(
        spec_fields(&updated, "updater"),
        json!({
            "f:byName": {"f:b": {".": {}, "f:x": {}}},
            "f:free": {"f:a": {"f:b": {}}, "f:added": {".": {}, "f:d": {}}}
        })
    );
    // The creator keeps the rest, and loses the leaf the updater took.
    let creator = spec_fields(&updated, "creator");
    assert_eq!(
        creator["f:free"]["f:a"],
        json!({".": {}, "f:deep": {".": {}, "f:c": {}}})
    );
}
