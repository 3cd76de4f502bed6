//! Injectable time source for every time-dependent piece of the workqueue.

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use tokio::time::Instant;

/// A boxed sleep future returned by [`Clock::sleep_until`].
pub type Sleep = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// Source of "now" and of timers.
///
/// Every time-dependent part of the queue (delays, the token bucket, metrics ages) reads time
/// only through this trait, so tests can substitute their own. The default, [`TokioClock`],
/// follows Tokio's clock, which is virtual under `tokio::time::pause` / `start_paused`; that is
/// usually all a test needs.
pub trait Clock: Send + Sync + fmt::Debug + 'static {
    /// The current instant.
    fn now(&self) -> Instant;
    /// A future that completes once [`Clock::now`] has reached `deadline`.
    fn sleep_until(&self, deadline: Instant) -> Sleep;

    /// Whether [`Clock::now`] is the machine's monotonic clock running in real time. If so, a
    /// delaying queue waits for deadlines on a dedicated OS thread (sub-millisecond precision)
    /// instead of through [`Clock::sleep_until`]. Asked once, when the queue's timer starts.
    /// The default, `false`, keeps every wait on `sleep_until` (needed for virtual time).
    fn is_real_time(&self) -> bool {
        false
    }
}

/// The default clock: `tokio::time::Instant::now()` and `tokio::time::sleep_until`.
///
/// Tokio timers have millisecond resolution (a sleep wakes at the first millisecond tick at or
/// after its deadline), so with real time the queue waits on its own thread instead; with
/// paused time it uses Tokio's timers, which makes tests deterministic.
#[derive(Debug, Default, Clone, Copy)]
pub struct TokioClock;

impl Clock for TokioClock {
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn sleep_until(&self, deadline: Instant) -> Sleep {
        Box::pin(tokio::time::sleep_until(deadline))
    }

    /// True unless Tokio's clock is paused (`tokio::time::pause`, `start_paused`): a paused
    /// clock does not move while we watch it, the real one moves within nanoseconds.
    fn is_real_time(&self) -> bool {
        let first = Instant::now();
        let start = std::time::Instant::now();
        // Paused time only advances when its (current-thread) runtime is idle, so 50 µs of
        // real time without a change means paused; real time changes on the next read.
        while start.elapsed() < std::time::Duration::from_micros(50) {
            if Instant::now() != first {
                return true;
            }
            std::hint::spin_loop();
        }
        false
    }
}

/// `now + d`, saturating at a far-future instant instead of overflowing (for "infinite" waits).
pub(crate) fn deadline_after(now: Instant, d: std::time::Duration) -> Instant {
    // About 30 years: far beyond any meaningful requeue, well inside Instant's range.
    const FAR: std::time::Duration = std::time::Duration::from_secs(30 * 365 * 24 * 3600);
    now.checked_add(d.min(FAR))
        .unwrap_or_else(|| now + std::time::Duration::from_secs(365 * 24 * 3600))
}
