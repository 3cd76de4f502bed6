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
    // `ctl` added spec itself, so it owns it too (the `.`).
    assert_eq!(
        fields_of(&merged, "ctl"),
        &json!({"f:spec": {".": {}, "f:color": {}, "f:size": {}}})
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
        &json!({"f:status": {".": {}, "f:phase": {}}}),
        "a /status write owns only status (and status itself, which it added)"
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

fn entries_of(obj: &Value) -> Vec<Value> {
    obj["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[test]
fn a_create_owns_every_field_it_made_with_dots_for_maps_it_added() {
    let res = widgets();
    let mut obj = json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default", "uid": "u", "generation": 1,
                     "creationTimestamp": "2024-01-01T00:00:00Z", "labels": {"tier": "web"}},
        "spec": {"size": 3, "color": "blue"}});
    let body = obj.clone();
    writer(&res, "creator", Operation::Update).record(None, &mut obj, &body);
    let entries = entries_of(&obj);
    assert_eq!(entries.len(), 1);
    let e = &entries[0];
    assert_eq!(e["manager"], "creator");
    assert_eq!(e["operation"], "Update");
    assert_eq!(e["apiVersion"], "example.com/v1");
    assert_eq!(e["fieldsType"], "FieldsV1");
    assert!(e["time"].is_string(), "{e}");
    assert!(e.get("subresource").is_none());
    assert_eq!(
        e["fieldsV1"],
        json!({"f:metadata": {"f:labels": {".": {}, "f:tier": {}}},
               "f:spec": {".": {}, "f:color": {}, "f:size": {}}})
    );
}

#[test]
fn generate_name_is_owned_and_server_metadata_is_not() {
    let res = widgets();
    let mut obj = json!({"metadata": {"generateName": "w-", "name": "w-x1", "resourceVersion": "5",
        "selfLink": "/x", "finalizers": ["a/b"]}});
    let body = obj.clone();
    writer(&res, "rs", Operation::Update).record(None, &mut obj, &body);
    assert_eq!(
        fields_of(&obj, "rs"),
        &json!({"f:metadata": {"f:generateName": {}, "f:finalizers": {".": {}, "v:\"a/b\"": {}}}})
    );
}

#[test]
fn an_update_takes_what_it_changed_and_removed_fields_leave_every_owner() {
    let res = widgets();
    let mut obj = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"size": 3, "color": "blue"}});
    let body = obj.clone();
    writer(&res, "creator", Operation::Update).record(None, &mut obj, &body);
    let created_time = entries_of(&obj)[0]["time"].clone();
    // `editor` changes size, drops the label and adds tags: it owns those; creator keeps color
    // and the (now empty) labels map it added, and loses the label (gone) and size (taken).
    let mut new = obj.clone();
    new["metadata"]["labels"] = json!({});
    new["spec"]["size"] = json!(4);
    new["spec"]["tags"] = json!(["x"]);
    let body = new.clone();
    writer(&res, "editor", Operation::Update).record(Some(&obj), &mut new, &body);
    assert_eq!(
        fields_of(&new, "creator"),
        &json!({"f:metadata": {"f:labels": {}}, "f:spec": {".": {}, "f:color": {}}})
    );
    assert_eq!(
        fields_of(&new, "editor"),
        &json!({"f:spec": {"f:size": {}, "f:tags": {".": {}, "v:\"x\"": {}}}})
    );
    // The creator's entry did not take anything: its time stays.
    let creator = entries_of(&new)
        .into_iter()
        .find(|e| e["manager"] == "creator")
        .unwrap();
    assert_eq!(creator["time"], created_time);
    // An update that changes nothing leaves the entries as they were.
    let mut same = new.clone();
    let body = same.clone();
    writer(&res, "third", Operation::Update).record(Some(&new), &mut same, &body);
    assert!(super::same_write(&new, &same));
    assert!(entries_of(&same).iter().all(|e| e["manager"] != "third"));
}

#[test]
fn managed_fields_sent_on_update_replace_the_stored_ones_and_an_empty_entry_resets_them() {
    let res = widgets();
    let mut obj = json!({"metadata": {}, "spec": {"size": 3}});
    let body = obj.clone();
    writer(&res, "creator", Operation::Update).record(None, &mut obj, &body);
    // A client hands ownership of size to `other`.
    let mut new = obj.clone();
    new["metadata"]["managedFields"] = json!([{"manager": "other", "operation": "Apply",
        "apiVersion": "example.com/v1", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:spec": {"f:size": {}}}}]);
    let body = new.clone();
    writer(&res, "client", Operation::Update).record(Some(&obj), &mut new, &body);
    let managers: Vec<Value> = entries_of(&new)
        .iter()
        .map(|e| e["manager"].clone())
        .collect();
    assert_eq!(managers, [json!("other")]);
    // Entries that do not decode are ignored: the stored ones stay.
    let mut bad = new.clone();
    bad["metadata"]["managedFields"] = json!([{"manager": "x", "operation": "Patch",
        "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {}}]);
    let body = bad.clone();
    writer(&res, "client", Operation::Update).record(Some(&new), &mut bad, &body);
    assert_eq!(entries_of(&bad), entries_of(&new));
    // `[{}]` (or `[]`) resets them; an update that changes nothing then leaves none.
    for reset in [json!([{}]), json!([])] {
        let mut r = new.clone();
        r["metadata"]["managedFields"] = reset;
        let body = r.clone();
        writer(&res, "client", Operation::Update).record(Some(&new), &mut r, &body);
        assert!(r["metadata"].get("managedFields").is_none(), "{r}");
    }
    // Through /status, what the client sends is ignored.
    let mut st = new.clone();
    st["metadata"]["managedFields"] = json!([{}]);
    let body = st.clone();
    Writer::new(&res, "v1", "client", Operation::Update, Mode::Status).record(
        Some(&new),
        &mut st,
        &body,
    );
    assert_eq!(entries_of(&st), entries_of(&new));
}

#[test]
fn more_than_ten_updaters_merge_the_oldest_into_ancient_changes() {
    let res = widgets();
    let mut obj = json!({"metadata": {"labels": {}}});
    for i in 0..11 {
        let mut new = obj.clone();
        new["metadata"]["labels"][format!("l{i}")] = json!("x");
        let body = new.clone();
        let manager = format!("m{i:02}");
        writer(&res, &manager, Operation::Update).record(Some(&obj), &mut new, &body);
        // Distinct times, a second apart, so the oldest is known.
        let list = new["metadata"]["managedFields"].as_array_mut().unwrap();
        for e in list.iter_mut().filter(|e| e["manager"] == manager.as_str()) {
            e["time"] = json!(format!("2024-01-01T00:00:{i:02}Z"));
        }
        obj = new;
    }
    let entries = entries_of(&obj);
    assert_eq!(entries.len(), 10, "{entries:#?}");
    let ancient = entries
        .iter()
        .find(|e| e["manager"] == "ancient-changes")
        .expect("a bucket");
    assert_eq!(ancient["operation"], "Update");
    assert_eq!(ancient["apiVersion"], "example.com/v1");
    // m00 and m01 merged; the bucket takes m01's time.
    assert_eq!(
        ancient["fieldsV1"],
        json!({"f:metadata": {"f:labels": {"f:l0": {}, "f:l1": {}}}})
    );
    assert_eq!(ancient["time"], "2024-01-01T00:00:01Z");
    assert!(
        entries
            .iter()
            .all(|e| e["manager"] != "m00" && e["manager"] != "m01")
    );
}

#[test]
fn entries_are_sorted_apply_first_then_by_time() {
    let res = widgets();
    let mut obj = json!({"metadata": {}, "spec": {"size": 1}});
    let body = obj.clone();
    writer(&res, "z-updater", Operation::Update).record(None, &mut obj, &body);
    let obj = apply(&res, &obj, &json!({"spec": {"color": "red"}}), "a-applier");
    let order: Vec<(Value, Value)> = entries_of(&obj)
        .iter()
        .map(|e| (e["manager"].clone(), e["operation"].clone()))
        .collect();
    assert_eq!(
        order,
        [
            (json!("a-applier"), json!("Apply")),
            (json!("z-updater"), json!("Update"))
        ]
    );
}

#[test]
fn a_deployment_created_by_kubectl_is_owned_as_the_server_records_it() {
    let res = KindSpec::namespaced("apps", "v1", "Deployment", "deployments").into_resource();
    // `kubectl create deployment web --image=nginx`, after the server's defaults.
    let mut obj = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"replicas": 1, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
                "containers": [{"name": "nginx", "image": "nginx", "imagePullPolicy": "Always",
                    "resources": {}, "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File"}],
                "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
                "dnsPolicy": "ClusterFirst", "securityContext": {}, "schedulerName": "default-scheduler"}}}});
    let body = obj.clone();
    writer(&res, "kubectl-create", Operation::Update).record(None, &mut obj, &body);
    assert_eq!(
        fields_of(&obj, "kubectl-create"),
        &json!({
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
}
