//! `cargo xtask bench controller`: reconciles per CPU-second of sample-controller on 1,000 Foos
//! against the in-process kube-fake-apiserver (first sync, then a steady-state round where every
//! Foo's replicas change), printed beside the same count for the Foo informer alone, so the
//! controller's own cost is visible. CPU is the whole process's (controller, informers, client
//! and server alike: they share it), from getrusage. Output: `name value unit` lines.

// The kind is called Foo, so `foo` is the natural name, not a placeholder.
#![allow(clippy::disallowed_names)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{ListParams, PatchParams, PostParams};
use kube_codegen_runtime::SharedInformerFactory;
use kube_codegen_runtime::cache::EventHandlerFns;
use kube_codegen_runtime::controller::ApiWrites;
use kube_codegen_runtime::controller::owners::EnqueueRequestForOwner;
use kube_codegen_runtime::events::{Recorder, Reporter};
use kube_codegen_runtime::workqueue::{Action, WorkQueue, run_workers};
use kube_fake_apiserver::FakeApiServer;
use sample_controller::controller::{CONTROLLER_NAME, Controller, SyncError};
use sample_controller::samplecontroller::v1alpha1::{Foo, FooSpec};
use sample_controller::{Clientset, InformerFactoryExt};

const FOOS: usize = 1_000;
const NAMESPACE: &str = "default";
const DEADLINE: Duration = Duration::from_secs(600);

fn cpu_s() -> f64 {
    // SAFETY: getrusage only writes into the zeroed struct we pass.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

fn figure(name: &str, value: impl std::fmt::Display, unit: &str) {
    println!("{name} {value} {unit}");
}

/// Runs `f` and reports its wall time, CPU time and `count / CPU-second` under `name`.
async fn measured<F: std::future::Future<Output = usize>>(name: &str, f: F) {
    let (cpu0, t0) = (cpu_s(), Instant::now());
    let count = tokio::time::timeout(DEADLINE, f)
        .await
        .unwrap_or_else(|_| panic!("{name}: not done within {DEADLINE:?}"));
    let (wall, cpu) = (t0.elapsed().as_secs_f64(), cpu_s() - cpu0);
    figure(&format!("{name}_count"), count, "events");
    figure(&format!("{name}_wall_s"), format!("{wall:.2}"), "s");
    figure(&format!("{name}_cpu_s"), format!("{cpu:.2}"), "s");
    figure(
        &format!("{name}_per_cpu_sec"),
        format!("{:.0}", count as f64 / cpu.max(1e-9)),
        "events/s",
    );
}

async fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !done() {
        assert!(t0.elapsed() < DEADLINE, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn foo(i: usize) -> Foo {
    let mut f = Foo {
        spec: Some(FooSpec {
            deployment_name: Some(format!("dep-{i}")),
            replicas: Some(1),
        }),
        ..Foo::default()
    };
    f.metadata.name = Some(format!("foo-{i}"));
    f
}

async fn create_foos(cs: &Clientset) {
    let foos = cs.samplecontroller_v1alpha1().foos(NAMESPACE);
    for i in 0..FOOS {
        foos.create(&PostParams::default(), &foo(i))
            .await
            .expect("create a Foo");
    }
}

/// Patches every Foo's replicas to `replicas`.
async fn scale_all(cs: &Clientset, replicas: i32) {
    let foos = cs.samplecontroller_v1alpha1().foos(NAMESPACE);
    let patch =
        kube_codegen_runtime::Patch::Merge(serde_json::json!({"spec": {"replicas": replicas}}));
    for i in 0..FOOS {
        foos.patch(&format!("foo-{i}"), &PatchParams::default(), &patch)
            .await
            .expect("patch a Foo");
    }
}

async fn deployments_with(cs: &Clientset, replicas: i32) -> usize {
    kube::Api::<Deployment>::namespaced(cs.client().clone(), NAMESPACE)
        .list(&ListParams::default())
        .await
        .expect("list Deployments")
        .items
        .iter()
        .filter(|d| d.spec.as_ref().and_then(|s| s.replicas) == Some(replicas))
        .count()
}

async fn informer_alone(server: &FakeApiServer, cs: &Clientset) {
    let factory = SharedInformerFactory::new(cs.clone());
    let informer = factory.samplecontroller().v1alpha1().foos();
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = seen.clone();
    let counter2 = seen.clone();
    informer
        .informer()
        .add_event_handler(
            EventHandlerFns::new()
                .on_add(move |_, _| {
                    counter.fetch_add(1, Ordering::Relaxed);
                })
                .on_update(move |_, _| {
                    counter2.fetch_add(1, Ordering::Relaxed);
                }),
        )
        .expect("handler");
    measured("informer_first_sync", async {
        factory.start();
        factory.wait_for_cache_sync().await;
        wait_until("the informer's initial adds", || {
            seen.load(Ordering::Relaxed) >= FOOS
        })
        .await;
        seen.swap(0, Ordering::Relaxed)
    })
    .await;
    measured("informer_steady", async {
        scale_all(cs, 5).await;
        wait_until("the informer's updates", || {
            seen.load(Ordering::Relaxed) >= FOOS
        })
        .await;
        seen.load(Ordering::Relaxed)
    })
    .await;
    factory.shutdown();
    let _ = server;
}

async fn controller(cs: &Clientset) {
    let factory = SharedInformerFactory::new(cs.clone());
    let foos = factory.samplecontroller().v1alpha1().foos();
    let deployments = factory.informer_for::<Deployment>();
    let queue: WorkQueue<String> = WorkQueue::builder().name("foos").build();
    foos.informer()
        .add_inline_event_handler({
            let (q1, q2) = (queue.clone(), queue.clone());
            let key = |f: &Foo| kube_codegen_runtime::cache::key_of(f).expect("a key");
            EventHandlerFns::new()
                .on_add(move |f, _| q1.add(key(f)))
                .on_update(move |_, f| q2.add(key(f)))
        })
        .expect("foo handler");
    deployments
        .add_inline_event_handler(EnqueueRequestForOwner::<Foo, Deployment>::new(
            queue.clone(),
            foos.informer().lister(),
        ))
        .expect("deployment handler");
    let reporter = Reporter {
        controller: "sample-controller".into(),
        instance: None,
    };
    let recorder = Recorder::new(cs.client().clone(), reporter);
    let writes = ApiWrites::new(cs.client().clone(), recorder, CONTROLLER_NAME);
    let controller = Arc::new(Controller::new(foos.lister(), deployments.lister(), writes));
    let reconciles = Arc::new(AtomicUsize::new(0));
    let counted = reconciles.clone();
    measured("controller_first_sync", async {
        factory.start();
        factory.wait_for_cache_sync().await;
        tokio::spawn(run_workers(queue.clone(), 2, move |key: String| {
            let (controller, counted) = (controller.clone(), counted.clone());
            async move {
                controller.sync(&key).await?;
                counted.fetch_add(1, Ordering::Relaxed);
                Ok::<_, SyncError>(Action::Done)
            }
        }));
        // Done: every Foo has its Deployment and the queue is idle.
        loop {
            if queue.is_empty() && queue.len_in_flight() == 0 && deployments.store().len() >= FOOS {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        reconciles.swap(0, Ordering::Relaxed)
    })
    .await;
    measured("controller_steady", async {
        scale_all(cs, 3).await;
        loop {
            if queue.is_empty()
                && queue.len_in_flight() == 0
                && deployments_with(cs, 3).await >= FOOS
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        reconciles.load(Ordering::Relaxed)
    })
    .await;
    queue.shutdown();
    factory.shutdown();
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(async {
        let server = FakeApiServer::start().await.expect("server starts");
        let crd: serde_json::Value =
            serde_saphyr::from_str(include_str!("../artifacts/crd.yaml")).expect("CRD parses");
        server.register_crd(crd).expect("CRD registers");
        let cs = Clientset::new(server.client());
        create_foos(&cs).await;
        figure("foos", FOOS, "objects");
        informer_alone(&server, &cs).await;
        controller(&cs).await;
        server.shutdown().await;
    });
}
