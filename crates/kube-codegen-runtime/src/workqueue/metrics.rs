//! Queue metrics: client-go's provider shape (one constructor per metric, each labelled by the
//! queue name) with a no-op provider and, behind the `prometheus` feature, a
//! [`prometheus-client`](https://docs.rs/prometheus-client) exporter.
//!
//! Metric names (exporter) and semantics follow client-go / component-base:
//!
//! | metric | type | semantics |
//! |---|---|---|
//! | `workqueue_depth` | gauge | +1 on a non-duplicate add, -1 on get |
//! | `workqueue_adds_total` | counter | non-duplicate adds |
//! | `workqueue_queue_duration_seconds` | histogram | first add -> get |
//! | `workqueue_work_duration_seconds` | histogram | get -> done |
//! | `workqueue_unfinished_work_seconds` | gauge | sum of ages of in-flight items |
//! | `workqueue_longest_running_processor_seconds` | gauge | age of the oldest in-flight item |
//! | `workqueue_retries_total` | counter | `add_after` / `add_rate_limited` calls |
//! | `workqueue_waiting_depth` | gauge | items waiting in the delay heap (not in client-go) |
//!
//! Histogram buckets are client-go's `ExponentialBuckets(10e-9, 10, 10)`: 1e-8 s .. 10 s.

use std::fmt;
use std::time::Duration;

/// Histogram bucket upper bounds used by both duration histograms (client-go's buckets).
pub const DURATION_BUCKETS: [f64; 10] = [1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0];

/// A gauge that goes up and down (`workqueue_depth`).
pub trait GaugeMetric: Send + Sync {
    /// Adds one.
    fn inc(&self);
    /// Subtracts one.
    fn dec(&self);
}

/// A gauge set to an absolute value (unfinished work, longest processor, waiting depth).
pub trait SettableGaugeMetric: Send + Sync {
    /// Sets the value.
    fn set(&self, value: f64);
}

/// A monotonically increasing counter.
pub trait CounterMetric: Send + Sync {
    /// Adds one.
    fn inc(&self);
}

/// A histogram of durations in seconds.
pub trait HistogramMetric: Send + Sync {
    /// Records one observation (seconds).
    fn observe(&self, value: f64);
}

/// Builds the metrics of a named queue. Each method is called once per queue, with the queue's
/// name, when the queue is built. Implement it to plug the queue into any metrics system.
pub trait MetricsProvider: Send + Sync {
    /// `workqueue_depth`.
    fn new_depth_metric(&self, name: &str) -> Box<dyn GaugeMetric>;
    /// `workqueue_adds_total`.
    fn new_adds_metric(&self, name: &str) -> Box<dyn CounterMetric>;
    /// `workqueue_queue_duration_seconds`.
    fn new_latency_metric(&self, name: &str) -> Box<dyn HistogramMetric>;
    /// `workqueue_work_duration_seconds`.
    fn new_work_duration_metric(&self, name: &str) -> Box<dyn HistogramMetric>;
    /// `workqueue_unfinished_work_seconds`.
    fn new_unfinished_work_seconds_metric(&self, name: &str) -> Box<dyn SettableGaugeMetric>;
    /// `workqueue_longest_running_processor_seconds`.
    fn new_longest_running_processor_seconds_metric(
        &self,
        name: &str,
    ) -> Box<dyn SettableGaugeMetric>;
    /// `workqueue_retries_total`.
    fn new_retries_metric(&self, name: &str) -> Box<dyn CounterMetric>;
    /// `workqueue_waiting_depth`: items waiting in the delay heap. client-go has no such metric
    /// (its delayed items are invisible); the default implementation records nothing.
    fn new_waiting_depth_metric(&self, name: &str) -> Box<dyn SettableGaugeMetric> {
        let _ = name;
        Box::new(Noop)
    }
}

/// A metric that records nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct Noop;

impl GaugeMetric for Noop {
    fn inc(&self) {}
    fn dec(&self) {}
}
impl SettableGaugeMetric for Noop {
    fn set(&self, _: f64) {}
}
impl CounterMetric for Noop {
    fn inc(&self) {}
}
impl HistogramMetric for Noop {
    fn observe(&self, _: f64) {}
}

/// The provider that records nothing. A queue without a provider (the default) skips metric
/// bookkeeping entirely, which is cheaper than this; use it where a provider value is required.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoopMetricsProvider;

impl MetricsProvider for NoopMetricsProvider {
    fn new_depth_metric(&self, _: &str) -> Box<dyn GaugeMetric> {
        Box::new(Noop)
    }
    fn new_adds_metric(&self, _: &str) -> Box<dyn CounterMetric> {
        Box::new(Noop)
    }
    fn new_latency_metric(&self, _: &str) -> Box<dyn HistogramMetric> {
        Box::new(Noop)
    }
    fn new_work_duration_metric(&self, _: &str) -> Box<dyn HistogramMetric> {
        Box::new(Noop)
    }
    fn new_unfinished_work_seconds_metric(&self, _: &str) -> Box<dyn SettableGaugeMetric> {
        Box::new(Noop)
    }
    fn new_longest_running_processor_seconds_metric(
        &self,
        _: &str,
    ) -> Box<dyn SettableGaugeMetric> {
        Box::new(Noop)
    }
    fn new_retries_metric(&self, _: &str) -> Box<dyn CounterMetric> {
        Box::new(Noop)
    }
}

/// The metrics of one queue, built from a provider.
pub(crate) struct QueueMetrics {
    depth: Box<dyn GaugeMetric>,
    adds: Box<dyn CounterMetric>,
    latency: Box<dyn HistogramMetric>,
    work_duration: Box<dyn HistogramMetric>,
    unfinished: Box<dyn SettableGaugeMetric>,
    longest: Box<dyn SettableGaugeMetric>,
    retries: Box<dyn CounterMetric>,
    waiting: Box<dyn SettableGaugeMetric>,
}

impl fmt::Debug for QueueMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("QueueMetrics")
    }
}

impl QueueMetrics {
    pub(crate) fn new(provider: &dyn MetricsProvider, name: &str) -> Self {
        QueueMetrics {
            depth: provider.new_depth_metric(name),
            adds: provider.new_adds_metric(name),
            latency: provider.new_latency_metric(name),
            work_duration: provider.new_work_duration_metric(name),
            unfinished: provider.new_unfinished_work_seconds_metric(name),
            longest: provider.new_longest_running_processor_seconds_metric(name),
            retries: provider.new_retries_metric(name),
            waiting: provider.new_waiting_depth_metric(name),
        }
    }

    pub(crate) fn add(&self) {
        self.adds.inc();
        self.depth.inc();
    }

    pub(crate) fn get(&self, queued_for: Option<Duration>) {
        self.depth.dec();
        if let Some(d) = queued_for {
            self.latency.observe(d.as_secs_f64());
        }
    }

    pub(crate) fn done(&self, worked_for: Duration) {
        self.work_duration.observe(worked_for.as_secs_f64());
    }

    pub(crate) fn retry(&self) {
        self.retries.inc();
    }

    pub(crate) fn set_unfinished(&self, total_secs: f64, longest_secs: f64) {
        self.unfinished.set(total_secs);
        self.longest.set(longest_secs);
    }

    pub(crate) fn set_waiting(&self, n: usize) {
        self.waiting.set(n as f64);
    }
}

#[cfg(feature = "prometheus")]
pub use self::prometheus::PrometheusMetricsProvider;

#[cfg(feature = "prometheus")]
mod prometheus {
    use super::*;
    use prometheus_client::encoding::EncodeLabelSet;
    use prometheus_client::metrics::counter::Counter;
    use prometheus_client::metrics::family::Family;
    use prometheus_client::metrics::gauge::Gauge;
    use prometheus_client::metrics::histogram::Histogram;
    use prometheus_client::registry::Registry;
    use std::sync::atomic::AtomicU64;

    #[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
    struct QueueLabel {
        name: String,
    }

    type FloatGauge = Gauge<f64, AtomicU64>;
    type HistogramFamily = Family<QueueLabel, Histogram, fn() -> Histogram>;

    fn duration_histogram() -> Histogram {
        Histogram::new(DURATION_BUCKETS)
    }

    /// Exports queue metrics to a `prometheus_client` [`Registry`] under client-go's names,
    /// one series per queue (label `name`); as an
    /// [`InformerMetricsProvider`](crate::cache::InformerMetricsProvider), informer metrics
    /// too (`reflector_*`, `informer_handler_backlog`), one series per informer.
    ///
    /// Create it once per registry (it registers the metric families) and pass it to every
    /// queue builder; queues with the same name share their series.
    #[derive(Clone, Debug)]
    pub struct PrometheusMetricsProvider {
        depth: Family<QueueLabel, Gauge>,
        adds: Family<QueueLabel, Counter>,
        latency: HistogramFamily,
        work_duration: HistogramFamily,
        unfinished: Family<QueueLabel, FloatGauge>,
        longest: Family<QueueLabel, FloatGauge>,
        retries: Family<QueueLabel, Counter>,
        waiting: Family<QueueLabel, Gauge>,
        informer: crate::cache::InformerFamilies,
        controller: crate::controller::ControllerFamilies,
    }

    impl PrometheusMetricsProvider {
        /// Registers the workqueue metric families in `registry`.
        pub fn new(registry: &mut Registry) -> Self {
            let p = PrometheusMetricsProvider {
                depth: Family::default(),
                adds: Family::default(),
                latency: Family::new_with_constructor(duration_histogram),
                work_duration: Family::new_with_constructor(duration_histogram),
                unfinished: Family::default(),
                longest: Family::default(),
                retries: Family::default(),
                waiting: Family::default(),
                informer: crate::cache::InformerFamilies::new(registry),
                controller: crate::controller::ControllerFamilies::new(registry),
            };
            registry.register(
                "workqueue_depth",
                "Current depth of workqueue",
                p.depth.clone(),
            );
            // prometheus-client appends `_total` to counters.
            registry.register(
                "workqueue_adds",
                "Total number of adds handled by workqueue",
                p.adds.clone(),
            );
            registry.register(
                "workqueue_queue_duration_seconds",
                "How long in seconds an item stays in workqueue before being requested",
                p.latency.clone(),
            );
            registry.register(
                "workqueue_work_duration_seconds",
                "How long in seconds processing an item from workqueue takes",
                p.work_duration.clone(),
            );
            registry.register(
                "workqueue_unfinished_work_seconds",
                "How many seconds of work has been done that is in progress and hasn't been \
                 observed by work_duration",
                p.unfinished.clone(),
            );
            registry.register(
                "workqueue_longest_running_processor_seconds",
                "How many seconds has the longest running processor for workqueue been running",
                p.longest.clone(),
            );
            registry.register(
                "workqueue_retries",
                "Total number of retries handled by workqueue",
                p.retries.clone(),
            );
            registry.register(
                "workqueue_waiting_depth",
                "Number of items waiting in the delay heap of workqueue",
                p.waiting.clone(),
            );
            p
        }
    }

    impl PrometheusMetricsProvider {
        /// The informer metric families (`cache::metrics` exports through them).
        pub(crate) fn informer(&self) -> &crate::cache::InformerFamilies {
            &self.informer
        }

        /// The controller metric families (`controller::metrics` exports through them).
        pub(crate) fn controller(&self) -> &crate::controller::ControllerFamilies {
            &self.controller
        }
    }

    fn label(name: &str) -> QueueLabel {
        QueueLabel {
            name: name.to_owned(),
        }
    }

    impl GaugeMetric for Gauge {
        fn inc(&self) {
            Gauge::inc(self);
        }
        fn dec(&self) {
            Gauge::dec(self);
        }
    }
    impl SettableGaugeMetric for FloatGauge {
        fn set(&self, value: f64) {
            Gauge::set(self, value);
        }
    }
    struct IntSettable(Gauge);
    impl SettableGaugeMetric for IntSettable {
        fn set(&self, value: f64) {
            self.0.set(value as i64);
        }
    }
    impl CounterMetric for Counter {
        fn inc(&self) {
            Counter::inc(self);
        }
    }
    impl HistogramMetric for Histogram {
        fn observe(&self, value: f64) {
            Histogram::observe(self, value);
        }
    }

    impl MetricsProvider for PrometheusMetricsProvider {
        fn new_depth_metric(&self, name: &str) -> Box<dyn GaugeMetric> {
            Box::new(self.depth.get_or_create_owned(&label(name)))
        }
        fn new_adds_metric(&self, name: &str) -> Box<dyn CounterMetric> {
            Box::new(self.adds.get_or_create_owned(&label(name)))
        }
        fn new_latency_metric(&self, name: &str) -> Box<dyn HistogramMetric> {
            Box::new(self.latency.get_or_create_owned(&label(name)))
        }
        fn new_work_duration_metric(&self, name: &str) -> Box<dyn HistogramMetric> {
            Box::new(self.work_duration.get_or_create_owned(&label(name)))
        }
        fn new_unfinished_work_seconds_metric(&self, name: &str) -> Box<dyn SettableGaugeMetric> {
            Box::new(self.unfinished.get_or_create_owned(&label(name)))
        }
        fn new_longest_running_processor_seconds_metric(
            &self,
            name: &str,
        ) -> Box<dyn SettableGaugeMetric> {
            Box::new(self.longest.get_or_create_owned(&label(name)))
        }
        fn new_retries_metric(&self, name: &str) -> Box<dyn CounterMetric> {
            Box::new(self.retries.get_or_create_owned(&label(name)))
        }
        fn new_waiting_depth_metric(&self, name: &str) -> Box<dyn SettableGaugeMetric> {
            Box::new(IntSettable(self.waiting.get_or_create_owned(&label(name))))
        }
    }
}
