//! [`Action`]: what a reconcile (or the error policy) asks the controller to do with the key.

use std::time::Duration;

/// What to do with a key after its reconcile: forget it, look again after a delay, or retry
/// with the queue's rate limiter. (Not the workqueue's `workqueue::Action`, which `run_workers`
/// handlers return; this one belongs to reconcilers.)
///
/// A requeue keeps the priority the key was queued with unless
/// [`with_priority`](Self::with_priority) says otherwise (controller-runtime's
/// `Result{Priority}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Action(pub(crate) Next, pub(crate) Option<i32>);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    Done,
    After(Duration),
    Backoff,
}

impl Action {
    /// Finished: the key's backoff is forgotten; only a new event queues it again
    /// (controller-runtime's empty `Result`, kube-runtime's `await_change`).
    pub fn done() -> Self {
        Action(Next::Done, None)
    }

    /// Look again after `delay` (controller-runtime's `Result{RequeueAfter}`): the backoff is
    /// forgotten and the key comes back after the delay, or earlier on an event.
    pub fn requeue_after(delay: Duration) -> Self {
        Action(Next::After(delay), None)
    }

    /// Retry with the queue's rate limiter (per-key exponential backoff): what an error does by
    /// default; from a successful reconcile it is controller-runtime's `Result{Requeue: true}`.
    pub fn backoff() -> Self {
        Action(Next::Backoff, None)
    }

    /// Requeues with this priority instead of the one the key was queued with (higher is
    /// handed out first; see [`workqueue::LOW_PRIORITY`](crate::workqueue::LOW_PRIORITY)).
    /// Meaningless for [`done`](Self::done).
    pub fn with_priority(self, priority: i32) -> Self {
        Action(self.0, Some(priority))
    }

    /// The priority given with [`with_priority`](Self::with_priority), if any.
    pub fn priority(&self) -> Option<i32> {
        self.1
    }

    /// The delay of a [`requeue_after`](Self::requeue_after).
    pub fn requeue_delay(&self) -> Option<Duration> {
        match self.0 {
            Next::After(d) => Some(d),
            _ => None,
        }
    }

    /// The label of controller-runtime's `controller_runtime_reconcile_total{result}` for a
    /// successful reconcile that returned this.
    pub(crate) fn result_label(&self) -> &'static str {
        match self.0 {
            Next::Done => "success",
            Next::After(_) => "requeue_after",
            Next::Backoff => "requeue",
        }
    }
}
