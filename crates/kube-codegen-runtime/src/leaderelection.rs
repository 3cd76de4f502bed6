//! Leader election over a `coordination.k8s.io/v1` Lease, with client-go's
//! `tools/leaderelection` semantics: candidates poll the Lease every retry period, take it
//! when it is free or its holder has not renewed it for `leaseDurationSeconds` (timed on the
//! candidate's own clock from when it last saw the record change, never from the server's
//! timestamps, so clock skew between machines does not matter), and the holder renews it
//! every retry period. Writes are optimistic: a `resourceVersion` conflict (409) means someone
//! else wrote first, and the candidate tries again next period.
//!
//! What differs from client-go, and why:
//! - A leader stops leading `renew_deadline` after it *sent* its last successful renewal,
//!   on a timer of its own, even while a renewal is still in flight. Others can take over no
//!   sooner than `lease_duration` after they *received* that renewal, so with
//!   `renew_deadline < lease_duration` two leaders never overlap, whatever the latency.
//!   [`LeaderElector::is_leader`] and [`Leadership::is_leading`] read that deadline against the
//!   clock when asked, so they are exact even if the task running the elector is starved or
//!   killed.
//! - Candidates retry after a random 80..100 % of the retry period (client-go: 100..220 %),
//!   and wake up when the lease they watch expires, so a dead leader is replaced within
//!   `lease_duration + retry_period` (plus two requests), not up to `+ 2.2 retry periods`.
//! - A leader that sees another holder in the Lease steps down at once instead of waiting out
//!   its renew deadline.
//! - `leaseDurationSeconds` is `lease_duration` rounded *up* to whole seconds (client-go
//!   truncates, which with sub-second parts lets others take over sooner than configured).
//! - On [`LeaderElector::shutdown`] the leader cancels its [`Leadership`], keeps renewing until
//!   the `on_started_leading` future has returned, and only then releases the Lease (client-go
//!   releases while the leader's work may still be running).
//! - `on_stopped_leading` runs only after leading (client-go also runs it when `Run` ends
//!   without ever acquiring); `on_new_leader` is not called for an empty (released) holder.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, PostParams};
use tokio::sync::watch;
use tokio::time::{Instant, sleep_until};

/// client-go's `LeaseDuration` default.
pub const DEFAULT_LEASE_DURATION: Duration = Duration::from_secs(15);
/// client-go's `RenewDeadline` default.
pub const DEFAULT_RENEW_DEADLINE: Duration = Duration::from_secs(10);
/// client-go's `RetryPeriod` default.
pub const DEFAULT_RETRY_PERIOD: Duration = Duration::from_secs(2);
/// client-go's `JitterFactor`; the renew deadline must exceed `retry_period` times this.
const JITTER_FACTOR: f64 = 1.2;

/// The Lease that is the lock, and who this candidate is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseLock {
    /// Namespace of the `coordination.k8s.io/v1` Lease.
    pub namespace: String,
    /// Name of the Lease, shared by every candidate of one election.
    pub name: String,
    /// This candidate's identity, unique among candidates (pod name, or hostname + a UUID).
    pub identity: String,
}

/// Timing of the election (client-go's `LeaderElectionConfig`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderElectionConfig {
    /// How long others wait, after they last saw the Lease change, before taking it.
    pub lease_duration: Duration,
    /// How long the leader keeps leading without a successful renewal.
    pub renew_deadline: Duration,
    /// How often candidates try to acquire and the leader renews.
    pub retry_period: Duration,
    /// Release the Lease on [`LeaderElector::shutdown`] (client-go's `ReleaseOnCancel`), so
    /// another candidate takes over at once rather than after `lease_duration`.
    pub release_on_cancel: bool,
}

impl Default for LeaderElectionConfig {
    fn default() -> Self {
        LeaderElectionConfig {
            lease_duration: DEFAULT_LEASE_DURATION,
            renew_deadline: DEFAULT_RENEW_DEADLINE,
            retry_period: DEFAULT_RETRY_PERIOD,
            release_on_cancel: true,
        }
    }
}

/// Why a [`LeaderElector`] could not be made or run.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LeaderElectionError {
    /// The [`LeaderElectionConfig`] breaks one of client-go's checks (e.g. a renew deadline not
    /// shorter than the lease duration); the text says which.
    #[error("invalid leader election config: {0}")]
    InvalidConfig(String),
    /// [`LeaderElector::run`] was called while an earlier call on the same elector still runs.
    #[error("this leader elector is already running")]
    AlreadyRunning,
}

/// How [`LeaderElector::run`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunOutcome {
    /// [`LeaderElector::shutdown`] was called; a held Lease was released if so configured.
    Shutdown,
    /// The leader could not renew within the renew deadline, or saw another holder.
    /// client-go programs exit here ("leaderelection lost"); a new `run` starts over as a
    /// candidate.
    LostLeadership,
}

type StartedFn = Box<dyn FnOnce(Leadership) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send>;
type StoppedFn = Box<dyn FnOnce() + Send>;
type NewLeaderFn = Box<dyn FnMut(&str) + Send>;

/// What to do when this candidate starts and stops leading, and when the leader changes.
pub struct LeaderCallbacks {
    started: StartedFn,
    stopped: Option<StoppedFn>,
    new_leader: Option<NewLeaderFn>,
}

impl fmt::Debug for LeaderCallbacks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaderCallbacks").finish_non_exhaustive()
    }
}

impl LeaderCallbacks {
    /// `on_started_leading` is spawned as a task when this candidate becomes leader; it must
    /// stop its work when [`Leadership::cancelled`] resolves.
    pub fn new<F, Fut>(on_started_leading: F) -> Self
    where
        F: FnOnce(Leadership) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        LeaderCallbacks {
            started: Box::new(move |leadership| Box::pin(on_started_leading(leadership))),
            stopped: None,
            new_leader: None,
        }
    }

    /// Called once this candidate has stopped leading (after the release, if any).
    pub fn on_stopped_leading(mut self, f: impl FnOnce() + Send + 'static) -> Self {
        self.stopped = Some(Box::new(f));
        self
    }

    /// Called with the holder's identity whenever a different holder is observed (this
    /// candidate included). Runs on the elector's task: keep it short.
    pub fn on_new_leader(mut self, f: impl FnMut(&str) + Send + 'static) -> Self {
        self.new_leader = Some(Box::new(f));
        self
    }
}

/// What the elector publishes to [`LeaderElector::is_leader`] and [`Leadership`] tokens.
#[derive(Debug, Clone, Default)]
struct Status {
    /// Counts acquisitions, so a token from an earlier term never reads a later one.
    term: u64,
    /// While leading: when leadership ends unless renewed first.
    leading_until: Option<Instant>,
    /// Shutdown was asked while leading: the work should wind down.
    stopping: bool,
    /// The last holder observed in the Lease (not empty).
    holder: Option<String>,
}

impl Status {
    fn leading(&self, now: Instant) -> bool {
        self.leading_until.is_some_and(|until| now < until)
    }
}

/// Handed to `on_started_leading`: says whether this term of leadership still holds.
#[derive(Debug, Clone)]
pub struct Leadership {
    status: watch::Receiver<Status>,
    term: u64,
}

impl Leadership {
    /// Whether this term still holds and no shutdown was asked. Reads the renew deadline
    /// against the clock, so it turns false on time even if the elector's task is stalled.
    pub fn is_leading(&self) -> bool {
        let s = self.status.borrow();
        s.term == self.term && !s.stopping && s.leading(Instant::now())
    }

    /// Resolves when this term ends: leadership lost or expired, or shutdown asked.
    pub async fn cancelled(&self) {
        let mut status = self.status.clone();
        loop {
            let until = {
                let s = status.borrow_and_update();
                if s.term != self.term || s.stopping {
                    return;
                }
                match s.leading_until {
                    Some(until) if Instant::now() < until => until,
                    _ => return,
                }
            };
            // Wake at the deadline or on any change (a renewal moves the deadline), then
            // re-check: the deadline may have moved just as the timer fired.
            tokio::select! {
                () = sleep_until(until) => {}
                changed = status.changed() => if changed.is_err() { return },
            }
        }
    }
}

struct Inner {
    api: Api<Lease>,
    lock: LeaseLock,
    config: LeaderElectionConfig,
    /// `leaseDurationSeconds` as written.
    lease_seconds: i32,
    status: watch::Sender<Status>,
    shutdown: watch::Sender<bool>,
    running: AtomicBool,
    /// Set by [`LeaderElector::keep_lease`]: no release on shutdown.
    keep_lease: AtomicBool,
}

/// A candidate for leadership of one Lease. Cheap to clone; clones share one candidate.
#[derive(Clone)]
pub struct LeaderElector {
    inner: Arc<Inner>,
}

impl fmt::Debug for LeaderElector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaderElector")
            .field("lock", &self.inner.lock)
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl LeaderElector {
    /// Checks the config as client-go's `NewLeaderElector` does: every duration positive,
    /// `lease_duration > renew_deadline > retry_period * 1.2`, and a non-empty identity.
    pub fn new(
        client: kube::Client,
        lock: LeaseLock,
        config: LeaderElectionConfig,
    ) -> Result<Self, LeaderElectionError> {
        let invalid = |m: &str| Err(LeaderElectionError::InvalidConfig(m.to_owned()));
        let LeaderElectionConfig {
            lease_duration,
            renew_deadline,
            retry_period,
            ..
        } = config;
        if lease_duration.is_zero() || renew_deadline.is_zero() || retry_period.is_zero() {
            return invalid("lease duration, renew deadline and retry period must be positive");
        }
        if lease_duration <= renew_deadline {
            return invalid("lease duration must be greater than renew deadline");
        }
        if renew_deadline.as_secs_f64() <= retry_period.as_secs_f64() * JITTER_FACTOR {
            return invalid("renew deadline must be greater than retry period * 1.2");
        }
        let Ok(lease_seconds) = i32::try_from(lease_duration.as_secs()) else {
            return invalid("lease duration does not fit leaseDurationSeconds (int32)");
        };
        // Rounded up: others must wait at least the configured duration.
        let lease_seconds = if lease_duration.subsec_nanos() > 0 {
            match lease_seconds.checked_add(1) {
                Some(s) => s,
                None => return invalid("lease duration does not fit leaseDurationSeconds"),
            }
        } else {
            lease_seconds
        };
        if lock.identity.is_empty() {
            return invalid("lock identity is empty");
        }
        if lock.name.is_empty() || lock.namespace.is_empty() {
            return invalid("lease name and namespace must not be empty");
        }
        Ok(LeaderElector {
            inner: Arc::new(Inner {
                api: Api::namespaced(client, &lock.namespace),
                lock,
                config,
                lease_seconds,
                status: watch::Sender::new(Status::default()),
                shutdown: watch::Sender::new(false),
                running: AtomicBool::new(false),
                keep_lease: AtomicBool::new(false),
            }),
        })
    }

    /// This candidate's identity.
    pub fn identity(&self) -> &str {
        &self.inner.lock.identity
    }

    /// Whether this candidate leads now (exact: reads the renew deadline against the clock).
    pub fn is_leader(&self) -> bool {
        self.inner.status.borrow().leading(Instant::now())
    }

    /// The holder last observed in the Lease, if any.
    pub fn leader(&self) -> Option<String> {
        self.inner.status.borrow().holder.clone()
    }

    /// Asks [`run`](Self::run) to end: a candidate stops trying; a leader cancels its
    /// [`Leadership`], keeps renewing until the `on_started_leading` future returns, then
    /// releases the Lease (with `release_on_cancel`). Later `run` calls return at once.
    pub fn shutdown(&self) {
        self.inner.shutdown.send_replace(true);
    }

    /// Do not release the Lease on shutdown even with `release_on_cancel`: the leader's work
    /// could not be stopped (a reconcile blocking its thread), so the Lease must run out before
    /// another candidate takes over.
    pub fn keep_lease(&self) {
        self.inner.keep_lease.store(true, Ordering::Release);
    }

    /// Campaigns until leading, leads until leadership is lost or [`shutdown`](Self::shutdown)
    /// is asked, and returns which. API errors are logged and retried, never returned.
    pub async fn run(&self, callbacks: LeaderCallbacks) -> Result<RunOutcome, LeaderElectionError> {
        if self.inner.running.swap(true, Ordering::AcqRel) {
            return Err(LeaderElectionError::AlreadyRunning);
        }
        // Cleared even when the run future is dropped mid-way.
        let _running = RunningGuard(&self.inner.running);
        let LeaderCallbacks {
            started,
            stopped,
            mut new_leader,
        } = callbacks;
        let mut obs = Observed::new(&self.inner.lock.identity);
        let mut shutdown = self.inner.shutdown.subscribe();
        let rd = self.inner.config.renew_deadline;

        let Some(deadline) = self.acquire(&mut obs, &mut shutdown, &mut new_leader).await else {
            if self.inner.config.release_on_cancel {
                // An acquisition cut short may have reached the server.
                self.release(&mut obs).await;
            }
            return Ok(RunOutcome::Shutdown);
        };

        let mut term = 0;
        self.inner.status.send_modify(|s| {
            s.term += 1;
            term = s.term;
            s.leading_until = Some(deadline);
            s.stopping = false;
        });
        tracing::info!(lease = %self.describe(), "became leader");
        let leadership = Leadership {
            status: self.inner.status.subscribe(),
            term,
        };
        let mut work = tokio::spawn(started(leadership));
        let mut work_done = false;
        let mut stopping = false;
        let mut deadline = deadline;
        let mut next_renew = Instant::now() + self.inner.config.retry_period;
        let outcome = loop {
            tokio::select! {
                () = sleep_until(deadline) => break RunOutcome::LostLeadership,
                _ = shutdown.wait_for(|s| *s), if !stopping => {
                    stopping = true;
                    self.inner.status.send_modify(|s| s.stopping = true);
                    if work_done {
                        break RunOutcome::Shutdown;
                    }
                    continue;
                }
                joined = &mut work, if !work_done => {
                    work_done = true;
                    if let Err(e) = joined {
                        tracing::error!(lease = %self.describe(), "on_started_leading failed: {e}");
                    }
                    if stopping {
                        break RunOutcome::Shutdown;
                    }
                    continue;
                }
                () = sleep_until(next_renew) => {}
            }
            let start = Instant::now();
            let renewed = tokio::select! {
                ok = self.try_acquire_or_renew(&mut obs) => ok,
                () = sleep_until(deadline) => false,
            };
            next_renew = Instant::now() + self.inner.config.retry_period;
            self.report(&mut obs, &mut new_leader);
            if obs.held_by_other() {
                tracing::info!(lease = %self.describe(), holder = ?obs.holder(), "lease taken by another");
                break RunOutcome::LostLeadership;
            }
            if renewed {
                // Checked under the status lock, so a reader that already saw the deadline
                // pass never sees leadership come back within this term.
                let mut extended = false;
                self.inner.status.send_if_modified(|s| {
                    if s.leading(Instant::now()) {
                        s.leading_until = Some(start + rd);
                        extended = true;
                    }
                    extended
                });
                if !extended {
                    break RunOutcome::LostLeadership;
                }
                deadline = start + rd;
            }
        };
        self.inner.status.send_modify(|s| {
            s.leading_until = None;
            s.stopping = false;
        });
        match outcome {
            RunOutcome::LostLeadership => {
                tracing::warn!(lease = %self.describe(), "stopped leading: could not renew the lease")
            }
            RunOutcome::Shutdown => {
                tracing::info!(lease = %self.describe(), "stopped leading: shutdown")
            }
        }
        // On loss the work task is left to see its `Leadership` cancelled; it is no longer
        // ours to wait for.
        drop(work);
        if outcome == RunOutcome::Shutdown
            && self.inner.config.release_on_cancel
            && !self.inner.keep_lease.load(Ordering::Acquire)
        {
            self.release(&mut obs).await;
        }
        if let Some(stopped) = stopped {
            stopped();
        }
        Ok(outcome)
    }

    /// Tries until the Lease is ours; `Some(deadline)` of the first term, `None` on shutdown.
    async fn acquire(
        &self,
        obs: &mut Observed,
        shutdown: &mut watch::Receiver<bool>,
        new_leader: &mut Option<NewLeaderFn>,
    ) -> Option<Instant> {
        let rd = self.inner.config.renew_deadline;
        tracing::info!(lease = %self.describe(), "attempting to acquire leader lease");
        loop {
            if *shutdown.borrow_and_update() {
                return None;
            }
            let start = Instant::now();
            // Bounded, so a hung connection does not stall the candidate.
            let attempt = tokio::time::timeout(rd, self.try_acquire_or_renew(obs));
            let acquired = tokio::select! {
                r = attempt => matches!(r, Ok(true)),
                _ = shutdown.wait_for(|s| *s) => return None,
            };
            self.report(obs, new_leader);
            // A write that came back after its own deadline is no leadership; the next round
            // renews it if it is still ours.
            if acquired && Instant::now() < start + rd {
                return Some(start + rd);
            }
            let wait = obs.next_poll(self.inner.config.retry_period);
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                _ = shutdown.wait_for(|s| *s) => return None,
            }
        }
    }

    /// One round of client-go's `tryAcquireOrRenew`: `true` if the Lease is now ours.
    async fn try_acquire_or_renew(&self, obs: &mut Observed) -> bool {
        let identity = &self.inner.lock.identity;
        let now = MicroTime(Timestamp::now());
        let mut desired = LeaseSpec {
            holder_identity: Some(identity.clone()),
            lease_duration_seconds: Some(self.inner.lease_seconds),
            acquire_time: Some(now.clone()),
            renew_time: Some(now),
            lease_transitions: Some(0),
            ..LeaseSpec::default()
        };

        // 1. Fast path: the leader renews the object it last wrote, without reading first.
        if obs.holder_is_self()
            && obs.valid(Instant::now())
            && let Some(cached) = obs.lease.clone()
        {
            desired.acquire_time = obs.spec.acquire_time.clone();
            desired.lease_transitions = obs.spec.lease_transitions;
            match self.write(cached, desired.clone()).await {
                Ok(lease) => {
                    obs.observe(lease);
                    return true;
                }
                Err(e) => tracing::debug!(
                    lease = %self.describe(), "optimistic renew failed, re-reading: {e}"
                ),
            }
        }

        // 2. Read the Lease, creating it when absent.
        let current = match self.inner.api.get_opt(&self.inner.lock.name).await {
            Ok(Some(lease)) => lease,
            Ok(None) => {
                let lease = Lease {
                    metadata: kube::api::ObjectMeta {
                        name: Some(self.inner.lock.name.clone()),
                        namespace: Some(self.inner.lock.namespace.clone()),
                        ..Default::default()
                    },
                    spec: Some(desired),
                };
                return match self.inner.api.create(&PostParams::default(), &lease).await {
                    Ok(lease) => {
                        obs.observe(lease);
                        true
                    }
                    Err(e) => {
                        log_write_error(&self.describe(), "creating", &e);
                        false
                    }
                };
            }
            Err(e) => {
                tracing::warn!(lease = %self.describe(), "error reading the lease: {e}");
                return false;
            }
        };

        // 3. Someone else's unexpired lease: wait.
        obs.observe(current.clone());
        if obs.held_by_other() && obs.valid(Instant::now()) {
            tracing::debug!(lease = %self.describe(), holder = ?obs.holder(), "lease held and not expired");
            return false;
        }

        // 4. Ours (renew, keeping acquire time and transitions) or free or expired (take over).
        let old = current.spec.clone().unwrap_or_default();
        if obs.holder_is_self() {
            desired.acquire_time = old.acquire_time;
            desired.lease_transitions = old.lease_transitions;
        } else {
            desired.lease_transitions = Some(old.lease_transitions.unwrap_or(0).saturating_add(1));
        }
        match self.write(current, desired).await {
            Ok(lease) => {
                obs.observe(lease);
                true
            }
            Err(e) => {
                log_write_error(&self.describe(), "updating", &e);
                false
            }
        }
    }

    /// Replaces the Lease's spec, conditional on the `resourceVersion` in `lease`.
    async fn write(&self, mut lease: Lease, spec: LeaseSpec) -> Result<Lease, kube::Error> {
        lease.spec = Some(spec);
        self.inner
            .api
            .replace(&self.inner.lock.name, &PostParams::default(), &lease)
            .await
    }

    /// Gives the Lease up if the server says it is ours, as client-go's `release` writes it:
    /// no holder, `leaseDurationSeconds: 1`, transitions kept.
    async fn release(&self, obs: &mut Observed) {
        let release = async {
            let current = match self.inner.api.get_opt(&self.inner.lock.name).await {
                Ok(Some(lease)) => lease,
                Ok(None) => return,
                Err(e) => {
                    tracing::warn!(lease = %self.describe(), "release: error reading the lease: {e}");
                    return;
                }
            };
            let old = current.spec.clone().unwrap_or_default();
            if old.holder_identity.as_deref() != Some(self.inner.lock.identity.as_str()) {
                return;
            }
            let now = MicroTime(Timestamp::now());
            let spec = LeaseSpec {
                holder_identity: Some(String::new()),
                lease_duration_seconds: Some(1),
                acquire_time: Some(now.clone()),
                renew_time: Some(now),
                lease_transitions: old.lease_transitions,
                ..LeaseSpec::default()
            };
            match self.write(current, spec).await {
                Ok(lease) => {
                    obs.observe(lease);
                    tracing::info!(lease = %self.describe(), "released the lease");
                }
                Err(e) => {
                    tracing::warn!(lease = %self.describe(), "failed to release the lease: {e}")
                }
            }
        };
        if tokio::time::timeout(self.inner.config.renew_deadline, release)
            .await
            .is_err()
        {
            tracing::warn!(lease = %self.describe(), "release timed out");
        }
    }

    /// Publishes the observed holder and calls `on_new_leader` when it changed.
    fn report(&self, obs: &mut Observed, new_leader: &mut Option<NewLeaderFn>) {
        let holder = obs.holder().map(str::to_owned);
        if holder.is_none() || holder == obs.reported {
            return;
        }
        obs.reported.clone_from(&holder);
        self.inner
            .status
            .send_modify(|s| s.holder.clone_from(&holder));
        if let (Some(f), Some(h)) = (new_leader.as_mut(), holder.as_deref()) {
            f(h);
        }
    }

    fn describe(&self) -> String {
        format!("{}/{}", self.inner.lock.namespace, self.inner.lock.name)
    }
}

fn log_write_error(lease: &str, what: &str, e: &kube::Error) {
    match e {
        kube::Error::Api(s) if s.code == 409 => {
            tracing::debug!(
                lease,
                "conflict {what} the lease, retrying next period: {e}"
            )
        }
        _ => tracing::warn!(lease, "error {what} the lease: {e}"),
    }
}

struct RunningGuard<'a>(&'a AtomicBool);

impl Drop for RunningGuard<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

/// client-go's `observedRecord` / `observedTime`: the Lease as last seen, and when it was
/// first seen in that state on this candidate's clock.
struct Observed {
    identity: String,
    spec: LeaseSpec,
    time: Instant,
    /// The object last read or written, for the fast path's `resourceVersion`.
    lease: Option<Lease>,
    /// The holder last passed to `on_new_leader`.
    reported: Option<String>,
    rng: u64,
}

impl Observed {
    fn new(identity: &str) -> Self {
        // Seeded from the clock and the identity, so candidates started together spread out.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let id = identity.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        });
        Observed {
            identity: identity.to_owned(),
            spec: LeaseSpec::default(),
            time: Instant::now(),
            lease: None,
            reported: None,
            rng: nanos ^ id,
        }
    }

    /// Records `lease`; the observed time moves only when the record itself changed.
    fn observe(&mut self, lease: Lease) {
        let spec = lease.spec.clone().unwrap_or_default();
        if spec != self.spec {
            self.spec = spec;
            self.time = Instant::now();
        }
        self.lease = Some(lease);
    }

    fn holder(&self) -> Option<&str> {
        self.spec
            .holder_identity
            .as_deref()
            .filter(|h| !h.is_empty())
    }

    fn holder_is_self(&self) -> bool {
        self.holder() == Some(self.identity.as_str())
    }

    fn held_by_other(&self) -> bool {
        self.holder().is_some_and(|h| h != self.identity)
    }

    /// When the observed record expires on this candidate's clock.
    fn expiry(&self) -> Instant {
        let secs = self.spec.lease_duration_seconds.unwrap_or(0).max(0);
        self.time + Duration::from_secs(secs.unsigned_abs().into())
    }

    fn valid(&self, now: Instant) -> bool {
        now < self.expiry()
    }

    /// The wait before the next attempt: 80..100 % of the retry period, or less when the
    /// observed lease expires sooner (plus a millisecond, to be past it).
    fn next_poll(&mut self, retry_period: Duration) -> Duration {
        let jittered = retry_period.mul_f64(0.8 + 0.2 * self.unit());
        let now = Instant::now();
        let expiry = self.expiry();
        if self.held_by_other() && expiry > now {
            jittered.min(expiry - now + Duration::from_millis(1))
        } else {
            jittered
        }
    }

    /// A uniform number in [0, 1) (splitmix64).
    fn unit(&mut self) -> f64 {
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
}
