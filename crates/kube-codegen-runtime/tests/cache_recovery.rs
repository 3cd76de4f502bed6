//! An informer after an outage: while the server cannot be reached the reflector backs off
//! further and further; once the server answers again (here with a 410 for the compacted
//! resourceVersion), it relists at once instead of sitting out the delay it grew while the
//! server was down. The outage is a TCP proxy between the client and the in-memory server
//! that refuses connections and cuts the open ones.

use crate::support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, PostParams};
use kube_codegen_runtime::cache::{InformerOptions, ReflectorOptions, SharedIndexInformer};
use kube_fake_apiserver::FakeApiServer;
use parking_lot::Mutex;
use support::cm;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::AbortHandle;
use tokio::time::Instant;

/// A TCP proxy that can be taken down (connections refused, open ones cut) and brought back.
struct Proxy {
    addr: SocketAddr,
    up: Arc<AtomicBool>,
    open: Arc<Mutex<Vec<AbortHandle>>>,
    /// When the first connection after [`Proxy::bring_up`] was forwarded.
    first_after_up: Arc<Mutex<Option<Instant>>>,
}

impl Proxy {
    async fn start(target: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let proxy = Proxy {
            addr: listener.local_addr().unwrap(),
            up: Arc::new(AtomicBool::new(true)),
            open: Arc::new(Mutex::new(Vec::new())),
            first_after_up: Arc::new(Mutex::new(None)),
        };
        let (up, open, first) = (
            proxy.up.clone(),
            proxy.open.clone(),
            proxy.first_after_up.clone(),
        );
        tokio::spawn(async move {
            loop {
                let Ok((mut inbound, _)) = listener.accept().await else {
                    return;
                };
                if !up.load(Ordering::Acquire) {
                    drop(inbound); // refused, as far as the client can tell
                    continue;
                }
                first.lock().get_or_insert_with(Instant::now);
                let task = tokio::spawn(async move {
                    if let Ok(mut outbound) = TcpStream::connect(target).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
                open.lock().push(task.abort_handle());
            }
        });
        proxy
    }

    fn take_down(&self) {
        self.up.store(false, Ordering::Release);
        for task in self.open.lock().drain(..) {
            task.abort();
        }
    }

    fn bring_up(&self) {
        *self.first_after_up.lock() = None;
        self.up.store(true, Ordering::Release);
    }
}

#[tokio::test]
async fn after_an_outage_the_informer_converges_as_soon_as_the_server_answers() {
    let server = FakeApiServer::start().await.unwrap();
    let direct: Api<ConfigMap> = Api::namespaced(server.in_process_client(), "default");
    for name in ["a", "b"] {
        direct
            .create(&PostParams::default(), &cm(name, name))
            .await
            .unwrap();
    }
    let proxy = Proxy::start(server.addr()).await;
    let mut config = server.client_config();
    config.cluster_url = format!("http://{}", proxy.addr).parse().unwrap();
    config.default_retry = false;
    let client = kube::Client::try_from(config).unwrap();
    // A short initial delay so the outage grows the backoff to seconds within the test.
    let reflector =
        ReflectorOptions::default().backoff(Duration::from_millis(100), Duration::from_secs(30));
    let informer = SharedIndexInformer::new(
        Api::<ConfigMap>::namespaced(client, "default"),
        InformerOptions::default().reflector(reflector),
    );
    let run = {
        let informer = informer.clone();
        tokio::spawn(async move { informer.run().await })
    };
    support::within_for(
        Duration::from_secs(20),
        "the informer's first list through the proxy",
        informer.wait_for_sync(),
    )
    .await;

    proxy.take_down();
    direct.delete("b", &DeleteParams::default()).await.unwrap();
    direct
        .create(&PostParams::default(), &cm("c", "c"))
        .await
        .unwrap();
    // The history is gone: the re-watch from the informer's resourceVersion gets a 410.
    server.faults().compact();
    // Long enough for the backoff to grow past two seconds (0.1, 0.2, 0.4, 0.8, 1.6, 3.2 s...).
    tokio::time::sleep(Duration::from_secs(5)).await;
    let during = informer
        .last_error()
        .expect("the outage shows as the last error");
    assert!(during.consecutive >= 2, "failures in a row: {during}");
    proxy.bring_up();

    let keys = || {
        let mut k = informer.store().list_keys();
        k.sort();
        k
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while keys() != ["default/a", "default/c"] {
        assert!(Instant::now() < deadline, "not converged: {:?}", keys());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let converged = Instant::now();
    let answered = proxy
        .first_after_up
        .lock()
        .expect("a connection went through");
    let lag = converged.duration_since(answered);
    eprintln!("converged {lag:?} after the server first answered again");
    assert!(
        lag <= Duration::from_secs(2),
        "converged {lag:?} after the server first answered again"
    );
    assert!(
        informer.last_error().is_none(),
        "healthy again: {:?}",
        informer.last_error()
    );
    run.abort();
}

/// Two outages a short while apart (a control-plane upgrade restarts the API server twice): the
/// first grows the backoff to seconds; once the informer's watch has held again, the second
/// outage starts from the initial delay, so the informer is back within about that delay of
/// the server's return (client-go's backoff manager would keep the grown delay for two minutes:
/// the first retry after the second cut would come at least 3.2 s later).
#[tokio::test]
async fn a_second_outage_starts_from_the_initial_delay_once_the_watch_held() {
    let server = FakeApiServer::start().await.unwrap();
    let direct: Api<ConfigMap> = Api::namespaced(server.in_process_client(), "default");
    direct
        .create(&PostParams::default(), &cm("a", "a"))
        .await
        .unwrap();
    let proxy = Proxy::start(server.addr()).await;
    let mut config = server.client_config();
    config.cluster_url = format!("http://{}", proxy.addr).parse().unwrap();
    config.default_retry = false;
    let client = kube::Client::try_from(config).unwrap();
    let reflector =
        ReflectorOptions::default().backoff(Duration::from_millis(100), Duration::from_secs(30));
    let informer = SharedIndexInformer::new(
        Api::<ConfigMap>::namespaced(client, "default"),
        InformerOptions::default().reflector(reflector),
    );
    let run = {
        let informer = informer.clone();
        tokio::spawn(async move { informer.run().await })
    };
    support::within_for(
        Duration::from_secs(20),
        "the informer's first list through the proxy",
        informer.wait_for_sync(),
    )
    .await;
    let has = |name: &str| {
        informer
            .store()
            .list_keys()
            .contains(&format!("default/{name}"))
    };
    let wait_for = |name: &'static str| {
        let has = &has;
        async move {
            let deadline = Instant::now() + Duration::from_secs(30);
            while !has(name) {
                assert!(Instant::now() < deadline, "{name} never arrived");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    };

    // Outage 1: 5 s, long enough for the delays to grow past 3.2 s (0.1, 0.2, 0.4, 0.8, 1.6 s
    // at least, each).
    proxy.take_down();
    tokio::time::sleep(Duration::from_secs(5)).await;
    proxy.bring_up();
    direct
        .create(&PostParams::default(), &cm("b", "b"))
        .await
        .unwrap();
    wait_for("b").await;
    // The watch holds past the very-short threshold.
    tokio::time::sleep(Duration::from_millis(1500)).await;

    // Outage 2: short. The first retries come 0.1-0.2 s, then 0.2-0.4 s apart.
    proxy.take_down();
    tokio::time::sleep(Duration::from_millis(300)).await;
    direct
        .create(&PostParams::default(), &cm("c", "c"))
        .await
        .unwrap();
    let up = Instant::now();
    proxy.bring_up();
    wait_for("c").await;
    let back = up.elapsed();
    eprintln!("second outage: back {back:?} after the server returned");
    assert!(
        back < Duration::from_millis(2500),
        "back {back:?} after the server returned: the grown backoff was kept"
    );
    run.abort();
}
