//! W4 of shared/BENCHMARKS.md: cache lookups on the informer's cache after W3 plain's list,
//! the informer idle; beside the same lookups on a directly filled `Store` and on kube-runtime's
//! reflector `Store`.
//!
//! Usage: `cargo xtask bench cache -- [informer|direct|kube-runtime]... [--runs N]
//! [--after-events]` (default: all three caches, 5 rounds). The caches are built once, then
//! each round runs every cache's lookups in turn, so machine noise spreads over all of them;
//! each figure is the median over the rounds (spread after `#`), then same-round ratios.
//!
//! - `informer`: our `SharedIndexInformer` (namespace index, resync off) over an in-process
//!   `ListWatch` listing W3 plain's 100,000 Widgets (item i at resourceVersion i + 1, list
//!   resourceVersion "100000") and a watch that stays open and silent. Lookups go through
//!   `informer.store()` (a `StoreReader`): `get_by_key(key[(j * 7919) % 100000])` for j in
//!   0..1,000,000 on one thread (`w4_gets_per_sec`) and split over two by parity
//!   (`w4_gets_2t_per_sec`); 10,000 `by_index("namespace", "ns-{j % 100}")` calls of 1,000
//!   objects each (`w4_by_index_per_sec`). Through `informer.lister()`, the same gets as
//!   `namespace(ns).get(name)` (which builds the key on the stack per call) and the same
//!   namespaces as `namespace(ns).list(everything)`. With `--after-events`, W3 plain's
//!   1,000,000 MODIFIED events (10 cycles over the objects) are applied before the lookups, as W4 follows W3.
//! - `direct`: a `Store` with the namespace index filled by `add` with the same Widgets
//!   (`w4_direct_*`): what the informer's cache should match.
//! - `kube-runtime`: kube_runtime 5's `reflector(writer, stream)` over `Init`, `InitApply`
//!   x100,000, `InitDone`; gets by pre-built `ObjectRef`s (`kube_runtime_w4_*`); it has no
//!   index, so a namespace is `state_filter` over every object (100 calls per round).
//!
//! - the floor, run with `informer` (`w4_floor_*`): the informer's own `Arc<Widget>`s in a bare
//!   `hashbrown` map from `String` keys (foldhash, no lock): `get` + `Arc` clone is what any
//!   cache that hands out shared objects must do per lookup; `w4_floor_borrow_gets_per_sec`
//!   only finds the object (no reference count touched), as client-go's pointer return does.
//!
//! Keys and `ObjectRef`s are built before the clock. Each lookup's `Arc` is dropped inside the
//! window. `*_per_cpu_sec` divides by the process's user + system CPU over the timed phase
//! (getrusage), steadier than wall time on a shared machine. glibc malloc.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use futures::StreamExt;
use kube::ResourceExt;
use kube::api::WatchEvent;
use kube::core::Selector;
use kube_codegen_runtime::cache::{
    EventHandlerFns, InformerOptions, NAMESPACE_INDEX, NamespaceLister, SharedIndexInformer, Store,
    StoreReader, key_of,
};
use kube_codegen_runtime_bench::bench::v1::Widget;
use kube_codegen_runtime_bench::measure::{cpu_seconds, runs_value};
use kube_codegen_runtime_bench::objects;
use kube_codegen_runtime_bench::runs::Gathered;
use kube_codegen_runtime_bench::source::OneShot;
use kube_runtime::reflector::{self, ObjectRef};
use kube_runtime::watcher;
use tokio::sync::{Notify, mpsc};

const OBJECTS: usize = 100_000;
const GETS: usize = 1_000_000;
const BY_INDEX_CALLS: usize = 10_000;
/// kube-runtime's namespace lookup scans all 100,000 objects (~170 calls/s): fewer calls.
const SCAN_CALLS: usize = 100;
const EVENTS: u64 = 1_000_000;

/// client-go's W4 figures (BENCHMARKS.md): 1-thread gets/s, 2-thread gets/s, by_index calls/s.
const CLIENT_GO: [(&str, f64); 3] = [
    ("w4_gets_per_sec", 3.78e6),
    ("w4_gets_2t_per_sec", 5.74e6),
    ("w4_by_index_per_sec", 7_315.0),
];

#[derive(Clone, Copy, PartialEq)]
enum Cache {
    Informer,
    Direct,
    KubeRuntime,
}

const CACHES: [(&str, Cache); 3] = [
    ("informer", Cache::Informer),
    ("direct", Cache::Direct),
    ("kube-runtime", Cache::KubeRuntime),
];

fn main() {
    let mut chosen = Vec::new();
    let (mut runs, mut after_events) = (5, false);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--runs" => runs = runs_value(args.next()),
            "--after-events" => after_events = true,
            other if other.starts_with('-') => {} // cargo bench's `--bench`
            other => match CACHES.iter().find(|(name, _)| *name == other) {
                Some(&(_, c)) => chosen.push(c),
                None => {
                    let names: Vec<&str> = CACHES.iter().map(|(n, _)| *n).collect();
                    eprintln!("unknown cache {other:?}: expected one of {names:?}");
                    std::process::exit(2);
                }
            },
        }
    }
    if chosen.is_empty() {
        chosen = CACHES.iter().map(|&(_, c)| c).collect();
    }
    println!(
        "# w4: W3 plain's 100,000 Widgets; informer{} idle; {runs} rounds, glibc malloc",
        if after_events {
            " after W3's 1,000,000 events,"
        } else {
            " after its list,"
        }
    );
    let keys: Vec<String> = (0..OBJECTS)
        .map(|i| format!("ns-{}/name-{i}", i % 100))
        .collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");

    let mut all = Gathered::default();
    let informer = chosen
        .contains(&Cache::Informer)
        .then(|| rt.block_on(informer_cache(after_events, &mut all)));
    let direct = chosen
        .contains(&Cache::Direct)
        .then(|| direct_store(&mut all));
    let kube_runtime = chosen
        .contains(&Cache::KubeRuntime)
        .then(|| rt.block_on(kube_runtime_store(&mut all)));
    // The informer's objects in a bare map (empty without the informer).
    let floor: Floor = informer
        .iter()
        .flat_map(|(reader, _)| reader.list())
        .map(|o| (key_of(&*o).expect("named"), o))
        .collect();
    let refs: Vec<ObjectRef<Widget>> = match kube_runtime {
        Some(_) => (0..OBJECTS)
            .map(|i| ObjectRef::new(&format!("name-{i}")).within(&format!("ns-{}", i % 100)))
            .collect(),
        None => Vec::new(),
    };

    for round in 0..runs {
        eprintln!("# round {}/{runs}", round + 1);
        if let Some((reader, lister)) = &informer {
            informer_round(reader, lister, &keys, &mut all);
            floor_round(&floor, &keys, &mut all);
        }
        if let Some(store) = &direct {
            store_round(store, &keys, &mut all);
        }
        if let Some(store) = &kube_runtime {
            kube_runtime_round(store, &refs, &mut all);
        }
    }
    ratios(&mut all);
    all.print();
}

/// Our informer over W3 plain's list (and, with `after_events`, W3's 1,000,000 events), synced
/// and idle; its read handles.
async fn informer_cache(after_events: bool, all: &mut Gathered) -> (StoreReader<Widget>, Lister) {
    let items: Vec<Widget> = (0..OBJECTS)
        .map(|i| objects::widget(i, i as u64 + 1))
        .collect();
    let (tx, rx) = mpsc::channel::<Widget>(4096);
    let events = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|o| (Ok(WatchEvent::Modified(o)), rx))
    })
    .boxed();
    let source = OneShot::new(OBJECTS as u64, Box::new(move || Ok(items)), events);
    let informer = SharedIndexInformer::new(source, InformerOptions::default());
    let updates = Arc::new(AtomicU64::new(0));
    let done = Arc::new(Notify::new());
    let (count, last) = (updates.clone(), done.clone());
    let _registration = informer
        .add_event_handler(EventHandlerFns::new().on_update(move |_, _: &Arc<Widget>| {
            if count.fetch_add(1, Ordering::AcqRel) + 1 == EVENTS {
                last.notify_one();
            }
        }))
        .expect("inside a runtime");
    let t0 = Instant::now();
    {
        let informer = informer.clone();
        tokio::spawn(async move { informer.run().await });
    }
    informer.wait_for_sync().await;
    all.push(
        "w4_informer_sync_ms",
        t0.elapsed().as_secs_f64() * 1e3,
        "ms",
    );
    let store = informer.store();
    if after_events {
        let t = Instant::now();
        tokio::spawn(async move {
            for e in 0..EVENTS {
                let i = (e % OBJECTS as u64) as usize;
                if tx
                    .send(objects::widget(i, OBJECTS as u64 + 1 + e))
                    .await
                    .is_err()
                {
                    return;
                }
            }
            // Held open: the watch's end would make the informer watch again.
            std::future::pending::<()>().await;
        });
        done.notified().await;
        all.push("w4_informer_events_s", t.elapsed().as_secs_f64(), "s");
        let rv = |key: &str| {
            store
                .get_by_key(key)
                .and_then(|o| o.metadata.resource_version.clone())
        };
        assert_eq!(rv("ns-0/name-0").as_deref(), Some("1000001"));
        assert_eq!(rv("ns-99/name-99999").as_deref(), Some("1100000"));
    } else {
        drop(tx); // never used: the watch stays silent
        assert_eq!(
            store
                .get_by_key("ns-99/name-99999")
                .and_then(|o| o.metadata.resource_version.clone())
                .as_deref(),
            Some("100000")
        );
    }
    assert_eq!(store.len(), OBJECTS);
    let lister = Lister {
        namespaces: (0..100)
            .map(|n| informer.lister().namespace(format!("ns-{n}")))
            .collect(),
        names: (0..OBJECTS).map(|i| format!("name-{i}")).collect(),
    };
    assert!(
        lister.namespaces[0].has_synced(),
        "the lister sees the sync"
    );
    (store, lister)
}

/// The informer's listers, one per namespace, and the objects' names (built before the clock).
struct Lister {
    namespaces: Vec<NamespaceLister<Widget>>,
    names: Vec<String>,
}

/// A `Store` with the namespace index, filled by `add` with the same Widgets.
fn direct_store(all: &mut Gathered) -> Store<Widget> {
    let store = Store::with_namespace_index();
    let t = Instant::now();
    for i in 0..OBJECTS {
        store
            .add(Arc::new(objects::widget(i, i as u64 + 1)))
            .expect("named object");
    }
    all.push("w4_direct_fill_ms", t.elapsed().as_secs_f64() * 1e3, "ms");
    store
}

/// kube-runtime's reflector `Store` after the same list, its stream left open.
async fn kube_runtime_store(all: &mut Gathered) -> reflector::Store<Widget> {
    let init =
        (0..OBJECTS).map(|i| Ok(watcher::Event::InitApply(objects::widget(i, i as u64 + 1))));
    let source = futures::stream::iter(
        std::iter::once(Ok(watcher::Event::Init))
            .chain(init)
            .chain(std::iter::once(Ok(watcher::Event::InitDone))),
    )
    .chain(futures::stream::pending::<
        watcher::Result<watcher::Event<Widget>>,
    >());
    let (store, writer) = reflector::store::<Widget>();
    let synced = Arc::new(Notify::new());
    let t = Instant::now();
    {
        let synced = synced.clone();
        let mut stream = reflector::reflector(writer, source).boxed();
        tokio::spawn(async move {
            while let Some(event) = stream.next().await {
                if let Ok(watcher::Event::InitDone) = event {
                    synced.notify_one();
                }
            }
        });
    }
    synced.notified().await;
    all.push(
        "kube_runtime_w4_sync_ms",
        t.elapsed().as_secs_f64() * 1e3,
        "ms",
    );
    assert_eq!(store.len(), OBJECTS);
    store
}

/// Wall and process CPU seconds of `f`.
fn timed(f: impl FnOnce()) -> (f64, f64) {
    let (t, c) = (Instant::now(), cpu_seconds());
    f();
    (t.elapsed().as_secs_f64(), cpu_seconds() - c)
}

/// Records `work` per wall second as `name` and per CPU second as `name` with `_per_cpu_sec`.
fn rate(all: &mut Gathered, name: &str, unit: &str, work: usize, (wall, cpu): (f64, f64)) {
    all.push(name, work as f64 / wall, &format!("{unit}/s"));
    let cpu_name = name.replace("_per_sec", "_per_cpu_sec");
    all.push(&cpu_name, work as f64 / cpu, &format!("{unit}/cpu-s"));
}

/// `GETS` lookups split over `threads` threads by `j % threads`; `get(i)` looks up object i
/// and must find it.
fn gets<T>(threads: usize, get: impl Fn(usize) -> Option<T> + Sync) -> (f64, f64) {
    let get = &get;
    timed(|| {
        std::thread::scope(|s| {
            for part in 0..threads {
                s.spawn(move || {
                    for j in (part..GETS).step_by(threads) {
                        let got = get((j * 7919) % OBJECTS);
                        std::hint::black_box(got.expect("cached"));
                    }
                });
            }
        })
    })
}

/// `calls` namespace lookups, namespace `j % 100` for call j, each finding 1,000 objects.
fn namespaces<T>(calls: usize, find: impl Fn(usize) -> Vec<T>) -> (f64, f64) {
    timed(|| {
        for j in 0..calls {
            let found = find(j % 100);
            assert_eq!(
                found.len(),
                OBJECTS / 100,
                "objects in namespace ns-{}",
                j % 100
            );
        }
    })
}

fn ns(n: usize) -> String {
    format!("ns-{n}")
}

fn informer_round(
    reader: &StoreReader<Widget>,
    lister: &Lister,
    keys: &[String],
    all: &mut Gathered,
) {
    let nss: Vec<String> = (0..100).map(ns).collect();
    let get = |i: usize| reader.get_by_key(&keys[i]);
    rate(all, "w4_gets_per_sec", "gets", GETS, gets(1, get));
    rate(all, "w4_gets_2t_per_sec", "gets", GETS, gets(2, get));
    let by_index = |n: usize| reader.by_index(NAMESPACE_INDEX, &nss[n]).expect("index");
    rate(
        all,
        "w4_by_index_per_sec",
        "calls",
        BY_INDEX_CALLS,
        namespaces(BY_INDEX_CALLS, by_index),
    );
    let lister_get = |i: usize| {
        lister.namespaces[i % 100]
            .get(&lister.names[i])
            .expect("synced")
    };
    rate(
        all,
        "w4_lister_gets_per_sec",
        "gets",
        GETS,
        gets(1, lister_get),
    );
    let everything = Selector::default();
    let lister_list = |n: usize| lister.namespaces[n].list(&everything).expect("synced");
    rate(
        all,
        "w4_lister_namespace_list_per_sec",
        "calls",
        BY_INDEX_CALLS,
        namespaces(BY_INDEX_CALLS, lister_list),
    );
}

type Floor = hashbrown::HashMap<String, Arc<Widget>, foldhash::fast::RandomState>;

/// The floor under any cache's `get` (see the module doc), then the bare lookup alone.
fn floor_round(floor: &Floor, keys: &[String], all: &mut Gathered) {
    let get = |i: usize| floor.get(keys[i].as_str()).cloned();
    rate(all, "w4_floor_gets_per_sec", "gets", GETS, gets(1, get));
    let find = |i: usize| floor.get(keys[i].as_str()).map(Arc::as_ptr);
    rate(
        all,
        "w4_floor_borrow_gets_per_sec",
        "gets",
        GETS,
        gets(1, find),
    );
}

fn store_round(store: &Store<Widget>, keys: &[String], all: &mut Gathered) {
    let nss: Vec<String> = (0..100).map(ns).collect();
    let get = |i: usize| store.get_by_key(&keys[i]);
    rate(all, "w4_direct_gets_per_sec", "gets", GETS, gets(1, get));
    rate(all, "w4_direct_gets_2t_per_sec", "gets", GETS, gets(2, get));
    let by_index = |n: usize| store.by_index(NAMESPACE_INDEX, &nss[n]).expect("index");
    rate(
        all,
        "w4_direct_by_index_per_sec",
        "calls",
        BY_INDEX_CALLS,
        namespaces(BY_INDEX_CALLS, by_index),
    );
}

fn kube_runtime_round(
    store: &reflector::Store<Widget>,
    refs: &[ObjectRef<Widget>],
    all: &mut Gathered,
) {
    let nss: Vec<String> = (0..100).map(ns).collect();
    let get = |i: usize| store.get(&refs[i]);
    rate(
        all,
        "kube_runtime_w4_gets_per_sec",
        "gets",
        GETS,
        gets(1, get),
    );
    rate(
        all,
        "kube_runtime_w4_gets_2t_per_sec",
        "gets",
        GETS,
        gets(2, get),
    );
    let scan = |n: usize| store.state_filter(|w| w.namespace().as_deref() == Some(&nss[n]));
    rate(
        all,
        "kube_runtime_w4_by_namespace_per_sec",
        "calls",
        SCAN_CALLS,
        namespaces(SCAN_CALLS, scan),
    );
}

/// Goal ratios (ours over client-go) and same-round comparisons between the caches.
fn ratios(all: &mut Gathered) {
    for (name, client_go) in CLIENT_GO {
        if let Some(v) = all.values(name).map(<[f64]>::to_vec) {
            let ratio = format!("{}_over_client_go", name.trim_end_matches("_per_sec"));
            for x in v {
                all.push(&ratio, x / client_go, "x");
            }
        }
    }
    let pairs = [
        (
            "w4_informer_over_direct_gets",
            "w4_gets_per_sec",
            "w4_direct_gets_per_sec",
        ),
        (
            "w4_informer_over_direct_gets_2t",
            "w4_gets_2t_per_sec",
            "w4_direct_gets_2t_per_sec",
        ),
        (
            "w4_informer_over_direct_by_index",
            "w4_by_index_per_sec",
            "w4_direct_by_index_per_sec",
        ),
        (
            "w4_gets_over_floor",
            "w4_gets_per_sec",
            "w4_floor_gets_per_sec",
        ),
        (
            "w4_floor_borrow_over_floor",
            "w4_floor_borrow_gets_per_sec",
            "w4_floor_gets_per_sec",
        ),
        (
            "w4_gets_over_kube_runtime",
            "w4_gets_per_sec",
            "kube_runtime_w4_gets_per_sec",
        ),
        (
            "w4_gets_2t_over_kube_runtime",
            "w4_gets_2t_per_sec",
            "kube_runtime_w4_gets_2t_per_sec",
        ),
    ];
    all.push_ratios(&pairs);
}
