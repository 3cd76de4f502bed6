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
//! vary 2-5x with other load):
//!
//! | figure | client-go | here |
//! |---|---|---|
//! | W1 adds/s | 13.1 M | 10-20 M wall, 5.9 M per CPU-s |
//! | W1 processed/s | 1.57 M | 2.1-2.4 M wall, 1.2 M per CPU-s |
//! | W2a items/s | 675 k | 1.29-1.60 M wall, 0.83 M per CPU-s |
//! | W2a max delay | 14.7 ms | 7.3-11.8 ms (p50 5.1-5.4 ms; stalls from vCPU pre-emption) |
//! | W2b overhead | 8.3 ms | 4.2 ms (was 15-18 ms on Tokio's timer wheel) |
//! | W2-default wall | 20.0006 s | 20.0003 s |
//!
//! Where the rest goes (perf): W1 and W2a are bound by cache-line transfers between cores on
//! the shared tables (queue, delay heap, limiter counts: the first touch of a slot another
//! core wrote is most of each operation) and by lock-holder preemption when four threads
//! share two cores. Sharding the dirty set (a duplicate add takes one of 16 shard locks
//! instead of the core lock) was tried and measured no better: each add still moves a lock
//! line and a slot line between cores, and every `get` paid an extra shard lock.
//!
//! A lock-free "dirty mirror" (a concurrent map of per-item flags, so a duplicate add reads
//! shared memory and never locks) was also built and measured, then removed (commit 9f44dc0
//! has it): with producers off the lock the two workers kept the queue empty, so nearly
//! every add became a new item (W1 processed ~730 k of 1 M adds instead of ~115 k). That raised
//! processed/s slightly (2.2 M -> 2.6 M) but cut adds/s six-fold (22.6 M -> 3.7 M) and CPU per
//! add likewise: in W1 the figures trade against each other through how much the queue
//! coalesces, and coalescing is what a controller wants from its queue under load (fewer
//! reconciles for the same events). Meeting both W1 goals at once needs each processed item to
//! cost about 200 ns of CPU while producers run on the same two cores; measured here it is
//! 0.4-1.3 µs. A throwaway prototype with no lock at all (items in a concurrent map with atomic
//! per-item flags, a lock-free FIFO, waiters parked only when it is empty) landed in the same
//! place: W1 ~1.9 M processed/s with ~550 k processed and 3.3 M adds/s. What costs is not the
//! lock but moving each item between cores, and above all parking and waking the worker
//! threads (a futex or eventfd system call on each side, and the woken thread pre-empting the
//! producer), which four busy threads on two cores do constantly; Go switches goroutines in
//! user space instead.
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
