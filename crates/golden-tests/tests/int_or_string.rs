//! The generated tree's own `IntOrString` (`int-or-string.yaml`): any int64 a server stores in an
//! unbounded `x-kubernetes-int-or-string` field reads back and serializes unchanged, while a
//! field bounded within `i32` keeps k8s-openapi's type.

use golden_tests::int_or_string::IntOrString;
use golden_tests::int_or_string::intstr::v1::{TrafficSplit, TrafficSplitSpecApply};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString as K8sIntOrString;
use serde_json::json;

#[test]
fn int64_values_round_trip() {
    let object = json!({
        "apiVersion": "intstr.example.com/v1",
        "kind": "TrafficSplit",
        "metadata": {"name": "wide"},
        "spec": {
            "port": i64::MAX,
            "maxUnavailable": i64::MIN,
            "targets": [4_294_967_296_i64, "http"],
            "limits": {"cpu": 2_147_483_648_i64, "memory": "64Gi"},
            "weight": 1000,
        },
    });
    let split: TrafficSplit = serde_json::from_value(object.clone()).expect("deserializes");
    let spec = split.spec.as_ref().expect("spec");
    assert_eq!(spec.port, IntOrString::Int(i64::MAX));
    assert_eq!(spec.max_unavailable, Some(IntOrString::Int(i64::MIN)));
    // Bounded to 0..=1000 by the schema: k8s-openapi's type holds every value it accepts.
    assert_eq!(spec.weight, Some(K8sIntOrString::Int(1000)));
    assert_eq!(serde_json::to_value(&split).unwrap(), object);
}

#[test]
fn what_the_server_accepts_reads_and_the_rest_fails() {
    let read = |v: serde_json::Value| serde_json::from_value::<IntOrString>(v);
    assert_eq!(read(json!(3)).unwrap(), IntOrString::Int(3));
    assert_eq!(
        read(json!("25%")).unwrap(),
        IntOrString::String("25%".into())
    );
    // A whole float is an integer to the server (and is stored as one).
    assert_eq!(read(json!(3.0)).unwrap(), IntOrString::Int(3));
    for bad in [
        json!(1.5),
        json!(u64::MAX),
        json!(true),
        json!(null),
        json!([1]),
    ] {
        assert!(read(bad.clone()).is_err(), "{bad} must not read");
    }
}

#[test]
fn converts_to_and_from_k8s_openapi() {
    assert_eq!(
        IntOrString::from(K8sIntOrString::Int(7)),
        IntOrString::Int(7)
    );
    assert_eq!(
        IntOrString::from(K8sIntOrString::String("http".into())),
        IntOrString::String("http".into())
    );
    assert_eq!(
        K8sIntOrString::try_from(IntOrString::Int(80)).unwrap(),
        K8sIntOrString::Int(80)
    );
    assert!(K8sIntOrString::try_from(IntOrString::Int(i64::MAX)).is_err());
    assert_eq!(IntOrString::default(), IntOrString::Int(0));
    // Setters take integers, strings and k8s-openapi's type.
    let apply = TrafficSplitSpecApply::new()
        .port(8080)
        .max_unavailable("25%")
        .targets(vec![IntOrString::from(K8sIntOrString::Int(443))]);
    assert_eq!(
        serde_json::to_value(&apply).unwrap(),
        json!({"port": 8080, "maxUnavailable": "25%", "targets": [443]})
    );
}
