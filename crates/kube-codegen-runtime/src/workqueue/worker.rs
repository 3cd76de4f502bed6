//! [`run_workers`]: the worker loop every controller needs (client-go's `processNextWorkItem`).

use std::fmt;
use std::future::Future;
use std::hash::Hash;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use tokio::task::JoinSet;

use super::queue::WorkQueue;

/// What to do with an item its handler processed successfully.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Action {
    /// Finished: the item's rate-limiter state is forgotten.
    #[default]
    Done,
    /// Finished for now, but look at it again after this delay (rate-limiter state is
    /// forgotten, the item is re-added with `add_after`). A periodic resync, for example.
    RequeueAfter(Duration),
}

/// Runs `workers` concurrent workers (at least one) on `queue` until it shuts down.
///
/// Each worker loops: `get` an item, run `handler(item)`, then
/// - `Ok(Action::Done)`: `forget` the item;
/// - `Ok(Action::RequeueAfter(d))`: `forget` it and `add_after(item, d)`;
/// - `Err(e)`: log `e` (tracing, warn) and `add_rate_limited(item)` to retry with backoff;
/// - a panic in the handler: caught, logged (error) and treated like `Err`, so neither the
///   worker nor the item is lost;
///
/// and always calls `done`. The returned future completes when every worker has seen the queue
/// shut down (after `shutdown` / `shutdown_with_drain`, queued items are still processed).
///
/// Workers are spawned on the current Tokio runtime; dropping the returned future aborts
/// them (an item being processed at that moment is then never marked done). The handler gets
/// its own clone of the item; `T: Debug` is only used to name the item in logs.
pub async fn run_workers<T, F, Fut, E>(queue: WorkQueue<T>, workers: usize, handler: F)
where
    T: Clone + Eq + Hash + Send + Sync + fmt::Debug + 'static,
    F: Fn(T) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Action, E>> + Send + 'static,
    E: fmt::Display + Send + 'static,
{
    let handler = Arc::new(handler);
    let mut set = JoinSet::new();
    for _ in 0..workers.max(1) {
        set.spawn(worker_loop(queue.clone(), handler.clone()));
    }
    while let Some(res) = set.join_next().await {
        if let Err(e) = res
            && e.is_panic()
        {
            tracing::error!(queue = queue.name(), "workqueue worker task panicked: {e}");
        }
    }
}

async fn worker_loop<T, F, Fut, E>(queue: WorkQueue<T>, handler: Arc<F>)
where
    T: Clone + Eq + Hash + Send + Sync + fmt::Debug + 'static,
    F: Fn(T) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Action, E>> + Send + 'static,
    E: fmt::Display + Send + 'static,
{
    while let Some(item) = queue.get().await {
        let arg = item.clone();
        // The async block defers the call itself, so a panic while building the future is
        // caught as well as one while polling it.
        let outcome = AssertUnwindSafe(async { handler(arg).await })
            .catch_unwind()
            .await;
        match outcome {
            Ok(Ok(Action::Done)) => queue.forget(&item),
            Ok(Ok(Action::RequeueAfter(delay))) => {
                queue.forget(&item);
                queue.add_after(item.clone(), delay);
            }
            Ok(Err(e)) => {
                tracing::warn!(
                    queue = queue.name(),
                    ?item,
                    "error processing item, retrying: {e}"
                );
                queue.add_rate_limited(item.clone());
            }
            Err(panic) => {
                let msg = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "non-string panic payload".to_owned());
                tracing::error!(
                    queue = queue.name(),
                    ?item,
                    "handler panicked, retrying: {msg}"
                );
                queue.add_rate_limited(item.clone());
            }
        }
        queue.done(&item);
    }
}
