//! Controller metrics under controller-runtime's names, through a provider like the
//! workqueue's (the Prometheus exporter, `PrometheusMetricsProvider`, implements both).
//!
//! | metric | type | semantics |
//! |---|---|---|
//! | `controller_runtime_reconcile_total{controller,result}` | counter | reconciles by result: `success`, `error`, `requeue`, `requeue_after` |
//! | `controller_runtime_reconcile_errors_total{controller}` | counter | reconciles that failed (errors, panics, timeouts) |
//! | `controller_runtime_reconcile_panics_total{controller}` | counter | reconciles that panicked |
//! | `controller_runtime_reconcile_time_seconds{controller}` | histogram | reconcile durations, controller-runtime's buckets |
//! | `controller_runtime_active_workers{controller}` | gauge | workers reconciling now |
//! | `controller_runtime_max_concurrent_reconciles{controller}` | gauge | the worker count |

use crate::workqueue::{CounterMetric, GaugeMetric, HistogramMetric, SettableGaugeMetric};

/// controller-runtime's buckets of `controller_runtime_reconcile_time_seconds`.
pub const RECONCILE_TIME_BUCKETS: [f64; 40] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
    1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0,
    25.0, 30.0, 40.0, 50.0, 60.0,
];

/// The results of `controller_runtime_reconcile_total`.
pub const RESULTS: [&str; 4] = ["success", "error", "requeue", "requeue_after"];

/// Builds a controller's metrics; each method is called once per controller when it is built.
pub trait ControllerMetricsProvider: Send + Sync {
    /// `controller_runtime_reconcile_total{controller, result}`.
    fn new_reconcile_total(&self, controller: &str, result: &str) -> Box<dyn CounterMetric>;
    /// `controller_runtime_reconcile_errors_total`.
    fn new_reconcile_errors(&self, controller: &str) -> Box<dyn CounterMetric>;
    /// `controller_runtime_reconcile_panics_total`.
    fn new_reconcile_panics(&self, controller: &str) -> Box<dyn CounterMetric>;
    /// `controller_runtime_reconcile_time_seconds`.
    fn new_reconcile_time(&self, controller: &str) -> Box<dyn HistogramMetric>;
    /// `controller_runtime_active_workers`.
    fn new_active_workers(&self, controller: &str) -> Box<dyn GaugeMetric>;
    /// `controller_runtime_max_concurrent_reconciles`.
    fn new_max_concurrent_reconciles(&self, controller: &str) -> Box<dyn SettableGaugeMetric>;
}

/// One controller's metrics.
pub(crate) struct ControllerMetrics {
    /// By [`RESULTS`] order.
    pub(crate) total: [Box<dyn CounterMetric>; 4],
    pub(crate) errors: Box<dyn CounterMetric>,
    pub(crate) panics: Box<dyn CounterMetric>,
    pub(crate) time: Box<dyn HistogramMetric>,
    pub(crate) active: Box<dyn GaugeMetric>,
}

impl ControllerMetrics {
    pub(crate) fn new(p: &dyn ControllerMetricsProvider, name: &str, workers: usize) -> Self {
        p.new_max_concurrent_reconciles(name).set(workers as f64);
        ControllerMetrics {
            total: RESULTS.map(|r| p.new_reconcile_total(name, r)),
            errors: p.new_reconcile_errors(name),
            panics: p.new_reconcile_panics(name),
            time: p.new_reconcile_time(name),
            active: p.new_active_workers(name),
        }
    }

    pub(crate) fn result(&self, label: &str) {
        if let Some(i) = RESULTS.iter().position(|r| *r == label) {
            self.total[i].inc();
        }
    }
}

#[cfg(feature = "prometheus")]
pub(crate) use self::prometheus::ControllerFamilies;

#[cfg(feature = "prometheus")]
mod prometheus {
    use prometheus_client::encoding::EncodeLabelSet;
    use prometheus_client::metrics::counter::Counter;
    use prometheus_client::metrics::family::Family;
    use prometheus_client::metrics::gauge::Gauge;
    use prometheus_client::metrics::histogram::Histogram;
    use prometheus_client::registry::Registry;

    use super::*;
    use crate::workqueue::PrometheusMetricsProvider;

    #[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
    struct ControllerLabel {
        controller: String,
    }

    #[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
    struct ResultLabels {
        controller: String,
        result: String,
    }

    fn reconcile_time() -> Histogram {
        Histogram::new(RECONCILE_TIME_BUCKETS)
    }

    /// The controller metric families, registered beside the workqueue's.
    #[derive(Clone, Debug)]
    pub(crate) struct ControllerFamilies {
        total: Family<ResultLabels, Counter>,
        errors: Family<ControllerLabel, Counter>,
        panics: Family<ControllerLabel, Counter>,
        time: Family<ControllerLabel, Histogram, fn() -> Histogram>,
        active: Family<ControllerLabel, Gauge>,
        max: Family<ControllerLabel, Gauge>,
    }

    impl ControllerFamilies {
        pub(crate) fn new(registry: &mut Registry) -> Self {
            let f = ControllerFamilies {
                total: Family::default(),
                errors: Family::default(),
                panics: Family::default(),
                time: Family::new_with_constructor(reconcile_time),
                active: Family::default(),
                max: Family::default(),
            };
            // prometheus-client appends `_total` to counters.
            registry.register(
                "controller_runtime_reconcile",
                "Total number of reconciliations per controller",
                f.total.clone(),
            );
            registry.register(
                "controller_runtime_reconcile_errors",
                "Total number of reconciliation errors per controller",
                f.errors.clone(),
            );
            registry.register(
                "controller_runtime_reconcile_panics",
                "Total number of reconciliation panics per controller",
                f.panics.clone(),
            );
            registry.register(
                "controller_runtime_reconcile_time_seconds",
                "Length of time per reconciliation per controller",
                f.time.clone(),
            );
            registry.register(
                "controller_runtime_active_workers",
                "Number of currently used workers per controller",
                f.active.clone(),
            );
            registry.register(
                "controller_runtime_max_concurrent_reconciles",
                "Maximum number of concurrent reconciles per controller",
                f.max.clone(),
            );
            f
        }
    }

    fn label(controller: &str) -> ControllerLabel {
        ControllerLabel {
            controller: controller.to_owned(),
        }
    }

    struct IntSettable(Gauge);
    impl SettableGaugeMetric for IntSettable {
        fn set(&self, value: f64) {
            self.0.set(value as i64);
        }
    }

    impl ControllerMetricsProvider for PrometheusMetricsProvider {
        fn new_reconcile_total(&self, controller: &str, result: &str) -> Box<dyn CounterMetric> {
            let labels = ResultLabels {
                controller: controller.to_owned(),
                result: result.to_owned(),
            };
            Box::new(self.controller().total.get_or_create_owned(&labels))
        }
        fn new_reconcile_errors(&self, controller: &str) -> Box<dyn CounterMetric> {
            Box::new(
                self.controller()
                    .errors
                    .get_or_create_owned(&label(controller)),
            )
        }
        fn new_reconcile_panics(&self, controller: &str) -> Box<dyn CounterMetric> {
            Box::new(
                self.controller()
                    .panics
                    .get_or_create_owned(&label(controller)),
            )
        }
        fn new_reconcile_time(&self, controller: &str) -> Box<dyn HistogramMetric> {
            Box::new(
                self.controller()
                    .time
                    .get_or_create_owned(&label(controller)),
            )
        }
        fn new_active_workers(&self, controller: &str) -> Box<dyn GaugeMetric> {
            Box::new(
                self.controller()
                    .active
                    .get_or_create_owned(&label(controller)),
            )
        }
        fn new_max_concurrent_reconciles(&self, controller: &str) -> Box<dyn SettableGaugeMetric> {
            Box::new(IntSettable(
                self.controller()
                    .max
                    .get_or_create_owned(&label(controller)),
            ))
        }
    }
}
