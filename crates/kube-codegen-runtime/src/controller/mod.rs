//! Controllers in a few lines: a reconciler loop on the shared informers and the workqueue
//! (controller-runtime's builder and manager, kube-runtime's `Controller`).
//!
//! ```no_run
//! # use std::sync::Arc;
//! # use k8s_openapi::api::apps::v1::Deployment;
//! # use k8s_openapi::api::core::v1::ConfigMap;
//! use kube_codegen_runtime::SharedInformerFactory;
//! use kube_codegen_runtime::controller::{Action, Context, Controller, Reconciler};
//!
//! struct Sync;
//! impl Reconciler<ConfigMap> for Sync {
//!     type Error = kube::Error;
//!     async fn reconcile(&self, cm: Arc<ConfigMap>, ctx: &Context) -> Result<Action, kube::Error> {
//!         if ctx.is_deleted() {
//!             return Ok(Action::done());
//!         }
//!         let deployments = ctx.lister::<Deployment>().expect("owned");
//!         // ... read the cache, write through ctx.client()
//!         Ok(Action::requeue_after(std::time::Duration::from_secs(300)))
//!     }
//! }
//!
//! # async fn run(client: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
//! let factory = SharedInformerFactory::builder(client).namespace("default").build();
//! Controller::<ConfigMap>::for_kind(&factory)
//!     .owns::<Deployment>()
//!     .workers(4)
//!     .run(Sync, async { let _ = tokio::signal::ctrl_c().await; })
//!     .await?;
//! # Ok(()) }
//! ```
//!
//! How it works: every kind comes from the factory's one informer per kind, to which the
//! controller adds inline handlers that only put `namespace/name` keys of the primary kind in
//! its [`WorkQueue`](crate::workqueue::WorkQueue) (owned objects through their controller
//! owner reference, watched ones through a mapper). N workers take keys (one key is never
//! held by two at once), look the object up in the primary's cache (or, for a deleted one, its
//! last known state) and call [`Reconciler::reconcile`] with a [`Context`] (client, listers of
//! every watched kind, event recorder, name). A reconcile that fails, panics or outlives its
//! deadline goes through [`Reconciler::error_policy`] (by default a rate-limited retry with
//! client-go's default controller rate limiter); nothing a reconcile does stops other keys.
//! A relist after a dropped watch or a 410 delivers every change through the same handlers, so
//! no key is lost; deletes missed while disconnected arrive as tombstones.
//!
//! Helpers: [`finalizer`](finalizer::finalizer) (add, cleanup, remove), status
//! [`conditions`], the [`generation_changed`](predicate::generation_changed) predicate,
//! [`owners`] (controller references), [`metrics`] with controller-runtime's names.

pub mod conditions;
pub mod finalizer;
pub mod metrics;
pub mod owners;
pub mod predicate;
pub mod writes;

mod action;
mod builder;
mod context;
#[cfg(feature = "webhook")]
pub mod endpoints;
#[cfg(feature = "cli")]
mod flags;
mod manager;
mod priority;
mod program;
pub mod rbac;
mod run;
mod sharded;

use std::fmt;
use std::time::Duration;

pub use self::action::Action;
pub use self::builder::{Controller, Runnable, Watched};
pub use self::context::Context;
pub use self::finalizer::{FinalizerError, FinalizerEvent, finalizer};
#[cfg(feature = "cli")]
pub use self::flags::{ControllerFlags, LeaderElectionFlags, StartupError, run_program};
pub use self::manager::{DEFAULT_SHUTDOWN_TIMEOUT, DEFAULT_SYNC_TIMEOUT, LeaderElection, Manager};
#[cfg(feature = "prometheus")]
pub(crate) use self::metrics::ControllerFamilies;
pub use self::metrics::ControllerMetricsProvider;
pub use self::program::{
    ConfigError, Shutdown, describe_error, load_config, parse_duration, shutdown_signal,
    unique_identity,
};
pub use self::run::Reconciler;
pub use self::writes::{ApiWrites, FakeWrites, Writes};

/// Default [`Controller::reconcile_timeout`]: a reconcile still running after this long is
/// abandoned and retried as an error.
pub const DEFAULT_RECONCILE_TIMEOUT: Duration = Duration::from_secs(300);

/// Why a reconcile failed, as [`Reconciler::error_policy`] sees it.
#[derive(Debug)]
pub enum ReconcileError<E> {
    /// The reconciler returned an error.
    Reconciler(E),
    /// The reconcile panicked (the message, when it was a string).
    Panic(String),
    /// The reconcile ran past its deadline and was abandoned.
    Timeout(Duration),
}

impl<E: fmt::Display> fmt::Display for ReconcileError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReconcileError::Reconciler(e) => e.fmt(f),
            ReconcileError::Panic(m) => write!(f, "reconcile panicked: {m}"),
            ReconcileError::Timeout(t) => write!(f, "reconcile abandoned after {t:?}"),
        }
    }
}

/// Why a controller (or [`Manager`]) stopped other than by shutdown.
#[derive(Debug, thiserror::Error)]
pub enum ControllerError {
    /// An event handler could not be added (no Tokio runtime).
    #[error("adding an event handler: {0}")]
    Handler(#[source] crate::cache::CacheError),
    /// The caches did not sync in time.
    #[error("the caches did not sync within {0:?}")]
    SyncTimeout(Duration),
    /// The leader election could not run.
    #[error(transparent)]
    LeaderElection(crate::leaderelection::LeaderElectionError),
    /// The lease was lost; the workers were stopped. client-go programs exit here.
    #[error("leader election lost")]
    LostLeadership,
    /// The metrics or health probe server could not start (its address is taken, say).
    #[error("{0}")]
    Endpoint(String),
}
