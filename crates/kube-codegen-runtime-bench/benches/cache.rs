//! Cache lookups in the shape of BENCHMARKS.md's W4, ahead of the informer that W4 runs after.
//!
//! Usage: `cargo xtask bench cache -- [--runs N]`. The store is filled directly (no informer
//! yet) with 100,000 ConfigMaps carrying W3's metadata (name, namespace, uid, resourceVersion,
//! labels, annotations) and the namespace index; then, as W4: `get_by_key(key[(j * 7919) %
//! 100000])` for j in 0..1,000,000 on one thread and split over two by parity, and 10,000
//! `by_index("namespace", "ns-{j % 100}")` calls of 1,000 objects each. One line per figure,
//! `name value unit`, the median over the runs.

use std::sync::Arc;
use std::time::Instant;

use k8s_openapi::api::core::v1::ConfigMap;
use kube_codegen_runtime::cache::{NAMESPACE_INDEX, Store};
use kube_codegen_runtime_bench::measure::{median, runs_value};
use kube_codegen_runtime_bench::objects;

const OBJECTS: usize = 100_000;
const GETS: usize = 1_000_000;
const BY_INDEX_CALLS: usize = 10_000;

fn main() {
    let mut runs = 5;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--runs" {
            runs = runs_value(args.next());
        }
    }
    println!("# cache: W4-shaped lookups on a directly filled store (ConfigMaps, W3 metadata)");
    let store = Arc::new(Store::<ConfigMap>::with_namespace_index());
    let t0 = Instant::now();
    for i in 0..OBJECTS {
        store.add(Arc::new(object(i))).expect("named object");
    }
    println!("fill_ms {:.1} ms", t0.elapsed().as_secs_f64() * 1e3);
    let keys: Vec<String> = (0..OBJECTS)
        .map(|i| format!("ns-{}/name-{i}", i % 100))
        .collect();
    let namespaces: Vec<String> = (0..100).map(|n| format!("ns-{n}")).collect();

    let mut one = Vec::new();
    let mut two = Vec::new();
    let mut by_index = Vec::new();
    for _ in 0..runs {
        one.push(GETS as f64 / gets(&store, &keys, 1));
        two.push(GETS as f64 / gets(&store, &keys, 2));
        let t = Instant::now();
        for j in 0..BY_INDEX_CALLS {
            let found = store
                .by_index(NAMESPACE_INDEX, &namespaces[j % 100])
                .expect("namespace index");
            assert_eq!(found.len(), OBJECTS / 100);
        }
        by_index.push(BY_INDEX_CALLS as f64 / t.elapsed().as_secs_f64());
    }
    println!("w4_gets_per_sec {:.0} gets/s", median(one));
    println!("w4_gets_2t_per_sec {:.0} gets/s", median(two));
    println!("w4_by_index_per_sec {:.0} calls/s", median(by_index));
}

/// Seconds for `GETS` lookups split over `threads` threads by `j % threads`.
fn gets(store: &Store<ConfigMap>, keys: &[String], threads: usize) -> f64 {
    let t = Instant::now();
    std::thread::scope(|s| {
        for part in 0..threads {
            s.spawn(move || {
                for j in (part..GETS).step_by(threads) {
                    let got = store.get_by_key(&keys[(j * 7919) % OBJECTS]);
                    std::hint::black_box(got.expect("cached"));
                }
            });
        }
    });
    t.elapsed().as_secs_f64()
}

fn object(i: usize) -> ConfigMap {
    ConfigMap {
        metadata: objects::metadata(i, i as u64 + 1),
        ..ConfigMap::default()
    }
}
