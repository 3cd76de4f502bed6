//! Conversion webhook metrics per kind and version pair: a [`ConversionMetrics`] trait with a
//! no-op default and, behind the `prometheus` feature, a
//! [`prometheus-client`](https://docs.rs/prometheus-client) exporter.
//!
//! | metric (exporter) | type | labels | semantics |
//! |---|---|---|---|
//! | `conversion_webhook_objects_total` | counter | group, kind, from, to | objects converted in successful reviews |
//! | `conversion_webhook_failures_total` | counter | group, kind, from, to | failed reviews, by the object that failed |
//! | `conversion_webhook_review_duration_seconds` | histogram | group, kind, from, to, status | one review, from its body to its answer |
//!
//! `from` is the objects' version; a review's duration is labelled with the version of its
//! objects, `mixed` when they are of several. A review failing before any object is
//! identified (a bad `desiredAPIVersion`) has empty group, kind and from. Bodies that are not a
//! `ConversionReview` (HTTP 400) are not counted.

/// The histogram bucket upper bounds of review durations, in seconds: 10 µs .. ~10 s.
pub const REVIEW_DURATION_BUCKETS: [f64; 13] = [
    1e-5, 2.5e-5, 1e-4, 2.5e-4, 1e-3, 2.5e-3, 1e-2, 2.5e-2, 0.1, 0.25, 1.0, 2.5, 10.0,
];

/// A kind and the versions of one conversion (`from` -> `to`, versions without the group).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VersionPair<'a> {
    /// The kind's API group.
    pub group: &'a str,
    /// The kind.
    pub kind: &'a str,
    /// The objects' version (`mixed` for a review's duration when they are of several).
    pub from: &'a str,
    /// The desired version.
    pub to: &'a str,
}

/// Receives the conversion webhook's measurements; every method defaults to doing nothing.
/// Called once per review and version pair (not per object), after the review is answered.
pub trait ConversionMetrics: Send + Sync {
    /// `objects` objects of `pair` were converted in a successful review.
    fn converted(&self, pair: &VersionPair<'_>, objects: u64) {
        let _ = (pair, objects);
    }
    /// A review failed, at an object of `pair`.
    fn failed(&self, pair: &VersionPair<'_>) {
        let _ = pair;
    }
    /// A review took `seconds` (decoding, converting and encoding), and succeeded or not.
    fn review(&self, pair: &VersionPair<'_>, seconds: f64, success: bool) {
        let _ = (pair, seconds, success);
    }
}

/// Metrics that record nothing (the [`Converter`](super::Converter)'s default).
#[derive(Debug, Default, Clone, Copy)]
pub struct NoopConversionMetrics;

impl ConversionMetrics for NoopConversionMetrics {}

#[cfg(feature = "prometheus")]
pub use self::prometheus::PrometheusConversionMetrics;

#[cfg(feature = "prometheus")]
mod prometheus {
    use super::*;
    use prometheus_client::encoding::EncodeLabelSet;
    use prometheus_client::metrics::counter::Counter;
    use prometheus_client::metrics::family::Family;
    use prometheus_client::metrics::histogram::Histogram;
    use prometheus_client::registry::Registry;

    #[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
    struct PairLabels {
        group: String,
        kind: String,
        from: String,
        to: String,
    }

    #[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
    struct ReviewLabels {
        group: String,
        kind: String,
        from: String,
        to: String,
        status: &'static str,
    }

    fn labels(pair: &VersionPair<'_>) -> PairLabels {
        PairLabels {
            group: pair.group.to_owned(),
            kind: pair.kind.to_owned(),
            from: pair.from.to_owned(),
            to: pair.to.to_owned(),
        }
    }

    fn review_histogram() -> Histogram {
        Histogram::new(REVIEW_DURATION_BUCKETS)
    }

    /// Exports conversion webhook metrics to a `prometheus_client` [`Registry`] (names in the
    /// [module documentation](super)). Create it once per registry (it registers the metric
    /// families) and pass it to [`Converter::with_metrics`](crate::conversion::Converter::with_metrics).
    #[derive(Clone, Debug)]
    pub struct PrometheusConversionMetrics {
        objects: Family<PairLabels, Counter>,
        failures: Family<PairLabels, Counter>,
        durations: Family<ReviewLabels, Histogram, fn() -> Histogram>,
    }

    impl PrometheusConversionMetrics {
        /// Registers the conversion webhook metric families in `registry`.
        pub fn new(registry: &mut Registry) -> Self {
            let m = PrometheusConversionMetrics {
                objects: Family::default(),
                failures: Family::default(),
                durations: Family::new_with_constructor(review_histogram),
            };
            // prometheus-client appends `_total` to counters.
            registry.register(
                "conversion_webhook_objects",
                "Objects converted by the conversion webhook in successful reviews",
                m.objects.clone(),
            );
            registry.register(
                "conversion_webhook_failures",
                "ConversionReviews answered with a Failure, by the object that failed",
                m.failures.clone(),
            );
            registry.register(
                "conversion_webhook_review_duration_seconds",
                "How long in seconds the conversion webhook took to answer one ConversionReview",
                m.durations.clone(),
            );
            m
        }
    }

    impl ConversionMetrics for PrometheusConversionMetrics {
        fn converted(&self, pair: &VersionPair<'_>, objects: u64) {
            self.objects.get_or_create(&labels(pair)).inc_by(objects);
        }
        fn failed(&self, pair: &VersionPair<'_>) {
            self.failures.get_or_create(&labels(pair)).inc();
        }
        fn review(&self, pair: &VersionPair<'_>, seconds: f64, success: bool) {
            let l = ReviewLabels {
                group: pair.group.to_owned(),
                kind: pair.kind.to_owned(),
                from: pair.from.to_owned(),
                to: pair.to.to_owned(),
                status: if success { "Success" } else { "Failure" },
            };
            self.durations.get_or_create(&l).observe(seconds);
        }
    }
}
