use serde_json::{Value, json};

use super::{Mode, Operation, Writer};
use crate::registry::{KindSpec, Resource};

/// A `Widget` whose schema has a list-map, a set, an atomic list and an atomic map.
fn widgets() -> Resource {
    let mut res = KindSpec::namespaced("example.com", "v1", "Widget", "widgets").into_resource();
    res.versions[0].schema = Some(std::sync::Arc::new(crate::schema::ObjectSchema::new(
        json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "replicas": {"type": "integer"},
                "color": {"type": "string"},
                "size": {"type": "integer"},
                "ports": {"type": "array", "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"], "items": {"type": "object", "properties": {
                        "name": {"type": "string"}, "port": {"type": "integer"}}}},
                "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                "args": {"type": "array", "items": {"type": "string"}},
                "selector": {"type": "object", "x-kubernetes-map-type": "atomic",
                    "additionalProperties": {"type": "string"}}
            }},
            "status": {"type": "object"}
        }}),
    )));
    res
}

fn writer<'a>(res: &'a Resource, manager: &'a str, op: Operation) -> Writer<'a> {
    Writer::new(res, "v1", manager, op, Mode::Main)
}

/// Applies `config` as `manager` onto `live` and records it, as the write pipeline does.
fn apply(res: &Resource, live: &Value, config: &Value, manager: &str) -> Value {
    let w = writer(res, manager, Operation::Apply);
    let mut merged = w.apply(live, config, false).expect("no conflict");
    w.record(Some(live), &mut merged, config);
    merged
}

fn fields_of<'v>(obj: &'v Value, manager: &str) -> &'v Value {
    obj["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["manager"] == manager)
        .map(|e| &e["fieldsV1"])
        .unwrap_or_else(|| panic!("no entry for {manager} in {obj}"))
}

#[test]
fn two_appliers_own_their_own_list_map_elements() {
    let res = widgets();
    let a = json!({"spec": {"ports": [{"name": "http", "port": 80}]}});
    let b = json!({"spec": {"ports": [{"name": "metrics", "port": 9090}]}});
    let obj = apply(&res, &json!({"metadata": {}}), &a, "a");
    let obj = apply(&res, &obj, &b, "b");
    assert_eq!(
        obj["spec"]["ports"],
        json!([{"name": "http", "port": 80}, {"name": "metrics", "port": 9090}])
    );
    assert_eq!(
        fields_of(&obj, "b"),
        &json!({"f:spec": {"f:ports": {"k:{\"name\":\"metrics\"}": {".": {}, "f:name": {}, "f:port": {}}}}})
    );
    // `a` stops applying its element: it goes; `b`'s stays.
    let obj = apply(&res, &obj, &json!({"spec": {"ports": []}}), "a");
    assert_eq!(
        obj["spec"]["ports"],
        json!([{"name": "metrics", "port": 9090}])
    );
}

#[test]
fn a_changed_element_field_conflicts_with_its_owner_unless_forced() {
    let res = widgets();
    let obj = apply(
        &res,
        &json!({"metadata": {}}),
        &json!({"spec": {"ports": [{"name": "http", "port": 80}], "tags": ["x"]}}),
        "a",
    );
    let b = writer(&res, "b", Operation::Apply);
    let config = json!({"spec": {"ports": [{"name": "http", "port": 8080}], "tags": ["x", "y"]}});
    let err = b.apply(&obj, &config, false).unwrap_err();
    assert_eq!(err.code, 409);
    assert_eq!(
        err.message,
        "Apply failed with 1 conflict: conflict with \"a\": .spec.ports[name=\"http\"].port"
    );
    let mut forced = b.apply(&obj, &config, true).unwrap();
    b.record(Some(&obj), &mut forced, &config);
    assert_eq!(forced["spec"]["ports"][0]["port"], 8080);
    assert_eq!(forced["spec"]["tags"], json!(["x", "y"]));
    // `a` lost the port but keeps the element's name and its tag (shared with `b`).
    assert_eq!(
        fields_of(&forced, "a"),
        &json!({"f:spec": {"f:ports": {"k:{\"name\":\"http\"}": {".": {}, "f:name": {}}}, "f:tags": {"v:\"x\"": {}}}})
    );
}

#[test]
fn atomic_lists_and_maps_are_replaced_and_owned_whole() {
    let res = widgets();
    let obj = apply(
        &res,
        &json!({"metadata": {}}),
        &json!({"spec": {"args": ["1", "2"], "selector": {"a": "1", "b": "2"}}}),
        "a",
    );
    assert_eq!(
        fields_of(&obj, "a"),
        &json!({"f:spec": {"f:args": {}, "f:selector": {}}})
    );
    let b = writer(&res, "b", Operation::Apply);
    let config = json!({"spec": {"args": ["3"], "selector": {"a": "1"}}});
    let err = b.apply(&obj, &config, false).unwrap_err();
    assert_eq!(
        err.message,
        "Apply failed with 2 conflicts: conflicts with \"a\":\n- .spec.args\n- .spec.selector"
    );
    let causes = &err.details.as_ref().unwrap()["causes"];
    assert_eq!(causes[0]["reason"], "FieldManagerConflict");
    assert_eq!(causes[0]["field"], ".spec.args");
    let merged = b.apply(&obj, &config, true).unwrap();
    assert_eq!(merged["spec"]["args"], json!(["3"]));
    assert_eq!(merged["spec"]["selector"], json!({"a": "1"}));
}

#[test]
fn updaters_are_named_with_their_api_version_and_lose_what_others_change() {
    let res = widgets();
    let mut obj = json!({"metadata": {}, "spec": {"replicas": 1, "color": "red", "size": 3}});
    let old = json!({"metadata": {}});
    let source = obj.clone();
    writer(&res, "ctl", Operation::Update).record(Some(&old), &mut obj, &source);
    let obj = apply(
        &res,
        &obj,
        &json!({"spec": {"color": "red", "size": 3}}),
        "me",
    );
    let me = writer(&res, "me", Operation::Apply);
    let err = me
        .apply(&obj, &json!({"spec": {"replicas": 2}}), false)
        .unwrap_err();
    assert_eq!(
        err.message,
        "Apply failed with 1 conflict: conflict with \"ctl\" using example.com/v1: .spec.replicas"
    );
    // Forced: `me` takes replicas and, having stopped applying color and size, they stay (ctl owns them too).
    let config = json!({"spec": {"replicas": 2}});
    let mut merged = me.apply(&obj, &config, true).unwrap();
    me.record(Some(&obj), &mut merged, &config);
    assert_eq!(
        merged["spec"],
        json!({"replicas": 2, "color": "red", "size": 3})
    );
    assert_eq!(
        fields_of(&merged, "ctl"),
        &json!({"f:spec": {"f:color": {}, "f:size": {}}})
    );
    // The same value is shared, not a conflict.
    assert!(
        me.apply(&obj, &json!({"spec": {"replicas": 1}}), false)
            .is_ok()
    );
}

#[test]
fn fields_only_the_applier_owned_are_removed_when_no_longer_applied() {
    let res = widgets();
    let obj = apply(
        &res,
        &json!({"metadata": {}}),
        &json!({"metadata": {"labels": {"a": "1"}}, "spec": {"color": "red", "size": 3}}),
        "me",
    );
    let obj = apply(&res, &obj, &json!({"spec": {"color": "red"}}), "me");
    assert_eq!(obj["spec"], json!({"color": "red"}));
    assert!(obj["metadata"].get("labels").is_none(), "{obj}");
}

#[test]
fn built_in_pods_merge_containers_by_name_and_ports_by_port_and_protocol() {
    let res = KindSpec::namespaced("", "v1", "Pod", "pods").into_resource();
    let obj = apply(
        &res,
        &json!({"metadata": {}}),
        &json!({"metadata": {"finalizers": ["a/x"]}, "spec": {"containers": [
            {"name": "web", "image": "nginx", "ports": [{"containerPort": 80}]}]}}),
        "a",
    );
    let obj = apply(
        &res,
        &obj,
        &json!({"metadata": {"finalizers": ["b/y"]}, "spec": {"containers": [
            {"name": "sidecar", "image": "envoy"}]}}),
        "b",
    );
    assert_eq!(obj["spec"]["containers"].as_array().unwrap().len(), 2);
    assert_eq!(obj["metadata"]["finalizers"], json!(["a/x", "b/y"]));
    assert_eq!(
        fields_of(&obj, "a")["f:spec"]["f:containers"]["k:{\"name\":\"web\"}"]["f:ports"],
        json!({"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}})
    );
    assert_eq!(
        fields_of(&obj, "b")["f:metadata"],
        json!({"f:finalizers": {"v:\"b/y\"": {}}})
    );
}

#[test]
fn a_configuration_repeating_an_element_is_refused_as_the_server_does() {
    let res = widgets();
    let w = writer(&res, "a", Operation::Apply);
    let config = json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "spec": {"ports": [{"name": "x"}, {"name": "x", "port": 1}], "tags": ["t"]}});
    let err = w.check_config(&config, "default", "w1").unwrap_err();
    assert_eq!((err.code, err.reason.as_str()), (500, ""));
    assert_eq!(
        err.message,
        "failed to create typed patch object (default/w1; example.com/v1, Kind=Widget): \
         .spec.ports: duplicate entries for key [name=\"x\"]"
    );
    let two = json!({"kind": "Widget", "spec": {"ports": [{"name": "x"}, {"name": "x"}], "tags": ["t", "t"]}});
    let err = w.check_config(&two, "default", "w1").unwrap_err();
    assert!(
        err.message.ends_with(
            "Kind=Widget): errors:\n  .spec.ports: duplicate entries for key [name=\"x\"]\n  \
             .spec.tags: duplicate entries for key [=\"t\"]"
        ),
        "{}",
        err.message
    );
    assert!(
        w.check_config(&json!({"spec": {"tags": ["t", "u"]}}), "", "w1")
            .is_ok()
    );
}

#[test]
fn status_writers_are_named_with_their_subresource() {
    let res = widgets();
    let old = json!({"metadata": {}, "spec": {"color": "red"}});
    let mut obj = json!({"metadata": {}, "spec": {"color": "red"}, "status": {"phase": "Ready"}});
    let source = obj.clone();
    Writer::new(&res, "v1", "ctl", Operation::Update, Mode::Status).record(
        Some(&old),
        &mut obj,
        &source,
    );
    assert_eq!(
        fields_of(&obj, "ctl"),
        &json!({"f:status": {"f:phase": {}}}),
        "a /status write owns only status"
    );
    let me = Writer::new(&res, "v1", "me", Operation::Apply, Mode::Status);
    let err = me
        .apply(&obj, &json!({"status": {"phase": "Failed"}}), false)
        .unwrap_err();
    assert_eq!(
        err.message,
        "Apply failed with 1 conflict: conflict with \"ctl\" with subresource \"status\" using example.com/v1: .status.phase"
    );
}
