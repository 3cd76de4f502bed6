//! Concurrency stress: many producers and workers on a small key space, on a multi-threaded
//! runtime. Asserts that no key is ever processed by two workers at once and that every key is
//! processed at least once after its last add, including when the run ends with
//! `shutdown_with_drain` (which must not return while anything is queued or in flight).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use kube_codegen_runtime::workqueue::WorkQueue;

use crate::support;
use support::{within, within_for};

const KEYS: usize = 8;
const PRODUCERS: u64 = 6;
const ADDS_PER_PRODUCER: u64 = 20_000;
const WORKERS: usize = 6;

struct Tracking {
    busy: Vec<AtomicBool>,
    /// Sequence number of the latest add of each key, stored *before* calling `add`.
    last_add: Vec<AtomicU64>,
    /// Highest add sequence number a worker had seen when it got the key.
    covered: Vec<AtomicU64>,
    seq: AtomicU64,
    processed: AtomicU64,
}

async fn round(drain: bool) {
    let q: WorkQueue<usize> = WorkQueue::new();
    let t = Arc::new(Tracking {
        busy: (0..KEYS).map(|_| AtomicBool::new(false)).collect(),
        last_add: (0..KEYS).map(|_| AtomicU64::new(0)).collect(),
        covered: (0..KEYS).map(|_| AtomicU64::new(0)).collect(),
        seq: AtomicU64::new(1),
        processed: AtomicU64::new(0),
    });
    let workers: Vec<_> = (0..WORKERS)
        .map(|w| {
            let (q, t) = (q.clone(), t.clone());
            tokio::spawn(async move {
                let mut n = 0u64;
                while let Some(k) = q.get().await {
                    assert!(
                        !t.busy[k].swap(true, Ordering::SeqCst),
                        "key {k} processed by two workers at once"
                    );
                    let seen = t.last_add[k].load(Ordering::SeqCst);
                    t.covered[k].fetch_max(seen, Ordering::SeqCst);
                    n += 1;
                    if (n + w as u64).is_multiple_of(7) {
                        tokio::task::yield_now().await; // hold the key across a yield
                    }
                    t.busy[k].store(false, Ordering::SeqCst);
                    t.processed.fetch_add(1, Ordering::Relaxed);
                    q.done(&k);
                }
            })
        })
        .collect();
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let (q, t) = (q.clone(), t.clone());
            tokio::spawn(async move {
                let mut s = p.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
                for i in 0..ADDS_PER_PRODUCER {
                    s ^= s << 13;
                    s ^= s >> 7;
                    s ^= s << 17;
                    let k = (s % KEYS as u64) as usize;
                    let seq = t.seq.fetch_add(1, Ordering::SeqCst);
                    t.last_add[k].fetch_max(seq, Ordering::SeqCst);
                    q.add(k);
                    if i.is_multiple_of(64) {
                        tokio::task::yield_now().await;
                    }
                }
            })
        })
        .collect();
    for p in producers {
        // 20,000 adds each: generous for a debug build on a busy machine.
        within_for(Duration::from_secs(120), "a producer to finish its adds", p)
            .await
            .unwrap();
    }
    if drain {
        within(
            "shutdown_with_drain to return (every queued and in-flight key done)",
            q.shutdown_with_drain(),
        )
        .await;
        // Drain returned: nothing queued or in flight, so every add is already covered.
        check_covered(&t);
        assert_eq!(q.len(), 0);
        assert_eq!(q.len_in_flight(), 0);
    } else {
        q.shutdown();
    }
    for w in workers {
        within("a worker to stop after the shutdown", w)
            .await
            .unwrap();
    }
    check_covered(&t);
    assert!(t.processed.load(Ordering::Relaxed) >= KEYS as u64);
}

fn check_covered(t: &Tracking) {
    for k in 0..KEYS {
        let last = t.last_add[k].load(Ordering::SeqCst);
        let covered = t.covered[k].load(Ordering::SeqCst);
        assert!(
            covered >= last,
            "key {k}: last add #{last} never processed (covered up to #{covered})"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn no_concurrent_processing_and_nothing_lost_with_drain() {
    for _ in 0..3 {
        round(true).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn no_concurrent_processing_and_nothing_lost_with_shutdown() {
    for _ in 0..3 {
        round(false).await;
    }
}
