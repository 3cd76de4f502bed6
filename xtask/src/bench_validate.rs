//! `cargo xtask bench validate`: V1, the object validator over the public corpus samples.
//!
//! - rule compile time per CRD (what the server pays at CRD creation, and generated code pays on
//!   the first `validate()` of a type);
//! - objects validated per second with `ObjectSchema::validate` (rules compiled once), on the
//!   samples as a server stores them (pruned, defaulted);
//! - beside it, in the same rounds, the same call preceded by the JSON encoding generated
//!   `validate()` does (`serde_json::to_value` of the object), and the OpenAPI checks alone
//!   (a schema with its `x-kubernetes-validations` removed): the share CEL takes;
//! - the in-memory server's write throughput (`kubectl apply`-shaped creates of the same samples
//!   over HTTP, one client) with the CRDs as they are and with their rules removed.
use std::collections::HashMap;
use std::path::Path;
use std::time::Instant;

use anyhow::Result;
use kube_codegen_crd::object::ObjectSchema;
use kube_codegen_crd::{Classified, Crd, classify, read};
use serde_json::Value;

use crate::bench::{figure, median};

/// The schema without any `x-kubernetes-validations` (the OpenAPI-only comparison).
fn without_rules(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| *k != "x-kubernetes-validations")
                .map(|(k, v)| (k.clone(), without_rules(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(without_rules).collect()),
        other => other.clone(),
    }
}

pub fn run(dir: &Path, rounds: usize) -> Result<()> {
    let files = read::expand_inputs(&[dir.join("crds"), dir.join("samples")])?;
    // Each version compiled once: timed here, then validated with below.
    let mut schemas: HashMap<(String, String), (ObjectSchema, ObjectSchema)> = HashMap::new();
    let mut crd_docs: Vec<Value> = Vec::new();
    let mut served: HashMap<(String, String), (String, bool)> = HashMap::new();
    let mut compile_ms = Vec::new();
    let mut objects = Vec::new();
    let mut rules = 0usize;
    let mut metered = 0usize;
    for f in &files {
        let Ok(docs) = read::read_documents(f) else {
            continue;
        };
        for doc in read::flatten(docs) {
            match classify(&doc.value) {
                Classified::Crd => {
                    let Ok(crd) = Crd::from_value(&doc.source, doc.index, doc.value.clone()) else {
                        continue;
                    };
                    if doc.value["apiVersion"] == "apiextensions.k8s.io/v1" {
                        crd_docs.push(doc.value.clone());
                        for v in &crd.versions {
                            served.insert(
                                (format!("{}/{}", crd.group, v.name), crd.kind.clone()),
                                (crd.plural.clone(), crd.namespaced),
                            );
                        }
                    }
                    let mut compiled = Vec::new();
                    let start = Instant::now();
                    for v in &crd.versions {
                        compiled.push(ObjectSchema::new((*v.raw_schema).clone()));
                    }
                    compile_ms.push(start.elapsed().as_secs_f64() * 1e3);
                    for (v, full) in crd.versions.iter().zip(compiled) {
                        rules += usize::from(full.has_rules());
                        metered += usize::from(full.meters_cost());
                        let plain = ObjectSchema::new(without_rules(&v.raw_schema));
                        schemas.insert(
                            (format!("{}/{}", crd.group, v.name), crd.kind.clone()),
                            (full, plain),
                        );
                    }
                }
                Classified::Other(_) => objects.push(doc.value),
            }
        }
    }
    let total_compile: f64 = compile_ms.iter().sum();
    figure("v1_crds", compile_ms.len(), "CRDs");
    figure("v1_versions_with_rules", rules, "versions");
    figure("v1_versions_metering_cel_cost", metered, "versions");
    spread("v1_compile_per_crd", &compile_ms, 3, "ms (one CRD each)");
    figure("v1_compile_total", format!("{total_compile:.1}"), "ms");

    let mut cases: Vec<(&ObjectSchema, &ObjectSchema, Value)> = Vec::new();
    for o in objects {
        let key = (
            o["apiVersion"].as_str().unwrap_or("").to_string(),
            o["kind"].as_str().unwrap_or("").to_string(),
        );
        if let Some((full, plain)) = schemas.get(&key) {
            let mut stored = o.clone();
            full.as_stored(&mut stored);
            cases.push((full, plain, stored));
        }
    }
    figure("v1_objects", cases.len(), "objects");
    let (mut direct, mut encoded, mut openapi) = (Vec::new(), Vec::new(), Vec::new());
    let reps = 20;
    for _ in 0..rounds {
        let t = Instant::now();
        let mut n = 0usize;
        for _ in 0..reps {
            for (full, _, obj) in &cases {
                n += full.validate(obj).len();
            }
        }
        direct.push((reps * cases.len()) as f64 / t.elapsed().as_secs_f64());
        let t = Instant::now();
        for _ in 0..reps {
            for (full, _, obj) in &cases {
                let v = serde_json::to_value(obj)?;
                n += full.validate(&v).len();
            }
        }
        encoded.push((reps * cases.len()) as f64 / t.elapsed().as_secs_f64());
        let t = Instant::now();
        for _ in 0..reps {
            for (_, plain, obj) in &cases {
                n += plain.validate(obj).len();
            }
        }
        openapi.push((reps * cases.len()) as f64 / t.elapsed().as_secs_f64());
        std::hint::black_box(n);
    }
    spread("v1_validate_per_sec", &direct, 0, "objects/s");
    spread("v1_encode_and_validate_per_sec", &encoded, 0, "objects/s");
    spread("v1_openapi_only_per_sec", &openapi, 0, "objects/s");
    // Ratios within each round (same minute, same machine state).
    let ratio =
        |a: &[f64], b: &[f64]| -> Vec<f64> { a.iter().zip(b).map(|(x, y)| x / y).collect() };
    spread(
        "v1_encode_and_validate_vs_validate",
        &ratio(&direct, &encoded),
        2,
        "x slower",
    );
    spread(
        "v1_validate_vs_openapi_only",
        &ratio(&openapi, &direct),
        2,
        "x slower",
    );

    // The same samples written to the in-memory server, with and without the CRDs' rules.
    let writes: Vec<(Value, String, bool)> = cases
        .iter()
        .filter_map(|(_, _, obj)| {
            let key = (
                obj["apiVersion"].as_str()?.to_string(),
                obj["kind"].as_str()?.to_string(),
            );
            let (plural, namespaced) = served.get(&key)?;
            Some((obj.clone(), plural.clone(), *namespaced))
        })
        .collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let stripped: Vec<Value> = crd_docs.iter().map(without_rules).collect();
    let (mut with_cel, mut without_cel) = (Vec::new(), Vec::new());
    for round in 0..rounds.min(3) {
        with_cel.push(rt.block_on(server_writes(&crd_docs, &writes, round))?);
        without_cel.push(rt.block_on(server_writes(&stripped, &writes, round))?);
    }
    figure("v1_server_objects", writes.len(), "objects");
    spread("v1_server_writes_per_sec", &with_cel, 0, "creates/s");
    spread(
        "v1_server_writes_per_sec_without_rules",
        &without_cel,
        0,
        "creates/s",
    );
    spread(
        "v1_server_rules_cost",
        &ratio(&without_cel, &with_cel),
        2,
        "x slower",
    );
    Ok(())
}

/// `name min median max unit`: a median alone hides a spread or a second mode.
fn spread(name: &str, xs: &[f64], decimals: usize, unit: &str) {
    let min = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let med = median(xs.to_vec());
    figure(
        name,
        format!("{min:.decimals$} {med:.decimals$} {max:.decimals$}"),
        &format!("{unit} (min median max of {})", xs.len()),
    );
}

/// Creates every object (renamed for the round, with kubectl's last-applied annotation) on a
/// fresh in-memory server serving `crds`; creates per second, refused ones included.
async fn server_writes(
    crds: &[Value],
    objects: &[(Value, String, bool)],
    round: usize,
) -> Result<f64> {
    use kube::api::{Api, DynamicObject, PostParams};
    use kube::core::{ApiResource, GroupVersionKind};
    let srv = kube_fake_apiserver::FakeApiServer::start().await?;
    for crd in crds {
        // A CRD the server refuses is left out; its objects then answer 404, like any write.
        let _ = srv.register_crd(crd.clone());
    }
    let client = srv.client();
    let start = Instant::now();
    for (i, (obj, plural, namespaced)) in objects.iter().enumerate() {
        let Some((group, version)) = obj["apiVersion"].as_str().unwrap_or("").split_once('/')
        else {
            continue;
        };
        let gvk = GroupVersionKind::gvk(group, version, obj["kind"].as_str().unwrap_or(""));
        let ar = ApiResource::from_gvk_with_plural(&gvk, plural);
        let mut body = obj.clone();
        body["metadata"] = serde_json::json!({
            "name": format!("bench-{round}-{i}"),
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": obj.to_string()}
        });
        let body: DynamicObject = serde_json::from_value(body)?;
        let api: Api<DynamicObject> = if *namespaced {
            Api::namespaced_with(client.clone(), "default", &ar)
        } else {
            Api::all_with(client.clone(), &ar)
        };
        let _ = api.create(&PostParams::default(), &body).await;
    }
    Ok(objects.len() as f64 / start.elapsed().as_secs_f64())
}
