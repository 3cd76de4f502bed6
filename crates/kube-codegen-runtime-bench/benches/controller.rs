//! R1 of shared/BENCHMARKS.md (issue 29): our controller runtime beside kube-runtime 5's
//! `Controller`, same objects, same run, on the in-memory API server.
//!
//! Usage: `cargo xtask bench r1 -- [VARIANT]... [--runs N] [--foos N] [--touch N] [--batches N]
//! [--quick]` (default: every variant, 5 rounds, 10,000 Foos, 1,000 touched 5 times a round). Run as a test (`cargo test
//! -p kube-codegen-runtime-bench --bench controller`, no `--bench` argument) it is a smoke run:
//! `--quick` sizes, one round, and it fails unless every variant finished, no reconcile found its
//! child out of date and our two controllers made one Deployment watch.
//!
//! Every variant runs in a process of its own, against a server in another process of its own
//! (this binary with `--server`, one for the whole invocation), so CPU (getrusage) and peak RSS
//! (`VmHWM`) are the controller's alone. The server registers sample-controller's Foo (`crds/r1-foo.yaml`) and
//! creates, through the API (in-process client, 64 at a time), N Foos `foo-i` and N
//! Deployments `dep-i` with a controller owner reference to their Foo, as sample-controller
//! makes them. Rounds alternate the variants (ours, kube-runtime, informers, ...).
//!
//! Phases of a variant: from start until every Foo is reconciled once with its child found up
//! to date (`*_first_pass_s`, deduplicated per Foo); then, once the queue is quiet, the driver
//! has the server patch a label onto 1,000 Foos spread over the key space (its value new in
//! each batch), and the variant counts reconciles and process CPU until each of them was
//! reconciled with that value; five such batches a round, pooled into the round's
//! `*_reconciles_per_cpu_sec` (each batch alone: `*_batch_reconciles_per_cpu_sec`). Profile
//! the touch phase alone with `BENCH_PERF_CTL` (see `perf_control`). Peak RSS is `VmHWM` at the end.
//!
//! The reconcile (identical work in both): find the Foo's Deployment (`spec.deploymentName`,
//! same namespace) in the cache, check it is controlled by the Foo (owner uid) and has the
//! Foo's replicas, count; write nothing. A missing or stale child (not expected: the objects
//! are seeded up to date) is counted (`*_stale`) and retried after 100 ms.
//!
//! Variants:
//! - `ours`: `Controller::<Foo>::for_kind(&factory).owns::<Deployment>().workers(2)` in a
//!   `Manager`, reconcile reading `ctx.lister::<Deployment>()`. Figures `r1_*`.
//! - `kube-runtime`: `Controller::new(foos, ..).owns(deployments, ..)` (its stable API: `owns`
//!   watches the children's metadata only and keeps no cache), and a `reflector` + `Store` of
//!   the Deployments for the reconcile's lookup (started and waited for before the controller:
//!   the stable API gives a controller no store of its children). Default concurrency
//!   (unbounded). Figures `kube_runtime_r1_*`.
//! - `informers`: our factory's Foo and Deployment informers alone, one inline handler
//!   counting Foo adds and the touched updates: the RSS baseline (`informers_r1_*`).
//! - `informers-queue`: the same informers, the inline handler putting `namespace/name` in a
//!   workqueue that two tasks drain and count (`informers_queue_r1_*`): the floor of any
//!   controller on shared informers, which hands each key from the informer's task to a
//!   worker's; the controller's own work is what `ours` adds over it.
//! - `watches-ours`, `watches-kube-runtime`: two controllers of each kind (one factory / one
//!   shared Deployment `Store`); once both reconciled every Foo, the server counts the list and
//!   watch requests of the run on the Deployments' and Foos' paths
//!   (`r1_deployment_watches`, `kube_runtime_r1_deployment_watches`, ...).

// The kind is called Foo, so `foo` is the natural name, not a placeholder.
#![allow(clippy::disallowed_names)]

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use futures::{StreamExt, future};
use k8s_openapi::api::apps::v1::Deployment;
use kube::Api;
use kube_codegen_runtime::SharedInformerFactory;
use kube_codegen_runtime::cache::{Deleted, EventHandler};
use kube_codegen_runtime::controller::{Controller, Manager};
use kube_codegen_runtime::workqueue::WorkQueue;
use kube_codegen_runtime_bench::cluster::{self, answer_driver, seed, start_with_foo_crd, touched};
use kube_codegen_runtime_bench::measure::{count_value, cpu_seconds, peak_rss_mb, runs_value};
use kube_codegen_runtime_bench::process::{self, Proc};
use kube_codegen_runtime_bench::reconcile::{CheckChild, RETRY, Tally, child_of, up_to_date};
use kube_codegen_runtime_bench::runs::Gathered;
use kube_codegen_runtime_bench::samplecontroller::v1alpha1::Foo;
use kube_fake_apiserver::FakeApiServer;
use kube_runtime::reflector::{self, ObjectRef, Store};
use kube_runtime::{controller as kr, watcher};

const NS: &str = "default";
/// The label the touch phase sets.
const TOUCHED: &str = "r1.bench.example.com/touched";
/// Any phase longer than this is a failure, not a figure.
const DEADLINE: Duration = Duration::from_secs(600);
/// The queue counts as quiet after this long without a reconcile.
const QUIET: Duration = Duration::from_millis(500);

#[derive(Clone, Copy, PartialEq, Debug)]
enum Variant {
    Ours,
    KubeRuntime,
    Informers,
    InformersQueue,
    WatchesOurs,
    WatchesKubeRuntime,
}

const VARIANTS: [(&str, Variant); 6] = [
    ("ours", Variant::Ours),
    ("kube-runtime", Variant::KubeRuntime),
    ("informers", Variant::Informers),
    ("informers-queue", Variant::InformersQueue),
    ("watches-ours", Variant::WatchesOurs),
    ("watches-kube-runtime", Variant::WatchesKubeRuntime),
];

impl Variant {
    fn name(self) -> &'static str {
        VARIANTS
            .iter()
            .find(|(_, v)| *v == self)
            .map_or("?", |(n, _)| n)
    }
    /// The prefix of its figures.
    fn prefix(self) -> &'static str {
        match self {
            Variant::Ours | Variant::WatchesOurs => "r1",
            Variant::KubeRuntime | Variant::WatchesKubeRuntime => "kube_runtime_r1",
            Variant::Informers => "informers_r1",
            Variant::InformersQueue => "informers_queue_r1",
        }
    }
    /// The informers alone (with or without the queue hop): no reconcile, no lookup.
    fn is_floor(self) -> bool {
        matches!(self, Variant::Informers | Variant::InformersQueue)
    }
    fn counts_watches(self) -> bool {
        matches!(self, Variant::WatchesOurs | Variant::WatchesKubeRuntime)
    }
}

/// Sizes of a run.
#[derive(Clone, Copy, Debug)]
struct Scale {
    foos: usize,
    touch: usize,
    /// Touch batches per round, each a new label value on the same Foos: the round's figure
    /// pools them (one batch is 20-30 ms of CPU, too short to measure alone).
    batches: usize,
}

const FULL: Scale = Scale {
    foos: 10_000,
    touch: 1_000,
    batches: 5,
};
const QUICK: Scale = Scale {
    foos: 300,
    touch: 50,
    batches: 2,
};

fn fail(message: impl std::fmt::Display) -> ! {
    eprintln!("r1: {message}");
    std::process::exit(1)
}

fn main() {
    let mut chosen = Vec::new();
    let (mut child, mut server, mut quick, mut benching) = (false, false, false, false);
    let (mut runs, mut url, mut touch_id) = (None, None, 0);
    let (mut foos, mut touch, mut batches) = (None, None, None);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--runs" => runs = Some(runs_value(args.next())),
            "--foos" => foos = Some(count_value(args.next(), "--foos")),
            "--touch" => touch = Some(count_value(args.next(), "--touch")),
            "--batches" => batches = Some(count_value(args.next(), "--batches").max(1)),
            "--url" => url = args.next(),
            "--touch-id" => touch_id = count_value(args.next(), "--touch-id"),
            "--child" => child = true,
            "--server" => server = true,
            "--quick" => quick = true,
            "--bench" => benching = true,
            other if other.starts_with('-') => {} // the test harness's flags
            other => match VARIANTS.iter().find(|(name, _)| *name == other) {
                Some(&(_, v)) => chosen.push(v),
                None => {
                    let names: Vec<&str> = VARIANTS.iter().map(|(n, _)| *n).collect();
                    eprintln!("unknown variant {other:?}: expected one of {names:?}");
                    std::process::exit(2);
                }
            },
        }
    }
    // `cargo test` runs this binary without `--bench`: a smoke run, never the full benchmark.
    let smoke = !benching && !child && !server;
    let mut scale = if quick || smoke { QUICK } else { FULL };
    scale.foos = foos.unwrap_or(scale.foos);
    scale.touch = touch.unwrap_or(scale.touch).min(scale.foos);
    scale.batches = batches.unwrap_or(scale.batches);
    if server {
        return serve(scale.foos);
    }
    if child {
        let ([v], Some(url)) = (&chosen[..], url) else {
            fail("--child runs exactly one variant and needs --url");
        };
        return run_child(*v, &url, scale, touch_id);
    }
    if chosen.is_empty() {
        chosen = VARIANTS.iter().map(|(_, v)| *v).collect();
    }
    let runs = runs.unwrap_or(if quick || smoke { 1 } else { 5 });
    println!(
        "# r1: {} Foos each owning a Deployment, {} touched; in-memory server in a process of its \
         own; each variant in its own process (2-thread Tokio runtime, glibc malloc); median of \
         {runs} rounds, spread after #",
        scale.foos, scale.touch
    );
    let mut all = Gathered::default();
    let mut server = start_server(scale.foos).unwrap_or_else(|e| fail(e));
    for round in 0..runs {
        for (k, &v) in chosen.iter().enumerate() {
            eprintln!("# round {}/{runs}: {}", round + 1, v.name());
            let touch_id = round * chosen.len() + k + 1;
            if let Err(e) = drive(&mut all, &mut server, v, scale, touch_id) {
                fail(e);
            }
        }
    }
    if let Err(e) = server.0.finish() {
        fail(e);
    }
    ratios(&mut all);
    all.print_marking_bimodal();
    if smoke && let Err(e) = smoke_checks(&all, &chosen) {
        fail(e);
    }
}

/// Same-round ratios.
fn ratios(all: &mut Gathered) {
    all.push_ratios(&[
        (
            "r1_over_kube_runtime_reconciles_per_cpu",
            "r1_reconciles_per_cpu_sec",
            "kube_runtime_r1_reconciles_per_cpu_sec",
        ),
        (
            "r1_over_informers_reconciles_per_cpu",
            "r1_reconciles_per_cpu_sec",
            "informers_r1_reconciles_per_cpu_sec",
        ),
        (
            "r1_over_informers_queue_reconciles_per_cpu",
            "r1_reconciles_per_cpu_sec",
            "informers_queue_r1_reconciles_per_cpu_sec",
        ),
        (
            "informers_queue_over_kube_runtime_reconciles_per_cpu",
            "informers_queue_r1_reconciles_per_cpu_sec",
            "kube_runtime_r1_reconciles_per_cpu_sec",
        ),
        (
            "kube_runtime_r1_over_informers_reconciles_per_cpu",
            "kube_runtime_r1_reconciles_per_cpu_sec",
            "informers_r1_reconciles_per_cpu_sec",
        ),
        (
            "r1_over_kube_runtime_first_pass_s",
            "r1_first_pass_s",
            "kube_runtime_r1_first_pass_s",
        ),
        (
            "r1_over_kube_runtime_first_pass_cpu_s",
            "r1_first_pass_cpu_s",
            "kube_runtime_r1_first_pass_cpu_s",
        ),
        (
            "r1_peak_rss_over_informers",
            "r1_peak_rss_mb",
            "informers_r1_peak_rss_mb",
        ),
        (
            "kube_runtime_r1_peak_rss_over_informers",
            "kube_runtime_r1_peak_rss_mb",
            "informers_r1_peak_rss_mb",
        ),
        (
            "r1_peak_rss_over_kube_runtime",
            "r1_peak_rss_mb",
            "kube_runtime_r1_peak_rss_mb",
        ),
    ]);
}

/// What the smoke run (under `cargo test`) insists on: every figure there, nothing stale, one
/// Deployment watch for our two controllers.
fn smoke_checks(all: &Gathered, chosen: &[Variant]) -> Result<(), String> {
    let value = |name: &str| {
        all.values(name)
            .and_then(|v| v.first().copied())
            .ok_or_else(|| format!("no figure {name}"))
    };
    for v in chosen {
        let p = v.prefix();
        if v.counts_watches() {
            value(&format!("{p}_deployment_watches"))?;
            continue;
        }
        for f in ["first_pass_s", "reconciles_per_cpu_sec", "peak_rss_mb"] {
            value(&format!("{p}_{f}"))?;
        }
        if !v.is_floor() && value(&format!("{p}_stale"))? != 0.0 {
            return Err(format!(
                "{}: a reconcile found its child out of date",
                v.name()
            ));
        }
    }
    if chosen.contains(&Variant::WatchesOurs) {
        let watches = value("r1_deployment_watches")? + value("r1_deployment_lists")?;
        if watches != 1.0 {
            return Err(format!(
                "two of our controllers made {watches} Deployment lists and watches, not 1"
            ));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The driver: a server process and a variant process per run.

/// The server process (seeded) and its URL. One serves every run (seeding 10,000 Foos and
/// Deployments takes seconds, but runs differ only in the label values they touch).
struct Server(Proc, String);

fn start_server(foos: usize) -> Result<Server, String> {
    let args = ["--server".into(), "--foos".into(), foos.to_string()];
    let (server, url) = Proc::spawn_server(&args)?;
    Ok(Server(server, url))
}

/// One run of `v` against the server: the variant, the touch (label value `touch_id`) when it
/// asks, the server's request counts since its start when it asks.
fn drive(
    all: &mut Gathered,
    server: &mut Server,
    v: Variant,
    scale: Scale,
    touch_id: usize,
) -> Result<(), String> {
    let Server(server, url) = server;
    server.send("mark")?;
    expect_done(server)?;
    let mut variant = Proc::spawn(
        &[
            v.name().into(),
            "--child".into(),
            "--url".into(),
            url.clone(),
            "--foos".into(),
            scale.foos.to_string(),
            "--touch".into(),
            scale.touch.to_string(),
            "--batches".into(),
            scale.batches.to_string(),
            "--touch-id".into(),
            touch_id.to_string(),
        ],
        v.name().into(),
    )?;
    while let Some(line) = variant.line()? {
        match line.as_str() {
            l if l.starts_with("# touch ") => {
                let token = &l["# touch ".len()..];
                server.send(&format!("touch {} {token}", scale.touch))?;
                expect_done(server)?;
                variant.send("touched")?;
            }
            "# count" => {
                server.send("count")?;
                while let Some(l) = server.line()? {
                    if l == "done" {
                        break;
                    }
                    all.push_line(&format!("{}_{l}", v.prefix()), "the server")?;
                }
                variant.send("counted")?;
            }
            l if l.starts_with('#') => eprintln!("{l}"),
            l => all.push_line(l, v.name())?,
        }
    }
    variant.finish()
}

fn expect_done(server: &mut Proc) -> Result<(), String> {
    match server.line()? {
        Some(l) if l == "done" => Ok(()),
        other => Err(format!("the server answered {other:?}, not done")),
    }
}

// ---------------------------------------------------------------------------------------------
// The server process.

fn serve(foos: usize) {
    process::runtime()
        .unwrap_or_else(|e| fail(e))
        .block_on(async {
            if let Err(e) = serve_async(foos).await {
                fail(format!("server: {e}"));
            }
        });
}

async fn serve_async(foos: usize) -> Result<(), String> {
    // Big enough that the touches never age a watch out of the history. No garbage collector:
    // nothing is deleted here, and the server's CPU is not what R1 measures.
    let builder = FakeApiServer::builder()
        .history_limit(200_000)
        .garbage_collector(false);
    let server = start_with_foo_crd(builder).await?;
    let client = server.in_process_client();
    let t0 = Instant::now();
    seed(&client, foos, |_| NS.to_owned()).await?;
    println!(
        "# server: {foos} Foos and Deployments created in {:.2} s",
        t0.elapsed().as_secs_f64()
    );
    // Requests before this index belong to earlier runs.
    let mut mark = 0;
    answer_driver(server, async |server: &FakeApiServer, line: &str| {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words[..] {
            ["touch", n, id] => {
                let n: usize = n.parse().map_err(|_| format!("touch {n:?}"))?;
                let foos = touched(foos, n);
                cluster::touch(&client, foos, |_| NS.to_owned(), TOUCHED, id).await?;
            }
            ["mark"] => mark = server.requests().len(),
            ["count"] => count(server, mark),
            _ => return Err(format!("unknown command {line:?}")),
        }
        Ok(())
    })
    .await
}

/// Prints the list and watch requests the server received on the Deployments' and Foos' paths
/// since request `mark`.
fn count(server: &FakeApiServer, mark: usize) {
    let requests = server.requests();
    let requests = requests.get(mark..).unwrap_or_default();
    let kinds = [
        ("deployment", "/apis/apps/v1/namespaces/default/deployments"),
        (
            "foo",
            "/apis/samplecontroller.k8s.io/v1alpha1/namespaces/default/foos",
        ),
    ];
    for (kind, path) in kinds {
        // A paginated list is one request per page; its first page starts one list+watch.
        let on_path = || requests.iter().filter(move |r| r.path == path);
        let lists = on_path()
            .filter(|r| r.verb == "list" && !r.query.contains("continue="))
            .count();
        let pages = on_path().filter(|r| r.verb == "list").count();
        let watches = on_path().filter(|r| r.verb == "watch").count();
        println!("{kind}_lists {lists} requests");
        println!("{kind}_list_pages {pages} requests");
        println!("{kind}_watches {watches} requests");
    }
}

// ---------------------------------------------------------------------------------------------
// The variants.

/// The kube-runtime reconcile's context: the Deployments' store.
struct KrContext {
    deployments: Store<Deployment>,
    tally: Arc<Tally>,
}

/// kube-runtime wants a `std::error::Error`; the reconcile never fails.
#[derive(Debug)]
struct Never;

impl std::fmt::Display for Never {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("never")
    }
}

impl std::error::Error for Never {}

async fn kr_reconcile(foo: Arc<Foo>, ctx: Arc<KrContext>) -> Result<kr::Action, Never> {
    let (ns, name) = child_of(&foo);
    let child = ctx.deployments.get(&ObjectRef::new(name).within(ns));
    let ok = up_to_date(&foo, child.as_deref());
    ctx.tally.record(&foo, ok);
    Ok(if ok {
        kr::Action::await_change()
    } else {
        kr::Action::requeue(RETRY)
    })
}

fn kr_error_policy(_: Arc<Foo>, _: &Never, _: Arc<KrContext>) -> kr::Action {
    kr::Action::requeue(RETRY)
}

/// Counts Foo adds and touched updates, for the informers alone.
/// `informers-queue`'s handler: the key into a workqueue that two tasks drain, counting (the
/// hand-off any controller on shared informers makes, without the controller).
struct Enqueue(WorkQueue<String>);

impl EventHandler<Foo> for Enqueue {
    fn on_add(&self, foo: &Arc<Foo>, _: bool) {
        self.on_update(foo, foo);
    }
    fn on_update(&self, _: &Arc<Foo>, new: &Arc<Foo>) {
        let ns = new.metadata.namespace.as_deref().unwrap_or_default();
        let name = new.metadata.name.as_deref().unwrap_or_default();
        self.0.add(format!("{ns}/{name}"));
    }
    fn on_delete(&self, _: &Deleted<Foo>) {}
}

struct Counting(Arc<Tally>);

impl EventHandler<Foo> for Counting {
    fn on_add(&self, foo: &Arc<Foo>, _: bool) {
        self.0.record(foo, true);
    }
    fn on_update(&self, _: &Arc<Foo>, new: &Arc<Foo>) {
        self.0.record(new, true);
    }
    fn on_delete(&self, _: &Deleted<Foo>) {}
}

fn client(url: &str) -> kube::Client {
    let uri = url
        .parse()
        .unwrap_or_else(|e| fail(format!("--url {url:?}: {e}")));
    kube::Client::try_from(kube::Config::new(uri))
        .unwrap_or_else(|e| fail(format!("a client for {url}: {e}")))
}

fn figure(name: &str, value: f64, unit: &str) {
    println!("{name} {value:.4} {unit}");
}

/// Prints `line` and waits for the driver's answer on stdin.
fn ask_driver(line: &str) {
    println!("{line}");
    let _ = std::io::stdout().flush();
    let mut answer = String::new();
    if std::io::stdin().read_line(&mut answer).is_err() || answer.trim().is_empty() {
        fail(format!("no answer to {line:?} from the driver"));
    }
}

async fn within(what: &str, f: impl std::future::Future<Output = ()>) {
    if tokio::time::timeout(DEADLINE, f).await.is_err() {
        fail(format!("{what}: not done within {DEADLINE:?}"));
    }
}

/// Waits until no reconcile happened for [`QUIET`].
async fn quiet(tally: &Tally) {
    let mut last = tally.reconciles.load(Ordering::Relaxed);
    loop {
        tokio::time::sleep(QUIET).await;
        let now = tally.reconciles.load(Ordering::Relaxed);
        if now == last {
            return;
        }
        last = now;
    }
}

fn run_child(v: Variant, url: &str, scale: Scale, touch_id: usize) {
    let rt = process::runtime().unwrap_or_else(|e| fail(e));
    rt.block_on(async {
        let client = client(url);
        if v.counts_watches() {
            return count_watches(v, client, scale.foos).await;
        }
        let tally = Tally::new(TOUCHED, vec![true; scale.foos]);
        let (t0, c0) = (Instant::now(), cpu_seconds());
        // Dropping the factory would stop its informers: held until the end.
        let factory = start(v, client, tally.clone()).await;
        within("the first pass", tally.first_done.notified()).await;
        if v.is_floor()
            && let Some(f) = &factory
        {
            // Every Foo added is not every cache synced: the Deployments may still be listing,
            // and their decoding would fall into the touch phase.
            within("the caches' sync", f.wait_for_cache_sync()).await;
        }
        let (first_s, first_cpu) = (t0.elapsed().as_secs_f64(), cpu_seconds() - c0);
        let first_reconciles = tally.reconciles.load(Ordering::Relaxed);
        within("quiet after the first pass", quiet(&tally)).await;
        let settled = tally.reconciles.load(Ordering::Relaxed);
        let p = v.prefix();
        figure(&format!("{p}_first_pass_s"), first_s, "s");
        figure(&format!("{p}_first_pass_cpu_s"), first_cpu, "s");
        figure(
            &format!("{p}_first_pass_reconciles"),
            first_reconciles as f64,
            "reconciles",
        );
        figure(
            &format!("{p}_reconciles_until_quiet"),
            settled as f64,
            "reconciles",
        );
        figure(
            &format!("{p}_rss_after_first_pass_mb"),
            kube_codegen_runtime_bench::measure::rss_bytes() as f64 / 1048576.0,
            "MiB",
        );
        // What the process burns doing nothing (timers, wake-ups), which the touch phase's
        // CPU includes for as long as the server takes to patch.
        let (ti, ci) = (Instant::now(), cpu_seconds());
        tokio::time::sleep(Duration::from_secs(2)).await;
        figure(
            &format!("{p}_idle_cpu_ms_per_s"),
            (cpu_seconds() - ci) * 1000.0 / ti.elapsed().as_secs_f64(),
            "ms/s",
        );
        let (mut wall, mut cpu, mut reconciles) = (0.0, 0.0, 0);
        for batch in 0..scale.batches {
            let token = format!("{touch_id}-{batch}");
            tally
                .expect_touch(token.clone(), scale.touch)
                .unwrap_or_else(|e| fail(e));
            perf_control("enable");
            let (t1, c1) = (Instant::now(), cpu_seconds());
            let r1 = tally.reconciles.load(Ordering::Relaxed);
            // The driver has the server patch the Foos; this process sleeps meanwhile.
            ask_driver(&format!("# touch {token}"));
            within(
                "the touched Foos' reconciles",
                tally.touched_done.notified(),
            )
            .await;
            let (w, c) = (t1.elapsed().as_secs_f64(), cpu_seconds() - c1);
            perf_control("disable");
            let r = tally.reconciles.load(Ordering::Relaxed) - r1;
            figure(
                &format!("{p}_batch_reconciles_per_cpu_sec"),
                r as f64 / c.max(1e-9),
                "reconciles/cpu-s",
            );
            (wall, cpu, reconciles) = (wall + w, cpu + c, reconciles + r);
        }
        figure(
            &format!("{p}_touch_reconciles"),
            reconciles as f64,
            "reconciles",
        );
        figure(&format!("{p}_touch_cpu_s"), cpu, "s");
        figure(&format!("{p}_touch_wall_s"), wall, "s");
        figure(
            &format!("{p}_reconciles_per_cpu_sec"),
            reconciles as f64 / cpu.max(1e-9),
            "reconciles/cpu-s",
        );
        figure(&format!("{p}_peak_rss_mb"), peak_rss_mb(), "MiB");
        if !v.is_floor() {
            figure(
                &format!("{p}_stale"),
                tally.stale.load(Ordering::Relaxed) as f64,
                "reconciles",
            );
        }
    });
    // The runtime's tasks (watches, workers) are dropped with it; nothing to drain.
    drop(rt);
}

/// Profiles the touch phase alone: with `BENCH_PERF_CTL=FIFO` and the variant run under
/// `perf record --delay=-1 --control=fifo:FIFO` (see `BENCH_CHILD_WRAPPER`), writes `command`
/// (`enable`, `disable`) to perf's control FIFO.
fn perf_control(command: &str) {
    if let Ok(fifo) = std::env::var("BENCH_PERF_CTL") {
        let written = std::fs::OpenOptions::new()
            .write(true)
            .open(&fifo)
            .and_then(|mut f| writeln!(f, "{command}"));
        if let Err(e) = written {
            eprintln!("# perf control {fifo}: {e}");
        }
    }
}

/// Starts variant `v`'s controller (or informers) on its own tasks; returns our factory.
async fn start(
    v: Variant,
    client: kube::Client,
    tally: Arc<Tally>,
) -> Option<SharedInformerFactory> {
    match v {
        Variant::Ours => {
            let factory = SharedInformerFactory::builder(client).namespace(NS).build();
            let controller = Controller::<Foo>::for_kind(&factory)
                .owns::<Deployment>()
                .workers(2)
                .build(CheckChild(tally));
            let manager = Manager::new(&factory).add(controller).sync_timeout(None);
            tokio::spawn(async move {
                if let Err(e) = manager.run(future::pending()).await {
                    fail(format!("our controller stopped: {e}"));
                }
            });
            Some(factory)
        }
        Variant::KubeRuntime => {
            let store = kube_runtime_store(&client).await;
            spawn_kube_runtime_controller(&client, store, tally);
            None
        }
        Variant::Informers => {
            let factory = SharedInformerFactory::builder(client).namespace(NS).build();
            let foos = factory.informer_for::<Foo>();
            factory.informer_for::<Deployment>();
            foos.add_inline_event_handler(Counting(tally))
                .unwrap_or_else(|e| fail(format!("adding the handler: {e}")));
            factory.start();
            Some(factory)
        }
        Variant::InformersQueue => {
            let factory = SharedInformerFactory::builder(client).namespace(NS).build();
            let foos = factory.informer_for::<Foo>();
            factory.informer_for::<Deployment>();
            let queue = WorkQueue::<String>::builder().build();
            foos.add_inline_event_handler(Enqueue(queue.clone()))
                .unwrap_or_else(|e| fail(format!("adding the handler: {e}")));
            for _ in 0..2 {
                let (queue, store, tally) = (queue.clone(), foos.store(), tally.clone());
                tokio::spawn(async move {
                    while let Some(key) = queue.get().await {
                        if let Some(foo) = store.get_by_key(&key) {
                            tally.record(&foo, true);
                        }
                        queue.done(&key);
                    }
                });
            }
            factory.start();
            Some(factory)
        }
        Variant::WatchesOurs | Variant::WatchesKubeRuntime => {
            unreachable!("count_watches runs these")
        }
    }
}

/// A `reflector` + `Store` of the Deployments, running and synced.
async fn kube_runtime_store(client: &kube::Client) -> Store<Deployment> {
    let api: Api<Deployment> = Api::namespaced(client.clone(), NS);
    let (reader, writer) = reflector::store();
    let stream = reflector::reflector(writer, watcher::watcher(api, watcher::Config::default()));
    tokio::spawn(stream.for_each(|_| future::ready(())));
    if reader.wait_until_ready().await.is_err() {
        fail("the Deployments' reflector stopped before it was ready");
    }
    reader
}

fn spawn_kube_runtime_controller(
    client: &kube::Client,
    deployments: Store<Deployment>,
    tally: Arc<Tally>,
) {
    let foos: Api<Foo> = Api::namespaced(client.clone(), NS);
    let children: Api<Deployment> = Api::namespaced(client.clone(), NS);
    let ctx = Arc::new(KrContext { deployments, tally });
    let run = kr::Controller::new(foos, watcher::Config::default())
        .owns(children, watcher::Config::default())
        .run(kr_reconcile, kr_error_policy, ctx);
    tokio::spawn(run.for_each(|_| future::ready(())));
}

/// (d): two controllers of one kind; once both reconciled every Foo, the server counts lists
/// and watches per path.
async fn count_watches(v: Variant, client: kube::Client, foos: usize) {
    // No touch in this variant: the tallies only tell when the first pass is over.
    let (a, b) = (
        Tally::new(TOUCHED, vec![true; foos]),
        Tally::new(TOUCHED, vec![true; foos]),
    );
    let mut _factory = None;
    if v == Variant::WatchesOurs {
        let factory = SharedInformerFactory::builder(client).namespace(NS).build();
        let first = Controller::<Foo>::for_kind(&factory)
            .name("first")
            .owns::<Deployment>()
            .build(CheckChild(a.clone()));
        let second = Controller::<Foo>::for_kind(&factory)
            .name("second")
            .owns::<Deployment>()
            .build(CheckChild(b.clone()));
        let manager = Manager::new(&factory).add(first).add(second);
        tokio::spawn(async move {
            if let Err(e) = manager.run(future::pending()).await {
                fail(format!("our controllers stopped: {e}"));
            }
        });
        _factory = Some(factory);
    } else {
        // One Store shared by both (the least the stable API allows), each `owns` its own watch.
        let store = kube_runtime_store(&client).await;
        spawn_kube_runtime_controller(&client, store.clone(), a.clone());
        spawn_kube_runtime_controller(&client, store, b.clone());
    }
    within("both controllers' first pass", async {
        a.first_done.notified().await;
        b.first_done.notified().await;
    })
    .await;
    // kube-runtime's watchers of the children may still be paging through their lists (the
    // reconciles need only the Store): their watches come once every page is in.
    within("quiet after the first pass", async {
        quiet(&a).await;
        quiet(&b).await;
        tokio::time::sleep(Duration::from_secs(2)).await;
    })
    .await;
    ask_driver("# count");
}
