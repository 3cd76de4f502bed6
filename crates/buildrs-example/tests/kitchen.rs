//! Round trips through the kitchen-sink fixture's types: what a server returns comes back equal.

#![allow(deprecated)]

use buildrs_example::kitchen::v1::Gadget;
use buildrs_example::kitchen::v1::gadget::{GadgetSpecCodes, GadgetSpecMode};
use serde_json::{Value, json};

fn round_trip(v: Value) -> Gadget {
    let g: Gadget = serde_json::from_value(v.clone()).unwrap();
    assert_eq!(serde_json::to_value(&g).unwrap(), v);
    g
}

#[test]
fn full_object_round_trips() {
    let g = round_trip(json!({
        "apiVersion": "kitchen.example.com/v1",
        "kind": "Gadget",
        "metadata": {"name": "g", "namespace": "ns", "labels": {"a": "b"}},
        "extra": "top-level field besides spec and status",
        "spec": {
            "name": "n", "ratio": 1, "mode": "slow", "type": "t", "@type": "at", "self": "s",
            "gen": true, "fooBar": "camel", "foo_bar": "snake", "codes": 418,
            "levels": ["low", "medium"], "port": 8080, "anyPort": "http",
            "command": ["a", "b"], "exclusive": {"a": "x"},
            "labels": {"k": "v"}, "anything": {"deep": {"x": [1, null]}}, "empty": {},
            "raw": [1, "two", {"three": 3}],
            "partial": {"known": "k", "unknown": {"kept": true}},
            "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"creationTimestamp": null}, "spec": {"containers": []}},
            "nullableOpt": null,
            "left": {"x": "l"}, "right": {"x": "r"}
        },
        "status": {"observed": null, "replicas": 2}
    }));
    let spec = g.spec.unwrap();
    assert_eq!(spec.mode, GadgetSpecMode::Slow);
    assert_eq!(spec.codes, Some(GadgetSpecCodes(418)));
    assert_eq!(spec.nullable_opt, Some(None));
    assert_eq!(spec.ratio.as_i64(), Some(1));
}

#[test]
fn floats_ints_absent_and_unknown_enum_values() {
    round_trip(json!({
        "apiVersion": "kitchen.example.com/v1", "kind": "Gadget", "metadata": {},
        "spec": {"name": "n", "ratio": 1.5, "mode": "Turbo", "nullableOpt": "set"},
        "status": {"observed": 3}
    }));
    round_trip(json!({
        "apiVersion": "kitchen.example.com/v1", "kind": "Gadget", "metadata": {},
        "spec": {"name": "n", "ratio": 0, "mode": "="}
    }));
}

#[test]
fn deprecated_version_keeps_everything() {
    let v = json!({"apiVersion": "kitchen.example.com/v1beta1", "kind": "Gadget",
                   "metadata": {"name": "old"}, "spec": {"whatever": [1, 2]}});
    let g: buildrs_example::kitchen::v1beta1::Gadget = serde_json::from_value(v.clone()).unwrap();
    assert_eq!(serde_json::to_value(&g).unwrap(), v);
}
