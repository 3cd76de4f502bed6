//! What a program can observe of an informer besides its cache: its metrics through an
//! [`InformerMetricsProvider`] (list and watch counts and durations, items per list, the last
//! resourceVersion, each handler's backlog, watch-list fallbacks), and the reflector's last
//! error.

use crate::support;

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams};
use kube_codegen_runtime::SharedInformerFactory;
use kube_codegen_runtime::cache::{
    EventHandlerFns, InformerMetricsProvider, InformerOptions, SharedIndexInformer,
};
use kube_codegen_runtime::workqueue::{CounterMetric, HistogramMetric, SettableGaugeMetric};
use kube_fake_apiserver::FakeApiServer;
use parking_lot::Mutex;
use support::{client, cm, eventually, fast_reflector, within};

const PATH: &str = "/api/v1/configmaps";

/// Every value recorded, by metric name and label.
#[derive(Default)]
struct Recorded {
    counters: BTreeMap<String, u64>,
    observations: BTreeMap<String, Vec<f64>>,
    gauges: BTreeMap<String, f64>,
}

#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Recorded>>);

struct Counter(Recorder, String);
impl CounterMetric for Counter {
    fn inc(&self) {
        *self.0.0.lock().counters.entry(self.1.clone()).or_default() += 1;
    }
}
struct Histogram(Recorder, String);
impl HistogramMetric for Histogram {
    fn observe(&self, v: f64) {
        let mut r = self.0.0.lock();
        r.observations.entry(self.1.clone()).or_default().push(v);
    }
}
struct Gauge(Recorder, String);
impl SettableGaugeMetric for Gauge {
    fn set(&self, v: f64) {
        self.0.0.lock().gauges.insert(self.1.clone(), v);
    }
}

impl Recorder {
    fn counter(&self, metric: &str, name: &str) -> Box<dyn CounterMetric> {
        Box::new(Counter(self.clone(), format!("{metric}/{name}")))
    }
    fn histogram(&self, metric: &str, name: &str) -> Box<dyn HistogramMetric> {
        Box::new(Histogram(self.clone(), format!("{metric}/{name}")))
    }
    fn gauge(&self, metric: &str, name: &str) -> Box<dyn SettableGaugeMetric> {
        Box::new(Gauge(self.clone(), format!("{metric}/{name}")))
    }

    fn count(&self, key: &str) -> u64 {
        self.0.lock().counters.get(key).copied().unwrap_or(0)
    }
    fn observed(&self, key: &str) -> Vec<f64> {
        self.0
            .lock()
            .observations
            .get(key)
            .cloned()
            .unwrap_or_default()
    }
    fn gauge_value(&self, key: &str) -> Option<f64> {
        self.0.lock().gauges.get(key).copied()
    }
}

impl InformerMetricsProvider for Recorder {
    fn new_lists_metric(&self, name: &str) -> Box<dyn CounterMetric> {
        self.counter("lists", name)
    }
    fn new_list_duration_metric(&self, name: &str) -> Box<dyn HistogramMetric> {
        self.histogram("list_duration", name)
    }
    fn new_items_in_list_metric(&self, name: &str) -> Box<dyn HistogramMetric> {
        self.histogram("items_in_list", name)
    }
    fn new_watches_metric(&self, name: &str) -> Box<dyn CounterMetric> {
        self.counter("watches", name)
    }
    fn new_short_watches_metric(&self, name: &str) -> Box<dyn CounterMetric> {
        self.counter("short_watches", name)
    }
    fn new_watch_duration_metric(&self, name: &str) -> Box<dyn HistogramMetric> {
        self.histogram("watch_duration", name)
    }
    fn new_items_in_watch_metric(&self, name: &str) -> Box<dyn HistogramMetric> {
        self.histogram("items_in_watch", name)
    }
    fn new_last_resource_version_metric(&self, name: &str) -> Box<dyn SettableGaugeMetric> {
        self.gauge("last_rv", name)
    }
    fn new_watch_list_fallbacks_metric(&self, name: &str) -> Box<dyn CounterMetric> {
        self.counter("fallbacks", name)
    }
    fn new_handler_backlog_metric(&self, name: &str, handler: u64) -> Box<dyn SettableGaugeMetric> {
        self.gauge("backlog", &format!("{name}/{handler}"))
    }
}

async fn server_with(names: &[&str]) -> (FakeApiServer, Api<ConfigMap>) {
    let server = FakeApiServer::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(server.in_process_client(), "default");
    for n in names {
        api.create(&PostParams::default(), &cm(n, n)).await.unwrap();
    }
    (server, api)
}

fn run(
    server: &FakeApiServer,
    options: InformerOptions<ConfigMap>,
) -> (SharedIndexInformer<ConfigMap>, tokio::task::JoinHandle<()>) {
    let informer = SharedIndexInformer::new(Api::<ConfigMap>::all(client(server)), options);
    let task = {
        let informer = informer.clone();
        tokio::spawn(async move { informer.run().await })
    };
    (informer, task)
}

/// The server's current resourceVersion, as a list reports it.
async fn server_rv(api: &Api<ConfigMap>) -> f64 {
    let list = api.list(&ListParams::default()).await.unwrap();
    list.metadata.resource_version.unwrap().parse().unwrap()
}

#[tokio::test]
async fn a_watch_list_sync_and_its_watch_are_measured() {
    let (server, api) = server_with(&["a", "b", "c"]).await;
    let rec = Recorder::default();
    let options = InformerOptions::default()
        .reflector(fast_reflector())
        .metrics(Arc::new(rec.clone()), "cms");
    let (informer, task) = run(&server, options);
    within("the sync", informer.wait_for_sync()).await;

    assert_eq!(
        rec.count("lists/cms"),
        1,
        "the watch-list counts as the list"
    );
    assert_eq!(rec.count("watches/cms"), 1, "and as the watch");
    assert_eq!(rec.observed("items_in_list/cms"), [3.0]);
    let took = rec.observed("list_duration/cms");
    assert!(
        took.len() == 1 && took[0] > 0.0 && took[0] < 10.0,
        "{took:?}"
    );
    assert_eq!(rec.gauge_value("last_rv/cms"), Some(server_rv(&api).await));
    assert_eq!(rec.count("fallbacks/cms"), 0);

    // Two changes move the resourceVersion; then the server ends the watch.
    api.create(&PostParams::default(), &cm("d", "d"))
        .await
        .unwrap();
    api.replace("a", &PostParams::default(), &{
        let mut a = api.get("a").await.unwrap();
        a.data = Some([("k".to_owned(), "changed".to_owned())].into());
        a
    })
    .await
    .unwrap();
    let rv = server_rv(&api).await;
    eventually("the last resourceVersion followed", || async {
        rec.gauge_value("last_rv/cms") == Some(rv)
    })
    .await;
    server.faults().drop_watches();
    eventually("a second watch", || async { rec.count("watches/cms") == 2 }).await;
    // The first stream: 3 initial ADDED, the end bookmark, 2 changes.
    assert_eq!(rec.observed("items_in_watch/cms"), [6.0]);
    assert_eq!(rec.observed("watch_duration/cms").len(), 1);
    assert_eq!(rec.count("lists/cms"), 1, "re-watched, not relisted");
    assert_eq!(rec.count("short_watches/cms"), 0);
    task.abort();
}

#[tokio::test]
async fn a_fallback_to_a_list_is_counted_and_the_list_measured() {
    let (server, _api) = server_with(&["a", "b"]).await;
    server.faults().fail_next_matching(1, 403, PATH);
    let rec = Recorder::default();
    let options = InformerOptions::default()
        .reflector(fast_reflector())
        .metrics(Arc::new(rec.clone()), "cms");
    let (informer, task) = run(&server, options);
    within("the sync", informer.wait_for_sync()).await;
    assert_eq!(rec.count("fallbacks/cms"), 1);
    assert_eq!(
        rec.count("lists/cms"),
        2,
        "the refused watch-list, then the list"
    );
    assert_eq!(rec.observed("list_duration/cms").len(), 2);
    assert_eq!(
        rec.observed("items_in_list/cms"),
        [2.0],
        "only the stored list"
    );
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_backlog_is_reported_per_handler() {
    let (server, _api) = server_with(&["a", "b", "c"]).await;
    let rec = Recorder::default();
    let options = InformerOptions::default()
        .reflector(fast_reflector())
        .metrics(Arc::new(rec.clone()), "cms");
    let (informer, task) = run(&server, options);
    // A handler stuck in its first call until released; another that keeps up.
    let (release, gate) = std::sync::mpsc::channel::<()>();
    let gate = Mutex::new(gate);
    let stuck = informer
        .add_event_handler(EventHandlerFns::new().on_add(move |_, _| {
            let _ = gate.lock().recv();
        }))
        .unwrap();
    let quick = informer
        .add_event_handler(EventHandlerFns::<ConfigMap>::new())
        .unwrap();
    within("the sync", informer.wait_for_sync()).await;
    let stuck_key = format!("backlog/cms/{}", stuck.id());
    let quick_key = format!("backlog/cms/{}", quick.id());
    eventually("the quick handler's backlog drained", || async {
        rec.gauge_value(&quick_key) == Some(0.0)
    })
    .await;
    // The stuck handler holds its first add: all three still count as waiting.
    assert_eq!(rec.gauge_value(&stuck_key), Some(3.0));
    assert_eq!(stuck.backlog(), 3);
    assert!(!stuck.has_synced());
    for _ in 0..3 {
        release.send(()).unwrap();
    }
    eventually("the stuck handler's backlog drained", || async {
        rec.gauge_value(&stuck_key) == Some(0.0)
    })
    .await;
    assert_eq!(stuck.backlog(), 0);
    task.abort();
}

#[tokio::test]
async fn the_factory_labels_each_informer_with_its_resource() {
    let (server, _api) = server_with(&["a"]).await;
    let rec = Recorder::default();
    let factory = SharedInformerFactory::builder(client(&server))
        .reflector(fast_reflector())
        .metrics(Arc::new(rec.clone()))
        .build();
    let cms = factory.informer_for::<ConfigMap>();
    factory.start();
    within("the sync", factory.wait_for_cache_sync()).await;
    assert!(cms.has_synced());
    assert_eq!(rec.observed("items_in_list/configmaps"), [1.0]);
    factory.shutdown();
}

#[tokio::test]
async fn the_last_error_is_kept_while_rounds_fail_and_cleared_by_a_sync() {
    let (server, _api) = server_with(&["a"]).await;
    server.faults().fail_next_matching(usize::MAX, 503, PATH);
    let (informer, task) = run(
        &server,
        InformerOptions::default().reflector(fast_reflector()),
    );
    eventually("two failed rounds", || async {
        informer.last_error().is_some_and(|e| e.consecutive >= 2)
    })
    .await;
    let last = informer.last_error().unwrap();
    assert!(
        matches!(&*last.error, kube::Error::Api(s) if s.code == 503),
        "{last}"
    );
    assert!(!informer.has_synced());

    server.faults().clear_failures();
    within("the sync", informer.wait_for_sync()).await;
    eventually("the error cleared", || async {
        informer.last_error().is_none()
    })
    .await;
    task.abort();
}

/// The workqueue's Prometheus provider exports informer metrics too.
#[cfg(feature = "prometheus")]
#[tokio::test]
async fn the_prometheus_provider_exports_informer_metrics() {
    use kube_codegen_runtime::workqueue::PrometheusMetricsProvider;
    use prometheus_client::registry::Registry;

    let (server, api) = server_with(&["a", "b"]).await;
    let mut registry = Registry::default();
    let provider = Arc::new(PrometheusMetricsProvider::new(&mut registry));
    let options = InformerOptions::default()
        .reflector(fast_reflector())
        .metrics(provider, "cms");
    let (informer, task) = run(&server, options);
    let handler = informer
        .add_event_handler(EventHandlerFns::<ConfigMap>::new())
        .unwrap();
    within("the sync", informer.wait_for_sync()).await;
    let rv = server_rv(&api).await;
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    let has = |line: &str| text.lines().any(|l| l == line);
    assert!(has(r#"reflector_lists_total{name="cms"} 1"#), "{text}");
    assert!(has(r#"reflector_watches_total{name="cms"} 1"#), "{text}");
    assert!(
        has(r#"reflector_items_per_list_sum{name="cms"} 2.0"#),
        "{text}"
    );
    assert!(
        has(&format!(
            r#"reflector_last_resource_version{{name="cms"}} {rv:.1}"#
        )),
        "{text}"
    );
    let backlog = format!(
        r#"informer_handler_backlog{{name="cms",handler="{}"}}"#,
        handler.id()
    );
    assert!(text.lines().any(|l| l.starts_with(&backlog)), "{text}");
    task.abort();
}
