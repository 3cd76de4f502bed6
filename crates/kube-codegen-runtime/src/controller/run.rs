//! The workers: take a key, find its object (or tombstone), reconcile it with panics caught
//! and a deadline, and turn the outcome into the queue's next step.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::FutureExt;
use parking_lot::Mutex;

use super::action::Next;
use super::context::{Context, Shared};
use super::metrics::ControllerMetrics;
use super::{Action, ReconcileError};
use crate::cache::StoreReader;
use crate::workqueue::{AddOpts, WorkQueue};

/// A reconciler of `K` objects (controller-runtime's `reconcile.Reconciler`, kube-runtime's
/// reconcile function and error policy as one trait).
pub trait Reconciler<K>: Send + Sync + 'static {
    /// What a failed reconcile returns.
    type Error: fmt::Display + Send + 'static;

    /// Brings the world to what `object` asks for. `ctx.is_deleted()` tells a deleted object
    /// (then `object` is its last known state). One key is never reconciled by two workers at
    /// once; different keys are, concurrently.
    fn reconcile(
        &self,
        object: Arc<K>,
        ctx: &Context,
    ) -> impl Future<Output = Result<Action, Self::Error>> + Send;

    /// What to do after a failed reconcile (an error, a panic or a timeout), which is logged
    /// and counted before this is called. The default retries with the queue's rate limiter
    /// (client-go's default controller rate limiter: 5 ms doubling to 1000 s per key, 10 qps
    /// with a burst of 100 overall); `Action::done()` drops the key until its next event.
    fn error_policy(
        &self,
        object: &Arc<K>,
        error: &ReconcileError<Self::Error>,
        ctx: &Context,
    ) -> Action {
        let _ = (object, error, ctx);
        Action::backoff()
    }
}

/// The last known state of deleted primary objects, by key, until their reconcile succeeds.
pub(crate) type Tombstones<K> = Arc<Mutex<HashMap<String, Arc<K>>>>;

/// What each worker of one controller shares.
pub(crate) struct Worker<K, R> {
    pub(crate) queue: WorkQueue<String>,
    pub(crate) store: StoreReader<K>,
    pub(crate) tombstones: Tombstones<K>,
    pub(crate) reconciler: R,
    pub(crate) shared: Arc<Shared>,
    pub(crate) timeout: Duration,
    pub(crate) metrics: Option<ControllerMetrics>,
    /// Ring mode: which keys this replica may reconcile now.
    pub(crate) shard: Option<super::sharded::Gate>,
}

/// Decrements the active-workers gauge however the reconcile ends (even aborted).
struct Active<'a>(Option<&'a ControllerMetrics>);

impl Drop for Active<'_> {
    fn drop(&mut self) {
        if let Some(m) = self.0 {
            m.active.dec();
        }
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".to_owned())
}

impl<K, R> Worker<K, R>
where
    K: kube::Resource + Send + Sync + 'static,
    R: Reconciler<K>,
{
    /// One worker's loop, until the queue is shut down and empty.
    pub(crate) async fn run(self: Arc<Self>) {
        while let Some((key, priority)) = self.queue.get_with_priority().await {
            self.process(&key, priority).await;
            self.queue.done(&key);
        }
    }

    /// Reconciles `key`, handed out with `priority` (which a requeue keeps by default, as
    /// controller-runtime's `reconcileHandler` does).
    async fn process(&self, key: &str, priority: i32) {
        let (object, deleted) = match self.store.get_by_key(key) {
            Some(o) => {
                // Recreated after a delete: the tombstone is stale.
                self.tombstones.lock().remove(key);
                (o, false)
            }
            None => match self.tombstones.lock().remove(key) {
                Some(t) => (t, true),
                None => {
                    // Neither cached nor deleted: a key mapped from a watch whose object is
                    // not there, or a tombstone already reconciled.
                    tracing::debug!(controller = %self.shared.name, key, "nothing to reconcile");
                    self.queue.forget(&key.to_owned());
                    return;
                }
            },
        };
        let permit = match super::sharded::admit(self.shard.as_ref(), &*object, deleted) {
            super::sharded::Admit::Go(permit) => permit,
            other => {
                // Not this replica's now: queued again when its range is allowed (a deleted
                // object's last state kept for that), or another replica's.
                if deleted && matches!(other, super::sharded::Admit::Later) {
                    self.tombstones
                        .lock()
                        .entry(key.to_owned())
                        .or_insert(object);
                }
                self.queue.forget(&key.to_owned());
                return;
            }
        };
        let ctx = Context {
            shared: self.shared.clone(),
            key: key.to_owned(),
            deleted,
        };
        let metrics = self.metrics.as_ref();
        if let Some(m) = metrics {
            m.active.inc();
        }
        let active = Active(metrics);
        let started = Instant::now();
        // The async block defers the call, so a panic while building the future is caught too.
        let reconcile =
            AssertUnwindSafe(async { self.reconciler.reconcile(object.clone(), &ctx).await })
                .catch_unwind();
        let timed = tokio::time::timeout(self.timeout, reconcile);
        let Some(outcome) = super::sharded::unless_revoked(timed, permit.as_ref()).await else {
            // The ring gave the range away: the new owner reconciles it.
            tracing::info!(controller = %self.shared.name, key, "reconcile abandoned: range handed off");
            self.queue.forget(&ctx.key);
            return;
        };
        let outcome = match outcome {
            Ok(Ok(Ok(action))) => Ok(action),
            Ok(Ok(Err(e))) => Err(ReconcileError::Reconciler(e)),
            Ok(Err(panic)) => Err(ReconcileError::Panic(panic_message(&*panic))),
            Err(_) => Err(ReconcileError::Timeout(self.timeout)),
        };
        drop(active);
        if let Some(m) = metrics {
            m.time.observe(started.elapsed().as_secs_f64());
        }
        let action = match outcome {
            Ok(action) => {
                if let Some(m) = metrics {
                    m.result(action.result_label());
                }
                action
            }
            Err(error) => {
                let name = &self.shared.name;
                match &error {
                    ReconcileError::Panic(_) => tracing::error!(controller = %name, key, "{error}"),
                    _ => tracing::warn!(controller = %name, key, "reconcile failed: {error}"),
                }
                if let Some(m) = metrics {
                    m.result("error");
                    m.errors.inc();
                    if matches!(error, ReconcileError::Panic(_)) {
                        m.panics.inc();
                    }
                }
                let policy =
                    AssertUnwindSafe(|| self.reconciler.error_policy(&object, &error, &ctx));
                std::panic::catch_unwind(policy).unwrap_or_else(|_| {
                    tracing::error!(controller = %name, key, "error policy panicked; backing off");
                    Action::backoff()
                })
            }
        };
        let key = ctx.key;
        if deleted && action.0 != Next::Done {
            // Retried later: keep the last state unless a newer delete replaced it.
            self.tombstones.lock().entry(key.clone()).or_insert(object);
        }
        let priority = action.1.unwrap_or(priority);
        match action.0 {
            Next::Done => self.queue.forget(&key),
            Next::After(delay) => {
                self.queue.forget(&key);
                self.queue.add_with_opts(
                    key,
                    AddOpts {
                        after: delay,
                        priority,
                        ..AddOpts::default()
                    },
                );
            }
            Next::Backoff => self.queue.add_with_opts(
                key,
                AddOpts {
                    rate_limited: true,
                    priority,
                    ..AddOpts::default()
                },
            ),
        }
    }
}
