#![deny(missing_docs)]
//! A controller work queue with client-go's `util/workqueue` semantics, for Tokio.
//!
//! Controllers put keys (typically `namespace/name`) here from informer handlers and drain
//! them with a few workers. [`WorkQueue`] deduplicates, never hands one item to two workers at
//! once, delays ([`WorkQueue::add_after`]) and rate limits ([`WorkQueue::add_rate_limited`]);
//! [`run_workers`] is the worker loop.
//!
//! Differences from client-go, all deliberate:
//! - [`WorkQueue::shutdown_with_drain`] waits for queued items as well as in-flight ones
//!   (kubernetes PR #141079).
//! - Items waiting in the delay heap are visible: [`WorkQueue::len_waiting`] and the
//!   `workqueue_waiting_depth` metric.
//! - Per-item rate-limiter state is bounded ([`DEFAULT_MAX_TRACKED_ITEMS`], kubernetes
//!   PR #138743) and dropped on `forget`.
//! - `get` is async and cancel-safe; one type carries the plain, delaying and rate-limiting
//!   interfaces.
//!
//! Speed: items are hashed (foldhash, seeded per queue) before a lock is taken, so critical
//! sections are a single table probe; a worker is woken only when an item becomes available
//! and a getter is waiting; delays in ready-time order (the common case) are O(1) in and out;
//! [`WorkQueue::add_ref`] re-adds a queued `String` key without allocating. With the real
//! clock, delays are driven by one OS thread per queue sleeping on a condition variable
//! (futex timeout, ~50 µs late at most) rather than Tokio's timer wheel, which rounds every
//! deadline up to the next millisecond tick (over W2b's 10 sequential backoff rounds that alone
//! cost ~10-15 ms); due items move into the queue with their precomputed hash, one lock per
//! batch. Paused or custom clocks keep a Tokio timer task, so tests stay deterministic.
//!
//! The benchmarks (`crates/kube-codegen-runtime-bench`, `cargo xtask bench workqueue`) reproduce
//! BENCHMARKS.md's W1/W2 workloads; on the shared 2-core machine (medians of 5, wall figures
//! vary up to 2x between invocations):
//!
//! | figure | client-go | here |
//! |---|---|---|
//! | W1 adds/s | 13.1 M | 14.5-19.8 M |
//! | W1 processed/s | 1.57 M | 1.7-2.2 M |
//! | W2a items/s | 675 k | 1.3-1.5 M |
//! | W2a max delay | 14.7 ms | 7.1-11.0 ms (p50 5.3-5.6 ms) |
//! | W2b overhead | 8.3 ms | 3.2-3.6 ms (15-18 ms on Tokio's timer wheel) |
//! | W2-default wall | 20.0006 s | 20.0002 s |
//!
//! W1 and W2a are bound by handing items between cores (77-107 ns per cache line here), not by
//! the queue's own work (16 ns per duplicate add, 101 ns per add + get + done on one thread).
//! `crates/kube-codegen-runtime-bench/README.md` has the cost model, the designs tried (a lock-free dirty mirror, no lock
//! at all, failure counts in the queue's table, a timer inbox) and why W1's two goals cannot
//! both be met on two cores.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use kube_codegen_runtime::workqueue::WorkQueue;
//!
//! let queue: WorkQueue<String> = WorkQueue::new();
//! queue.add("default/web".to_owned());
//! queue.add("default/web".to_owned()); // deduplicated
//! assert_eq!(queue.len(), 1);
//! let key = queue.get().await.unwrap();
//! queue.forget(&key);
//! queue.done(&key);
//! queue.shutdown_with_drain().await;
//! assert_eq!(queue.get().await, None);
//! # }
//! ```

mod clock;
mod core;
mod delaying;
mod lanes;
mod metrics;
mod queue;
mod rate_limiters;
mod worker;

#[cfg(test)]
mod interleaving_tests;

pub use self::clock::{Clock, Sleep, TokioClock};
#[cfg(feature = "prometheus")]
pub use self::metrics::PrometheusMetricsProvider;
pub use self::metrics::{
    CounterMetric, DURATION_BUCKETS, GaugeMetric, HistogramMetric, MetricsProvider, Noop,
    NoopMetricsProvider, SettableGaugeMetric,
};
pub use self::queue::{
    AddOpts, Get, GetWithPriority, UNFINISHED_WORK_UPDATE_PERIOD, WorkQueue, WorkQueueBuilder,
};

/// The priority of a plain add (controller-runtime's default, 0).
pub const DEFAULT_PRIORITY: i32 = 0;

/// The priority controller-runtime's `WithLowPriorityWhenUnchanged` gives events of an initial
/// list and of resyncs (`handler.LowPriority`, -100): a user's live change goes before them.
pub const LOW_PRIORITY: i32 = -100;
pub use self::rate_limiters::{
    BucketRateLimiter, DEFAULT_MAX_TRACKED_ITEMS, ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter, MaxOfRateLimiter, RateLimiter, WithMaxWaitRateLimiter,
    default_controller_rate_limiter,
};
pub use self::worker::{Action, run_workers};
