//! The generated conversions of `testdata/crds/conversion.yaml` (Rollout: v1alpha1, v1beta1 and the
//! hub v1), through the runtime's `KindConversion` as the conversion webhook calls them.

use golden_tests::conversion::convert::conversion::{
    DefaultRolloutHooks, RolloutConversion, RolloutHooks,
};
use golden_tests::conversion::convert::{v1, v1alpha1};
use kube_codegen_runtime::conversion::hub::DATA_ANNOTATION;
use kube_codegen_runtime::conversion::{ConversionError, KindConversion};
use serde_json::{Value, json};

mod common;

fn alpha() -> Value {
    json!({
        "apiVersion": "convert.example.com/v1alpha1",
        "kind": "Rollout",
        "metadata": {
            "name": "web",
            "namespace": "default",
            "uid": "0b4c8a52-7d3e-4f1a-9d2c-3c1f0e9e8a11",
            "resourceVersion": "42",
            "generation": 3,
            "creationTimestamp": "2024-05-01T10:00:00Z",
            "labels": {"app": "web"},
            "annotations": {"note": "kept"},
            "managedFields": [{"manager": "kubectl", "operation": "Apply", "apiVersion": "convert.example.com/v1alpha1",
                "time": "2024-05-01T10:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}]
        },
        "spec": {
            "deploymentName": "web-deploy",
            "replicas": 3,
            "image": "nginx:1.27",
            "timeout": "30s",
            "legacyMode": "compat",
            "maxUnavailable": "25%",
            "labels": {"tier": "frontend"},
            "containers": [
                {"name": "a", "debug": true, "ports": [{"port": 80, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}]},
                {"name": "b", "ports": []}
            ],
            "env": {"A": {"value": "1", "secret": true}, "B": {"value": "2"}}
        },
        "status": {"phase": "Running", "readyReplicas": 2}
    })
}

fn hub() -> Value {
    json!({
        "apiVersion": "convert.example.com/v1",
        "kind": "Rollout",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "deployment": {"name": "web-deploy"},
            "replicas": 5000000000i64,
            "image": "nginx:1.27",
            "paused": true,
            "timeout": 30,
            "containers": [{"name": "a", "ports": [{"port": 132, "protocol": "SCTP"}]}],
            "env": {"A": {"value": "1", "optional": null}}
        },
        "status": {
            "readyReplicas": 2,
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2024-05-01T10:00:00Z",
                "reason": "Up", "message": "all good", "observedGeneration": 3}]
        }
    })
}

fn beta() -> Value {
    json!({
        "apiVersion": "convert.example.com/v1beta1",
        "kind": "Rollout",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"deployment": {"name": "d"}, "replicas": 2, "paused": false, "labels": {"x": "y"}},
        "status": {"readyReplicas": 1}
    })
}

fn data(object: &Value) -> Option<Value> {
    object
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(DATA_ANNOTATION))
        .and_then(Value::as_str)
        .map(|s| serde_json::from_str(s).unwrap())
}

/// Every object converts to every version and back to the same JSON, the annotation gone.
#[test]
fn every_version_round_trips_losslessly() {
    let c = RolloutConversion::new();
    assert_eq!(c.versions(), ["v1", "v1alpha1", "v1beta1"]);
    for object in [alpha(), hub(), beta()] {
        for version in c.versions() {
            let there = c.convert(object.clone(), version).unwrap();
            assert_eq!(
                there["apiVersion"],
                format!("convert.example.com/{version}"),
                "{there:#}"
            );
            let from = object["apiVersion"]
                .as_str()
                .unwrap()
                .rsplit('/')
                .next()
                .unwrap();
            let back = c.convert(there.clone(), from).unwrap();
            assert_eq!(back, object, "through {version}: {there:#}");
            // And on through a third version.
            for third in c.versions() {
                let on = c.convert(there.clone(), third).unwrap();
                let back = c.convert(on.clone(), from).unwrap();
                assert_eq!(back, object, "through {version} and {third}: {on:#}");
            }
        }
    }
}

/// What the hub cannot hold travels in the annotation; what maps is converted, metadata kept.
#[test]
fn hub_holds_what_it_can_and_the_rest_in_the_annotation() {
    let c = RolloutConversion::new();
    let h = c.convert(alpha(), "v1").unwrap();
    assert_eq!(h["spec"]["replicas"], 3, "int32 -> int64 by value");
    assert_eq!(h["spec"]["maxUnavailable"], "25%");
    assert_eq!(h["spec"]["containers"][0]["ports"][1]["protocol"], "UDP");
    assert_eq!(h["spec"]["env"]["A"], json!({"value": "1"}));
    assert!(h["spec"].get("deploymentName").is_none());
    assert!(h["spec"].get("timeout").is_none(), "\"30s\" is no integer");
    assert_eq!(
        h["metadata"]["managedFields"],
        alpha()["metadata"]["managedFields"]
    );
    assert_eq!(h["metadata"]["labels"], json!({"app": "web"}));
    assert_eq!(h["metadata"]["annotations"]["note"], "kept");
    let data = data(&h).expect("lost fields recorded");
    let paths: Vec<&str> = data["v1alpha1"]
        .as_array()
        .unwrap()
        .iter()
        .map(|op| op["path"].as_str().unwrap())
        .collect();
    for p in [
        "/spec/deploymentName",
        "/spec/timeout",
        "/spec/legacyMode",
        "/spec/containers/0/debug",
        "/spec/env/A/secret",
        "/status/phase",
    ] {
        assert!(paths.contains(&p), "{p} not in {paths:?}");
    }
    // The hub decodes as the generated type.
    let typed: v1::Rollout = serde_json::from_value(h).unwrap();
    assert_eq!(typed.spec.unwrap().replicas, Some(3));
}

/// A controller writing the hub keeps what a user set through v1alpha1, and its own change wins.
#[test]
fn writes_to_the_hub_keep_spoke_only_fields() {
    let c = RolloutConversion::new();
    let mut h = c.convert(alpha(), "v1").unwrap();
    h["spec"]["replicas"] = json!(7);
    h["spec"]["paused"] = json!(true);
    h["status"]["conditions"] = json!([{"type": "Ready", "status": "False",
        "lastTransitionTime": "2024-05-02T00:00:00Z", "reason": "Scaling", "message": "scaling"}]);
    let a = c.convert(h.clone(), "v1alpha1").unwrap();
    assert_eq!(a["spec"]["replicas"], 7);
    assert_eq!(a["spec"]["legacyMode"], "compat");
    assert_eq!(a["spec"]["deploymentName"], "web-deploy");
    assert_eq!(a["spec"]["containers"][0]["debug"], true);
    assert_eq!(a["status"]["phase"], "Running");
    // The hub's own fields travel the other way, and come back on the next write.
    let again = c.convert(a, "v1").unwrap();
    assert_eq!(again["spec"]["paused"], true);
    assert_eq!(again["status"]["conditions"], h["status"]["conditions"]);
    assert_eq!(again["spec"]["replicas"], 7);
}

/// Hooks that map the renamed field: nothing about it is left to the annotation.
struct Rename;

impl RolloutHooks for Rename {
    fn v1alpha1_spec_deployment_name_to_hub(
        &self,
        from: &v1alpha1::Rollout,
        to: &mut v1::Rollout,
    ) -> Result<(), ConversionError> {
        if let (Some(name), Some(spec)) = (
            from.spec.as_ref().and_then(|s| s.deployment_name.clone()),
            to.spec.as_mut(),
        ) {
            spec.deployment = Some(v1::RolloutSpecDeployment { name: Some(name) });
        }
        Ok(())
    }
    fn v1alpha1_spec_deployment_name_from_hub(
        &self,
        from: &v1::Rollout,
        to: &mut v1alpha1::Rollout,
    ) -> Result<(), ConversionError> {
        if let Some(spec) = to.spec.as_mut() {
            spec.deployment_name = from
                .spec
                .as_ref()
                .and_then(|s| s.deployment.as_ref())
                .and_then(|d| d.name.clone());
        }
        // The default of another hook, called from an override's neighbour.
        DefaultRolloutHooks.v1alpha1_spec_legacy_mode_from_hub(from, to)
    }
    fn v1alpha1_to_hub(
        &self,
        from: &v1alpha1::Rollout,
        _to: &mut v1::Rollout,
    ) -> Result<(), ConversionError> {
        match from.spec.as_ref().and_then(|s| s.legacy_mode.as_deref()) {
            Some("refuse") => Err(ConversionError::Refused(
                "legacyMode refuse cannot be converted".into(),
            )),
            _ => Ok(()),
        }
    }
}

#[test]
fn user_hooks_map_the_renamed_field() {
    let c = RolloutConversion::with_hooks(Rename);
    let h = c.convert(alpha(), "v1").unwrap();
    assert_eq!(h["spec"]["deployment"], json!({"name": "web-deploy"}));
    let ops = data(&h).unwrap();
    assert!(
        !ops.to_string().contains("deploymentName")
            && !ops.to_string().contains("/spec/deployment\""),
        "{ops}"
    );
    let a = c.convert(h, "v1alpha1").unwrap();
    assert_eq!(a, alpha());
    // A hub object's name reaches v1alpha1 through the hook, with no annotation needed for it.
    let a = c.convert(hub(), "v1alpha1").unwrap();
    assert_eq!(a["spec"]["deploymentName"], "web-deploy");
    assert_eq!(c.convert(a, "v1").unwrap(), hub());
    // Typed use, as a controller would.
    let typed: v1alpha1::Rollout = serde_json::from_value(alpha()).unwrap();
    let h = c.v1alpha1_to_hub(&typed).unwrap();
    assert_eq!(
        h.spec.unwrap().deployment.unwrap().name.as_deref(),
        Some("web-deploy")
    );
    // A hook refuses.
    let mut bad = alpha();
    bad["spec"]["legacyMode"] = json!("refuse");
    assert_eq!(
        c.convert(bad, "v1"),
        Err(ConversionError::Refused(
            "legacyMode refuse cannot be converted".into()
        ))
    );
}

#[test]
fn errors_name_the_object_and_version() {
    let c = RolloutConversion::new();
    let mut bad = alpha();
    bad["spec"]["replicas"] = json!("three");
    match c.convert(bad, "v1") {
        Err(ConversionError::Decode {
            kind,
            name,
            api_version,
            message,
        }) => {
            assert_eq!(
                (kind.as_str(), name.as_str(), api_version.as_str()),
                ("Rollout", "web", "convert.example.com/v1alpha1")
            );
            assert!(message.contains("invalid type"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        c.convert(alpha(), "v2"),
        Err(ConversionError::UnknownVersion {
            kind: "Rollout".into(),
            api_version: "convert.example.com/v2".into()
        })
    );
    let mut other = alpha();
    other["apiVersion"] = json!("other.example.com/v1alpha1");
    assert!(matches!(
        c.convert(other, "v1"),
        Err(ConversionError::UnknownVersion { .. })
    ));
    // Same version: as given.
    assert_eq!(c.convert(alpha(), "v1alpha1").unwrap(), alpha());
}

/// An unparsable annotation is dropped, not fatal.
#[test]
fn garbled_annotation_is_ignored() {
    let c = RolloutConversion::new();
    let mut h = hub();
    h["metadata"]["annotations"] = json!({DATA_ANNOTATION: "{not json"});
    let a = c.convert(h, "v1alpha1").unwrap();
    let back = c.convert(a, "v1").unwrap();
    assert_eq!(back, hub());
}

/// Hooks that lose data: the rename keeps only a prefix of the name, and the whole-object hook
/// rewrites a field the automatic conversion maps. What did not survive is still recorded and
/// restored, whichever part of the object the hook touched.
struct Lossy;

impl RolloutHooks for Lossy {
    fn v1alpha1_spec_deployment_name_to_hub(
        &self,
        from: &v1alpha1::Rollout,
        to: &mut v1::Rollout,
    ) -> Result<(), ConversionError> {
        if let (Some(name), Some(spec)) = (
            from.spec
                .as_ref()
                .and_then(|s| s.deployment_name.as_deref()),
            to.spec.as_mut(),
        ) {
            let short = name.split('-').next().unwrap_or_default().to_owned();
            spec.deployment = Some(v1::RolloutSpecDeployment { name: Some(short) });
        }
        Ok(())
    }
    fn v1alpha1_spec_deployment_name_from_hub(
        &self,
        from: &v1::Rollout,
        to: &mut v1alpha1::Rollout,
    ) -> Result<(), ConversionError> {
        if let Some(spec) = to.spec.as_mut() {
            spec.deployment_name = from
                .spec
                .as_ref()
                .and_then(|s| s.deployment.as_ref())
                .and_then(|d| d.name.clone());
        }
        Ok(())
    }
    fn v1alpha1_to_hub(
        &self,
        _from: &v1alpha1::Rollout,
        to: &mut v1::Rollout,
    ) -> Result<(), ConversionError> {
        if let Some(spec) = to.spec.as_mut() {
            spec.image = spec.image.to_uppercase();
        }
        let labels = to.metadata.labels.get_or_insert_default();
        labels.insert("converted".into(), "yes".into());
        // Not for the hook to change: the answer keeps the name it was sent.
        to.metadata.name = Some("renamed".into());
        Ok(())
    }
}

#[test]
fn lossy_hooks_are_recorded_and_undone() {
    let c = RolloutConversion::with_hooks(Lossy);
    let h = c.convert(alpha(), "v1").unwrap();
    assert_eq!(h["spec"]["deployment"], json!({"name": "web"}));
    assert_eq!(h["spec"]["image"], "NGINX:1.27");
    assert_eq!(h["metadata"]["name"], "web");
    assert_eq!(
        h["metadata"]["labels"],
        json!({"app": "web", "converted": "yes"})
    );
    let paths: Vec<String> = data(&h).unwrap()["v1alpha1"]
        .as_array()
        .unwrap()
        .iter()
        .map(|op| op["path"].as_str().unwrap().to_owned())
        .collect();
    for p in ["/spec/deploymentName", "/spec/image"] {
        assert!(paths.iter().any(|x| x == p), "{p} not in {paths:?}");
    }
    // Back in v1alpha1: the name and image as the user wrote them (the label the hook added
    // stays, as labels are the conversion's).
    let mut want = alpha();
    want["metadata"]["labels"]["converted"] = json!("yes");
    assert_eq!(c.convert(h, "v1alpha1").unwrap(), want);
}

/// The answer is the typed conversion's JSON (the input's unknown fields and nulls dropped, as
/// decoding drops them), with the metadata as it was sent, byte for byte.
#[test]
fn the_answer_is_the_typed_conversion_with_the_sent_metadata() {
    let c = RolloutConversion::with_hooks(Rename);
    let mut input = alpha();
    input["metadata"]["creationTimestamp"] = json!("2024-05-01T10:00:00.000Z");
    input["spec"]["unknownField"] = json!({"x": 1});
    input["spec"]["containers"][1]["unknown"] = json!([1, 2]);
    input["spec"]["image"] = Value::Null;
    input["status"] = json!({"readyReplicas": 2, "extra": "x"});
    let got = c.convert(input.clone(), "v1").unwrap();
    let typed: v1alpha1::Rollout = serde_json::from_value(input.clone()).unwrap();
    let mut want = serde_json::to_value(c.v1alpha1_to_hub(&typed).unwrap()).unwrap();
    want["metadata"] = input["metadata"].clone();
    let ops = got["metadata"]["annotations"][DATA_ANNOTATION].clone();
    want["metadata"]["annotations"][DATA_ANNOTATION] = ops;
    assert_eq!(got, want);
    assert_eq!(
        got["metadata"]["creationTimestamp"],
        "2024-05-01T10:00:00.000Z"
    );
    // And on to the third version, the same way.
    let got = c.convert(input.clone(), "v1beta1").unwrap();
    assert!(got["spec"].get("unknownField").is_none(), "{got:#}");
    assert_eq!(got["metadata"]["uid"], input["metadata"]["uid"]);
    assert_eq!(
        got["metadata"]["managedFields"],
        input["metadata"]["managedFields"]
    );
}

/// Through the webhook's `Converter`, which trusts generated conversions to keep the metadata:
/// the metadata still comes back as it was sent, with the converted labels.
#[test]
fn through_the_converter_the_metadata_is_kept() {
    use kube_codegen_runtime::conversion::Converter;
    assert!(RolloutConversion::new().keeps_metadata());
    let converter = Converter::new().with(RolloutConversion::with_hooks(Lossy));
    let body = serde_json::to_vec(&json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": "u", "desiredAPIVersion": "convert.example.com/v1", "objects": [alpha(), beta()]}
    }))
    .unwrap();
    let answer: Value = serde_json::from_slice(&converter.review_json(&body).unwrap()).unwrap();
    assert_eq!(
        answer["response"]["result"]["status"], "Success",
        "{answer:#}"
    );
    let objects = answer["response"]["convertedObjects"].as_array().unwrap();
    let mut meta = alpha()["metadata"].clone();
    meta["labels"]["converted"] = json!("yes");
    let sent = &objects[0]["metadata"];
    meta["annotations"][DATA_ANNOTATION] = sent["annotations"][DATA_ANNOTATION].clone();
    assert_eq!(sent, &meta);
    assert_eq!(objects[1]["metadata"]["name"], "web");
    assert_eq!(objects[1]["apiVersion"], "convert.example.com/v1");
}

/// The `Converter` answers reviews it decodes from bytes through `convert_text` (the object
/// decoded straight into its type): the same objects as `convert` gives over `Value`, for every
/// object, version pair and round trip (annotation entries applied on the way), with the
/// default hooks, lossy hooks and the rename.
#[test]
fn the_text_path_gives_what_the_value_path_gives() {
    use kube_codegen_runtime::conversion::Converter;
    fn check<H: RolloutHooks>(hooks: fn() -> H) {
        let c = hooks_conversion(hooks());
        assert!(
            c.convert_text(&alpha().to_string(), "v1alpha1", "v1")
                .is_some(),
            "generated conversions have the text path"
        );
        let converter = Converter::new().with(hooks_conversion(hooks()));
        let through_review = |object: &Value, version: &str| {
            common::through_review(
                &converter,
                object,
                &format!("convert.example.com/{version}"),
            )
        };
        // Metadata as kube-apiserver may send it: a null timestamp, another time format.
        let mut odd = alpha();
        odd["metadata"]["creationTimestamp"] = Value::Null;
        odd["metadata"]["managedFields"][0]["time"] = json!("2024-05-01T10:00:00.000Z");
        odd["metadata"]["futureField"] = json!({"x": [1]});
        for object in [alpha(), hub(), beta(), odd] {
            for version in c.versions() {
                let want = c.convert(object.clone(), version).unwrap();
                let got = through_review(&object, version);
                assert_eq!(got, want, "to {version}");
                for third in c.versions() {
                    let want = c.convert(want.clone(), third).unwrap();
                    let got = through_review(&got, third);
                    assert_eq!(got, want, "to {version} then {third}");
                }
            }
        }
    }
    fn hooks_conversion<H: RolloutHooks>(hooks: H) -> RolloutConversion<H> {
        RolloutConversion::with_hooks(hooks)
    }
    check(|| DefaultRolloutHooks);
    check(|| Lossy);
    check(|| Rename);
}
