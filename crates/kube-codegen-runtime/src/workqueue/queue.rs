//! [`WorkQueue`]: the deduplicating, delaying, rate-limiting queue handle.

use std::borrow::Borrow;
use std::fmt;
use std::future::Future;
use std::hash::{BuildHasher, Hash};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use tokio::runtime::Handle;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::clock::{Clock, TokioClock, deadline_after};
use super::core::{Core, GetPoll, ItemHasher, Wakes};
use super::delaying::DelayHeap;
use super::metrics::{MetricsProvider, QueueMetrics};
use super::rate_limiters::{RateLimiter, default_controller_rate_limiter};

/// How often the unfinished-work gauges are refreshed (client-go's
/// `defaultUnfinishedWorkUpdatePeriod`).
pub const UNFINISHED_WORK_UPDATE_PERIOD: Duration = Duration::from_millis(500);

/// A controller work queue (client-go's rate-limiting workqueue), for async Rust on Tokio.
///
/// Semantics, per item `T` (typically a `namespace/name` key):
/// - **Deduplicating**: an item is queued at most once; adding it again while queued is a no-op
///   and does not move it (FIFO by first add).
/// - **Never concurrent**: an item handed out by [`get`](Self::get) is *processing* until
///   [`done`](Self::done); adding it meanwhile marks it dirty and it is queued again by `done`,
///   so no two workers ever hold the same item.
/// - **Delaying**: [`add_after`](Self::add_after) parks an item in a timer heap (one timer per
///   queue); for a duplicate the earliest ready time wins. Unlike client-go, waiting items
///   are visible through [`len_waiting`](Self::len_waiting) and the `workqueue_waiting_depth`
///   metric.
/// - **Priorities** (controller-runtime's priority queue): every add carries a priority
///   ([`DEFAULT_PRIORITY`](super::DEFAULT_PRIORITY) unless given through
///   [`add_with_opts`](Self::add_with_opts)); ready items are handed out highest priority
///   first, FIFO within a priority, and a duplicate add keeps the higher priority (moving a
///   queued item up). [`get_with_priority`](Self::get_with_priority) tells the priority an
///   item was queued with.
/// - **Rate limiting**: [`add_rate_limited`](Self::add_rate_limited) delays by the queue's
///   [`RateLimiter`]; [`forget`](Self::forget) clears the item's limiter state (it does not
///   replace `done`).
/// - **Shutdown**: after [`shutdown`](Self::shutdown) adds are dropped, getters receive what is
///   still queued and then `None`; items waiting in the delay heap are dropped.
///   [`shutdown_with_drain`](Self::shutdown_with_drain) additionally waits until every queued
///   *and* in-flight item is done (client-go waits only for in-flight items).
///
/// The handle is cheap to clone (an `Arc`); all clones are the same queue. A delaying queue
/// starts its timer on first use: with a real-time clock ([`Clock::is_real_time`]: the default
/// [`TokioClock`] unless Tokio's time is paused) an OS thread that waits with microsecond
/// precision, otherwise a task on the current Tokio runtime (or the one given to the builder)
/// sleeping through the clock. Either ends when the queue shuts down or every handle is dropped.
pub struct WorkQueue<T> {
    inner: Arc<Inner<T>>,
}

impl<T> Clone for WorkQueue<T> {
    fn clone(&self) -> Self {
        WorkQueue {
            inner: self.inner.clone(),
        }
    }
}

impl<T> fmt::Debug for WorkQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkQueue")
            .field("name", &self.inner.name)
            .finish_non_exhaustive()
    }
}

struct Inner<T> {
    core: Mutex<Core<T, Waker>>,
    /// Same hasher as the core's: items are hashed before the lock is taken.
    hasher: ItemHasher,
    /// Mirrors `core.shutting_down` so the delay/limiter paths can bail out without the lock.
    shutting_down: AtomicBool,
    /// Shared with the timer, which holds no strong reference to the queue while it waits.
    delayed: Arc<Timer<T>>,
    limiter: Box<dyn RateLimiter<T>>,
    clock: Arc<dyn Clock>,
    metrics: Option<Arc<QueueMetrics>>,
    runtime: Option<Handle>,
    name: String,
    /// Whether adds' priorities count (see [`WorkQueueBuilder::priorities`]).
    priorities: bool,
}

/// The delay heap and the means to wake whichever timer drives it: a Tokio task (virtual or
/// custom clocks) waiting on `task`, or an OS thread (real time) waiting on `thread`.
struct Timer<T> {
    state: Mutex<DelayState<T>>,
    thread: Condvar,
    task: Notify,
    /// The timer thread, if one was started (taken by tests to join it).
    #[cfg_attr(not(test), allow(dead_code))]
    handle: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl<T> Timer<T> {
    /// Wakes the timer (a new earliest deadline, shutdown, or the queue gone).
    fn wake(&self) {
        self.thread.notify_one();
        self.task.notify_one();
    }
}

struct DelayState<T> {
    heap: DelayHeap<T>,
    /// The deadline the timer is sleeping towards (None: sleeping until notified).
    armed: Option<Instant>,
    timer_started: bool,
    /// Shut down, or the queue was dropped: the timer exits.
    stopped: bool,
}

impl<T> Drop for Inner<T> {
    fn drop(&mut self) {
        // The timer only holds a Weak: flagging and waking it lets it see the queue is gone.
        self.delayed.state.lock().stopped = true;
        self.delayed.wake();
    }
}

/// Builds a [`WorkQueue`] with a name (for metrics), metrics provider, clock, rate limiter and
/// runtime handle. Every setting is optional.
pub struct WorkQueueBuilder<T> {
    name: String,
    provider: Option<Arc<dyn MetricsProvider>>,
    clock: Option<Arc<dyn Clock>>,
    limiter: Option<Box<dyn RateLimiter<T>>>,
    runtime: Option<Handle>,
    priorities: bool,
}

impl<T> fmt::Debug for WorkQueueBuilder<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkQueueBuilder")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl<T> WorkQueueBuilder<T>
where
    T: Clone + Eq + Hash + Send + Sync + 'static,
{
    /// The queue name, used as the `name` label of its metrics. Metrics are only recorded for
    /// a named queue with a provider (as in client-go).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The metrics provider (default: none, which skips all metric bookkeeping).
    pub fn metrics(mut self, provider: Arc<dyn MetricsProvider>) -> Self {
        self.provider = Some(provider);
        self
    }

    /// The clock for delays and metric timings (default: [`TokioClock`]). Rate limiters take
    /// their own clock at construction.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }

    /// The rate limiter behind `add_rate_limited` (default:
    /// [`default_controller_rate_limiter`]).
    pub fn rate_limiter(mut self, limiter: impl RateLimiter<T> + 'static) -> Self {
        self.limiter = Some(Box::new(limiter));
        self
    }

    /// The runtime the background tasks (timer, metrics refresh) run on, when the queue is
    /// used from outside a Tokio runtime. Default: the runtime current at `build`, else the one
    /// current at first use.
    pub fn runtime(mut self, handle: Handle) -> Self {
        self.runtime = Some(handle);
        self
    }

    /// Whether adds' priorities order the queue (default: yes, as controller-runtime's priority
    /// queue, its default since 0.23). `false` makes it client-go's plain FIFO: every add
    /// counts as [`DEFAULT_PRIORITY`](super::DEFAULT_PRIORITY).
    pub fn priorities(mut self, on: bool) -> Self {
        self.priorities = on;
        self
    }

    /// Builds the queue. With metrics enabled, starts the unfinished-work refresh task if a
    /// runtime is available (otherwise it starts with the first delayed add).
    pub fn build(self) -> WorkQueue<T> {
        let metrics = match (&self.provider, self.name.is_empty()) {
            (Some(p), false) => Some(Arc::new(QueueMetrics::new(&**p, &self.name))),
            _ => None,
        };
        let hasher = ItemHasher::default();
        let inner = Arc::new(Inner {
            core: Mutex::new(Core::new(hasher.clone(), metrics.clone())),
            hasher: hasher.clone(),
            shutting_down: AtomicBool::new(false),
            delayed: Arc::new(Timer {
                state: Mutex::new(DelayState {
                    heap: DelayHeap::new(hasher.clone()),
                    armed: None,
                    timer_started: false,
                    stopped: false,
                }),
                thread: Condvar::new(),
                task: Notify::new(),
                handle: Mutex::new(None),
            }),
            limiter: self
                .limiter
                .unwrap_or_else(|| Box::new(default_controller_rate_limiter())),
            clock: self.clock.unwrap_or_else(|| Arc::new(TokioClock)),
            metrics,
            runtime: self.runtime.or_else(|| Handle::try_current().ok()),
            name: self.name,
            priorities: self.priorities,
        });
        let q = WorkQueue { inner };
        // The refresh runs on the timer: a thread needs no runtime, a task does.
        if q.inner.metrics.is_some() && (q.inner.runtime.is_some() || q.inner.clock.is_real_time())
        {
            q.ensure_timer();
        }
        q
    }
}

impl<T> Default for WorkQueue<T>
where
    T: Clone + Eq + Hash + Send + Sync + 'static,
{
    fn default() -> Self {
        Self::new()
    }
}

impl<T> WorkQueue<T>
where
    T: Clone + Eq + Hash + Send + Sync + 'static,
{
    /// An unnamed queue without metrics, with the default controller rate limiter.
    pub fn new() -> Self {
        Self::builder().build()
    }

    /// A builder for a configured queue.
    pub fn builder() -> WorkQueueBuilder<T> {
        WorkQueueBuilder {
            name: String::new(),
            provider: None,
            clock: None,
            limiter: None,
            runtime: None,
            priorities: true,
        }
    }

    /// The queue name given to the builder ("" if none).
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    fn now(&self) -> Instant {
        self.inner.clock.now()
    }

    /// Queues `item` unless it is already queued; if it is being processed it is queued again
    /// when the worker calls [`done`](Self::done). Dropped after shutdown.
    pub fn add(&self, item: T) {
        self.add_with_priority(item, super::DEFAULT_PRIORITY);
    }

    /// Like [`add`](Self::add) with a priority: higher is handed out first; an item already
    /// queued keeps the higher of its priority and this one.
    pub fn add_with_priority(&self, item: T, priority: i32) {
        let priority = self.priority(priority);
        let clock = &self.inner.clock;
        let hash = self.inner.hasher.hash_one(&item);
        let wake = self
            .inner
            .core
            .lock()
            .add(item, hash, priority, || clock.now());
        if let Some(w) = wake {
            w.wake();
        }
    }

    /// Like [`add`](Self::add), from a borrowed form of the item (`&str` for `String` keys):
    /// the item is only cloned when it is actually queued, so re-adding a queued key costs no
    /// allocation.
    pub fn add_ref<Q>(&self, item: &Q)
    where
        T: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = T> + ?Sized,
    {
        let clock = &self.inner.clock;
        let hash = self.inner.hasher.hash_one(item);
        let wake = self
            .inner
            .core
            .lock()
            .add_ref(item, hash, super::DEFAULT_PRIORITY, || clock.now());
        if let Some(w) = wake {
            w.wake();
        }
    }

    /// Queues several hashed items under one lock acquisition (used by the timer).
    fn add_batch(&self, items: &mut Vec<(T, u64, i32)>) {
        let clock = &self.inner.clock;
        let mut wakes = Vec::new();
        {
            let mut core = self.inner.core.lock();
            for (item, hash, priority) in items.drain(..) {
                wakes.extend(core.add(item, hash, priority, || clock.now()));
            }
        }
        for w in wakes {
            w.wake();
        }
    }

    /// Waits for the next item. Returns `None` once the queue is shut down and nothing queued
    /// is left to hand out. The caller must call [`done`](Self::done) with the item when it
    /// has finished with it.
    ///
    /// Cancel-safe: dropping the future before it completes loses no item.
    pub fn get(&self) -> Get<'_, T> {
        Get {
            inner: GetWithPriority {
                queue: self,
                key: None,
            },
        }
    }

    /// Like [`get`](Self::get), with the priority the item was queued with (controller-runtime's
    /// `GetWithPriority`), so a retry can keep it.
    pub fn get_with_priority(&self) -> GetWithPriority<'_, T> {
        GetWithPriority {
            queue: self,
            key: None,
        }
    }

    /// Marks `item` as finished. If it was added again while processing, it is queued again.
    /// Calling it for an item that is not being processed does nothing.
    pub fn done(&self, item: &T) {
        let clock = &self.inner.clock;
        let hash = self.inner.hasher.hash_one(item);
        let wakes = self.inner.core.lock().done(item, hash, || clock.now());
        deliver(wakes);
    }

    /// Number of queued items (excluding in-flight items and items waiting in the delay heap).
    pub fn len(&self) -> usize {
        self.inner.core.lock().len()
    }

    /// Whether no item is queued (see [`len`](Self::len)).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of items waiting in the delay heap (`add_after` / `add_rate_limited`).
    pub fn len_waiting(&self) -> usize {
        self.inner.delayed.state.lock().heap.len()
    }

    /// Number of items handed out by `get` and not yet `done` (a scan: O(tracked items)).
    pub fn len_in_flight(&self) -> usize {
        self.inner.core.lock().in_flight()
    }

    /// Whether [`shutdown`](Self::shutdown) or [`shutdown_with_drain`](Self::shutdown_with_drain)
    /// was called.
    pub fn is_shutting_down(&self) -> bool {
        self.inner.shutting_down.load(Ordering::Acquire)
    }

    /// Stops the queue: later adds are dropped, waiting items are discarded, getters receive
    /// what is still queued and then `None`. Also ends a pending `shutdown_with_drain` early.
    pub fn shutdown(&self) {
        self.inner.shutting_down.store(true, Ordering::Release);
        let wakes = self.inner.core.lock().shutdown();
        self.stop_timer();
        deliver(wakes);
    }

    /// Shuts down like [`shutdown`](Self::shutdown), then waits until every item that was
    /// queued or in flight has been handed out and marked done (items re-added while in flight
    /// before the shutdown are processed too). Waits forever if a worker never calls `done`;
    /// bound it with a timeout, or call `shutdown` to end the wait.
    pub async fn shutdown_with_drain(&self) {
        self.inner.shutting_down.store(true, Ordering::Release);
        let wakes = self.inner.core.lock().shutdown_with_drain();
        self.stop_timer();
        deliver(wakes);
        std::future::poll_fn(|cx| {
            if self.inner.core.lock().poll_drain(|| cx.waker().clone()) {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await
    }

    fn stop_timer(&self) {
        {
            let mut d = self.inner.delayed.state.lock();
            d.stopped = true;
            d.heap.clear();
        }
        if let Some(m) = &self.inner.metrics {
            m.set_waiting(0);
        }
        self.inner.delayed.wake();
    }

    /// Queues `item` after `delay` (immediately if `delay` is zero). If the item is already
    /// waiting, the earlier ready time wins. Dropped after shutdown.
    ///
    /// # Panics
    /// If a delay is needed, the clock is not real time (so the timer is a Tokio task), the
    /// queue was built outside a Tokio runtime without [`WorkQueueBuilder::runtime`], and this
    /// is called outside a runtime too.
    pub fn add_after(&self, item: T, delay: Duration) {
        self.add_after_with_priority(item, delay, super::DEFAULT_PRIORITY);
    }

    /// `priority`, or the default one if this queue ignores priorities.
    fn priority(&self, priority: i32) -> i32 {
        if self.inner.priorities {
            priority
        } else {
            super::DEFAULT_PRIORITY
        }
    }

    fn add_after_with_priority(&self, item: T, delay: Duration, priority: i32) {
        let priority = self.priority(priority);
        if self.is_shutting_down() {
            return;
        }
        if let Some(m) = &self.inner.metrics {
            m.retry();
        }
        if delay.is_zero() {
            self.add_with_priority(item, priority);
            return;
        }
        let ready_at = deadline_after(self.now(), delay);
        let hash = self.inner.hasher.hash_one(&item);
        let (notify, start) = {
            let mut d = self.inner.delayed.state.lock();
            if d.stopped {
                return;
            }
            let changed = d.heap.push(item, hash, ready_at, priority);
            if let Some(m) = &self.inner.metrics {
                m.set_waiting(d.heap.len());
            }
            // Only disturb the timer when it sleeps towards a later deadline.
            let notify = changed && d.armed.is_none_or(|a| ready_at < a);
            if notify {
                d.armed = Some(ready_at);
            }
            (notify, !d.timer_started)
        };
        if start {
            self.ensure_timer();
        }
        if notify {
            self.inner.delayed.wake();
        }
    }

    /// Queues `item` after the delay its rate limiter assigns (which records a retry).
    pub fn add_rate_limited(&self, item: T) {
        self.add_with_opts(
            item,
            AddOpts {
                rate_limited: true,
                ..AddOpts::default()
            },
        );
    }

    /// controller-runtime's `AddWithOpts`: queues `item` with `opts.priority` after
    /// `opts.after`, or after its rate limiter's delay if `opts.rate_limited` and that is
    /// shorter (or no `after` was given).
    pub fn add_with_opts(&self, item: T, opts: AddOpts) {
        if self.is_shutting_down() {
            return;
        }
        let mut after = opts.after;
        if opts.rate_limited {
            let limited = self.inner.limiter.when(&item);
            if after.is_zero() || limited < after {
                after = limited;
            }
        }
        if after.is_zero() && !opts.rate_limited {
            self.add_with_priority(item, opts.priority);
        } else {
            self.add_after_with_priority(item, after, opts.priority);
        }
    }

    /// Clears the rate limiter's state for `item` (call it when the item was processed
    /// successfully). It still needs [`done`](Self::done).
    pub fn forget(&self, item: &T) {
        self.inner.limiter.forget(item);
    }

    /// How many times `item` was rate limited since it was last forgotten.
    pub fn num_requeues(&self, item: &T) -> u32 {
        self.inner.limiter.num_requeues(item)
    }

    /// Starts the timer (delays + metrics refresh) once: an OS thread when the clock is real
    /// time, else a Tokio task.
    fn ensure_timer(&self) {
        {
            let mut d = self.inner.delayed.state.lock();
            if d.timer_started {
                return;
            }
            d.timer_started = true;
        }
        if self.inner.clock.is_real_time() {
            let weak = Arc::downgrade(&self.inner);
            let timer = self.inner.delayed.clone();
            let clock = self.inner.clock.clone();
            let metrics = self.inner.metrics.clone();
            let spawned = std::thread::Builder::new()
                .name("workqueue-timer".to_owned())
                .spawn(move || timer_thread(weak, timer, clock, metrics));
            // Without a thread (resource exhaustion), fall back to the Tokio timer task.
            if let Ok(h) = spawned {
                *self.inner.delayed.handle.lock() = Some(h);
                return;
            }
        }
        let handle = match Handle::try_current() {
            Ok(h) => h,
            Err(_) => self.inner.runtime.clone().expect(
                "WorkQueue needs a Tokio runtime for delayed adds: use it inside one or pass \
                 WorkQueueBuilder::runtime",
            ),
        };
        let weak = Arc::downgrade(&self.inner);
        let timer = self.inner.delayed.clone();
        handle.spawn(timer_loop(weak, timer));
    }
}

fn deliver(wakes: Wakes<Waker>) {
    for w in wakes.into_iter() {
        w.wake();
    }
}

/// The timer thread of a queue on real time: like [`timer_loop`], but it sleeps on a condition
/// variable, whose futex timeout has microsecond precision where Tokio's timer wheel rounds up
/// to the next millisecond tick. Due items move into the queue in one batch per wake-up.
fn timer_thread<T>(
    weak: Weak<Inner<T>>,
    timer: Arc<Timer<T>>,
    clock: Arc<dyn Clock>,
    metrics: Option<Arc<QueueMetrics>>,
) where
    T: Clone + Eq + Hash + Send + Sync + 'static,
{
    let mut due = Vec::new();
    let mut next_metrics: Option<Instant> = None;
    let mut d = timer.state.lock();
    loop {
        if d.stopped {
            return;
        }
        let now = clock.now();
        d.heap.pop_due(now, &mut due);
        if !due.is_empty()
            && let Some(m) = &metrics
        {
            m.set_waiting(d.heap.len());
        }
        d.armed = d.heap.next_deadline();
        let refresh = metrics.is_some() && next_metrics.is_none_or(|at| at <= now);
        if !due.is_empty() || refresh {
            // Queue the batch without the heap lock, so adders are not held up; the strong
            // reference is dropped before relocking (the queue may be dropped on this thread).
            let gone = parking_lot::MutexGuard::unlocked(&mut d, || {
                let Some(inner) = weak.upgrade() else {
                    return true;
                };
                let queue = WorkQueue { inner };
                if !due.is_empty() {
                    queue.add_batch(&mut due);
                }
                if refresh && let Some(m) = &metrics {
                    let (total, longest) = queue.inner.core.lock().unfinished(now);
                    m.set_unfinished(total, longest);
                    next_metrics = Some(now + UNFINISHED_WORK_UPDATE_PERIOD);
                }
                false
            });
            if gone {
                return;
            }
            continue; // time moved on: look again before sleeping
        }
        let wake_at = match (d.armed, next_metrics) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        match wake_at {
            Some(at) => {
                timer
                    .thread
                    .wait_for(&mut d, at.saturating_duration_since(now));
            }
            None => timer.thread.wait(&mut d),
        }
    }
}

/// The single timer task of a queue: moves due items from the heap into the queue, sleeps
/// towards the earliest deadline, and refreshes the unfinished-work gauges when metrics are on.
async fn timer_loop<T>(weak: Weak<Inner<T>>, timer: Arc<Timer<T>>)
where
    T: Clone + Eq + Hash + Send + Sync + 'static,
{
    let mut due = Vec::new();
    let mut next_metrics: Option<Instant> = None;
    loop {
        let (clock, wake_at) = {
            let Some(inner) = weak.upgrade() else { return };
            let queue = WorkQueue { inner };
            let inner = &queue.inner;
            let now = inner.clock.now();
            let next = {
                let mut d = inner.delayed.state.lock();
                if d.stopped {
                    return;
                }
                d.heap.pop_due(now, &mut due);
                if !due.is_empty()
                    && let Some(m) = &inner.metrics
                {
                    m.set_waiting(d.heap.len());
                }
                d.armed = d.heap.next_deadline();
                d.armed
            };
            if !due.is_empty() {
                queue.add_batch(&mut due);
            }
            if let Some(m) = &inner.metrics {
                let at = *next_metrics.get_or_insert(now);
                if at <= now {
                    let (total, longest) = inner.core.lock().unfinished(now);
                    m.set_unfinished(total, longest);
                    next_metrics = Some(now + UNFINISHED_WORK_UPDATE_PERIOD);
                }
            }
            let wake_at = match (next, next_metrics) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            (inner.clock.clone(), wake_at)
        };
        // No strong reference is held while sleeping, so dropping the queue ends the task.
        match wake_at {
            Some(at) => {
                tokio::select! {
                    _ = timer.task.notified() => {}
                    _ = clock.sleep_until(at) => {}
                }
            }
            None => timer.task.notified().await,
        }
    }
}

/// How to queue an item ([`WorkQueue::add_with_opts`], controller-runtime's `AddOpts`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AddOpts {
    /// Queue it after this delay (zero: now).
    pub after: Duration,
    /// Delay it by the queue's rate limiter (the shorter of that and `after`, if given).
    pub rate_limited: bool,
    /// Its priority: higher is handed out first ([`DEFAULT_PRIORITY`](super::DEFAULT_PRIORITY)
    /// is 0, [`LOW_PRIORITY`](super::LOW_PRIORITY) what initial lists and resyncs get).
    pub priority: i32,
}

/// Future returned by [`WorkQueue::get`].
#[must_use = "futures do nothing unless polled"]
pub struct Get<'a, T> {
    inner: GetWithPriority<'a, T>,
}

impl<T> fmt::Debug for Get<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Get")
            .field("waiting", &self.inner.key.is_some())
            .finish()
    }
}

impl<T: Clone + Eq + Hash> Future for Get<'_, T> {
    type Output = Option<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        Pin::new(&mut self.get_mut().inner)
            .poll(cx)
            .map(|got| got.map(|(item, _)| item))
    }
}

/// Future returned by [`WorkQueue::get_with_priority`]: the item and its priority.
#[must_use = "futures do nothing unless polled"]
pub struct GetWithPriority<'a, T> {
    queue: &'a WorkQueue<T>,
    key: Option<usize>,
}

impl<T> fmt::Debug for GetWithPriority<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GetWithPriority")
            .field("waiting", &self.key.is_some())
            .finish()
    }
}

impl<T: Clone + Eq + Hash> Future for GetWithPriority<'_, T> {
    type Output = Option<(T, i32)>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<(T, i32)>> {
        let this = self.get_mut();
        // Take part in Tokio's cooperative budget, so a worker that always finds work still
        // lets other tasks on its thread run.
        let coop = std::task::ready!(tokio::task::coop::poll_proceed(cx));
        let inner = &this.queue.inner;
        let clock = &inner.clock;
        let r = inner
            .core
            .lock()
            .poll_get(&mut this.key, || cx.waker().clone(), || clock.now());
        match r {
            GetPoll::Item(item, priority) => {
                coop.made_progress();
                Poll::Ready(Some((item, priority)))
            }
            GetPoll::Shutdown => Poll::Ready(None),
            GetPoll::Wait => Poll::Pending,
        }
    }
}

impl<T> Drop for GetWithPriority<'_, T> {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            let wake = self.queue.inner.core.lock().cancel_get(key);
            if let Some(w) = wake {
                w.wake();
            }
        }
    }
}

#[cfg(test)]
mod timer_thread_tests {
    use super::*;

    fn take_thread(q: &WorkQueue<u64>) -> Option<std::thread::JoinHandle<()>> {
        q.inner.delayed.handle.lock().take()
    }

    #[test]
    fn timer_thread_exits_when_the_queue_is_dropped() {
        // Outside any runtime Tokio's clock is the real one, so the timer is a thread.
        let q: WorkQueue<u64> = WorkQueue::new();
        q.add_after(1, Duration::from_secs(3600));
        let thread = take_thread(&q).expect("real time: a timer thread");
        drop(q);
        thread.join().expect("timer thread ends cleanly");
    }

    #[test]
    fn timer_thread_exits_on_shutdown() {
        let q: WorkQueue<u64> = WorkQueue::new();
        q.add_after(1, Duration::from_secs(3600));
        let thread = take_thread(&q).expect("real time: a timer thread");
        q.shutdown();
        thread.join().expect("timer thread ends cleanly");
        assert_eq!(q.len_waiting(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn paused_time_uses_a_tokio_task_not_a_thread() {
        let q: WorkQueue<u64> = WorkQueue::new();
        q.add_after(1, Duration::from_millis(5));
        assert!(take_thread(&q).is_none());
        assert_eq!(q.get().await, Some(1));
    }

    /// Records the last value of the waiting-depth gauge.
    #[derive(Debug, Default, Clone)]
    struct WaitingGauge(Arc<Mutex<Vec<f64>>>);

    impl crate::workqueue::SettableGaugeMetric for WaitingGauge {
        fn set(&self, v: f64) {
            self.0.lock().push(v);
        }
    }

    #[derive(Debug, Default)]
    struct Recorder(WaitingGauge);

    impl MetricsProvider for Recorder {
        fn new_depth_metric(&self, n: &str) -> Box<dyn crate::workqueue::GaugeMetric> {
            crate::workqueue::NoopMetricsProvider.new_depth_metric(n)
        }
        fn new_adds_metric(&self, n: &str) -> Box<dyn crate::workqueue::CounterMetric> {
            crate::workqueue::NoopMetricsProvider.new_adds_metric(n)
        }
        fn new_latency_metric(&self, n: &str) -> Box<dyn crate::workqueue::HistogramMetric> {
            crate::workqueue::NoopMetricsProvider.new_latency_metric(n)
        }
        fn new_work_duration_metric(&self, n: &str) -> Box<dyn crate::workqueue::HistogramMetric> {
            crate::workqueue::NoopMetricsProvider.new_work_duration_metric(n)
        }
        fn new_unfinished_work_seconds_metric(
            &self,
            n: &str,
        ) -> Box<dyn crate::workqueue::SettableGaugeMetric> {
            crate::workqueue::NoopMetricsProvider.new_unfinished_work_seconds_metric(n)
        }
        fn new_longest_running_processor_seconds_metric(
            &self,
            n: &str,
        ) -> Box<dyn crate::workqueue::SettableGaugeMetric> {
            crate::workqueue::NoopMetricsProvider.new_longest_running_processor_seconds_metric(n)
        }
        fn new_retries_metric(&self, n: &str) -> Box<dyn crate::workqueue::CounterMetric> {
            crate::workqueue::NoopMetricsProvider.new_retries_metric(n)
        }
        fn new_waiting_depth_metric(
            &self,
            _: &str,
        ) -> Box<dyn crate::workqueue::SettableGaugeMetric> {
            Box::new(self.0.clone())
        }
    }

    #[test]
    fn timer_thread_without_a_runtime_moves_items_and_updates_waiting_depth() {
        let recorder = Recorder::default();
        let gauge = recorder.0.clone();
        let q: WorkQueue<u64> = WorkQueue::builder()
            .name("timer-thread")
            .metrics(Arc::new(recorder))
            .build();
        let thread = take_thread(&q).expect("metrics start the timer thread at build");
        q.add_after(1, Duration::from_secs(3600));
        q.add_after(2, Duration::from_millis(1));
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime without timers: the thread does the waiting");
        assert_eq!(rt.block_on(q.get()), Some(2));
        // The thread records the depth left behind before it queues the due item.
        assert_eq!(gauge.0.lock().last(), Some(&1.0));
        drop(q);
        thread.join().expect("timer thread ends cleanly");
    }

    #[test]
    fn real_time_delays_are_never_early() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let q: WorkQueue<u64> = WorkQueue::new();
            for ms in [1u64, 2, 3, 5, 8] {
                let delay = Duration::from_millis(ms);
                let t0 = std::time::Instant::now();
                q.add_after(ms, delay);
                let got = q.get().await.expect("item");
                assert!(t0.elapsed() >= delay, "{ms} ms delay ended early");
                assert_eq!(got, ms);
                q.done(&got);
            }
            // Out of order: the earlier deadline is served first.
            q.add_after(20, Duration::from_millis(20));
            q.add_after(4, Duration::from_millis(4));
            assert_eq!(q.get().await, Some(4));
            assert_eq!(q.get().await, Some(20));
        });
    }
}
