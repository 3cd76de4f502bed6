//! Informer metrics, in the workqueue's provider style (one constructor per metric, each
//! labelled by the informer's name) and built from the same metric traits, so one exporter
//! can serve queues and informers. The reflector's set is client-go's former reflector
//! `MetricsProvider`; the handler backlog and the watch-list fallbacks are ours.
//!
//! | metric | type | semantics |
//! |---|---|---|
//! | lists | counter | list rounds started (a LIST, all its pages, or a watch-list's initial phase) |
//! | list duration | histogram | seconds from a list's first request to its last answer |
//! | items in list | histogram | objects a successful list stored |
//! | watches | counter | watch requests sent (a watch-list's too) |
//! | short watches | counter | watches closed within a second without an event |
//! | watch duration | histogram | seconds a watch stream stayed open |
//! | items in watch | histogram | events a watch stream delivered (bookmarks included) |
//! | last resource version | settable gauge | the reflector's position, as a number |
//! | watch-list fallbacks | counter | rounds that fell back to a LIST after a failed watch-list |
//! | handler backlog | settable gauge | notifications queued for one handler and not yet handled |

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::workqueue::{CounterMetric, HistogramMetric, Noop, SettableGaugeMetric};

/// Builds the metrics of a named informer (its reflector and its handlers). The reflector's
/// constructors are called once when it is built; [`new_handler_backlog_metric`] once per
/// handler added.
///
/// [`new_handler_backlog_metric`]: InformerMetricsProvider::new_handler_backlog_metric
pub trait InformerMetricsProvider: Send + Sync {
    /// List rounds started.
    fn new_lists_metric(&self, name: &str) -> Box<dyn CounterMetric>;
    /// Seconds each list took.
    fn new_list_duration_metric(&self, name: &str) -> Box<dyn HistogramMetric>;
    /// Objects per successful list.
    fn new_items_in_list_metric(&self, name: &str) -> Box<dyn HistogramMetric>;
    /// Watch requests sent.
    fn new_watches_metric(&self, name: &str) -> Box<dyn CounterMetric>;
    /// Watches closed within a second without an event.
    fn new_short_watches_metric(&self, name: &str) -> Box<dyn CounterMetric>;
    /// Seconds each watch stream stayed open.
    fn new_watch_duration_metric(&self, name: &str) -> Box<dyn HistogramMetric>;
    /// Events per watch stream.
    fn new_items_in_watch_metric(&self, name: &str) -> Box<dyn HistogramMetric>;
    /// The reflector's last resourceVersion (parsed as a number; left alone when it is not one).
    fn new_last_resource_version_metric(&self, name: &str) -> Box<dyn SettableGaugeMetric>;
    /// Rounds that fell back to a LIST because the watch-list failed. Not in client-go; the
    /// default records nothing.
    fn new_watch_list_fallbacks_metric(&self, name: &str) -> Box<dyn CounterMetric> {
        let _ = name;
        Box::new(Noop)
    }
    /// Notifications waiting for handler `handler` (its [`Registration::id`]). The default
    /// records nothing.
    ///
    /// [`Registration::id`]: super::Registration::id
    fn new_handler_backlog_metric(&self, name: &str, handler: u64) -> Box<dyn SettableGaugeMetric> {
        let _ = (name, handler);
        Box::new(Noop)
    }
}

/// A provider and the name its metrics are labelled with.
#[derive(Clone)]
pub(crate) struct MetricsConfig {
    pub(crate) provider: Arc<dyn InformerMetricsProvider>,
    pub(crate) name: String,
}

impl fmt::Debug for MetricsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MetricsConfig")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// The reflector's metrics, built from a provider.
pub(crate) struct ReflectorMetrics {
    lists: Box<dyn CounterMetric>,
    list_duration: Box<dyn HistogramMetric>,
    items_in_list: Box<dyn HistogramMetric>,
    watches: Box<dyn CounterMetric>,
    short_watches: Box<dyn CounterMetric>,
    watch_duration: Box<dyn HistogramMetric>,
    items_in_watch: Box<dyn HistogramMetric>,
    last_resource_version: Box<dyn SettableGaugeMetric>,
    fallbacks: Box<dyn CounterMetric>,
}

impl ReflectorMetrics {
    pub(crate) fn new(config: &MetricsConfig) -> Self {
        let (p, name) = (&config.provider, config.name.as_str());
        ReflectorMetrics {
            lists: p.new_lists_metric(name),
            list_duration: p.new_list_duration_metric(name),
            items_in_list: p.new_items_in_list_metric(name),
            watches: p.new_watches_metric(name),
            short_watches: p.new_short_watches_metric(name),
            watch_duration: p.new_watch_duration_metric(name),
            items_in_watch: p.new_items_in_watch_metric(name),
            last_resource_version: p.new_last_resource_version_metric(name),
            fallbacks: p.new_watch_list_fallbacks_metric(name),
        }
    }

    pub(crate) fn list_started(&self) {
        self.lists.inc();
    }

    /// A list ended after `took`; `items` is `Some` when it was stored.
    pub(crate) fn list_ended(&self, took: Duration, items: Option<usize>) {
        self.list_duration.observe(took.as_secs_f64());
        if let Some(n) = items {
            self.items_in_list.observe(n as f64);
        }
    }

    pub(crate) fn watch_started(&self) {
        self.watches.inc();
    }

    pub(crate) fn watch_ended(&self, open_for: Duration, events: u64) {
        self.watch_duration.observe(open_for.as_secs_f64());
        self.items_in_watch.observe(events as f64);
    }

    pub(crate) fn short_watch(&self) {
        self.short_watches.inc();
    }

    pub(crate) fn fallback(&self) {
        self.fallbacks.inc();
    }

    pub(crate) fn resource_version(&self, rv: &str) {
        // resourceVersions are opaque to clients; etcd's are integers, which is what a gauge
        // can show. Anything else is not reported rather than reported wrong.
        if let Ok(n) = rv.parse::<u64>() {
            self.last_resource_version.set(n as f64);
        }
    }
}
