//! The generated conversions of `testdata/crds/conversion-shapes.yaml` (hub v1, v2 with every
//! kind of shape difference, v3 with no schema): every object converts to every version, on to
//! a third and back with nothing lost, and the webhook's text path gives what `convert` gives.

use golden_tests::conversion_shapes::shape::conversion::ShapeConversion;
use kube_codegen_runtime::conversion::{Converter, KindConversion};
use serde_json::{Value, json};

mod common;

fn objects() -> [Value; 3] {
    let hub = json!({
        "apiVersion": "shape.example.com/v1", "kind": "Shape",
        "metadata": {"name": "s", "namespace": "d", "labels": {"a": "b"}},
        "spec": {
            "a": [[{"x": 1, "label": "q"}], []],
            "b": {"k": [{"p": 3}]},
            "c": {"known": "k", "extra": {"z": [1, 2]}},
            "d": "25%",
            "e": "C",
            "f": 3,
            "g": 7,
            "h": {"inner": "i"},
            "i": ["x"],
            "j": {"q": true},
            "k": {"any": {"thing": 1}},
            "l": [1, 2],
            "m": {"a": {"b": {"deep": 1.5}}},
            "named": [{"name": "n1", "v": 5}],
            "o": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"x": "y"}},
            "self": "me",
            "type": "t"
        },
        "status": {"conditions": [{"type": "Ready", "status": "True"}]}
    });
    let v2 = json!({
        "apiVersion": "shape.example.com/v2", "kind": "Shape",
        "metadata": {"name": "s2"},
        "spec": {"a": [[{"x": 5_000_000_000i64, "label": "big"}]], "d": "abc", "e": "D", "f": 4,
                 "g": "50%", "h": "str", "k": {"z": "zz"}, "l": ["a"],
                 "m": {"a": {"b": {"deep": 2}}}, "self": 3, "named": [{"v": 9}]},
        "status": "weird"
    });
    let v3 = json!({
        "apiVersion": "shape.example.com/v3", "kind": "Shape", "metadata": {"name": "s3"},
        "spec": {"whatever": [1, {"a": null}]}, "status": {"x": 1}, "top": 1
    });
    [hub, v2, v3]
}

fn version_of(object: &Value) -> String {
    let api_version = object["apiVersion"].as_str().unwrap();
    api_version.rsplit('/').next().unwrap().to_owned()
}

#[test]
fn every_version_and_a_third_round_trip() {
    let c = ShapeConversion::new();
    for object in objects() {
        let from = version_of(&object);
        // What the object's own type holds of it (the typed round trip drops unknown fields).
        let own = c.convert(object.clone(), &from).unwrap();
        for to in c.versions() {
            let there = c
                .convert(object.clone(), to)
                .unwrap_or_else(|e| panic!("{from} -> {to}: {e}"));
            assert_eq!(there["apiVersion"], format!("shape.example.com/{to}"));
            let back = c.convert(there.clone(), &from).unwrap();
            assert_eq!(back, own, "{from} -> {to} -> {from} via {there:#}");
            for third in c.versions() {
                let on = c.convert(there.clone(), third).unwrap();
                let back = c.convert(on.clone(), &from).unwrap();
                assert_eq!(back, own, "{from} -> {to} -> {third} -> {from} via {on:#}");
            }
        }
    }
}

#[test]
fn the_text_path_gives_what_convert_gives() {
    let c = ShapeConversion::new();
    let converter = Converter::new().with(ShapeConversion::new());
    for object in objects() {
        let from = version_of(&object);
        for to in c.versions() {
            let want = c.convert(object.clone(), to).unwrap();
            let got =
                common::through_review(&converter, &object, &format!("shape.example.com/{to}"));
            assert_eq!(got, want, "{from} -> {to}");
        }
    }
}

/// What v2 cannot hold of the hub travels in the annotation; what maps converts.
#[test]
fn shapes_that_map_convert_and_the_rest_is_kept_aside() {
    let c = ShapeConversion::new();
    let [hub, ..] = objects();
    let v2 = c.convert(hub, "v2").unwrap();
    let spec = &v2["spec"];
    assert_eq!(
        spec["a"][0][0],
        json!({"x": 1, "label": "q"}),
        "int32 -> int64 by value"
    );
    assert_eq!(spec["b"], json!({"k": [{"p": 3}]}));
    assert_eq!(
        spec["c"],
        json!({"known": "k"}),
        "v2 prunes what v1 preserved"
    );
    assert_eq!(spec["d"], "25%", "int-or-string -> string by value");
    assert_eq!(spec["g"], 7, "integer -> int-or-string by value");
    assert_eq!(spec["named"], json!([{"name": "n1", "v": 5}]));
    assert_eq!(spec["type"], "t");
    assert!(spec.get("h").is_none(), "a struct is no string: {spec:#}");
    assert!(v2["metadata"]["annotations"]["kube-codegen.io/conversion-data"].is_string());
}
