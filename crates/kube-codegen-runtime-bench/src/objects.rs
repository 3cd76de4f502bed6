//! BENCHMARKS.md's object shape (W3, W4).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

use crate::bench::v1::Widget;
use crate::bench::v1::widget::{
    WidgetSpec, WidgetSpecImagePullPolicy, WidgetSpecPorts, WidgetSpecResources,
    WidgetSpecResourcesLimits, WidgetSpecSelector, WidgetStatus, WidgetStatusConditions,
};

/// Name, namespace and resourceVersion of object `i` (W3's shallow objects carry only these).
pub fn key_metadata(i: usize, rv: u64) -> ObjectMeta {
    ObjectMeta {
        name: Some(format!("name-{i}")),
        namespace: Some(format!("ns-{}", i % 100)),
        resource_version: Some(rv.to_string()),
        ..ObjectMeta::default()
    }
}

/// The full metadata of object `i` at resourceVersion `rv`: uid, generation, creation time,
/// five labels and two annotations.
pub fn metadata(i: usize, rv: u64) -> ObjectMeta {
    let mut m = key_metadata(i, rv);
    m.uid = Some(format!("{i:08x}-0000-4000-8000-{i:012x}"));
    m.generation = Some(1);
    m.creation_timestamp = Some(Time("2026-01-01T00:00:00Z".parse().expect("timestamp")));
    m.labels = Some(BTreeMap::from([
        ("app.kubernetes.io/name".to_owned(), "widget".to_owned()),
        ("app.kubernetes.io/instance".to_owned(), instance(i)),
        (
            "app.kubernetes.io/component".to_owned(),
            "backend".to_owned(),
        ),
        ("tier".to_owned(), format!("tier-{}", i % 3)),
        ("shard".to_owned(), format!("shard-{}", i % 16)),
    ]));
    m.annotations = Some(BTreeMap::from([
        (
            "bench.example.com/owner".to_owned(),
            format!("team-{}", i % 20),
        ),
        (
            "bench.example.com/description".to_owned(),
            "Synthetic benchmark object used to measure informer cache throughput, memory \
             footprint and lookup speed."
                .to_owned(),
        ),
    ]));
    m
}

/// The `app.kubernetes.io/instance` label of object `i`.
pub fn instance(i: usize) -> String {
    format!("widget-{}", i % 1000)
}

/// Object `i` with metadata only (W3's shallow variant: cheap to build).
pub fn shallow(i: usize, rv: u64) -> Widget {
    Widget {
        metadata: key_metadata(i, rv),
        ..Widget::default()
    }
}

/// BENCHMARKS.md's object i at resourceVersion `rv`.
pub fn widget(i: usize, rv: u64) -> Widget {
    let s = |v: &str| Some(v.to_owned());
    let metadata = metadata(i, rv);
    let replicas = (i % 5 + 1) as i32;
    let condition = |t: &str, st: &str, reason: &str, message: &str| WidgetStatusConditions {
        r#type: t.to_owned(),
        status: st.to_owned(),
        reason: s(reason),
        message: s(message),
        last_transition_time: s("2026-01-01T00:00:00Z"),
    };
    Widget {
        metadata,
        spec: Some(WidgetSpec {
            replicas: Some(replicas),
            image: Some(format!(
                "registry.example.com/widgets/widget:v1.2.{}",
                i % 10
            )),
            image_pull_policy: Some(WidgetSpecImagePullPolicy::IfNotPresent),
            service_account_name: s("widget-sa"),
            paused: Some(false),
            priority: Some((i % 10) as i32),
            min_ready_seconds: Some(10),
            revision_history_limit: Some(5),
            schedule: s("*/5 * * * *"),
            timeout_seconds: Some(30),
            region: Some(format!("region-{}", i % 4)),
            weight: serde_json::Number::from_f64(0.5),
            resources: Some(WidgetSpecResources {
                requests: Some(WidgetSpecResourcesLimits {
                    cpu: s("100m"),
                    memory: s("128Mi"),
                }),
                limits: Some(WidgetSpecResourcesLimits {
                    cpu: s("500m"),
                    memory: s("512Mi"),
                }),
            }),
            selector: Some(WidgetSpecSelector {
                match_labels: Some(BTreeMap::from([
                    ("app.kubernetes.io/name".to_owned(), "widget".to_owned()),
                    ("app.kubernetes.io/instance".to_owned(), instance(i)),
                ])),
            }),
            ports: Some(
                (0..4)
                    .map(|k| WidgetSpecPorts {
                        name: Some(format!("port-{k}")),
                        port: 8080 + k,
                        protocol: s("TCP"),
                    })
                    .collect(),
            ),
        }),
        status: Some(WidgetStatus {
            observed_generation: Some(1),
            ready_replicas: Some(replicas),
            phase: s("Running"),
            conditions: Some(vec![
                condition(
                    "Ready",
                    "True",
                    "AllReplicasReady",
                    "All replicas are ready",
                ),
                condition("Progressing", "False", "Stable", "Rollout complete"),
            ]),
        }),
        ..Widget::default()
    }
}
