//! A1 of issue #35: the admission webhook's cost. A defaulting `AdmissionReview` (CREATE) of
//! one `Gadget` of about 50 fields (`crds/gadget.yaml`) through `webhook::handle` and the
//! runtime's defaulting handler (the generated `apply_defaults()` fills `spec.tier`, the
//! user's defaulter `spec.replicas`; the answer carries the two-operation JSON patch), beside
//! the floor of decoding the same review and encoding it back; and the latency of that review
//! over HTTPS on loopback.
//!
//! Usage: `cargo xtask bench admission -- [--runs N] [--requests N]` (default 15 rounds, 5,000
//! HTTPS requests). `--only floor|handler|bare|validating [--reviews N]` runs one variant alone
//! (for a profiler).
//!
//! - `handler`: `webhook::handle(&defaulting, request)`: method and content-type checks, the
//!   body collected, the review decoded (the object kept as its text), the object decoded
//!   straight from the text into the generated type, checked to re-encode as that text (a
//!   comparing sink) and copied, the schema's defaults by generated code
//!   (`SchemaChecks::typed_schema_defaults`), the user's defaults, the patch by generated code
//!   comparing the copy and the result field by field (`SchemaChecks::typed_patch`), the
//!   answer encoded (patch in base64) and the response built. At start, the bench checks that
//!   these typed paths give what the JSON paths give on this object.
//! - `bare`: the same without the schema's defaults (`without_schema_defaults`).
//! - `validating`: the validating handler (generated `validate()`, then a user check) on the
//!   same review.
//! - `floor`: `serde_json::from_slice` of the body into a `serde_json::Value` and
//!   `serde_json::to_vec` of it back: decoding and encoding the review, no admission.
//!
//! Figures are reviews per CPU-second of the benchmark thread, min/median/max over the rounds,
//! each round timing every variant in turn for about 0.2 CPU-s; `a1_floor_over_*` are the
//! same-round ratios (goal for the handler <= 1.2x). HTTPS as C1's: `WebhookServer` on
//! 127.0.0.1 (rcgen certificate), one keep-alive HTTP/1.1 connection over tokio-rustls, one
//! request at a time, a two-worker Tokio runtime for both ends; beside the webhook, in
//! alternating blocks on the same connection, an empty handler (a fixed answer): the floor of
//! an HTTPS round trip on the machine as loaded then, with the load average printed.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use kube_codegen_runtime::conversion::WebhookServer;
use kube_codegen_runtime::webhook::{
    self,
    admission::{
        self, AdmissionError, AdmissionRequest, Defaulting, Validating, Validator, Verdict,
    },
};
use kube_codegen_runtime_bench::bench::v1::Gadget;
use kube_codegen_runtime_bench::https::{TestCert, WARM_UP, quantile, round_trips_us};
use kube_codegen_runtime_bench::measure::{runs_value, thread_cpu_seconds};
use kube_codegen_runtime_bench::runs::Gathered;
use serde_json::{Value, json};

const ROUND_SECONDS: f64 = 0.2;
const PATH: &str = "/mutate-bench-example-com-v1-gadget";

/// The object: every spec field but `replicas` and `tier` set.
fn gadget() -> Value {
    let mut spec = serde_json::Map::new();
    for i in 1..=20 {
        spec.insert(
            format!("s{i:02}"),
            json!(format!("value-{i}-of-the-gadget")),
        );
    }
    for i in 1..=10 {
        spec.insert(format!("i{i:02}"), json!(i * 1000 + 7));
    }
    for i in 1..=6 {
        spec.insert(format!("b{i:02}"), json!(i % 2 == 0));
    }
    for i in 1..=4 {
        spec.insert(format!("n{i:02}"), json!(i as f64 + 0.25));
    }
    spec.insert(
        "limits".into(),
        json!({"cpu": "500m", "memory": "256Mi", "storage": "1Gi", "pods": "10"}),
    );
    spec.insert("tags".into(), json!(["blue", "fast", "beta"]));
    spec.insert(
        "selector".into(),
        json!({"app": "gadget", "tier": "backend"}),
    );
    json!({
        "apiVersion": "bench.example.com/v1",
        "kind": "Gadget",
        "metadata": {
            "name": "gadget-1", "namespace": "default",
            "labels": {"app": "gadget"},
            "annotations": {"example.com/owner": "team-a"}
        },
        "spec": spec
    })
}

fn review_body() -> Bytes {
    Bytes::from(
        serde_json::to_vec(&json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "0b5e0d8a-7d4c-4a57-9f3c-2c1d2e3f4a5b",
                "kind": {"group": "bench.example.com", "version": "v1", "kind": "Gadget"},
                "resource": {"group": "bench.example.com", "version": "v1", "resource": "gadgets"},
                "requestKind": {"group": "bench.example.com", "version": "v1", "kind": "Gadget"},
                "requestResource": {"group": "bench.example.com", "version": "v1", "resource": "gadgets"},
                "name": "gadget-1",
                "namespace": "default",
                "operation": "CREATE",
                "userInfo": {"username": "kubernetes-admin", "groups": ["kubeadm:cluster-admins", "system:authenticated"]},
                "object": gadget(),
                "oldObject": null,
                "dryRun": false,
                "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1", "fieldManager": "kubectl-client-side-apply"}
            }
        }))
        .unwrap(),
    )
}

fn request(body: &Bytes) -> http::Request<Full<Bytes>> {
    http::Request::post(PATH)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Full::new(body.clone()))
        .unwrap()
}

fn default_replicas(_: &AdmissionRequest, g: &mut Gadget) -> Result<(), AdmissionError> {
    if let Some(spec) = g.spec.as_mut() {
        spec.replicas.get_or_insert(1);
    }
    Ok(())
}

struct TagsAreShort;

impl Validator<Gadget> for TagsAreShort {
    fn validate_create(&self, _: &AdmissionRequest, g: &Gadget) -> Verdict {
        let long = g
            .spec
            .as_ref()
            .and_then(|s| s.tags.as_ref())
            .is_some_and(|t| t.iter().any(|t| t.len() > 63));
        if long {
            Verdict::deny("tags are at most 63 characters")
        } else {
            Verdict::allow()
        }
    }
}

/// The generated typed paths the handler takes on this review do what the JSON paths do: the
/// typed defaults give the object the schema's defaults on the JSON give (on the gadget,
/// without its spec, with an empty one), the object re-encodes as sent (so the handler answers
/// the typed patch), and that patch is the two `add`s.
fn typed_paths_hold() {
    use kube_codegen_runtime::validation::SchemaChecks;
    let mut empty = gadget();
    empty["spec"] = json!({});
    let mut without = gadget();
    without.as_object_mut().unwrap().remove("spec");
    for sent in [gadget(), empty, without] {
        let mut typed: Gadget = serde_json::from_value(sent.clone()).unwrap();
        assert!(typed.typed_schema_defaults());
        let mut json = sent.clone();
        Gadget::openapi_schema()
            .unwrap()
            .schema()
            .apply_defaults(&mut json);
        let by_json: Gadget = serde_json::from_value(json).unwrap();
        assert_eq!(typed, by_json, "{sent}");
    }
    let text = serde_json::to_string(&gadget()).unwrap();
    let before: Gadget = serde_json::from_str(&text).unwrap();
    assert_eq!(serde_json::to_string(&before).unwrap(), text);
    let mut after = before.clone();
    assert!(after.typed_schema_defaults());
    // What `default_replicas` does.
    after.spec.as_mut().unwrap().replicas.get_or_insert(1);
    let ops = Gadget::typed_patch(&before, &after).unwrap();
    assert_eq!(
        serde_json::to_value(ops).unwrap(),
        json!([
            {"op": "add", "path": "/spec/replicas", "value": 1},
            {"op": "add", "path": "/spec/tier", "value": "standard"}
        ])
    );
}

fn defaulting() -> Defaulting<Gadget> {
    admission::defaulting::<Gadget>(default_replicas)
}

fn handle<H: webhook::ReviewHandler>(hook: &H, body: &Bytes) -> Bytes {
    futures::executor::block_on(async {
        let response = webhook::handle(hook, request(body)).await;
        assert_eq!(response.status(), http::StatusCode::OK);
        response.into_body().collect().await.unwrap().to_bytes()
    })
}

fn floor(body: &[u8]) -> Vec<u8> {
    let review: Value = serde_json::from_slice(body).unwrap();
    serde_json::to_vec(&review).unwrap()
}

fn reviews_per_sec(mut f: impl FnMut()) -> f64 {
    let started = thread_cpu_seconds();
    let mut reviews = 0u64;
    let mut spent = 0.0;
    while spent < ROUND_SECONDS {
        f();
        reviews += 1;
        spent = thread_cpu_seconds() - started;
    }
    reviews as f64 / spent
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
    let hook = defaulting();
    let bare = defaulting().without_schema_defaults();
    let validating: Validating<Gadget> = admission::validating::<Gadget>(TagsAreShort);
    let body = review_body();

    // The answer is the two defaults, as a patch: check it once.
    let answer: Value = serde_json::from_slice(&handle(&hook, &body)).unwrap();
    assert_eq!(answer["response"]["allowed"], true, "{answer}");
    assert_eq!(answer["response"]["patchType"], "JSONPatch");
    let answer: Value = serde_json::from_slice(&handle(&validating, &body)).unwrap();
    assert_eq!(answer["response"]["allowed"], true, "{answer}");

    typed_paths_hold();

    if let Some(only) = only {
        let run = || match only.as_str() {
            "floor" => drop(std::hint::black_box(floor(&body))),
            "handler" => drop(std::hint::black_box(handle(&hook, &body))),
            "bare" => drop(std::hint::black_box(handle(&bare, &body))),
            "validating" => drop(std::hint::black_box(handle(&validating, &body))),
            other => panic!("--only {other}: floor, handler, bare or validating"),
        };
        let started = thread_cpu_seconds();
        let mut done = 0;
        while reviews.map_or(thread_cpu_seconds() - started < 5.0, |n| done < n) {
            run();
            done += 1;
        }
        let rate = done as f64 / (thread_cpu_seconds() - started);
        println!("a1_{only}_reviews_per_sec {rate:.0} reviews/s  # alone, {done} reviews");
        return;
    }
    println!(
        "# a1: a defaulting AdmissionReview of one Gadget ({} bytes), {runs} rounds of ~{ROUND_SECONDS} s per variant",
        body.len()
    );
    let mut all = Gathered::default();
    for _ in 0..runs {
        let rates = [
            (
                "a1_handler_reviews_per_sec",
                reviews_per_sec(|| {
                    std::hint::black_box(handle(&hook, &body));
                }),
            ),
            (
                "a1_floor_reviews_per_sec",
                reviews_per_sec(|| {
                    std::hint::black_box(floor(&body));
                }),
            ),
            (
                "a1_bare_reviews_per_sec",
                reviews_per_sec(|| {
                    std::hint::black_box(handle(&bare, &body));
                }),
            ),
            (
                "a1_validating_reviews_per_sec",
                reviews_per_sec(|| {
                    std::hint::black_box(handle(&validating, &body));
                }),
            ),
        ];
        for (name, rate) in rates {
            all.push(name, rate, "reviews/s");
        }
    }
    all.push_ratios(&[
        (
            "a1_floor_over_handler",
            "a1_floor_reviews_per_sec",
            "a1_handler_reviews_per_sec",
        ),
        (
            "a1_floor_over_bare",
            "a1_floor_reviews_per_sec",
            "a1_bare_reviews_per_sec",
        ),
        (
            "a1_floor_over_validating",
            "a1_floor_reviews_per_sec",
            "a1_validating_reviews_per_sec",
        ),
    ]);
    all.print();

    https_latency(requests, &body);
}

/// An admission handler that does nothing: the same allowed answer to every review, for the
/// floor of an HTTPS round trip on this machine.
struct Empty;

impl webhook::ReviewHandler for Empty {
    fn review(
        &self,
        _: Bytes,
    ) -> futures::future::BoxFuture<'_, Result<Vec<u8>, webhook::BadReview>> {
        Box::pin(std::future::ready(Ok(br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"0b5e0d8a-7d4c-4a57-9f3c-2c1d2e3f4a5b","allowed":true,"status":{"metadata":{},"code":200}}}"#.to_vec())))
    }
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".to_owned())
}

/// The defaulting webhook and the empty handler on one server and one connection, in
/// alternating blocks (each after its own warm-up), so both see the same machine.
fn https_latency(requests: usize, body: &Bytes) {
    const BLOCK: usize = 1_000;
    let dir = std::env::temp_dir().join(format!("a1-admission-{}", std::process::id()));
    let cert = TestCert::write(&dir);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let load_before = load_average();
    let (mut us, mut empty) = runtime.block_on(async {
        let server = WebhookServer::builder_without_conversion()
            .listen("127.0.0.1:0".parse().unwrap())
            .tls_files(cert.crt.clone(), cert.key.clone())
            .admission(defaulting())
            .route("/empty", Empty)
            .bind()
            .await
            .unwrap();
        let addr = server.local_addr();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let serving = tokio::spawn(server.serve(async {
            let _ = stopped.await;
        }));

        let mut send = cert.connect(addr).await;
        let (mut us, mut empty) = (Vec::new(), Vec::new());
        let mut left = requests;
        while left > 0 {
            let n = left.min(BLOCK);
            us.extend(round_trips_us(&mut send, n, || request(body)).await);
            empty.extend(
                round_trips_us(&mut send, n, || {
                    http::Request::post("/empty")
                        .header(http::header::CONTENT_TYPE, "application/json")
                        .body(Full::new(body.clone()))
                        .unwrap()
                })
                .await,
            );
            left -= n;
        }
        stop.send(()).unwrap();
        tokio::time::timeout(Duration::from_secs(5), serving)
            .await
            .unwrap()
            .unwrap();
        (us, empty)
    });
    let _ = std::fs::remove_dir_all(&dir);
    us.sort_by(f64::total_cmp);
    empty.sort_by(f64::total_cmp);
    println!(
        "# a1 https: {requests} defaulting reviews and {requests} to an empty handler (same body), alternating blocks of {BLOCK} on one keep-alive TLS connection (each block after {WARM_UP} warm-up); load average before: {load_before}, after: {}",
        load_average()
    );
    for (name, us) in [("a1_https", &us), ("a1_https_empty", &empty)] {
        let at = |q: f64| quantile(us, q);
        println!("{name}_p50_us {:.0} us", at(0.50));
        println!("{name}_p99_us {:.0} us", at(0.99));
        println!("{name}_max_us {:.0} us", us[us.len() - 1]);
    }
}
