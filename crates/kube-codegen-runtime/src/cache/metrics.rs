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

#[cfg(feature = "prometheus")]
pub(crate) use self::prometheus::InformerFamilies;

/// The informer side of [`PrometheusMetricsProvider`](crate::workqueue::PrometheusMetricsProvider):
/// one provider serves a program's queues and informers.
///
/// | exported as | labels |
/// |---|---|
/// | `reflector_lists_total`, `reflector_watches_total`, `reflector_short_watches_total`, `reflector_watch_list_fallbacks_total` | `name` |
/// | `reflector_list_duration_seconds`, `reflector_watch_duration_seconds` (histograms) | `name` |
/// | `reflector_items_per_list`, `reflector_items_per_watch` (histograms) | `name` |
/// | `reflector_last_resource_version` (gauge) | `name` |
/// | `informer_handler_backlog` (gauge) | `name`, `handler` |
#[cfg(feature = "prometheus")]
mod prometheus {
    use super::*;
    use crate::workqueue::PrometheusMetricsProvider;
    use prometheus_client::encoding::EncodeLabelSet;
    use prometheus_client::metrics::counter::Counter;
    use prometheus_client::metrics::family::Family;
    use prometheus_client::metrics::gauge::Gauge;
    use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
    use prometheus_client::registry::Registry;
    use std::sync::atomic::AtomicU64;

    #[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
    struct Name {
        name: String,
    }

    #[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
    struct Handler {
        name: String,
        handler: String,
    }

    type FloatGauge = Gauge<f64, AtomicU64>;
    type Histograms = Family<Name, Histogram, fn() -> Histogram>;

    /// 5 ms .. 82 s.
    fn list_seconds() -> Histogram {
        Histogram::new(exponential_buckets(0.005, 2.0, 15))
    }
    /// 1 s .. 34 min (watches last 5-10 min unless cut).
    fn watch_seconds() -> Histogram {
        Histogram::new(exponential_buckets(1.0, 2.0, 12))
    }
    /// 1 .. 262,144 objects or events.
    fn items() -> Histogram {
        Histogram::new(exponential_buckets(1.0, 4.0, 10))
    }

    /// The informer metric families, registered next to the workqueue's.
    #[derive(Clone, Debug)]
    pub(crate) struct InformerFamilies {
        lists: Family<Name, Counter>,
        list_duration: Histograms,
        items_in_list: Histograms,
        watches: Family<Name, Counter>,
        short_watches: Family<Name, Counter>,
        watch_duration: Histograms,
        items_in_watch: Histograms,
        last_resource_version: Family<Name, FloatGauge>,
        fallbacks: Family<Name, Counter>,
        backlog: Family<Handler, FloatGauge>,
    }

    impl InformerFamilies {
        pub(crate) fn new(registry: &mut Registry) -> Self {
            let f = InformerFamilies {
                lists: Family::default(),
                list_duration: Family::new_with_constructor(list_seconds),
                items_in_list: Family::new_with_constructor(items),
                watches: Family::default(),
                short_watches: Family::default(),
                watch_duration: Family::new_with_constructor(watch_seconds),
                items_in_watch: Family::new_with_constructor(items),
                last_resource_version: Family::default(),
                fallbacks: Family::default(),
                backlog: Family::default(),
            };
            // prometheus-client appends `_total` to counters.
            registry.register(
                "reflector_lists",
                "Lists (or watch-list initial phases) started",
                f.lists.clone(),
            );
            registry.register(
                "reflector_list_duration_seconds",
                "How long a list took",
                f.list_duration.clone(),
            );
            registry.register(
                "reflector_items_per_list",
                "Objects stored by a list",
                f.items_in_list.clone(),
            );
            registry.register("reflector_watches", "Watches started", f.watches.clone());
            registry.register(
                "reflector_short_watches",
                "Watches closed within a second without an event",
                f.short_watches.clone(),
            );
            registry.register(
                "reflector_watch_duration_seconds",
                "How long a watch stream stayed open",
                f.watch_duration.clone(),
            );
            registry.register(
                "reflector_items_per_watch",
                "Events a watch stream delivered",
                f.items_in_watch.clone(),
            );
            registry.register(
                "reflector_last_resource_version",
                "The reflector's last resourceVersion",
                f.last_resource_version.clone(),
            );
            registry.register(
                "reflector_watch_list_fallbacks",
                "Rounds that listed after a failed watch-list",
                f.fallbacks.clone(),
            );
            registry.register(
                "informer_handler_backlog",
                "Notifications queued for an event handler and not yet handled",
                f.backlog.clone(),
            );
            f
        }
    }

    fn name(name: &str) -> Name {
        Name {
            name: name.to_owned(),
        }
    }

    impl InformerMetricsProvider for PrometheusMetricsProvider {
        fn new_lists_metric(&self, n: &str) -> Box<dyn CounterMetric> {
            Box::new(self.informer().lists.get_or_create_owned(&name(n)))
        }
        fn new_list_duration_metric(&self, n: &str) -> Box<dyn HistogramMetric> {
            Box::new(self.informer().list_duration.get_or_create_owned(&name(n)))
        }
        fn new_items_in_list_metric(&self, n: &str) -> Box<dyn HistogramMetric> {
            Box::new(self.informer().items_in_list.get_or_create_owned(&name(n)))
        }
        fn new_watches_metric(&self, n: &str) -> Box<dyn CounterMetric> {
            Box::new(self.informer().watches.get_or_create_owned(&name(n)))
        }
        fn new_short_watches_metric(&self, n: &str) -> Box<dyn CounterMetric> {
            Box::new(self.informer().short_watches.get_or_create_owned(&name(n)))
        }
        fn new_watch_duration_metric(&self, n: &str) -> Box<dyn HistogramMetric> {
            Box::new(self.informer().watch_duration.get_or_create_owned(&name(n)))
        }
        fn new_items_in_watch_metric(&self, n: &str) -> Box<dyn HistogramMetric> {
            Box::new(self.informer().items_in_watch.get_or_create_owned(&name(n)))
        }
        fn new_last_resource_version_metric(&self, n: &str) -> Box<dyn SettableGaugeMetric> {
            let f = &self.informer().last_resource_version;
            Box::new(f.get_or_create_owned(&name(n)))
        }
        fn new_watch_list_fallbacks_metric(&self, n: &str) -> Box<dyn CounterMetric> {
            Box::new(self.informer().fallbacks.get_or_create_owned(&name(n)))
        }
        fn new_handler_backlog_metric(
            &self,
            n: &str,
            handler: u64,
        ) -> Box<dyn SettableGaugeMetric> {
            let label = Handler {
                name: n.to_owned(),
                handler: handler.to_string(),
            };
            Box::new(self.informer().backlog.get_or_create_owned(&label))
        }
    }
}
