//! O1 (issue 36, item 5): back after API server restarts, our informer beside kube-runtime's
//! watcher, same server, same outages, same process. The in-memory server is taken down
//! (`Faults::take_down`: watches and connections dropped, new connections closed at once)
//! for D seconds, twice, G seconds apart (a control-plane upgrade restarts kube-apiserver twice);
//! a ConfigMap is created the moment it comes back, and each client's resume time is from then
//! until its cache holds that ConfigMap. Both run at their defaults: ours with client-go's
//! reflector backoff (800 ms doubling to 30 s, jittered, reset once a list and watch held),
//! kube-runtime's `watcher` with its `default_backoff()`.
//!
//! Figures (`o1_<client>_<first|second>_s`, median with min..max) and same-run ratios
//! `o1_ours_over_kube_runtime_<first|second>` (the goal: no later, a ratio of at most about 1).
//!
//! Usage: `cargo xtask bench o1 -- [--runs N] [--down-s D] [--gap-s G]` (default 5 runs, 4 s
//! down, 20 s apart). Run as a test (no `--bench`) it is a smoke run: one run, 1 s down, 2 s
//! apart, failing unless both clients came back.

use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::PostParams;
use kube_codegen_runtime::cache::{InformerOptions, SharedIndexInformer};
use kube_codegen_runtime_bench::measure::{count_value, runs_value};
use kube_codegen_runtime_bench::runs::Gathered;
use kube_fake_apiserver::FakeApiServer;
use kube_runtime::reflector::{self, ObjectRef, Store};
use kube_runtime::{WatchStreamExt, watcher};

const NS: &str = "default";
/// Any wait longer than this is a failure, not a figure.
const DEADLINE: Duration = Duration::from_secs(120);

struct Plan {
    down: Duration,
    gap: Duration,
}

fn configmap(name: &str) -> ConfigMap {
    let mut c = ConfigMap::default();
    c.metadata.name = Some(name.to_owned());
    c
}

/// Both clients' resume times after each of the two outages, seconds.
async fn run_once(plan: &Plan, run: usize, out: &mut Gathered) -> Result<(), String> {
    let server = FakeApiServer::start()
        .await
        .map_err(|e| format!("starting the server: {e}"))?;
    let client =
        kube::Client::try_from(server.client_config()).map_err(|e| format!("client: {e}"))?;
    let direct: Api<ConfigMap> = Api::namespaced(server.in_process_client(), NS);

    let ours = SharedIndexInformer::new(
        Api::<ConfigMap>::namespaced(client.clone(), NS),
        InformerOptions::default(),
    );
    let ours_task = {
        let informer = ours.clone();
        tokio::spawn(async move { informer.run().await })
    };
    let (theirs, writer) = reflector::store::<ConfigMap>();
    let theirs_task = tokio::spawn(
        reflector::reflector(
            writer,
            watcher(
                Api::<ConfigMap>::namespaced(client, NS),
                watcher::Config::default(),
            ),
        )
        .default_backoff()
        .for_each(|_| async {}),
    );
    tokio::time::timeout(DEADLINE, async {
        ours.wait_for_sync().await;
        let _ = theirs.wait_until_ready().await;
    })
    .await
    .map_err(|_| "the first lists did not finish".to_owned())?;

    for (i, outage) in ["first", "second"].into_iter().enumerate() {
        if i > 0 {
            tokio::time::sleep(plan.gap).await;
        }
        server.faults().take_down();
        tokio::time::sleep(plan.down).await;
        server.faults().bring_up();
        let back = Instant::now();
        let name = format!("back-{run}-{i}");
        direct
            .create(&PostParams::default(), &configmap(&name))
            .await
            .map_err(|e| format!("creating {name}: {e}"))?;
        let (ours_at, theirs_at) = both_see(&ours, &theirs, &name).await?;
        let (a, b) = (
            ours_at.duration_since(back).as_secs_f64(),
            theirs_at.duration_since(back).as_secs_f64(),
        );
        println!("# run {run} {outage} outage: ours {a:.2} s, kube-runtime {b:.2} s");
        out.push(&format!("o1_ours_{outage}_s"), a, "s");
        out.push(&format!("o1_kube_runtime_{outage}_s"), b, "s");
    }
    ours_task.abort();
    theirs_task.abort();
    server.shutdown().await;
    Ok(())
}

/// When each cache first held `name`.
async fn both_see(
    ours: &SharedIndexInformer<ConfigMap>,
    theirs: &Store<ConfigMap>,
    name: &str,
) -> Result<(Instant, Instant), String> {
    let key = format!("{NS}/{name}");
    let theirs_ref = ObjectRef::<ConfigMap>::new(name).within(NS);
    let (mut a, mut b) = (None, None);
    let deadline = Instant::now() + DEADLINE;
    while a.is_none() || b.is_none() {
        if Instant::now() > deadline {
            return Err(format!("{name} not seen: ours {a:?}, kube-runtime {b:?}"));
        }
        if a.is_none() && ours.store().get_by_key(&key).is_some() {
            a = Some(Instant::now());
        }
        if b.is_none() && theirs.get(&theirs_ref).is_some() {
            b = Some(Instant::now());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok((
        a.unwrap_or_else(Instant::now),
        b.unwrap_or_else(Instant::now),
    ))
}

fn main() {
    let (mut runs, mut down, mut gap, mut benching) = (None, None, None, false);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--runs" => runs = Some(runs_value(args.next())),
            "--down-s" => down = Some(count_value(args.next(), "--down-s") as u64),
            "--gap-s" => gap = Some(count_value(args.next(), "--gap-s") as u64),
            "--bench" => benching = true,
            _ => {} // the test harness's flags
        }
    }
    // `cargo test` runs this binary without `--bench`: a smoke run, never the full benchmark.
    let plan = Plan {
        down: Duration::from_secs(down.unwrap_or(if benching { 4 } else { 1 })),
        gap: Duration::from_secs(gap.unwrap_or(if benching { 20 } else { 2 })),
    };
    let runs = runs.unwrap_or(if benching { 5 } else { 1 });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a Tokio runtime");
    let result = rt.block_on(async {
        let mut out = Gathered::default();
        for run in 0..runs {
            run_once(&plan, run, &mut out).await?;
        }
        Ok::<_, String>(out)
    });
    match result {
        Ok(mut out) => {
            out.push_ratios(&[
                (
                    "o1_ours_over_kube_runtime_first",
                    "o1_ours_first_s",
                    "o1_kube_runtime_first_s",
                ),
                (
                    "o1_ours_over_kube_runtime_second",
                    "o1_ours_second_s",
                    "o1_kube_runtime_second_s",
                ),
            ]);
            out.print();
        }
        Err(e) => {
            eprintln!("o1: {e}");
            std::process::exit(1);
        }
    }
}
