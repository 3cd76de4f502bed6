//! Metrics, read back from the prometheus-client text exposition.
#![cfg(feature = "prometheus")]

use std::sync::Arc;
use std::time::Duration;

use kube_codegen_runtime::workqueue::{DURATION_BUCKETS, PrometheusMetricsProvider, WorkQueue};
use prometheus_client::encoding::text::encode;
use prometheus_client::registry::Registry;

use crate::support;
use support::within;

fn scrape(registry: &Registry) -> String {
    let mut out = String::new();
    encode(&mut out, registry).unwrap();
    out
}

/// The value of the sample `metric` for queue `queue` (labels other than `name` must match
/// `extra`, e.g. `le="0.1"`), or None if absent.
fn sample(text: &str, metric: &str, queue: &str, extra: Option<(&str, f64)>) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            let (name, labels) = series.split_once('{')?;
            (name == metric).then_some((labels.trim_end_matches('}'), value))
        })
        .find(|(labels, _)| {
            let mut name_ok = false;
            let mut extra_ok = extra.is_none();
            for kv in labels.split(',') {
                let (k, v) = kv.split_once('=').unwrap();
                let v = v.trim_matches('"');
                if k == "name" {
                    name_ok = v == queue;
                } else if let Some((ek, ev)) = extra
                    && k == ek
                {
                    extra_ok = v.parse::<f64>().is_ok_and(|x| x == ev);
                }
            }
            name_ok && extra_ok
        })
        .map(|(_, v)| v.parse().unwrap())
}

#[tokio::test(start_paused = true)]
async fn exports_client_go_metrics_labelled_by_queue_name() {
    let mut registry = Registry::default();
    let provider = Arc::new(PrometheusMetricsProvider::new(&mut registry));
    let q: WorkQueue<&str> = WorkQueue::builder()
        .name("widgets")
        .metrics(provider.clone())
        .build();
    let other: WorkQueue<&str> = WorkQueue::builder()
        .name("gadgets")
        .metrics(provider)
        .build();
    other.add("z");

    q.add("a");
    q.add("b");
    q.add("a"); // duplicate: not counted
    let text = scrape(&registry);
    assert_eq!(
        sample(&text, "workqueue_adds_total", "widgets", None),
        Some(2.0)
    );
    assert_eq!(sample(&text, "workqueue_depth", "widgets", None), Some(2.0));
    assert_eq!(sample(&text, "workqueue_depth", "gadgets", None), Some(1.0));

    tokio::time::sleep(Duration::from_millis(10)).await;
    let a = within("the queued item", q.get()).await.unwrap();
    let text = scrape(&registry);
    assert_eq!(sample(&text, "workqueue_depth", "widgets", None), Some(1.0));
    let lat = "workqueue_queue_duration_seconds";
    assert_eq!(
        sample(&text, &format!("{lat}_count"), "widgets", None),
        Some(1.0)
    );
    assert_eq!(
        sample(&text, &format!("{lat}_sum"), "widgets", None),
        Some(0.01)
    );
    let bucket = format!("{lat}_bucket");
    assert_eq!(
        sample(&text, &bucket, "widgets", Some(("le", 0.001))),
        Some(0.0)
    );
    assert_eq!(
        sample(&text, &bucket, "widgets", Some(("le", 0.1))),
        Some(1.0)
    );
    // client-go's buckets: ExponentialBuckets(10e-9, 10, 10), plus +Inf.
    let les: Vec<f64> = text
        .lines()
        .filter(|l| l.starts_with(&bucket) && l.contains("name=\"widgets\""))
        .map(|l| {
            let le = l.split("le=\"").nth(1).unwrap().split('"').next().unwrap();
            le.parse().unwrap()
        })
        .collect();
    let mut expected = DURATION_BUCKETS.to_vec();
    expected.push(f64::INFINITY);
    assert_eq!(les, expected);

    // In flight for ~1.5 s: the refresh task (every 500 ms) reports it.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let text = scrape(&registry);
    let unfinished = sample(&text, "workqueue_unfinished_work_seconds", "widgets", None).unwrap();
    let longest = sample(
        &text,
        "workqueue_longest_running_processor_seconds",
        "widgets",
        None,
    )
    .unwrap();
    assert!((1.0..=1.51).contains(&unfinished), "{unfinished}");
    assert_eq!(unfinished, longest, "a single item in flight");

    q.done(&a);
    let text = scrape(&registry);
    let work = "workqueue_work_duration_seconds";
    assert_eq!(
        sample(&text, &format!("{work}_count"), "widgets", None),
        Some(1.0)
    );
    assert_eq!(
        sample(&text, &format!("{work}_sum"), "widgets", None),
        Some(1.5)
    );

    q.add_after("c", Duration::from_secs(5));
    q.add_rate_limited("d");
    let text = scrape(&registry);
    assert_eq!(
        sample(&text, "workqueue_retries_total", "widgets", None),
        Some(2.0)
    );
    assert_eq!(
        sample(&text, "workqueue_waiting_depth", "widgets", None),
        Some(2.0)
    );
    assert_eq!(q.len_waiting(), 2);
    tokio::time::sleep(Duration::from_secs(6)).await;
    let text = scrape(&registry);
    assert_eq!(
        sample(&text, "workqueue_waiting_depth", "widgets", None),
        Some(0.0)
    );
    assert_eq!(sample(&text, "workqueue_depth", "widgets", None), Some(3.0));
    assert_eq!(
        sample(&text, "workqueue_adds_total", "widgets", None),
        Some(4.0)
    );
    // The gauges settle at zero once nothing is in flight.
    let text = scrape(&registry);
    assert_eq!(
        sample(&text, "workqueue_unfinished_work_seconds", "widgets", None),
        Some(0.0)
    );
}

#[tokio::test]
async fn unnamed_queue_records_no_metrics() {
    let mut registry = Registry::default();
    let provider = Arc::new(PrometheusMetricsProvider::new(&mut registry));
    let q: WorkQueue<&str> = WorkQueue::builder().metrics(provider).build();
    q.add("a");
    let text = scrape(&registry);
    assert!(
        !text.lines().any(|l| l.starts_with("workqueue_")),
        "no series without a queue name:\n{text}"
    );
}
