//! [`ReflectorOptions`]: how a [`Reflector`](super::Reflector) lists, watches and retries.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::metrics::{InformerMetricsProvider, MetricsConfig};

/// Called with every error that ends a list-and-watch round (a failed list, a watch that could
/// not start or failed), before the reflector backs off and relists: client-go's
/// `WatchErrorHandler`, for programs that want to see or count what otherwise is a log line.
pub type WatchErrorHandler = Arc<dyn Fn(&kube::Error) + Send + Sync>;

/// Tuning of a [`Reflector`](super::Reflector); the defaults are client-go's (1.35).
#[derive(Clone)]
#[non_exhaustive]
pub struct ReflectorOptions {
    /// First delay between rounds (doubles each round up to `backoff_cap`). Default 800 ms.
    pub backoff_initial: Duration,
    /// Largest delay between rounds before jitter (which adds up to as much again). Default 30 s.
    pub backoff_cap: Duration,
    /// Page size of lists read at `""` (and at `"0"` with
    /// [`consistent_first_list`](Self::consistent_first_list)). Default 500.
    pub page_size: u32,
    /// Shortest watch timeout asked of the server; each watch picks one in [min, 2 min).
    /// Default 5 min.
    pub min_watch_timeout: Duration,
    /// See [`WatchErrorHandler`]; errors are logged either way.
    pub watch_error_handler: Option<WatchErrorHandler>,
    /// Each round starts with a streaming watch-list (`sendInitialEvents=true`) instead of a
    /// LIST, when the source supports it ([`ListWatch::supports_watch_list`]). Default true, as
    /// client-go's `WatchListClient` gate since 1.35.
    ///
    /// [`ListWatch::supports_watch_list`]: super::ListWatch::supports_watch_list
    pub watch_list: bool,
    /// The first LIST (without watch-list, or when it falls back) is a consistent read from
    /// etcd in pages instead of a read at resourceVersion `"0"` that the server answers
    /// whole from its watch cache. Default false, as client-go.
    pub consistent_first_list: bool,
    pub(crate) metrics: Option<MetricsConfig>,
    /// Cache only the objects whose hash lies in the replica's ranges
    /// ([`sharded`](Self::sharded)); `None`: every object.
    #[cfg(feature = "sharding")]
    pub shard: Option<crate::shard::ShardScope>,
}

impl fmt::Debug for ReflectorOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReflectorOptions")
            .field("backoff_initial", &self.backoff_initial)
            .field("backoff_cap", &self.backoff_cap)
            .field("page_size", &self.page_size)
            .field("min_watch_timeout", &self.min_watch_timeout)
            .field("watch_error_handler", &self.watch_error_handler.is_some())
            .field("watch_list", &self.watch_list)
            .field("consistent_first_list", &self.consistent_first_list)
            .field("metrics", &self.metrics)
            .finish_non_exhaustive()
    }
}

impl Default for ReflectorOptions {
    fn default() -> Self {
        ReflectorOptions {
            backoff_initial: Duration::from_millis(800),
            backoff_cap: Duration::from_secs(30),
            page_size: 500,
            min_watch_timeout: Duration::from_secs(300),
            watch_error_handler: None,
            watch_list: true,
            consistent_first_list: false,
            metrics: None,
            #[cfg(feature = "sharding")]
            shard: None,
        }
    }
}

impl ReflectorOptions {
    /// Sets the first and the largest delay between rounds.
    pub fn backoff(mut self, initial: Duration, cap: Duration) -> Self {
        self.backoff_initial = initial;
        self.backoff_cap = cap.max(initial);
        self
    }

    /// Sets the list page size (at least 1).
    pub fn page_size(mut self, n: u32) -> Self {
        self.page_size = n.max(1);
        self
    }

    /// Sets the [`WatchErrorHandler`].
    pub fn watch_error_handler(mut self, f: impl Fn(&kube::Error) + Send + Sync + 'static) -> Self {
        self.watch_error_handler = Some(Arc::new(f));
        self
    }

    /// Turns the streaming watch-list on (the default) or off (LIST, then WATCH).
    pub fn watch_list(mut self, on: bool) -> Self {
        self.watch_list = on;
        self
    }

    /// See [`consistent_first_list`](Self#structfield.consistent_first_list).
    pub fn consistent_first_list(mut self, on: bool) -> Self {
        self.consistent_first_list = on;
        self
    }

    /// Caches only the objects whose hash of `scope.key` lies in the replica's current ranges:
    /// lists and watches carry the `shardSelector` of those ranges, and where the server does
    /// not echo it (a server without `ShardedListAndWatch`), objects are filtered by the same
    /// hash before the cache. A change of ranges restarts the list and watch; the relist reports
    /// the objects given away as deletes and those taken as adds. An empty range set caches
    /// nothing and sends no request.
    #[cfg(feature = "sharding")]
    pub fn sharded(mut self, scope: crate::shard::ShardScope) -> Self {
        self.shard = Some(scope);
        self
    }

    /// Records the reflector's metrics through `provider`, labelled `name` (an informer also
    /// records its handlers' backlogs there).
    pub fn metrics(
        mut self,
        provider: Arc<dyn InformerMetricsProvider>,
        name: impl Into<String>,
    ) -> Self {
        self.metrics = Some(MetricsConfig {
            provider,
            name: name.into(),
        });
        self
    }
}
