//! Rate limiters: how long an item waits before it is re-queued by `add_rate_limited`.
//! Semantics follow client-go's `default_rate_limiters.go`; per-item state is bounded.

use std::fmt;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

use super::clock::{Clock, TokioClock};
use super::core::ItemHasher;
use hashbrown::HashTable;
use hashbrown::hash_table::Entry as TableEntry;
use std::hash::BuildHasher;

/// Decides the delay before an item is retried.
///
/// `when` is called once per `add_rate_limited` and may record a failure; `forget` clears an
/// item's history (call it when the item succeeded); `num_requeues` reports the recorded
/// failures. Implementations are shared between threads.
pub trait RateLimiter<T>: Send + Sync {
    /// Records a retry of `item` and returns how long to wait before it is re-queued.
    fn when(&self, item: &T) -> Duration;
    /// Clears any state kept for `item`.
    fn forget(&self, item: &T);
    /// Number of times `item` has been rate limited since it was last forgotten.
    fn num_requeues(&self, item: &T) -> u32;
}

impl<T, L: RateLimiter<T> + ?Sized> RateLimiter<T> for Box<L> {
    fn when(&self, item: &T) -> Duration {
        (**self).when(item)
    }
    fn forget(&self, item: &T) {
        (**self).forget(item)
    }
    fn num_requeues(&self, item: &T) -> u32 {
        (**self).num_requeues(item)
    }
}

impl<T, L: RateLimiter<T> + ?Sized> RateLimiter<T> for Arc<L> {
    fn when(&self, item: &T) -> Duration {
        (**self).when(item)
    }
    fn forget(&self, item: &T) {
        (**self).forget(item)
    }
    fn num_requeues(&self, item: &T) -> u32 {
        (**self).num_requeues(item)
    }
}

/// Default bound on the items a per-item limiter tracks at once.
///
/// Entries are dropped on `forget`; when a limiter tracks this many items and a new one fails,
/// the least recently failed half is dropped first (their next failure starts again at the
/// first delay, as after `forget`). client-go's map is unbounded (kubernetes PR #138743).
pub const DEFAULT_MAX_TRACKED_ITEMS: usize = 65_536;

/// Per-item failure counters with a hard size bound.
///
/// client-go's map grows forever when callers never `forget` (kubernetes PR #138743). Here, an
/// entry is dropped on `forget`, and when a shard holds its share of `max_items` entries and a
/// new item fails, the least recently failed half of that shard is dropped first (amortised
/// O(1) per failure). A dropped item's next failure starts again from the first delay, the same
/// as after `forget`.
///
/// Large limiters are split into up to [`SHARDS`] independently locked shards by item hash:
/// the producer's `when` and the workers' `forget` then rarely meet on one lock, which would
/// otherwise bounce between cores on every call.
struct FailureCounts<T> {
    hasher: ItemHasher,
    shards: Box<[Shard<T>]>,
}

/// Most shards a limiter uses; each holds at least [`MIN_SHARD_ITEMS`] of the bound.
const SHARDS: usize = 16;
const MIN_SHARD_ITEMS: usize = 1024;

/// One lock and table, on cache lines of its own.
#[repr(align(128))]
struct Shard<T>(Mutex<Counts<T>>);

struct Counts<T> {
    /// (item, failures, tick of the last failure), probed by precomputed hash.
    table: HashTable<(T, u32, u64)>,
    tick: u64,
    max_items: usize,
}

impl<T: Clone + Eq + Hash> FailureCounts<T> {
    fn new(max_items: usize) -> Self {
        let max_items = max_items.max(1);
        // A power of two (the shard is picked by mask), each shard at least MIN_SHARD_ITEMS.
        let n = 1usize << (max_items / MIN_SHARD_ITEMS).clamp(1, SHARDS).ilog2();
        FailureCounts {
            hasher: ItemHasher::default(),
            shards: (0..n)
                .map(|_| {
                    Shard(Mutex::new(Counts {
                        table: HashTable::new(),
                        tick: 0,
                        // Floor: the shards together never exceed `max_items`.
                        max_items: max_items / n,
                    }))
                })
                .collect(),
        }
    }

    /// The item's hash and its shard. The shard comes from high bits, which the table's
    /// bucket index (low bits) and control bytes (top 7 bits) leave independent.
    fn locate(&self, item: &T) -> (u64, &Mutex<Counts<T>>) {
        let hash = self.hasher.hash_one(item);
        let i = (hash >> 40) as usize & (self.shards.len() - 1);
        (hash, &self.shards[i].0)
    }

    /// Increments the failure count of `item`; returns the count before the increment.
    fn bump(&self, item: &T) -> u32 {
        // Hash before taking the lock: the critical section only probes.
        let (hash, shard) = self.locate(item);
        let hasher = &self.hasher;
        let mut c = shard.lock();
        c.tick += 1;
        let tick = c.tick;
        if c.table.len() >= c.max_items && c.table.find(hash, |e| e.0 == *item).is_none() {
            c.evict_oldest_half();
        }
        match c
            .table
            .entry(hash, |e| e.0 == *item, |e| hasher.hash_one(&e.0))
        {
            TableEntry::Occupied(mut o) => {
                let e = o.get_mut();
                let before = e.1;
                e.1 = e.1.saturating_add(1);
                e.2 = tick;
                before
            }
            TableEntry::Vacant(v) => {
                v.insert((item.clone(), 1, tick));
                0
            }
        }
    }

    fn get(&self, item: &T) -> u32 {
        let (hash, shard) = self.locate(item);
        shard
            .lock()
            .table
            .find(hash, |e| e.0 == *item)
            .map_or(0, |e| e.1)
    }

    fn remove(&self, item: &T) {
        let (hash, shard) = self.locate(item);
        if let Ok(o) = shard.lock().table.find_entry(hash, |e| e.0 == *item) {
            o.remove();
        }
    }

    fn len(&self) -> usize {
        self.shards.iter().map(|s| s.0.lock().table.len()).sum()
    }
}

impl<T> Counts<T> {
    fn evict_oldest_half(&mut self) {
        let mut touches: Vec<u64> = self.table.iter().map(|e| e.2).collect();
        let mid = touches.len() / 2;
        let (_, &mut cutoff, _) = touches.select_nth_unstable(mid);
        self.table.retain(|e| e.2 >= cutoff);
    }
}

/// Per-item exponential backoff: `base * 2^failures`, capped at `max`.
///
/// The n-th consecutive `when` for an item (n from 0) returns `min(base * 2^n, max)`; with the
/// controller defaults (5 ms, 1000 s) that is 5 ms, 10 ms, 20 ms, ... reaching the cap on the
/// 19th failure. Arithmetic saturates, so huge failure counts stay at `max`.
pub struct ItemExponentialFailureRateLimiter<T> {
    base: Duration,
    max: Duration,
    failures: FailureCounts<T>,
}

impl<T> fmt::Debug for ItemExponentialFailureRateLimiter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemExponentialFailureRateLimiter")
            .field("base", &self.base)
            .field("max", &self.max)
            .finish_non_exhaustive()
    }
}

impl<T: Clone + Eq + Hash> ItemExponentialFailureRateLimiter<T> {
    /// A limiter starting at `base` and doubling up to `max`, tracking at most
    /// [`DEFAULT_MAX_TRACKED_ITEMS`] items.
    pub fn new(base: Duration, max: Duration) -> Self {
        Self::with_max_tracked(base, max, DEFAULT_MAX_TRACKED_ITEMS)
    }

    /// Like [`Self::new`] with an explicit bound on tracked items (at least 1).
    pub fn with_max_tracked(base: Duration, max: Duration, max_items: usize) -> Self {
        ItemExponentialFailureRateLimiter {
            base,
            max,
            failures: FailureCounts::new(max_items),
        }
    }

    /// Number of items currently tracked (bounded by the `max_items` given at construction).
    pub fn tracked(&self) -> usize {
        self.failures.len()
    }

    fn delay(&self, exp: u32) -> Duration {
        let nanos = self.base.as_nanos();
        let scaled = if exp >= 64 {
            u128::MAX
        } else {
            nanos.saturating_mul(1u128 << exp)
        };
        if scaled >= self.max.as_nanos() {
            self.max
        } else {
            // scaled < max, which fits in a Duration.
            Duration::new(
                (scaled / 1_000_000_000) as u64,
                (scaled % 1_000_000_000) as u32,
            )
        }
    }
}

impl<T: Clone + Eq + Hash + Send + Sync> RateLimiter<T> for ItemExponentialFailureRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        let exp = self.failures.bump(item);
        self.delay(exp)
    }
    fn forget(&self, item: &T) {
        self.failures.remove(item);
    }
    fn num_requeues(&self, item: &T) -> u32 {
        self.failures.get(item)
    }
}

/// Fast delay for the first `max_fast_attempts` failures of an item, then the slow delay.
pub struct ItemFastSlowRateLimiter<T> {
    fast: Duration,
    slow: Duration,
    max_fast_attempts: u32,
    failures: FailureCounts<T>,
}

impl<T> fmt::Debug for ItemFastSlowRateLimiter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemFastSlowRateLimiter")
            .field("fast", &self.fast)
            .field("slow", &self.slow)
            .field("max_fast_attempts", &self.max_fast_attempts)
            .finish_non_exhaustive()
    }
}

impl<T: Clone + Eq + Hash> ItemFastSlowRateLimiter<T> {
    /// Attempts 1..=`max_fast_attempts` wait `fast`, later ones `slow`. Tracks at most
    /// [`DEFAULT_MAX_TRACKED_ITEMS`] items.
    pub fn new(fast: Duration, slow: Duration, max_fast_attempts: u32) -> Self {
        Self::with_max_tracked(fast, slow, max_fast_attempts, DEFAULT_MAX_TRACKED_ITEMS)
    }

    /// Like [`Self::new`] with an explicit bound on tracked items (at least 1).
    pub fn with_max_tracked(
        fast: Duration,
        slow: Duration,
        max_fast_attempts: u32,
        max_items: usize,
    ) -> Self {
        ItemFastSlowRateLimiter {
            fast,
            slow,
            max_fast_attempts,
            failures: FailureCounts::new(max_items),
        }
    }
}

impl<T: Clone + Eq + Hash + Send + Sync> RateLimiter<T> for ItemFastSlowRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        let attempts = self.failures.bump(item).saturating_add(1);
        if attempts <= self.max_fast_attempts {
            self.fast
        } else {
            self.slow
        }
    }
    fn forget(&self, item: &T) {
        self.failures.remove(item);
    }
    fn num_requeues(&self, item: &T) -> u32 {
        self.failures.get(item)
    }
}

/// Token bucket state (golang.org/x/time/rate semantics, one token per reservation).
#[derive(Debug)]
struct Bucket {
    tokens: f64,
    last: Instant,
}

/// A global token bucket shared by all items: `rate` tokens per second, at most `burst` stored.
///
/// Reservation semantics of `golang.org/x/time/rate` `Limiter.Reserve().Delay()`: every `when`
/// takes a token, going into debt when the bucket is empty, and returns how long until that
/// token exists. With 10 qps and burst 100, a full bucket gives 100 zero delays, then
/// 100 ms, 200 ms, ... Per-item methods are no-ops (`num_requeues` is 0).
///
/// `rate = f64::INFINITY` never delays (but still runs on each call). Edge cases follow x/time/rate:
/// with `rate == 0` the first `burst` reservations pass and later ones wait "forever"; a finite
/// rate with `burst == 0` always waits "forever". "Forever" is `Duration::MAX`, which the queue
/// treats as a far-future ready time.
pub struct BucketRateLimiter {
    rate: f64,
    burst: f64,
    clock: Arc<dyn Clock>,
    state: Mutex<Bucket>,
}

impl fmt::Debug for BucketRateLimiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BucketRateLimiter")
            .field("rate", &self.rate)
            .field("burst", &self.burst)
            .finish_non_exhaustive()
    }
}

impl BucketRateLimiter {
    /// A full bucket of `burst` tokens refilled at `rate` per second, on the Tokio clock.
    pub fn new(rate: f64, burst: u32) -> Self {
        Self::with_clock(rate, burst, Arc::new(TokioClock))
    }

    /// Like [`Self::new`] with an explicit clock. A NaN or negative rate is treated as 0.
    pub fn with_clock(rate: f64, burst: u32, clock: Arc<dyn Clock>) -> Self {
        let rate = if rate.is_nan() || rate < 0.0 {
            0.0
        } else {
            rate
        };
        let last = clock.now();
        BucketRateLimiter {
            rate,
            burst: f64::from(burst),
            clock,
            state: Mutex::new(Bucket {
                tokens: f64::from(burst),
                last,
            }),
        }
    }

    fn reserve(&self) -> Duration {
        if self.rate == f64::INFINITY {
            return Duration::ZERO; // x/time/rate's Inf: every reservation passes, no state kept
        }
        let mut b = self.state.lock();
        if self.rate == 0.0 {
            if b.tokens >= 1.0 {
                b.tokens -= 1.0;
                return Duration::ZERO;
            }
            return Duration::MAX;
        }
        if self.burst < 1.0 {
            return Duration::MAX;
        }
        let now = self.clock.now().max(b.last);
        let elapsed = now.duration_since(b.last).as_secs_f64();
        b.tokens = (b.tokens + elapsed * self.rate).min(self.burst) - 1.0;
        b.last = now;
        if b.tokens >= 0.0 {
            Duration::ZERO
        } else {
            // Like x/time/rate: nanoseconds as a float, then truncated (0.3 s is 300 ms).
            let nanos = (-b.tokens / self.rate) * 1e9;
            if nanos >= u64::MAX as f64 {
                Duration::MAX
            } else {
                Duration::from_nanos(nanos as u64)
            }
        }
    }
}

impl<T> RateLimiter<T> for BucketRateLimiter {
    fn when(&self, _: &T) -> Duration {
        self.reserve()
    }
    fn forget(&self, _: &T) {}
    fn num_requeues(&self, _: &T) -> u32 {
        0
    }
}

/// The maximum of several limiters. Every `when` consults all of them (so a bucket is always
/// charged); `num_requeues` is the maximum; `forget` forgets in all.
pub struct MaxOfRateLimiter<T> {
    limiters: Vec<Box<dyn RateLimiter<T>>>,
}

impl<T> fmt::Debug for MaxOfRateLimiter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MaxOfRateLimiter")
            .field("limiters", &self.limiters.len())
            .finish()
    }
}

impl<T> MaxOfRateLimiter<T> {
    /// Combines `limiters`; with none, every delay is zero.
    pub fn new(limiters: Vec<Box<dyn RateLimiter<T>>>) -> Self {
        MaxOfRateLimiter { limiters }
    }
}

impl<T> RateLimiter<T> for MaxOfRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        self.limiters
            .iter()
            .map(|l| l.when(item))
            .max()
            .unwrap_or(Duration::ZERO)
    }
    fn forget(&self, item: &T) {
        for l in &self.limiters {
            l.forget(item);
        }
    }
    fn num_requeues(&self, item: &T) -> u32 {
        self.limiters
            .iter()
            .map(|l| l.num_requeues(item))
            .max()
            .unwrap_or(0)
    }
}

/// Caps the delay of an inner limiter at `max_delay`.
pub struct WithMaxWaitRateLimiter<L> {
    inner: L,
    max_delay: Duration,
}

impl<L> fmt::Debug for WithMaxWaitRateLimiter<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WithMaxWaitRateLimiter")
            .field("max_delay", &self.max_delay)
            .finish_non_exhaustive()
    }
}

impl<L> WithMaxWaitRateLimiter<L> {
    /// Wraps `inner`, never returning more than `max_delay`.
    pub fn new(inner: L, max_delay: Duration) -> Self {
        WithMaxWaitRateLimiter { inner, max_delay }
    }
}

impl<T, L: RateLimiter<T>> RateLimiter<T> for WithMaxWaitRateLimiter<L> {
    fn when(&self, item: &T) -> Duration {
        self.inner.when(item).min(self.max_delay)
    }
    fn forget(&self, item: &T) {
        self.inner.forget(item)
    }
    fn num_requeues(&self, item: &T) -> u32 {
        self.inner.num_requeues(item)
    }
}

/// client-go's `DefaultTypedControllerRateLimiter`: the maximum of per-item exponential backoff
/// (5 ms doubling to 1000 s) and a global token bucket of 10 qps with burst 100.
pub fn default_controller_rate_limiter<T>() -> MaxOfRateLimiter<T>
where
    T: Clone + Eq + Hash + Send + Sync + 'static,
{
    MaxOfRateLimiter::new(vec![
        Box::new(ItemExponentialFailureRateLimiter::new(
            Duration::from_millis(5),
            Duration::from_secs(1000),
        )),
        Box::new(BucketRateLimiter::new(10.0, 100)),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_bounds_are_sharded_without_exceeding_the_bound() {
        let f = FailureCounts::<u32>::new(DEFAULT_MAX_TRACKED_ITEMS);
        assert_eq!(f.shards.len(), SHARDS);
        let f = FailureCounts::<u32>::new(3 * MIN_SHARD_ITEMS);
        assert_eq!(f.shards.len(), 2);
        let f = FailureCounts::new(5000);
        for i in 0..50_000u32 {
            f.bump(&i);
        }
        assert!(f.len() <= 5000, "{} tracked", f.len());
        assert!(
            f.len() >= 2000,
            "eviction drops at most half a shard: {}",
            f.len()
        );
        assert_eq!(
            f.get(&49_999),
            1,
            "the most recent failure survives eviction"
        );
    }

    #[test]
    fn failure_counts_stay_bounded_and_keep_recent_items() {
        let f = FailureCounts::new(8);
        for i in 0..1000u32 {
            f.bump(&i);
            assert!(f.len() <= 8);
        }
        assert_eq!(f.get(&999), 1, "the most recent failure survives eviction");
        assert_eq!(f.get(&0), 0, "old entries were dropped");
        assert_eq!(f.bump(&999), 1);
        assert_eq!(f.get(&999), 2);
    }
}
