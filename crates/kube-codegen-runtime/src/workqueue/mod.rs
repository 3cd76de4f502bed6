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
//! [`WorkQueue::add_ref`] re-adds a queued `String` key without allocating. The benchmarks
//! (`benches/workqueue.rs`) reproduce BENCHMARKS.md's W1/W2 workloads.
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
pub use self::queue::{Get, UNFINISHED_WORK_UPDATE_PERIOD, WorkQueue, WorkQueueBuilder};
pub use self::rate_limiters::{
    BucketRateLimiter, DEFAULT_MAX_TRACKED_ITEMS, ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter, MaxOfRateLimiter, RateLimiter, WithMaxWaitRateLimiter,
    default_controller_rate_limiter,
};
pub use self::worker::{Action, run_workers};
