//! C1 of issue #21: objects converted per second through the conversion webhook's handler, a
//! `ConversionReview` of 500 objects of one kind with a renamed field, beside the floor of
//! decoding and encoding the same review with no conversion; and the latency of a
//! single-object review over HTTPS on loopback.
//!
//! Usage: `cargo xtask bench conversion -- [--runs N] [--requests N]` (default 15 rounds,
//! 5,000 HTTPS requests). For a profiler: `--only floor|handler|generated [--reviews N]` runs
//! that variant alone, N reviews (else 5 CPU-s), and prints its objects/s.
//!
//! - `handler`: `conversion::handle(&converter, request)`, the function an axum/hyper server
//!   mounts: the method and content-type checks, the body collected, the review decoded, each
//!   object converted by a hand-written `KindConversion` (v1's `spec.size` is v2's
//!   `spec.replicas`, standing in for generated code) with its metadata restored, the answer
//!   encoded and the response built. `objects/s` = 500 x reviews / CPU seconds of
//!   the (single) benchmark thread, steadier than wall time on a shared machine.
//! - `floor`: `serde_json::from_slice` of the same body into a review whose objects are
//!   `serde_json::Value`s (what any webhook on the `KindConversion` contract must do), and
//!   `serde_json::to_writer` of a response holding them, unchanged, into a buffer sized as the
//!   handler sizes its answer: no conversion, no checks.
//! - `bytes`: `Converter::review_json(body)` alone, the handler without HTTP.
//! - `kube_types`: the same conversion through kube-core's `ConversionReview` type
//!   (`Converter::review`): decode, convert, encode.
//! - `generated`: the handler with the conversions kube-codegen generates for the same Foo
//!   (`crds/foo.yaml`) and the one hook a user writes for the renamed field; the `Converter`
//!   takes their text path (`KindConversion::convert_text`: each object decoded straight into
//!   its type, the answer encoded straight from the converted type).
//! - `typed_floor`: the review's objects decoded straight into the generated v1 type and
//!   encoded back, no conversion: what a webhook on typed objects pays at least.
//!
//! Each round times every variant in turn for about 0.2 CPU-s each (machine noise spreads over
//! all); figures are min/median/max over the rounds and the same-round ratio
//! floor / handler (the handler's cost over the floor's; goal <= 1.5).
//!
//! HTTPS: `WebhookServer` on 127.0.0.1 with a certificate from rcgen (written to a temporary
//! directory, as a Secret volume would hold it), a hyper HTTP/1.1 client over tokio-rustls on
//! one keep-alive connection, one request at a time; a two-worker Tokio runtime runs both.
//! Latency is from sending the request to the last byte of the answer.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use kube_codegen_runtime::conversion::{
    self, ConversionError, Converter, KindConversion, WebhookServer,
};
use kube_codegen_runtime_bench::https::{TestCert, WARM_UP, quantile, round_trips_us};
use kube_codegen_runtime_bench::measure::{runs_value, thread_cpu_seconds};
use kube_codegen_runtime_bench::runs::Gathered;
use serde_json::{Value, json};

const OBJECTS: usize = 500;
const ROUND_SECONDS: f64 = 0.2;

/// Stands in for a generated conversion: `Foo` of `bench.example.com`, hub `v2`; v1's
/// `spec.size` is v2's `spec.replicas`.
struct FooConversion;

impl KindConversion for FooConversion {
    fn group(&self) -> &str {
        "bench.example.com"
    }
    fn kind(&self) -> &str {
        "Foo"
    }
    fn versions(&self) -> &[&str] {
        &["v2", "v1"]
    }
    fn convert(&self, mut object: Value, version: &str) -> Result<Value, ConversionError> {
        let (from, to, api_version) = match version {
            "v2" => ("size", "replicas", "bench.example.com/v2"),
            "v1" => ("replicas", "size", "bench.example.com/v1"),
            other => {
                return Err(ConversionError::UnknownVersion {
                    kind: "Foo".into(),
                    api_version: format!("bench.example.com/{other}"),
                });
            }
        };
        let Some(map) = object.as_object_mut() else {
            return Err(ConversionError::Refused("not an object".into()));
        };
        if let Some(spec) = map.get_mut("spec").and_then(Value::as_object_mut)
            && let Some(v) = spec.remove(from)
        {
            spec.insert(to.to_owned(), v);
        }
        map.insert(
            "apiVersion".to_owned(),
            Value::String(api_version.to_owned()),
        );
        Ok(object)
    }
}

/// The generated conversions of the same Foo (`crds/foo.yaml`), with the one hook a user
/// writes for the renamed field.
struct SizeIsReplicas;

impl kube_codegen_runtime_bench::bench::conversion::FooHooks for SizeIsReplicas {
    fn v1_spec_size_to_hub(
        &self,
        from: &kube_codegen_runtime_bench::bench::v1::Foo,
        to: &mut kube_codegen_runtime_bench::bench::v2::Foo,
    ) -> Result<(), ConversionError> {
        if let (Some(f), Some(t)) = (from.spec.as_ref(), to.spec.as_mut()) {
            t.replicas = f.size;
        }
        Ok(())
    }

    fn v1_spec_size_from_hub(
        &self,
        from: &kube_codegen_runtime_bench::bench::v2::Foo,
        to: &mut kube_codegen_runtime_bench::bench::v1::Foo,
    ) -> Result<(), ConversionError> {
        if let (Some(f), Some(t)) = (from.spec.as_ref(), to.spec.as_mut()) {
            t.size = f.replicas;
        }
        Ok(())
    }
}

/// A v1 Foo as kube-apiserver sends it: metadata with managedFields, a spec and a status
/// (about 1.3 KB of JSON).
fn foo(i: usize) -> Value {
    json!({
        "apiVersion": "bench.example.com/v1",
        "kind": "Foo",
        "metadata": {
            "name": format!("foo-{i:05}"),
            "namespace": format!("ns-{}", i % 10),
            "uid": format!("6f1b2c3d-0000-4000-8000-{i:012}"),
            "resourceVersion": format!("{}", 100_000 + i),
            "generation": 2,
            "creationTimestamp": "2026-11-20T10:00:00Z",
            "labels": {"app": "foo", "tier": "backend", "index": format!("{i}")},
            "annotations": {"example.com/owner": "team-a"},
            "managedFields": [{
                "manager": "kubectl-client-side-apply",
                "operation": "Update",
                "apiVersion": "bench.example.com/v1",
                "time": "2026-11-20T10:00:00Z",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:spec": {".": {}, "f:size": {}, "f:image": {}, "f:ports": {}}}
            }]
        },
        "spec": {
            "size": i % 7,
            "image": "registry.example.com/foo:1.2.3",
            "ports": [{"name": "http", "port": 8080}, {"name": "metrics", "port": 9090}],
            "env": [{"name": "MODE", "value": "fast"}, {"name": "LEVEL", "value": "3"}],
            "paused": false
        },
        "status": {
            "readyReplicas": i % 7,
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-20T10:01:00Z", "reason": "Available"}]
        }
    })
}

fn review_body(objects: Vec<Value>) -> Bytes {
    Bytes::from(
        serde_json::to_vec(&json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "request": {
                "uid": "0b5e0d8a-7d4c-4a57-9f3c-2c1d2e3f4a5b",
                "desiredAPIVersion": "bench.example.com/v2",
                "objects": objects
            }
        }))
        .unwrap(),
    )
}

fn request(body: &Bytes) -> http::Request<Full<Bytes>> {
    http::Request::post("/convert")
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Full::new(body.clone()))
        .unwrap()
}

/// The floor's review: what a webhook on the `KindConversion` contract decodes.
#[derive(serde::Deserialize)]
struct FloorReview<'a> {
    #[serde(rename = "apiVersion", borrow)]
    api_version: &'a str,
    #[serde(borrow)]
    request: FloorRequest<'a>,
}

#[derive(serde::Deserialize)]
struct FloorRequest<'a> {
    #[serde(borrow)]
    uid: &'a str,
    objects: Vec<Value>,
}

#[derive(serde::Serialize)]
struct FloorAnswer<'a> {
    #[serde(rename = "apiVersion")]
    api_version: &'a str,
    kind: &'a str,
    response: FloorResponse<'a>,
}

#[derive(serde::Serialize)]
struct FloorResponse<'a> {
    uid: &'a str,
    result: Value,
    #[serde(rename = "convertedObjects")]
    converted_objects: &'a [Value],
}

fn floor(body: &[u8]) -> Vec<u8> {
    let review: FloorReview<'_> = serde_json::from_slice(body).unwrap();
    // Sized as the handler sizes its answer.
    let mut out = Vec::with_capacity(body.len() + body.len() / 8 + 256);
    serde_json::to_writer(
        &mut out,
        &FloorAnswer {
            api_version: review.api_version,
            kind: "ConversionReview",
            response: FloorResponse {
                uid: review.request.uid,
                result: json!({"status": "Success"}),
                converted_objects: &review.request.objects,
            },
        },
    )
    .unwrap();
    out
}

/// The typed floor's review: the objects decoded straight into v1's generated type.
#[derive(serde::Deserialize)]
struct TypedRequest {
    request: TypedObjects,
}

#[derive(serde::Deserialize)]
struct TypedObjects {
    objects: Vec<kube_codegen_runtime_bench::bench::v1::Foo>,
}

/// Decoding the review's objects into the generated type and encoding them back, with no
/// conversion: what any webhook working on typed objects pays at least.
fn typed_floor(body: &[u8]) -> Vec<u8> {
    let review: TypedRequest = serde_json::from_slice(body).unwrap();
    let mut out = Vec::with_capacity(body.len() + body.len() / 8 + 256);
    serde_json::to_writer(&mut out, &review.request.objects).unwrap();
    out
}

fn handler(converter: &Converter, body: &Bytes) -> Bytes {
    futures::executor::block_on(async {
        let response = conversion::handle(converter, request(body)).await;
        assert_eq!(response.status(), http::StatusCode::OK);
        response.into_body().collect().await.unwrap().to_bytes()
    })
}

fn kube_types(converter: &Converter, body: &[u8]) -> Vec<u8> {
    let review: kube::core::conversion::ConversionReview = serde_json::from_slice(body).unwrap();
    serde_json::to_vec(&converter.review(review).unwrap()).unwrap()
}

/// Objects per CPU-second of this thread, `f` run back to back for about a round's CPU time
/// (`RUSAGE_THREAD`: the shared machine's other load does not count against it, as wall time
/// would).
fn objects_per_sec(mut f: impl FnMut()) -> f64 {
    let started = thread_cpu_seconds();
    let mut reviews = 0u64;
    let mut spent = 0.0;
    while spent < ROUND_SECONDS {
        f();
        reviews += 1;
        spent = thread_cpu_seconds() - started;
    }
    (reviews * OBJECTS as u64) as f64 / spent
}

fn main() {
    let (mut runs, mut requests) = (15, 5_000);
    let (mut only, mut reviews) = (None, None);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--runs" => runs = runs_value(args.next()),
            "--requests" => requests = runs_value(args.next()),
            "--only" => only = args.next(),
            "--reviews" => reviews = Some(runs_value(args.next())),
            _ => {} // cargo bench's `--bench`
        }
    }
    let converter = Converter::new().with(FooConversion);
    let generated = Converter::new().with(
        kube_codegen_runtime_bench::bench::conversion::FooConversion::with_hooks(SizeIsReplicas),
    );
    let body = review_body((0..OBJECTS).map(foo).collect());
    if let Some(only) = only {
        let run = || match only.as_str() {
            "floor" => drop(std::hint::black_box(floor(&body))),
            "handler" => drop(std::hint::black_box(handler(&converter, &body))),
            "generated" => drop(std::hint::black_box(handler(&generated, &body))),
            other => panic!("--only {other}: floor, handler or generated"),
        };
        let started = thread_cpu_seconds();
        let mut done = 0;
        while reviews.map_or(thread_cpu_seconds() - started < 5.0, |n| done < n) {
            run();
            done += 1;
        }
        let rate = (done * OBJECTS) as f64 / (thread_cpu_seconds() - started);
        println!("c1_{only}_objects_per_sec {rate:.0} objects/s  # alone, {done} reviews");
        return;
    }
    println!(
        "# c1: a ConversionReview of {OBJECTS} Foos v1 -> v2 ({} bytes), {runs} rounds of ~{ROUND_SECONDS} s per variant",
        body.len()
    );

    // The handler's answer is the floor's plus the rename: check it once.
    let answer: Value = serde_json::from_slice(&handler(&converter, &body)).unwrap();
    let floor_answer: Value = serde_json::from_slice(&floor(&body)).unwrap();
    assert_eq!(
        floor_answer["response"]["convertedObjects"]
            .as_array()
            .unwrap()
            .len(),
        OBJECTS
    );
    let objects = answer["response"]["convertedObjects"].as_array().unwrap();
    assert_eq!(objects.len(), OBJECTS);
    assert_eq!(objects[3]["spec"]["replicas"], 3);
    assert_eq!(objects[3]["apiVersion"], "bench.example.com/v2");
    let generated_answer: Value = serde_json::from_slice(&handler(&generated, &body)).unwrap();
    let generated_objects = generated_answer["response"]["convertedObjects"]
        .as_array()
        .unwrap();
    assert_eq!(generated_objects.len(), OBJECTS);
    assert_eq!(generated_objects[3]["spec"]["replicas"], 3);
    assert_eq!(generated_objects[3]["apiVersion"], "bench.example.com/v2");
    let kube_answer: Value = serde_json::from_slice(&kube_types(&converter, &body)).unwrap();
    assert_eq!(
        kube_answer["response"]["convertedObjects"],
        answer["response"]["convertedObjects"]
    );

    let mut all = Gathered::default();
    for _ in 0..runs {
        let rates = [
            (
                "c1_handler_objects_per_sec",
                objects_per_sec(|| {
                    std::hint::black_box(handler(&converter, &body));
                }),
            ),
            (
                "c1_floor_objects_per_sec",
                objects_per_sec(|| {
                    std::hint::black_box(floor(&body));
                }),
            ),
            (
                "c1_bytes_objects_per_sec",
                objects_per_sec(|| {
                    std::hint::black_box(converter.review_json(&body).unwrap());
                }),
            ),
            (
                "c1_kube_types_objects_per_sec",
                objects_per_sec(|| {
                    std::hint::black_box(kube_types(&converter, &body));
                }),
            ),
            (
                "c1_generated_objects_per_sec",
                objects_per_sec(|| {
                    std::hint::black_box(handler(&generated, &body));
                }),
            ),
            (
                "c1_typed_floor_objects_per_sec",
                objects_per_sec(|| {
                    std::hint::black_box(typed_floor(&body));
                }),
            ),
        ];
        for (name, rate) in rates {
            all.push(name, rate, "objects/s");
        }
    }
    // Same-round ratios: round i of the floor over round i of each variant.
    all.push_ratios(&[
        (
            "c1_floor_over_handler",
            "c1_floor_objects_per_sec",
            "c1_handler_objects_per_sec",
        ),
        (
            "c1_floor_over_kube_types",
            "c1_floor_objects_per_sec",
            "c1_kube_types_objects_per_sec",
        ),
        (
            "c1_floor_over_generated",
            "c1_floor_objects_per_sec",
            "c1_generated_objects_per_sec",
        ),
        (
            "c1_floor_over_typed_floor",
            "c1_floor_objects_per_sec",
            "c1_typed_floor_objects_per_sec",
        ),
    ]);
    all.print();

    https_latency(requests);
}

fn https_latency(requests: usize) {
    let dir = std::env::temp_dir().join(format!("c1-conversion-{}", std::process::id()));
    let cert = TestCert::write(&dir);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let latencies = runtime.block_on(async {
        let server = WebhookServer::builder(Converter::new().with(FooConversion))
            .listen("127.0.0.1:0".parse().unwrap())
            .tls_files(cert.crt.clone(), cert.key.clone())
            .bind()
            .await
            .unwrap();
        let addr = server.local_addr();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let serving = tokio::spawn(server.serve(async {
            let _ = stopped.await;
        }));

        let mut send = cert.connect(addr).await;

        let body = review_body(vec![foo(1)]);
        let latencies = round_trips_us(&mut send, requests, || request(&body)).await;
        stop.send(()).unwrap();
        tokio::time::timeout(Duration::from_secs(5), serving)
            .await
            .unwrap()
            .unwrap();
        latencies
    });
    let _ = std::fs::remove_dir_all(&dir);
    let us = latencies;
    let at = |q: f64| quantile(&us, q);
    println!(
        "# c1 https: {requests} single-object reviews on one keep-alive TLS connection (after {WARM_UP} warm-up)"
    );
    println!("c1_https_single_p50_us {:.0} us", at(0.50));
    println!("c1_https_single_p99_us {:.0} us", at(0.99));
    println!("c1_https_single_max_us {:.0} us", us[us.len() - 1]);
}
