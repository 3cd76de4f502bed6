//! Server-side apply through `kube::Client`: list-map, set and atomic fields of a CRD merged by
//! two field managers with per-element ownership in `managedFields`, the 409 naming the
//! conflicting manager and field, `force`, and the list types of built-in kinds.
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube_fake_apiserver::FakeApiServer;
use serde_json::{Value, json};

fn gateway_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gateways.net.example.com"},
        "spec": {
            "group": "net.example.com",
            "scope": "Namespaced",
            "names": {"plural": "gateways", "singular": "gateway", "kind": "Gateway", "listKind": "GatewayList"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {
                    "type": "object",
                    "properties": {
                        "listeners": {
                            "type": "array",
                            "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["name"],
                            "items": {"type": "object", "required": ["name"], "properties": {
                                "name": {"type": "string"},
                                "port": {"type": "integer"},
                                "protocol": {"type": "string"}
                            }}
                        },
                        "hostnames": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                        "addresses": {"type": "array", "x-kubernetes-list-type": "atomic", "items": {"type": "string"}}
                    }
                }}}}
            }]
        }
    })
}

fn gateways(c: &kube::Client) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("net.example.com", "v1", "Gateway"));
    Api::namespaced_with(c.clone(), "default", &ar)
}

fn gateway(spec: Value) -> Value {
    json!({"apiVersion": "net.example.com/v1", "kind": "Gateway", "metadata": {"name": "gw"}, "spec": spec})
}

fn fields_of(obj: &DynamicObject, manager: &str) -> Value {
    let entries = obj.metadata.managed_fields.as_ref().expect("managedFields");
    let e = entries
        .iter()
        .find(|e| e.manager.as_deref() == Some(manager))
        .unwrap_or_else(|| panic!("no managedFields entry for {manager}: {entries:?}"));
    serde_json::to_value(e.fields_v1.as_ref().expect("fieldsV1")).unwrap()
}

async fn server() -> (FakeApiServer, Api<DynamicObject>) {
    let srv = FakeApiServer::start().await.expect("server starts");
    srv.register_crd(gateway_crd()).expect("CRD registered");
    let api = gateways(&srv.client());
    (srv, api)
}

#[tokio::test]
async fn two_managers_apply_elements_of_one_list_map() {
    let (_srv, api) = server().await;
    let a = PatchParams::apply("team-a");
    let b = PatchParams::apply("team-b");
    api.patch(
        "gw",
        &a,
        &Patch::Apply(gateway(json!({
        "listeners": [{"name": "http", "port": 80}], "hostnames": ["a.example.com"]}))),
    )
    .await
    .expect("team-a applies");
    let obj = api
        .patch(
            "gw",
            &b,
            &Patch::Apply(gateway(json!({
            "listeners": [{"name": "https", "port": 443}], "hostnames": ["b.example.com"]}))),
        )
        .await
        .expect("team-b applies");
    assert_eq!(
        obj.data["spec"]["listeners"],
        json!([{"name": "http", "port": 80}, {"name": "https", "port": 443}])
    );
    assert_eq!(
        obj.data["spec"]["hostnames"],
        json!(["a.example.com", "b.example.com"])
    );
    assert_eq!(
        fields_of(&obj, "team-b"),
        json!({"f:spec": {
            "f:hostnames": {"v:\"b.example.com\"": {}},
            "f:listeners": {"k:{\"name\":\"https\"}": {".": {}, "f:name": {}, "f:port": {}}}
        }})
    );
    assert_eq!(
        fields_of(&obj, "team-a")["f:spec"]["f:listeners"],
        json!({"k:{\"name\":\"http\"}": {".": {}, "f:name": {}, "f:port": {}}})
    );

    // team-a stops applying its listener: only that one goes.
    let obj = api
        .patch(
            "gw",
            &a,
            &Patch::Apply(gateway(json!({"hostnames": ["a.example.com"]}))),
        )
        .await
        .expect("team-a applies again");
    assert_eq!(
        obj.data["spec"]["listeners"],
        json!([{"name": "https", "port": 443}])
    );
}

#[tokio::test]
async fn a_conflict_names_manager_and_element_field_and_force_takes_it() {
    let (_srv, api) = server().await;
    api.patch(
        "gw",
        &PatchParams::apply("team-a"),
        &Patch::Apply(gateway(json!({
        "listeners": [{"name": "http", "port": 80}], "addresses": ["10.0.0.1"]}))),
    )
    .await
    .expect("team-a applies");
    let config = gateway(json!({"listeners": [{"name": "http", "port": 8080}]}));
    let err = api
        .patch(
            "gw",
            &PatchParams::apply("team-b"),
            &Patch::Apply(config.clone()),
        )
        .await
        .expect_err("team-b conflicts");
    let kube::Error::Api(status) = err else {
        panic!("not an API error: {err:?}")
    };
    assert_eq!(status.code, 409);
    assert_eq!(status.reason, "Conflict");
    assert_eq!(
        status.message,
        "Apply failed with 1 conflict: conflict with \"team-a\": .spec.listeners[name=\"http\"].port"
    );
    let causes = status.details.expect("details").causes;
    assert_eq!(causes.len(), 1);
    assert_eq!(causes[0].reason, "FieldManagerConflict");
    assert_eq!(causes[0].field, ".spec.listeners[name=\"http\"].port");
    assert_eq!(causes[0].message, "conflict with \"team-a\"");

    let obj = api
        .patch(
            "gw",
            &PatchParams::apply("team-b").force(),
            &Patch::Apply(config),
        )
        .await
        .expect("forced apply");
    assert_eq!(
        obj.data["spec"]["listeners"],
        json!([{"name": "http", "port": 8080}])
    );
    // team-a keeps the element (it still applies it) but no longer its port; the atomic list stays its.
    assert_eq!(
        fields_of(&obj, "team-a"),
        json!({"f:spec": {"f:addresses": {}, "f:listeners": {"k:{\"name\":\"http\"}": {".": {}, "f:name": {}}}}})
    );

    // An atomic list is one field: changing any part of it conflicts on the whole list.
    let err = api
        .patch(
            "gw",
            &PatchParams::apply("team-b"),
            &Patch::Apply(gateway(json!({
            "listeners": [{"name": "http", "port": 8080}], "addresses": ["10.0.0.2"]}))),
        )
        .await
        .expect_err("atomic list conflicts");
    assert!(
        err.to_string()
            .contains("conflict with \"team-a\": .spec.addresses"),
        "{err}"
    );
}

#[tokio::test]
async fn deployments_merge_containers_by_name_and_env_by_name() {
    let srv = FakeApiServer::start().await.expect("server starts");
    let api: Api<Deployment> = Api::namespaced(srv.client(), "default");
    let deployment = |containers: Value| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
               "spec": {"selector": {"matchLabels": {"app": "web"}},
                        "template": {"metadata": {"labels": {"app": "web"}},
                                     "spec": {"containers": containers}}}})
    };
    api.patch(
        "web",
        &PatchParams::apply("app"),
        &Patch::Apply(deployment(json!([
        {"name": "web", "image": "nginx:1", "env": [{"name": "A", "value": "1"}]}]))),
    )
    .await
    .expect("app applies");
    let d = api
        .patch(
            "web",
            &PatchParams::apply("mesh"),
            &Patch::Apply(deployment(json!([
            {"name": "proxy", "image": "envoy:1"},
            {"name": "web", "env": [{"name": "B", "value": "2"}]}]))),
        )
        .await
        .expect("mesh applies");
    let containers = d.spec.unwrap().template.spec.unwrap().containers;
    let names: Vec<&str> = containers.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["web", "proxy"]);
    assert_eq!(containers[0].image.as_deref(), Some("nginx:1"));
    let env: Vec<&str> = containers[0]
        .env
        .iter()
        .flatten()
        .map(|e| e.name.as_str())
        .collect();
    assert_eq!(env, ["A", "B"]);
}

#[tokio::test]
async fn an_applied_list_map_repeating_a_key_is_refused() {
    let (_srv, api) = server().await;
    let err = api
        .patch(
            "gw",
            &PatchParams::apply("team-a"),
            &Patch::Apply(gateway(json!({
            "listeners": [{"name": "http", "port": 80}, {"name": "http", "port": 81}]}))),
        )
        .await
        .expect_err("duplicate key refused");
    let kube::Error::Api(status) = err else {
        panic!("not an API error: {err:?}")
    };
    assert_eq!(status.code, 500);
    assert_eq!(
        status.message,
        "failed to create typed patch object (default/gw; net.example.com/v1, Kind=Gateway): \
         .spec.listeners: duplicate entries for key [name=\"http\"]"
    );
    assert!(
        api.get_opt("gw").await.unwrap().is_none(),
        "nothing was created"
    );
}

/// The managers' `managedFields` of a Deployment as kube-apiserver writes them: containers
/// keyed by name (`k:{"name":...}`), env by name, container ports by `containerPort` and the
/// defaulted `protocol`, all from the built-in definitions' list-map keys.
#[tokio::test]
async fn deployment_managed_fields_key_containers_by_name() {
    let srv = FakeApiServer::start().await.expect("server starts");
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("apps", "v1", "Deployment"));
    let api: Api<DynamicObject> = Api::namespaced_with(srv.client(), "default", &ar);
    let deployment = |containers: Value| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
               "spec": {"selector": {"matchLabels": {"app": "web"}},
                        "template": {"metadata": {"labels": {"app": "web"}},
                                     "spec": {"containers": containers}}}})
    };
    api.patch(
        "web",
        &PatchParams::apply("app"),
        &Patch::Apply(deployment(json!([{"name": "app", "image": "app:1",
            "ports": [{"containerPort": 8080}], "env": [{"name": "A", "value": "1"}]}]))),
    )
    .await
    .expect("app applies");
    let d = api
        .patch(
            "web",
            &PatchParams::apply("mesh"),
            &Patch::Apply(deployment(json!([
                {"name": "proxy", "image": "envoy:1"},
                {"name": "app", "env": [{"name": "B", "value": "2"}]}]))),
        )
        .await
        .expect("mesh applies");
    let app = fields_of(&d, "app");
    let containers = &app["f:spec"]["f:template"]["f:spec"]["f:containers"];
    let own = &containers["k:{\"name\":\"app\"}"];
    assert_eq!(own["f:image"], json!({}), "{app}");
    assert_eq!(
        own["f:env"]["k:{\"name\":\"A\"}"]["f:value"],
        json!({}),
        "{app}"
    );
    assert_eq!(
        own["f:ports"]["k:{\"containerPort\":8080,\"protocol\":\"TCP\"}"]["f:containerPort"],
        json!({}),
        "{app}"
    );
    assert_eq!(
        app["f:spec"]["f:selector"],
        json!({}),
        "a LabelSelector is atomic: {app}"
    );
    let mesh = fields_of(&d, "mesh");
    let containers = &mesh["f:spec"]["f:template"]["f:spec"]["f:containers"];
    assert_eq!(
        containers["k:{\"name\":\"proxy\"}"]["f:image"],
        json!({}),
        "{mesh}"
    );
    let shared = &containers["k:{\"name\":\"app\"}"];
    assert_eq!(
        shared["f:env"]["k:{\"name\":\"B\"}"]["f:value"],
        json!({}),
        "{mesh}"
    );
    assert!(shared.get("f:image").is_none(), "{mesh}");
}

/// Kinds whose list types only the definitions know: a ValidatingWebhookConfiguration's
/// `webhooks` keyed by name, a ClusterRole's `rules` atomic, a Service's ports keyed by port and
/// protocol.
#[tokio::test]
async fn builtin_list_types_come_from_the_definitions() {
    let srv = FakeApiServer::start().await.expect("server starts");
    let gvk = |g: &str, k: &str| ApiResource::from_gvk(&GroupVersionKind::gvk(g, "v1", k));
    let roles: Api<DynamicObject> = Api::all_with(
        srv.client(),
        &gvk("rbac.authorization.k8s.io", "ClusterRole"),
    );
    let role = roles
        .patch(
            "reader",
            &PatchParams::apply("op"),
            &Patch::Apply(
                json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": "reader"},
                "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}),
            ),
        )
        .await
        .expect("applied");
    assert_eq!(fields_of(&role, "op")["f:rules"], json!({}));
    let webhooks: Api<DynamicObject> = Api::all_with(
        srv.client(),
        &gvk(
            "admissionregistration.k8s.io",
            "ValidatingWebhookConfiguration",
        ),
    );
    let vwc = webhooks
        .patch(
            "hooks",
            &PatchParams::apply("op"),
            &Patch::Apply(json!({"apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "hooks"},
                "webhooks": [{"name": "a.example.com", "sideEffects": "None",
                              "admissionReviewVersions": ["v1"],
                              "clientConfig": {"url": "https://a.example.com/validate"}}]})),
        )
        .await
        .expect("applied");
    let hooks = &fields_of(&vwc, "op")["f:webhooks"];
    assert_eq!(
        hooks["k:{\"name\":\"a.example.com\"}"]["f:sideEffects"],
        json!({}),
        "{hooks}"
    );
    let services: Api<DynamicObject> =
        Api::namespaced_with(srv.client(), "default", &gvk("", "Service"));
    let svc = services
        .patch(
            "db",
            &PatchParams::apply("op"),
            &Patch::Apply(
                json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "db"},
                "spec": {"ports": [{"port": 5432, "name": "sql"}]}}),
            ),
        )
        .await
        .expect("applied");
    let ports = &fields_of(&svc, "op")["f:spec"]["f:ports"];
    assert!(
        ports
            .get("k:{\"port\":5432,\"protocol\":\"TCP\"}")
            .is_some(),
        "{ports}"
    );
}
