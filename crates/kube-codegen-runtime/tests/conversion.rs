//! `conversion::Converter` answering ConversionReviews as kube-apiserver expects.

use crate::support::foo;

use std::sync::{Arc, Mutex};

use foo::{FooConversion, foo, review};
use kube_codegen_runtime::conversion::{
    ConversionError, ConversionMetrics, Converter, KindConversion, VersionPair,
};
use serde_json::{Value, json};

const V1: &str = "apiextensions.k8s.io/v1";
const UID: &str = "d3b07384-d9a0-4c8e-9f5e-1b2c3d4e5f60";

fn answer(converter: &Converter, body: &[u8]) -> Value {
    serde_json::from_slice(&converter.review_json(body).expect("a review")).unwrap()
}

fn message(answer: &Value) -> &str {
    assert_eq!(
        answer["response"]["result"]["status"], "Failure",
        "{answer:#}"
    );
    assert!(
        answer["response"].get("convertedObjects").is_none(),
        "no objects on failure: {answer:#}"
    );
    assert_eq!(answer["response"]["uid"], UID);
    answer["response"]["result"]["message"].as_str().unwrap()
}

#[test]
fn converts_500_objects_in_order_with_the_desired_api_version() {
    let converter = Converter::new().with(FooConversion);
    let objects: Vec<Value> = (0..500)
        .map(|i| foo("v1", &format!("foo-{i}"), i))
        .collect();
    let a = answer(&converter, &review(V1, "example.com/v2", objects.clone()));
    assert_eq!(a["apiVersion"], V1);
    assert_eq!(a["kind"], "ConversionReview");
    assert_eq!(a["response"]["uid"], UID);
    assert_eq!(a["response"]["result"], json!({"status": "Success"}));
    let converted = a["response"]["convertedObjects"].as_array().unwrap();
    assert_eq!(converted.len(), 500);
    for (i, (out, input)) in converted.iter().zip(&objects).enumerate() {
        assert_eq!(out["apiVersion"], "example.com/v2");
        assert_eq!(out["kind"], "Foo");
        assert_eq!(out["metadata"], input["metadata"], "object {i}");
        assert_eq!(out["spec"], json!({"replicas": i, "image": "nginx"}));
        assert_eq!(out["status"], input["status"]);
    }

    // And back: v2 -> v1 gives the original objects.
    let back = answer(&converter, &review(V1, "example.com/v1", converted.clone()));
    assert_eq!(back["response"]["convertedObjects"], Value::Array(objects));
}

#[test]
fn objects_already_in_the_desired_version_pass_through() {
    let converter = Converter::new().with(FooConversion);
    let objects = vec![foo("v1", "a", 1), foo("v2", "b", 2), foo("v1", "c", 3)];
    let a = answer(&converter, &review(V1, "example.com/v2", objects));
    let converted = a["response"]["convertedObjects"].as_array().unwrap();
    let names: Vec<&str> = converted
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a", "b", "c"]);
    assert_eq!(converted[1], foo("v2", "b", 2));
    assert!(
        converted
            .iter()
            .all(|o| o["apiVersion"] == "example.com/v2")
    );
}

#[test]
fn answers_v1beta1_reviews_in_v1beta1_and_empty_reviews() {
    let converter = Converter::new().with(FooConversion);
    let body = review(
        "apiextensions.k8s.io/v1beta1",
        "example.com/v1",
        vec![foo("v2", "a", 1)],
    );
    let a = answer(&converter, &body);
    assert_eq!(a["apiVersion"], "apiextensions.k8s.io/v1beta1");
    assert_eq!(a["response"]["convertedObjects"][0], foo("v1", "a", 1));

    let a = answer(&converter, &review(V1, "example.com/v1", vec![]));
    assert_eq!(a["response"]["result"]["status"], "Success");
    assert_eq!(a["response"]["convertedObjects"], json!([]));
}

/// A buggy conversion: changes metadata it must not, and labels/annotations, which it may.
struct Meddler;

impl KindConversion for Meddler {
    fn group(&self) -> &str {
        "example.com"
    }
    fn kind(&self) -> &str {
        "Foo"
    }
    fn versions(&self) -> &[&str] {
        &["v2", "v1"]
    }
    fn convert(&self, object: Value, version: &str) -> Result<Value, ConversionError> {
        // managedFields is moved aside while conversions run (and put back).
        assert!(object["metadata"].get("managedFields").is_none());
        assert_eq!(object["metadata"]["generation"], 3);
        let mut object = FooConversion.convert(object, version)?;
        let meta = object["metadata"].as_object_mut().unwrap();
        meta.insert("name".into(), json!("renamed"));
        meta.insert("namespace".into(), json!("elsewhere"));
        meta.insert("uid".into(), json!("another-uid"));
        meta.insert("resourceVersion".into(), json!("1"));
        meta.remove("generation");
        meta.remove("managedFields");
        meta.insert("finalizers".into(), json!(["x"]));
        meta.insert("labels".into(), json!({"app": "foo", "converted": "yes"}));
        meta.remove("annotations");
        Ok(object)
    }
}

#[test]
fn metadata_is_restored_except_labels_and_annotations() {
    let converter = Converter::new().with(Meddler);
    let input = foo("v1", "a", 1);
    let a = answer(
        &converter,
        &review(V1, "example.com/v2", vec![input.clone()]),
    );
    let out = &a["response"]["convertedObjects"][0];
    let mut expected = input["metadata"].clone();
    expected["labels"] = json!({"app": "foo", "converted": "yes"});
    expected.as_object_mut().unwrap().remove("annotations");
    assert_eq!(out["metadata"], expected);
    assert_eq!(out["spec"]["replicas"], 1);
}

#[test]
fn a_refused_object_fails_the_review_naming_it() {
    let converter = Converter::new().with(FooConversion);
    let mut bad = foo("v1", "c", 3);
    bad["spec"]["refuse"] = json!(true);
    let objects = vec![foo("v1", "a", 1), foo("v1", "b", 2), bad, foo("v1", "d", 4)];
    let a = answer(&converter, &review(V1, "example.com/v2", objects));
    assert_eq!(
        message(&a),
        "cannot convert object 2 (Foo default/c) to example.com/v2: spec.refuse is set"
    );
}

#[test]
fn unregistered_kinds_unknown_versions_and_other_groups_fail() {
    let converter = Converter::new().with(FooConversion);
    let mut bar = foo("v1", "b", 1);
    bar["kind"] = json!("Bar");
    let a = answer(
        &converter,
        &review(V1, "example.com/v2", vec![foo("v1", "a", 1), bar]),
    );
    assert_eq!(
        message(&a),
        "cannot convert object 1 (Bar default/b) to example.com/v2: no conversion is registered \
         for kind Bar in group \"example.com\" (registered: Foo.example.com)"
    );

    let a = answer(
        &converter,
        &review(V1, "example.com/v3", vec![foo("v1", "a", 1)]),
    );
    assert_eq!(
        message(&a),
        "cannot convert object 0 (Foo default/a) to example.com/v3: Foo has no version example.com/v3"
    );

    let a = answer(
        &converter,
        &review(V1, "example.com/v2", vec![foo("v9", "a", 1)]),
    );
    assert!(
        message(&a).contains("Foo has no version example.com/v9"),
        "{a}"
    );

    let a = answer(
        &converter,
        &review(V1, "other.io/v2", vec![foo("v1", "a", 1)]),
    );
    assert!(
        message(&a).contains("its group \"example.com\" is not the group of \"other.io/v2\""),
        "{a}"
    );

    let a = answer(&converter, &review(V1, "a/b/c", vec![foo("v1", "a", 1)]));
    assert_eq!(message(&a), "invalid desiredAPIVersion \"a/b/c\"");

    let a = answer(&converter, &review(V1, "example.com/v2", vec![json!("x")]));
    assert_eq!(
        message(&a),
        "cannot convert object 0 (object with no name) to example.com/v2: it is not a JSON object"
    );
    let a = answer(
        &converter,
        &review(
            V1,
            "example.com/v2",
            vec![json!({"kind": "Foo", "metadata": {"name": "n"}})],
        ),
    );
    assert!(message(&a).contains("object 0 (Foo n)"), "{a}");
    assert!(message(&a).contains("it has no valid apiVersion"), "{a}");

    let a = answer(
        &Converter::new(),
        &review(V1, "example.com/v2", vec![foo("v1", "a", 1)]),
    );
    assert!(message(&a).contains("(registered: none)"), "{a}");
}

/// What a broken conversion does to a correct result.
type Breakage = fn(Value) -> Value;

/// Converts, then breaks the result.
struct Broken(Breakage);

impl KindConversion for Broken {
    fn group(&self) -> &str {
        "example.com"
    }
    fn kind(&self) -> &str {
        "Foo"
    }
    fn versions(&self) -> &[&str] {
        &["v2", "v1"]
    }
    fn convert(&self, object: Value, version: &str) -> Result<Value, ConversionError> {
        Ok((self.0)(FooConversion.convert(object, version)?))
    }
}

#[test]
fn results_of_another_version_kind_or_shape_fail() {
    let cases: [(Breakage, &str); 6] = [
        (
            |mut o| {
                o["apiVersion"] = json!("example.com/v1");
                o
            },
            "the conversion returned apiVersion \"example.com/v1\", not example.com/v2",
        ),
        (
            |mut o| {
                o["kind"] = json!("Bar");
                o
            },
            "the conversion returned kind \"Bar\", not Foo",
        ),
        (|_| json!([1]), "the conversion returned no JSON object"),
        (
            |mut o| {
                o.as_object_mut().unwrap().remove("metadata");
                o
            },
            "the conversion returned no metadata",
        ),
        (
            |mut o| {
                o["metadata"]["labels"]["n"] = json!(1);
                o
            },
            "the conversion returned a labels value for \"n\" that is not a string",
        ),
        (
            |mut o| {
                o["metadata"]["annotations"] = json!(["x"]);
                o
            },
            "the conversion returned metadata.annotations that is not an object",
        ),
    ];
    for (broken, cause) in cases {
        let converter = Converter::new().with(Broken(broken));
        let a = answer(
            &converter,
            &review(V1, "example.com/v2", vec![foo("v1", "a", 1)]),
        );
        assert_eq!(
            message(&a),
            format!("cannot convert object 0 (Foo default/a) to example.com/v2: {cause}")
        );
    }
}

#[test]
fn malformed_bodies_are_bad_reviews() {
    let converter = Converter::new().with(FooConversion);
    let bad = |body: &[u8]| converter.review_json(body).unwrap_err().0;
    assert!(bad(b"").starts_with("cannot decode the ConversionReview"));
    assert!(bad(b"{").starts_with("cannot decode the ConversionReview"));
    assert!(bad(b"[1,2]").starts_with("cannot decode the ConversionReview"));
    assert!(bad(b"\xff\xfe").starts_with("cannot decode the ConversionReview"));
    assert_eq!(
        bad(br#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview"}"#),
        "the ConversionReview has no request"
    );
    assert!(bad(br#"{"apiVersion":"v1","kind":"ConversionReview","request":{"uid":"u","desiredAPIVersion":"a/v1","objects":[]}}"#)
        .starts_with("unsupported ConversionReview apiVersion \"v1\""));
    assert_eq!(
        bad(br#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","desiredAPIVersion":"a/v1","objects":[]}}"#),
        "expected kind ConversionReview, got \"AdmissionReview\""
    );
    assert_eq!(
        bad(br#"{"kind":"ConversionReview","request":{"uid":"u","desiredAPIVersion":"a/v1","objects":[]}}"#),
        "the ConversionReview has no apiVersion"
    );
    assert!(bad(br#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"desiredAPIVersion":"a/v1","objects":[]}}"#)
        .contains("missing field `uid`"));
    assert!(bad(br#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u","desiredAPIVersion":"a/v1","objects":{}}}"#)
        .starts_with("cannot decode"));
    // `objects: null` is an empty review.
    let ok = converter
        .review_json(br#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u","desiredAPIVersion":"example.com/v1","objects":null}}"#)
        .unwrap();
    let ok: Value = serde_json::from_slice(&ok).unwrap();
    assert_eq!(ok["response"]["convertedObjects"], json!([]));
}

#[test]
fn kube_review_types_give_the_same_answer() {
    use kube::core::conversion::ConversionReview;
    let converter = Converter::new().with(FooConversion);
    let body = review(
        V1,
        "example.com/v2",
        vec![foo("v1", "a", 1), foo("v1", "b", 2)],
    );
    let typed: ConversionReview = serde_json::from_slice(&body).unwrap();
    let out = converter.review(typed).unwrap();
    assert_eq!(out.types.api_version, V1);
    let response = out.response.unwrap();
    assert_eq!(response.uid, UID);
    assert_eq!(response.result.message, "");
    let bytes_answer = answer(&converter, &body);
    assert_eq!(
        Value::Array(response.converted_objects),
        bytes_answer["response"]["convertedObjects"]
    );

    let mut bad = foo("v1", "c", 3);
    bad["spec"]["refuse"] = json!(true);
    let typed: ConversionReview =
        serde_json::from_slice(&review(V1, "example.com/v2", vec![bad])).unwrap();
    let response = converter.review(typed).unwrap().response.unwrap();
    assert!(response.converted_objects.is_empty());
    assert_eq!(
        response.result.message,
        "cannot convert object 0 (Foo default/c) to example.com/v2: spec.refuse is set"
    );
    assert_eq!(
        serde_json::to_value(response.result.status).unwrap(),
        json!("Failure")
    );
}

#[derive(Default)]
struct Recorded(Mutex<Vec<String>>);

impl ConversionMetrics for Recorded {
    fn converted(&self, p: &VersionPair<'_>, objects: u64) {
        let line = format!(
            "converted {}/{} {}->{} {objects}",
            p.group, p.kind, p.from, p.to
        );
        self.0.lock().unwrap().push(line);
    }
    fn failed(&self, p: &VersionPair<'_>) {
        let line = format!("failed {}/{} {}->{}", p.group, p.kind, p.from, p.to);
        self.0.lock().unwrap().push(line);
    }
    fn review(&self, p: &VersionPair<'_>, seconds: f64, success: bool) {
        assert!(seconds > 0.0 && seconds < 60.0);
        let line = format!(
            "review {}/{} {}->{} {success}",
            p.group, p.kind, p.from, p.to
        );
        self.0.lock().unwrap().push(line);
    }
}

#[test]
fn metrics_per_kind_and_version_pair() {
    let recorded = Arc::new(Recorded::default());
    let converter = Converter::new()
        .with(FooConversion)
        .with_metrics(recorded.clone());
    let take = || std::mem::take(&mut *recorded.0.lock().unwrap());

    answer(
        &converter,
        &review(
            V1,
            "example.com/v2",
            vec![foo("v1", "a", 1), foo("v1", "b", 2)],
        ),
    );
    assert_eq!(
        take(),
        [
            "converted example.com/Foo v1->v2 2",
            "review example.com/Foo v1->v2 true"
        ]
    );
    answer(
        &converter,
        &review(
            V1,
            "example.com/v2",
            vec![foo("v1", "a", 1), foo("v2", "b", 2), foo("v1", "c", 3)],
        ),
    );
    assert_eq!(
        take(),
        [
            "converted example.com/Foo v1->v2 2",
            "converted example.com/Foo v2->v2 1",
            "review example.com/Foo mixed->v2 true"
        ]
    );
    let mut bad = foo("v1", "c", 3);
    bad["spec"]["refuse"] = json!(true);
    answer(
        &converter,
        &review(V1, "example.com/v2", vec![foo("v1", "a", 1), bad]),
    );
    assert_eq!(
        take(),
        [
            "failed example.com/Foo v1->v2",
            "review example.com/Foo v1->v2 false"
        ]
    );
}

#[cfg(feature = "prometheus")]
#[test]
fn prometheus_exports_the_pairs() {
    use kube_codegen_runtime::conversion::PrometheusConversionMetrics;
    let mut registry = prometheus_client::registry::Registry::default();
    let metrics = PrometheusConversionMetrics::new(&mut registry);
    let converter = Converter::new()
        .with(FooConversion)
        .with_metrics(Arc::new(metrics));
    answer(
        &converter,
        &review(
            V1,
            "example.com/v2",
            vec![foo("v1", "a", 1), foo("v1", "b", 2)],
        ),
    );
    let mut bad = foo("v2", "c", 3);
    bad["spec"]["refuse"] = json!(true);
    answer(
        &converter,
        &review(V1, "example.com/v1", vec![foo("v2", "a", 1), bad]),
    );
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    assert!(text.contains(
        r#"conversion_webhook_objects_total{group="example.com",kind="Foo",from="v1",to="v2"} 2"#
    ), "{text}");
    assert!(text.contains(
        r#"conversion_webhook_failures_total{group="example.com",kind="Foo",from="v2",to="v1"} 1"#
    ), "{text}");
    assert!(text.contains(
        r#"conversion_webhook_review_duration_seconds_count{group="example.com",kind="Foo",from="v1",to="v2",status="Success"} 1"#
    ), "{text}");
}
