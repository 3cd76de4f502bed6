//! W3 of shared/BENCHMARKS.md: the informer pipeline without a network.
//!
//! Usage: `cargo xtask bench informer -- [plain|shallow]... [--runs N]` (default both, 3 runs;
//! each run holds 100,000 objects and streams 1,000,000 events). A `SharedIndexInformer` of the
//! generated `Widget` (namespace index, resync off) reads from an in-process `ListWatch`: the
//! list holds object i at resourceVersion i + 1 (list resourceVersion "100000"); once the
//! informer has synced, a feeder task sends 1,000,000 MODIFIED events, event e being object
//! e % 100000 at resourceVersion 100001 + e. The one handler adds `namespace/name` to a
//! workqueue nobody drains. The clock runs from the informer's start (sync figures) and from
//! the first event to the 1,000,000th update delivered (event figures).
//!
//! Variants: **plain** builds each event's object as a full typed Widget inside the window
//! (`w3_feeder_ns_per_object` is that cost alone, on one thread); **shallow** sends objects
//! with metadata only, isolating the informer's own cost. The json variant (decoding watch-event
//! bytes) is not implemented. Memory: glibc malloc; `bytes_per_object` is resident-set growth
//! from before the list is built to after sync, over 100,000, printed for the first variant
//! only (later runs reuse memory the allocator kept): run `-- shallow` alone for its figure.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;
use kube::api::{ListParams, ObjectList, TypeMeta, WatchEvent, WatchParams};
use kube_codegen_runtime::cache::{
    EventHandlerFns, InformerOptions, ListWatch, SharedIndexInformer, WatchStream, key_of,
};
use kube_codegen_runtime::workqueue::WorkQueue;
use kube_codegen_runtime_bench::bench::v1::Widget;
use kube_codegen_runtime_bench::bench::v1::widget::{
    WidgetSpec, WidgetSpecImagePullPolicy, WidgetSpecPorts, WidgetSpecResources,
    WidgetSpecResourcesLimits, WidgetSpecSelector, WidgetStatus, WidgetStatusConditions,
};
use kube_codegen_runtime_bench::measure::{
    cpu_seconds, median, peak_rss_mb, rss_bytes, runs_value,
};
use kube_codegen_runtime_bench::objects;
use parking_lot::Mutex;
use tokio::sync::{Notify, mpsc};

const OBJECTS: usize = 100_000;
const EVENTS: u64 = 1_000_000;

#[derive(Clone, Copy, PartialEq)]
enum Variant {
    Plain,
    Shallow,
}

fn main() {
    let mut variants = Vec::new();
    let mut runs = 3;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "plain" => variants.push(Variant::Plain),
            "shallow" => variants.push(Variant::Shallow),
            "--runs" => runs = runs_value(args.next()),
            other if other.starts_with('-') => {}
            other => {
                eprintln!("unknown variant {other:?}: expected plain or shallow");
                std::process::exit(2);
            }
        }
    }
    if variants.is_empty() {
        variants = vec![Variant::Plain, Variant::Shallow];
    }
    println!("# w3: in-process list/watch, 2-thread runtime, glibc malloc, median of {runs}");
    if variants.contains(&Variant::Plain) {
        let t = Instant::now();
        for e in 0..200_000u64 {
            std::hint::black_box(widget((e % OBJECTS as u64) as usize, 100_001 + e));
        }
        let ns = t.elapsed().as_nanos() as f64 / 200_000.0;
        println!("w3_feeder_ns_per_object {ns:.0} ns");
    }
    let mut first = true;
    for v in variants {
        let prefix = match v {
            Variant::Plain => "w3",
            Variant::Shallow => "w3shallow",
        };
        let all: Vec<Figures> = (0..runs).map(|_| run(v)).collect();
        let med = |f: fn(&Figures) -> f64| median(all.iter().map(f).collect());
        println!("{prefix}_sync_ms {:.1} ms", med(|f| f.sync_ms));
        println!(
            "{prefix}_handler_sync_ms {:.1} ms",
            med(|f| f.handler_sync_ms)
        );
        println!(
            "{prefix}_events_per_sec {:.0} events/s",
            med(|f| f.events_per_sec)
        );
        println!(
            "{prefix}_events_per_cpu_sec {:.0} events/cpu-s",
            med(|f| f.events_per_cpu_sec)
        );
        // Resident-set growth only means something in a process that has not yet freed a
        // previous run's memory (the allocator keeps it): the first run of the first variant.
        if first {
            println!("{prefix}_bytes_per_object {:.0} B", all[0].bytes_per_object);
        }
        first = false;
        println!("{prefix}_peak_rss_mb {:.0} MiB", med(|f| f.peak_rss_mb));
    }
}

struct Figures {
    sync_ms: f64,
    handler_sync_ms: f64,
    events_per_sec: f64,
    events_per_cpu_sec: f64,
    bytes_per_object: f64,
    peak_rss_mb: f64,
}

/// The in-process source: one list, then one watch stream fed by the feeder.
struct Source {
    list: Mutex<Option<ObjectList<Widget>>>,
    events: Mutex<Option<mpsc::Receiver<WatchEvent<Widget>>>>,
}

impl ListWatch<Widget> for Source {
    fn list<'a>(
        &'a self,
        _: &'a ListParams,
    ) -> BoxFuture<'a, Result<ObjectList<Widget>, kube::Error>> {
        let list = self.list.lock().take().expect("W3 lists once");
        async move { Ok(list) }.boxed()
    }

    fn watch<'a>(
        &'a self,
        _: &'a WatchParams,
        _: &'a str,
    ) -> BoxFuture<'a, Result<WatchStream<Widget>, kube::Error>> {
        let rx = self.events.lock().take().expect("W3 watches once");
        async move {
            let stream: WatchStream<Widget> = tokio_stream(rx).map(Ok::<_, kube::Error>).boxed();
            Ok(stream)
        }
        .boxed()
    }
}

/// A receiver as a stream (without pulling in tokio-stream).
fn tokio_stream<T: Send + 'static>(
    rx: mpsc::Receiver<T>,
) -> impl futures::Stream<Item = T> + Send + 'static {
    futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|t| (t, rx)) })
}

fn run(variant: Variant) -> Figures {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let rss0 = rss_bytes();
    let build = move |i: usize, rv: u64| match variant {
        Variant::Plain => widget(i, rv),
        Variant::Shallow => shallow(i, rv),
    };
    let items: Vec<Widget> = (0..OBJECTS).map(|i| build(i, i as u64 + 1)).collect();
    let list = ObjectList {
        types: TypeMeta {
            api_version: "bench.example.com/v1".into(),
            kind: "WidgetList".into(),
        },
        metadata: ListMeta {
            resource_version: Some(OBJECTS.to_string()),
            ..ListMeta::default()
        },
        items,
    };
    rt.block_on(async move {
        let (tx, rx) = mpsc::channel(4096);
        let source = Source {
            list: Mutex::new(Some(list)),
            events: Mutex::new(Some(rx)),
        };
        let informer = SharedIndexInformer::new(source, InformerOptions::default());
        let queue: WorkQueue<String> = WorkQueue::new();
        let updates = Arc::new(AtomicU64::new(0));
        let done = Arc::new(Notify::new());
        let (q1, q2, count, last) = (queue.clone(), queue.clone(), updates.clone(), done.clone());
        let registration = informer
            .add_event_handler(
                EventHandlerFns::new()
                    .on_add(move |o: &Arc<Widget>, _| q1.add(key_of(&**o).expect("named")))
                    .on_update(move |_, new: &Arc<Widget>| {
                        q2.add(key_of(&**new).expect("named"));
                        if count.fetch_add(1, Ordering::AcqRel) + 1 == EVENTS {
                            last.notify_one();
                        }
                    }),
            )
            .expect("inside a runtime");
        let t0 = Instant::now();
        let runner = {
            let informer = informer.clone();
            tokio::spawn(async move { informer.run().await })
        };
        informer.wait_for_sync().await;
        let sync_ms = t0.elapsed().as_secs_f64() * 1e3;
        while !registration.has_synced() {
            tokio::task::yield_now().await;
        }
        let handler_sync_ms = t0.elapsed().as_secs_f64() * 1e3;
        let bytes_per_object = (rss_bytes().saturating_sub(rss0)) as f64 / OBJECTS as f64;

        let (t1, c1) = (Instant::now(), cpu_seconds());
        let feeder = tokio::spawn(async move {
            for e in 0..EVENTS {
                let obj = build((e % OBJECTS as u64) as usize, OBJECTS as u64 + 1 + e);
                if tx.send(WatchEvent::Modified(obj)).await.is_err() {
                    break;
                }
            }
            // Keep the stream open: its end would make the reflector watch again.
            std::future::pending::<()>().await;
        });
        done.notified().await;
        let wall = t1.elapsed().as_secs_f64();
        let cpu = cpu_seconds() - c1;
        feeder.abort();
        runner.abort();

        let store = informer.store();
        assert_eq!(store.len(), OBJECTS);
        let rv = |k: &str| {
            store
                .get_by_key(k)
                .and_then(|o| o.metadata.resource_version.clone())
        };
        assert_eq!(rv("ns-0/name-0").as_deref(), Some("1000001"));
        assert_eq!(rv("ns-99/name-99999").as_deref(), Some("1100000"));
        assert_eq!(queue.len(), OBJECTS);
        Figures {
            sync_ms,
            handler_sync_ms,
            events_per_sec: EVENTS as f64 / wall,
            events_per_cpu_sec: EVENTS as f64 / cpu,
            bytes_per_object,
            peak_rss_mb: peak_rss_mb(),
        }
    })
}

fn shallow(i: usize, rv: u64) -> Widget {
    Widget {
        metadata: objects::key_metadata(i, rv),
        ..Widget::default()
    }
}

/// BENCHMARKS.md's object i at resourceVersion `rv`.
fn widget(i: usize, rv: u64) -> Widget {
    let s = |v: &str| Some(v.to_owned());
    let metadata = objects::metadata(i, rv);
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
                    (
                        "app.kubernetes.io/instance".to_owned(),
                        objects::instance(i),
                    ),
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
