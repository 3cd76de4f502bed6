//! W3 of shared/BENCHMARKS.md: the informer pipeline without a network, ours beside
//! kube-runtime's reflector, and the serde_json decode floor.
//!
//! Usage: `cargo xtask bench informer -- [VARIANT]... [--runs N]` (default: every variant,
//! 3 rounds). Each variant runs in a process of its own, once per round (rounds interleave the
//! variants, so machine noise spreads over all of them); this binary drives the children and
//! prints each figure's median with its spread, then the same-round ratios.
//!
//! The workload: 100,000 objects listed at resourceVersion i + 1 (list resourceVersion
//! "100000"); once the cache has synced, a feeder task sends 1,000,000 MODIFIED events, event e
//! being object e % 100000 at resourceVersion 100001 + e, through a 4,096-slot channel. One
//! handler adds `namespace/name` to a workqueue nobody drains. The clock runs from the start
//! (sync figures) and from the first event to the 1,000,000th update handled (event figures).
//! 2-thread Tokio runtime, glibc malloc.
//!
//! Variants:
//! - `plain`, `shallow`, `json`: our `SharedIndexInformer` (namespace index, resync off) over an
//!   in-process `ListWatch`. plain builds each event's full typed Widget in the feeder, inside
//!   the window (`w3_feeder_ns_per_object` is that cost alone, on one thread); shallow sends
//!   metadata-only objects (the informer's own cost); json decodes the list items and every
//!   watch-event line with serde_json inside the window, as kube's watch does (the feeder
//!   assembles each line from a pre-serialised object: `w3json_feeder_ns_per_event`). The
//!   handler is added inline (`add_inline_event_handler`: it only enqueues a key); `json-queued`
//!   is json with the handler on its own task (`add_event_handler`), figures `w3json_queued_*`.
//! - `kube-runtime-plain`, `kube-runtime-json`: kube_runtime's `reflector(writer, stream)` over
//!   `Init`, `InitApply` x100,000, `InitDone`, then `Apply` x1,000,000 from the same feeder; the
//!   handler runs on each event the reflector yields.
//! - `floor`: serde_json decoding of the same 1,000,000 lines into `WatchEvent<Widget>`, one
//!   thread, nothing else (each line is assembled into a reused buffer; the decoded object is
//!   dropped); then `floor_cache_events_per_sec`, the same decoding with each object stored in
//!   a plain slot in place of the one it replaces (the work no cache can avoid); and
//!   `floor_object_bytes`, what one decoded Widget takes from the allocator.
//! - `floor-pipeline`: W3 json with everything but a cache, on the same 2-thread runtime: the
//!   same feeder, channel and decoding, each object put in a plain slot in place of the one it
//!   replaces (list and events), and the same handler work (key and workqueue `add`) on the
//!   task that decodes. What ours and kube-runtime's add over it is their cache and dispatch.
//!   The list is decoded on a worker thread, as an informer's is.
//!   `floor-pipeline-plain` is the same for plain (`floor_pipeline_plain_*`): its peak RSS is
//!   what the plain workload's threads cost glibc with no cache at all.
//!
//! Memory: `bytes_per_object` is resident-set growth from before the list is built to after
//! sync, over 100,000; the json variants' 100,000 pre-serialised objects are built before that
//! point and are included in their peak RSS (the child prints their size as a comment).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use futures::{Stream, StreamExt};
use kube::api::WatchEvent;
use kube_codegen_runtime::cache::{
    EventHandlerFns, InformerOptions, SharedIndexInformer, WatchStream, key_of,
};
use kube_codegen_runtime::workqueue::WorkQueue;
use kube_codegen_runtime_bench::bench::v1::Widget;
use kube_codegen_runtime_bench::measure::{
    cpu_seconds, malloc_in_use, peak_rss_mb, rss_bytes, runs_value,
};
use kube_codegen_runtime_bench::objects;
use kube_codegen_runtime_bench::runs::Gathered;
use kube_codegen_runtime_bench::source::{MakeItems, OneShot};
use kube_codegen_runtime_bench::wire::{Templates, decode_event};
use kube_runtime::reflector::{self, ObjectRef};
use kube_runtime::watcher;
use tokio::sync::{Notify, mpsc};

const OBJECTS: usize = 100_000;
/// BENCHMARKS.md's 1,000,000 events; `W3_EVENTS` (a multiple of 100,000) shortens a run for a
/// profiler such as callgrind, which runs the same code some 50 times slower.
static EVENTS: std::sync::LazyLock<u64> = std::sync::LazyLock::new(|| {
    let events = match std::env::var("W3_EVENTS") {
        Ok(v) => v.parse().unwrap_or(0),
        Err(_) => 1_000_000,
    };
    if events == 0 || events % OBJECTS as u64 != 0 {
        eprintln!("W3_EVENTS must be a positive multiple of {OBJECTS}");
        std::process::exit(2);
    }
    events
});

#[derive(Clone, Copy, PartialEq)]
enum Variant {
    Plain,
    Shallow,
    Json,
    /// json with the handler on its own task (`add_event_handler`), not inline.
    JsonQueued,
    KubeRuntimePlain,
    KubeRuntimeJson,
    Floor,
    /// W3 json's whole pipeline without a cache: `floor_pipeline_*`.
    FloorPipeline,
    /// The same for plain: `floor_pipeline_plain_*`.
    FloorPipelinePlain,
}

const VARIANTS: [(&str, Variant); 9] = [
    ("plain", Variant::Plain),
    ("json", Variant::Json),
    ("json-queued", Variant::JsonQueued),
    ("kube-runtime-plain", Variant::KubeRuntimePlain),
    ("kube-runtime-json", Variant::KubeRuntimeJson),
    ("floor", Variant::Floor),
    ("floor-pipeline", Variant::FloorPipeline),
    ("floor-pipeline-plain", Variant::FloorPipelinePlain),
    ("shallow", Variant::Shallow),
];

fn main() {
    let mut chosen = Vec::new();
    let (mut runs, mut child) = (3, false);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--runs" => runs = runs_value(args.next()),
            "--child" => child = true,
            other if other.starts_with('-') => {} // cargo bench's `--bench`
            other => match VARIANTS.iter().find(|(name, _)| *name == other) {
                Some(&(name, v)) => chosen.push((name, v)),
                None => {
                    let names: Vec<&str> = VARIANTS.iter().map(|(n, _)| *n).collect();
                    eprintln!("unknown variant {other:?}: expected one of {names:?}");
                    std::process::exit(2);
                }
            },
        }
    }
    if chosen.is_empty() {
        chosen = VARIANTS.to_vec();
    }
    if child {
        let [(_, v)] = chosen[..] else {
            eprintln!("--child runs exactly one variant");
            std::process::exit(2);
        };
        match v {
            Variant::Plain | Variant::Shallow | Variant::Json | Variant::JsonQueued => ours(v),
            Variant::KubeRuntimePlain | Variant::KubeRuntimeJson => kube_runtime(v),
            Variant::Floor => floor(),
            Variant::FloorPipeline => pipeline_floor(false),
            Variant::FloorPipelinePlain => pipeline_floor(true),
        }
        return;
    }
    println!(
        "# w3: in-process list/watch, 2-thread runtime, glibc malloc; each variant in its own \
         process, median of {runs} rounds (spread after #)"
    );
    let mut all = Gathered::default();
    for round in 0..runs {
        for (name, _) in &chosen {
            eprintln!("# round {}/{runs}: {name}", round + 1);
            if let Err(e) = all.run_child(&[name]) {
                eprintln!("{e}");
                std::process::exit(1);
            }
        }
    }
    ratios(&mut all);
    all.print();
}

/// Same-round ratios: each round's figures come from processes run minutes apart at most.
fn ratios(all: &mut Gathered) {
    let pairs = [
        (
            "w3_over_kube_runtime_cpu",
            "w3_events_per_cpu_sec",
            "kube_runtime_w3_events_per_cpu_sec",
        ),
        (
            "w3json_over_kube_runtime_cpu",
            "w3json_events_per_cpu_sec",
            "kube_runtime_w3json_events_per_cpu_sec",
        ),
        (
            "w3json_over_floor",
            "w3json_events_per_sec",
            "floor_decode_events_per_sec",
        ),
        (
            "w3json_over_cache_floor",
            "w3json_events_per_cpu_sec",
            "floor_cache_events_per_sec",
        ),
        (
            "kube_runtime_w3json_over_cache_floor",
            "kube_runtime_w3json_events_per_cpu_sec",
            "floor_cache_events_per_sec",
        ),
        (
            "w3json_over_pipeline_floor_cpu",
            "w3json_events_per_cpu_sec",
            "floor_pipeline_events_per_cpu_sec",
        ),
        (
            "kube_runtime_w3json_over_pipeline_floor_cpu",
            "kube_runtime_w3json_events_per_cpu_sec",
            "floor_pipeline_events_per_cpu_sec",
        ),
        (
            "w3_over_pipeline_floor_plain_cpu",
            "w3_events_per_cpu_sec",
            "floor_pipeline_plain_events_per_cpu_sec",
        ),
        (
            "kube_runtime_w3_over_pipeline_floor_plain_cpu",
            "kube_runtime_w3_events_per_cpu_sec",
            "floor_pipeline_plain_events_per_cpu_sec",
        ),
        (
            "floor_pipeline_over_floor",
            "floor_pipeline_events_per_sec",
            "floor_decode_events_per_sec",
        ),
        (
            "w3json_queued_over_kube_runtime_cpu",
            "w3json_queued_events_per_cpu_sec",
            "kube_runtime_w3json_events_per_cpu_sec",
        ),
    ];
    all.push_ratios(&pairs);
}

fn figure(name: &str, value: f64, unit: &str) {
    println!("{name} {value:.1} {unit}");
}

/// Resident-set growth since `rss0`, per cached object.
fn bytes_per_object(rss0: u64) -> f64 {
    rss_bytes().saturating_sub(rss0) as f64 / OBJECTS as f64
}

/// Starts the feeder (inside the event window).
type StartFeeder = Box<dyn FnOnce() -> tokio::task::JoinHandle<()> + Send>;

/// Starts the feeder, waits for the 1,000,000th event to be handled and prints the event
/// figures; returns the feeder, to be aborted once the caches are checked.
async fn time_events(
    prefix: &str,
    start: StartFeeder,
    done: &Notify,
) -> tokio::task::JoinHandle<()> {
    let (t1, c1) = (Instant::now(), cpu_seconds());
    let feeder = start();
    done.notified().await;
    let wall = t1.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - c1;
    figure(
        &format!("{prefix}_events_per_sec"),
        *EVENTS as f64 / wall,
        "events/s",
    );
    figure(
        &format!("{prefix}_events_per_cpu_sec"),
        *EVENTS as f64 / cpu,
        "events/cpu-s",
    );
    feeder
}

/// Sends the 1,000,000 events, each built by `make(object index, resourceVersion)`.
fn spawn_feeder<T: Send + 'static>(
    tx: mpsc::Sender<T>,
    make: impl Fn(usize, u64) -> T + Send + 'static,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        for e in 0..*EVENTS {
            let msg = make((e % OBJECTS as u64) as usize, OBJECTS as u64 + 1 + e);
            if tx.send(msg).await.is_err() {
                return;
            }
        }
        // Keep the stream open: its end would make a reflector watch again.
        std::future::pending::<()>().await;
    })
}

/// W3 json's events: the stream that decodes each watch-event line as it is polled (on the
/// reader's task, as kube's watch does), and the feeder that sends the lines.
fn json_events(
    t: &Arc<Templates>,
) -> (
    impl Stream<Item = Result<WatchEvent<Widget>, serde_json::Error>> + Send + 'static,
    StartFeeder,
) {
    let (tx, rx) = mpsc::channel::<Vec<u8>>(4096);
    let t = t.clone();
    let start: StartFeeder = Box::new(move || spawn_feeder(tx, move |i, rv| t.event(i, rv)));
    (receiver_stream(rx).map(|line| decode_event(&line)), start)
}

/// W3 plain's (or shallow's) events: objects built by `make` in the feeder, and the feeder.
fn typed_events(
    make: fn(usize, u64) -> Widget,
) -> (impl Stream<Item = Widget> + Send + 'static, StartFeeder) {
    let (tx, rx) = mpsc::channel::<Widget>(4096);
    let start: StartFeeder = Box::new(move || spawn_feeder(tx, make));
    (receiver_stream(rx), start)
}

/// A receiver as a stream (without pulling in tokio-stream).
fn receiver_stream<T: Send + 'static>(
    rx: mpsc::Receiver<T>,
) -> impl Stream<Item = T> + Send + 'static {
    futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|t| (t, rx)) })
}

/// Nanoseconds per call of `make` over 200,000 events, one thread (the feeder's own cost).
fn feeder_cost<T>(make: impl Fn(usize, u64) -> T) -> f64 {
    let t = Instant::now();
    for e in 0..200_000u64 {
        std::hint::black_box(make((e % OBJECTS as u64) as usize, 100_001 + e));
    }
    t.elapsed().as_nanos() as f64 / 200_000.0
}

/// `floor_object_bytes`: the allocator's bytes in use per decoded Widget held behind an `Arc`
/// (as any cache holds it), over 20,000 objects decoded on one thread: the object's own heap,
/// with glibc's chunk headers and rounding, and nothing of a cache. A cache's bytes per object
/// cannot be lower than this with this type and allocator.
fn object_floor(t: &Templates) {
    const N: usize = 20_000;
    let mut held: Vec<Arc<Widget>> = Vec::with_capacity(N);
    let before = malloc_in_use();
    for i in 0..N {
        held.push(Arc::new(t.decode_object(i, i as u64 + 1).expect("decodes")));
    }
    let per_object = malloc_in_use().saturating_sub(before) as f64 / N as f64;
    figure("floor_object_bytes", per_object, "B");
    println!(
        "# of which the Widget struct itself (in its Arc): {} B",
        std::mem::size_of::<Widget>() + 16
    );
    drop(held);
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// The json variants' source bytes, with a note of what they hold.
fn json_templates() -> Arc<Templates> {
    let t = Templates::new(OBJECTS);
    println!(
        "# {} pre-serialised objects hold {:.0} MiB (counted in peak RSS, not in bytes per object)",
        t.len(),
        t.heap_bytes() as f64 / (1 << 20) as f64
    );
    Arc::new(t)
}

fn check_rvs(rv: impl Fn(&str, &str) -> Option<String>, queued: usize) {
    // Object 0's last event is EVENTS - OBJECTS, object 99,999's the very last (1000001 and
    // 1100000 for BENCHMARKS.md's run).
    let (first, last) = (*EVENTS + 1, *EVENTS + OBJECTS as u64);
    assert_eq!(rv("ns-0", "name-0"), Some(first.to_string()));
    assert_eq!(rv("ns-99", "name-99999"), Some(last.to_string()));
    assert_eq!(queued, OBJECTS);
}

/// Our SharedIndexInformer: plain, shallow or json.
fn ours(variant: Variant) {
    let prefix = match variant {
        Variant::Plain => "w3",
        Variant::Shallow => "w3shallow",
        Variant::JsonQueued => "w3json_queued",
        _ => "w3json",
    };
    let json = matches!(variant, Variant::Json | Variant::JsonQueued);
    let templates = json.then(json_templates);
    match (variant, &templates) {
        (Variant::Plain, _) => figure(
            "w3_feeder_ns_per_object",
            feeder_cost(objects::widget),
            "ns",
        ),
        (Variant::Json, Some(t)) => figure(
            "w3json_feeder_ns_per_event",
            feeder_cost(|i, rv| t.event(i, rv)),
            "ns",
        ),
        _ => {}
    }
    let rt = runtime();
    let rss0 = rss_bytes();
    let items: MakeItems = match (&templates, variant) {
        // json: the list's items are decoded from their JSON when listed, inside the clock.
        (Some(t), _) => {
            let t = t.clone();
            Box::new(move || {
                (0..OBJECTS)
                    .map(|i| t.decode_object(i, i as u64 + 1))
                    .collect::<Result<_, _>>()
                    .map_err(kube::Error::SerdeError)
            })
        }
        (None, Variant::Shallow) => {
            let built: Vec<Widget> = (0..OBJECTS)
                .map(|i| objects::shallow(i, i as u64 + 1))
                .collect();
            Box::new(move || Ok(built))
        }
        (None, _) => {
            let built: Vec<Widget> = (0..OBJECTS)
                .map(|i| objects::widget(i, i as u64 + 1))
                .collect();
            Box::new(move || Ok(built))
        }
    };
    rt.block_on(async move {
        // The feeder's channel and the stream the reflector reads: typed events, or lines to decode.
        let (events, start_feeder): (WatchStream<Widget>, StartFeeder) = match &templates {
            Some(t) => {
                let (events, start) = json_events(t);
                (
                    events.map(|r| r.map_err(kube::Error::SerdeError)).boxed(),
                    start,
                )
            }
            None => {
                let make = if variant == Variant::Shallow {
                    objects::shallow
                } else {
                    objects::widget
                };
                let (objects, start) = typed_events(make);
                (objects.map(|o| Ok(WatchEvent::Modified(o))).boxed(), start)
            }
        };
        let source = OneShot::new(OBJECTS as u64, items, events);
        let informer = SharedIndexInformer::new(source, InformerOptions::default());
        let queue: WorkQueue<String> = WorkQueue::new();
        let updates = Arc::new(AtomicU64::new(0));
        let done = Arc::new(Notify::new());
        let (q1, q2, count, last) = (queue.clone(), queue.clone(), updates.clone(), done.clone());
        let handler = EventHandlerFns::new()
            .on_add(move |o: &Arc<Widget>, _| q1.add(key_of(&**o).expect("named")))
            .on_update(move |_, new: &Arc<Widget>| {
                q2.add(key_of(&**new).expect("named"));
                if count.fetch_add(1, Ordering::AcqRel) + 1 == *EVENTS {
                    last.notify_one();
                }
            });
        // W3's handler only puts a key in a workqueue: what inline handlers are for.
        let registration = if variant == Variant::JsonQueued {
            informer.add_event_handler(handler)
        } else {
            informer.add_inline_event_handler(handler)
        }
        .expect("inside a runtime");
        let t0 = Instant::now();
        let runner = {
            let informer = informer.clone();
            tokio::spawn(async move { informer.run().await })
        };
        informer.wait_for_sync().await;
        figure(
            &format!("{prefix}_sync_ms"),
            t0.elapsed().as_secs_f64() * 1e3,
            "ms",
        );
        while !registration.has_synced() {
            tokio::task::yield_now().await;
        }
        let handler_sync_ms = t0.elapsed().as_secs_f64() * 1e3;
        figure(&format!("{prefix}_handler_sync_ms"), handler_sync_ms, "ms");
        figure(
            &format!("{prefix}_bytes_per_object"),
            bytes_per_object(rss0),
            "B",
        );
        println!(
            "# after sync: resident {:.0} MiB, allocated {:.0} MiB",
            rss_bytes() as f64 / (1 << 20) as f64,
            malloc_in_use() as f64 / (1 << 20) as f64
        );

        let feeder = time_events(prefix, start_feeder, &done).await;
        println!(
            "# after the events: resident {:.0} MiB, allocated {:.0} MiB",
            rss_bytes() as f64 / (1 << 20) as f64,
            malloc_in_use() as f64 / (1 << 20) as f64
        );
        feeder.abort();
        runner.abort();

        let store = informer.store();
        assert_eq!(store.len(), OBJECTS);
        let rv = |ns: &str, name: &str| {
            store
                .get_by_key(&format!("{ns}/{name}"))
                .and_then(|o| o.metadata.resource_version.clone())
        };
        check_rvs(rv, queue.len());
        figure(&format!("{prefix}_peak_rss_mb"), peak_rss_mb(), "MiB");
    });
}

/// kube_runtime's reflector and Store over the same workload, plain or json.
fn kube_runtime(variant: Variant) {
    let json = variant == Variant::KubeRuntimeJson;
    let prefix = if json {
        "kube_runtime_w3json"
    } else {
        "kube_runtime_w3"
    };
    let templates = json.then(json_templates);
    let rt = runtime();
    let rss0 = rss_bytes();
    // The initial list as watcher events: typed objects built before the clock, or decoded
    // from their JSON inside it.
    let init: Box<dyn Iterator<Item = watcher::Result<Widget>> + Send> = match &templates {
        Some(t) => {
            let t = t.clone();
            Box::new((0..OBJECTS).map(move |i| {
                t.decode_object(i, i as u64 + 1)
                    .map_err(|e| watcher::Error::InitialListFailed(kube::Error::SerdeError(e)))
            }))
        }
        None => Box::new(
            (0..OBJECTS)
                .map(|i| objects::widget(i, i as u64 + 1))
                .collect::<Vec<_>>()
                .into_iter()
                .map(Ok),
        ),
    };
    rt.block_on(async move {
        let (events, start_feeder): (
            futures::stream::BoxStream<'static, watcher::Result<Widget>>,
            StartFeeder,
        ) = match &templates {
            Some(t) => {
                let (events, start) = json_events(t);
                // As kube's watcher turns a decoded MODIFIED event into `Apply`.
                let stream = events.map(|r| match r {
                    Ok(WatchEvent::Modified(o)) => Ok(o),
                    Ok(other) => panic!("the feeder sends MODIFIED only, got {other:?}"),
                    Err(e) => Err(watcher::Error::WatchFailed(kube::Error::SerdeError(e))),
                });
                (stream.boxed(), start)
            }
            None => {
                let (objects, start) = typed_events(objects::widget);
                (objects.map(Ok).boxed(), start)
            }
        };
        let source = futures::stream::once(async { Ok(watcher::Event::Init) })
            .chain(futures::stream::iter(init).map(|r| r.map(watcher::Event::InitApply)))
            .chain(futures::stream::once(async {
                Ok(watcher::Event::InitDone)
            }))
            .chain(events.map(|r| r.map(watcher::Event::Apply)));
        let (store, writer) = reflector::store::<Widget>();
        let queue: WorkQueue<String> = WorkQueue::new();
        let (synced, done) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
        let t0 = Instant::now();
        let consumer = {
            let (queue, synced, done) = (queue.clone(), synced.clone(), done.clone());
            let mut stream = reflector::reflector(writer, source).boxed();
            tokio::spawn(async move {
                let mut applied = 0;
                while let Some(event) = stream.next().await {
                    match event.expect("the bench's bytes decode") {
                        watcher::Event::InitApply(o) => queue.add(key_of(&o).expect("named")),
                        watcher::Event::InitDone => synced.notify_one(),
                        watcher::Event::Apply(o) => {
                            queue.add(key_of(&o).expect("named"));
                            applied += 1;
                            if applied == *EVENTS {
                                done.notify_one();
                            }
                        }
                        _ => {}
                    }
                }
            })
        };
        synced.notified().await;
        figure(
            &format!("{prefix}_sync_ms"),
            t0.elapsed().as_secs_f64() * 1e3,
            "ms",
        );
        figure(
            &format!("{prefix}_bytes_per_object"),
            bytes_per_object(rss0),
            "B",
        );

        let feeder = time_events(prefix, start_feeder, &done).await;
        feeder.abort();
        consumer.abort();

        assert_eq!(store.len(), OBJECTS);
        let rv = |ns: &str, name: &str| {
            store
                .get(&ObjectRef::new(name).within(ns))
                .and_then(|o| o.metadata.resource_version.clone())
        };
        check_rvs(rv, queue.len());
        figure(&format!("{prefix}_peak_rss_mb"), peak_rss_mb(), "MiB");
    });
}

/// serde_json decoding of the 1,000,000 lines alone, on this thread; and what one decoded
/// object takes from the allocator, the floor under any cache's bytes per object.
fn floor() {
    let t = Templates::new(OBJECTS);
    object_floor(&t);
    let mut line = Vec::with_capacity(4096);
    let start = Instant::now();
    for e in 0..*EVENTS {
        line.clear();
        t.write_event(
            (e % OBJECTS as u64) as usize,
            OBJECTS as u64 + 1 + e,
            &mut line,
        );
        match decode_event(&line) {
            Ok(ev) => drop(std::hint::black_box(ev)),
            Err(err) => {
                eprintln!("event {e} does not decode: {err}");
                std::process::exit(1);
            }
        }
    }
    figure(
        "floor_decode_events_per_sec",
        *EVENTS as f64 / start.elapsed().as_secs_f64(),
        "events/s",
    );
    cache_floor(&t, &mut line);
}

/// `floor_cache_events_per_sec`: what any cache of these objects must do per event, on one
/// thread and nothing more: decode the line, and put the object in its slot in place of the
/// one it replaces (freeing that one, cold in memory since its previous event). No map, no
/// key, no handler.
fn cache_floor(t: &Templates, line: &mut Vec<u8>) {
    let mut slots: Vec<Widget> = (0..OBJECTS)
        .map(|i| t.decode_object(i, i as u64 + 1).expect("decodes"))
        .collect();
    let start = Instant::now();
    for e in 0..*EVENTS {
        line.clear();
        let i = (e % OBJECTS as u64) as usize;
        t.write_event(i, OBJECTS as u64 + 1 + e, line);
        match decode_event(line) {
            Ok(WatchEvent::Modified(obj)) => slots[i] = obj,
            other => {
                eprintln!("event {e} is not a MODIFIED Widget: {other:?}");
                std::process::exit(1);
            }
        }
    }
    figure(
        "floor_cache_events_per_sec",
        *EVENTS as f64 / start.elapsed().as_secs_f64(),
        "events/s",
    );
    std::hint::black_box(&slots);
}

/// `floor_pipeline_*` (json) and `floor_pipeline_plain_*`: W3 without a cache. The list's
/// objects go into slots (built before the runtime runs for plain, as ours has them; decoded
/// for json); then, on the same runtime, feeder and channel as W3, each event's object
/// (decoded on the consuming task for json) replaces the one in its slot (the index parsed
/// from its name), and W3's handler work is done (the `namespace/name` key added to a
/// workqueue). No map, no index, no handler dispatch: what an informer adds to this is its own
/// cost, in CPU and in memory.
fn pipeline_floor(plain: bool) {
    let prefix = if plain {
        "floor_pipeline_plain"
    } else {
        "floor_pipeline"
    };
    let templates = (!plain).then(json_templates);
    let rt = runtime();
    let rss0 = rss_bytes();
    let mut slots: Vec<Widget> = match &templates {
        // Decoded on a worker thread, as an informer's list is (where glibc's arena for the
        // cached objects is chosen).
        Some(t) => {
            let t = t.clone();
            rt.block_on(rt.spawn(async move {
                (0..OBJECTS)
                    .map(|i| t.decode_object(i, i as u64 + 1).expect("decodes"))
                    .collect()
            }))
            .expect("the list task")
        }
        None => (0..OBJECTS)
            .map(|i| objects::widget(i, i as u64 + 1))
            .collect(),
    };
    rt.block_on(async move {
        let queue: WorkQueue<String> = WorkQueue::new();
        for obj in &slots {
            queue.add(key_of(obj).expect("named"));
        }
        figure(
            &format!("{prefix}_bytes_per_object"),
            bytes_per_object(rss0),
            "B",
        );
        let (mut objects, start): (futures::stream::BoxStream<'static, Widget>, StartFeeder) =
            match templates {
                Some(t) => {
                    let (events, start) = json_events(&t);
                    let decoded = events.map(|r| match r {
                        Ok(WatchEvent::Modified(o)) => o,
                        other => panic!("the feeder sends MODIFIED Widgets only, got {other:?}"),
                    });
                    (decoded.boxed(), start)
                }
                None => {
                    let (objects, start) = typed_events(objects::widget);
                    (objects.boxed(), start)
                }
            };
        let done = Arc::new(Notify::new());
        let consumer = {
            let (queue, done) = (queue.clone(), done.clone());
            tokio::spawn(async move {
                let mut handled = 0;
                while let Some(obj) = objects.next().await {
                    queue.add(key_of(&obj).expect("named"));
                    let i: usize = obj
                        .metadata
                        .name
                        .as_deref()
                        .and_then(|n| n.strip_prefix("name-"))
                        .and_then(|n| n.parse().ok())
                        .expect("name-<i>");
                    slots[i] = obj;
                    handled += 1;
                    if handled == *EVENTS {
                        done.notify_one();
                    }
                }
                slots
            })
        };
        let feeder = time_events(prefix, start, &done).await;
        feeder.abort();
        let slots = consumer.await.expect("the consumer ends with the feeder");
        let rv = |_: &str, name: &str| {
            let i: usize = name.strip_prefix("name-")?.parse().ok()?;
            slots[i].metadata.resource_version.clone()
        };
        check_rvs(rv, queue.len());
        figure(&format!("{prefix}_peak_rss_mb"), peak_rss_mb(), "MiB");
    });
}
