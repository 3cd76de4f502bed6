//! P1 (issue 36, item 4): live changes before the backlog. A controller restarts over N cached
//! Foos (its initial list queues every one), reconciles take R ms each (a write's round trip,
//! slept), and while the initial pass runs the driver changes M Foos. Figures, per mode, with
//! the queue's priorities (the default: initial-list keys at `LOW_PRIORITY`) and without
//! (client-go's FIFO), alternated in the same run:
//!
//! - `p1_<mode>_pass_s`: from the controller's start until every Foo was reconciled once;
//! - `p1_<mode>_changed_p99_ms` (and `_max_ms`): from the change (the patch's answer) until a
//!   reconcile that saw it ended;
//! - `p1_priority_changed_p99_over_pass`: the goal's ratio (under 0.1), and
//!   `p1_pass_priority_over_fifo` (the pass no slower: about 1).
//!
//! Usage: `cargo xtask bench p1 -- [--runs N] [--foos N] [--changed N] [--reconcile-ms N]
//! [--workers N] [--quick]` (default 5 rounds, 10,000 Foos, 100 changed, 5 ms, 10 workers).
//! Run as a test (no `--bench` argument) it is a smoke run at `--quick` sizes that fails
//! unless every change was reconciled.

// The kind is called Foo, so `foo` is the natural name, not a placeholder.
#![allow(clippy::disallowed_names)]

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use kube_codegen_runtime::SharedInformerFactory;
use kube_codegen_runtime::controller::{Action, Context, Controller, Reconciler};
use kube_codegen_runtime_bench::cluster::{foo_object, start_with_foo_crd};
use kube_codegen_runtime_bench::measure::{count_value, runs_value};
use kube_codegen_runtime_bench::runs::Gathered;
use kube_codegen_runtime_bench::samplecontroller::v1alpha1::Foo;
use kube_fake_apiserver::FakeApiServer;
use parking_lot::Mutex;

const NS: &str = "default";
/// The label the driver's change sets.
const CHANGED: &str = "p1.bench.example.com/changed";
/// Any phase longer than this is a failure, not a figure.
const DEADLINE: Duration = Duration::from_secs(600);
/// Requests in flight at once while seeding.
const IN_FLIGHT: usize = 64;

#[derive(Clone, Copy)]
struct Scale {
    foos: usize,
    changed: usize,
    reconcile: Duration,
    workers: usize,
}

const FULL: Scale = Scale {
    foos: 10_000,
    changed: 100,
    reconcile: Duration::from_millis(5),
    workers: 10,
};
const QUICK: Scale = Scale {
    foos: 600,
    changed: 20,
    reconcile: Duration::from_millis(2),
    workers: 4,
};

/// What the reconciles saw: first reconcile of each Foo, and when a reconcile of a changed
/// Foo that saw the change ended.
#[derive(Default)]
struct Seen {
    /// This round's value of the label.
    want: String,
    first: HashMap<String, Instant>,
    change_seen: HashMap<String, Instant>,
}

struct Slow {
    work: Duration,
    seen: Arc<Mutex<Seen>>,
}

impl Reconciler<Foo> for Slow {
    type Error = std::convert::Infallible;

    async fn reconcile(&self, foo: Arc<Foo>, _: &Context) -> Result<Action, Self::Error> {
        tokio::time::sleep(self.work).await;
        let name = foo.metadata.name.clone().unwrap_or_default();
        let now = Instant::now();
        let mut seen = self.seen.lock();
        let changed = foo
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(CHANGED))
            .is_some_and(|v| *v == seen.want);
        seen.first.entry(name.clone()).or_insert(now);
        if changed {
            seen.change_seen.entry(name).or_insert(now);
        }
        Ok(Action::done())
    }
}

/// The `p`-quantile (nearest rank) of `xs`.
fn quantile(mut xs: Vec<f64>, p: f64) -> f64 {
    xs.sort_by(f64::total_cmp);
    let rank = ((p * xs.len() as f64).ceil() as usize).clamp(1, xs.len());
    xs[rank - 1]
}

async fn seed(client: &kube::Client, foos: usize) -> Result<(), String> {
    let api: Api<Foo> = Api::namespaced(client.clone(), NS);
    futures::stream::iter(0..foos)
        .map(|i| {
            let api = api.clone();
            async move {
                api.create(&PostParams::default(), &foo_object(i, NS.to_owned()))
                    .await
                    .map(drop)
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .try_collect::<Vec<()>>()
        .await
        .map(drop)
        .map_err(|e| format!("seeding: {e}"))
}

async fn wait_until(what: &str, mut done: impl FnMut() -> bool) -> Result<(), String> {
    let deadline = Instant::now() + DEADLINE;
    while !done() {
        if Instant::now() > deadline {
            return Err(format!("timed out waiting for {what}"));
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    Ok(())
}

/// One controller start over the seeded Foos; `round` makes this run's change new.
async fn run_once(
    server: &FakeApiServer,
    scale: Scale,
    priorities: bool,
    round: usize,
    out: &mut Gathered,
) -> Result<(), String> {
    let mode = if priorities { "priority" } else { "fifo" };
    let client = server.in_process_client();
    let factory = SharedInformerFactory::builder(client.clone())
        .namespace(NS)
        .build();
    let seen = Arc::new(Mutex::new(Seen {
        want: format!("r{round}-{mode}"),
        ..Seen::default()
    }));
    let controller = Controller::<Foo>::for_kind(&factory)
        .name(format!("p1-{mode}"))
        .workers(scale.workers)
        .priority_queue(priorities);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let started = Instant::now();
    let task = tokio::spawn(controller.run(
        Slow {
            work: scale.reconcile,
            seen: seen.clone(),
        },
        async move {
            let _ = stopped.await;
        },
    ));
    // The change comes a tenth into the pass, to Foos spread over the key space.
    wait_until("a tenth of the pass", || {
        seen.lock().first.len() >= scale.foos / 10
    })
    .await?;
    let api: Api<Foo> = Api::namespaced(client, NS);
    let value = format!("r{round}-{mode}");
    let patch = Patch::Merge(serde_json::json!({"metadata": {"labels": {CHANGED: value}}}));
    let changed: Vec<String> = (0..scale.changed)
        .map(|k| format!("foo-{}", k * scale.foos / scale.changed))
        .collect();
    let mut change_at = HashMap::new();
    for name in &changed {
        api.patch(name, &PatchParams::default(), &patch)
            .await
            .map_err(|e| format!("changing {name}: {e}"))?;
        change_at.insert(name.clone(), Instant::now());
    }
    wait_until("the pass and the changes", || {
        let s = seen.lock();
        s.first.len() >= scale.foos && changed.iter().all(|n| s.change_seen.contains_key(n))
    })
    .await?;
    let pass = {
        let s = seen.lock();
        s.first.values().max().map(|t| t.duration_since(started))
    }
    .unwrap_or_default();
    let latencies: Vec<f64> = {
        let s = seen.lock();
        changed
            .iter()
            .map(|n| {
                let seen_at = s.change_seen[n];
                seen_at
                    .saturating_duration_since(change_at[n])
                    .as_secs_f64()
                    * 1e3
            })
            .collect()
    };
    let _ = stop.send(());
    task.await
        .map_err(|e| format!("controller task: {e}"))?
        .map_err(|e| format!("controller: {e}"))?;
    let p99 = quantile(latencies.clone(), 0.99);
    println!(
        "# round {round} {mode}: pass {:.2} s, changed p99 {p99:.1} ms",
        pass.as_secs_f64()
    );
    out.push(&format!("p1_{mode}_pass_s"), pass.as_secs_f64(), "s");
    out.push(&format!("p1_{mode}_changed_p99_ms"), p99, "ms");
    out.push(
        &format!("p1_{mode}_changed_max_ms"),
        quantile(latencies, 1.0),
        "ms",
    );
    Ok(())
}

async fn bench(scale: Scale, runs: usize) -> Result<Gathered, String> {
    let builder = FakeApiServer::builder()
        .history_limit(200_000)
        .garbage_collector(false);
    let server = start_with_foo_crd(builder).await?;
    let t0 = Instant::now();
    seed(&server.in_process_client(), scale.foos).await?;
    println!(
        "# {} Foos created in {:.2} s; {} changed a tenth into each pass; reconciles {} ms, {} workers",
        scale.foos,
        t0.elapsed().as_secs_f64(),
        scale.changed,
        scale.reconcile.as_millis(),
        scale.workers
    );
    let mut out = Gathered::default();
    for round in 0..runs {
        // Alternate which mode goes first, so neither always runs on a warmer server.
        let order = if round % 2 == 0 {
            [true, false]
        } else {
            [false, true]
        };
        for priorities in order {
            run_once(&server, scale, priorities, round, &mut out).await?;
        }
    }
    let ratio = |a: &str, b: &str| -> Vec<f64> {
        match (out.values(a), out.values(b)) {
            (Some(a), Some(b)) => a.iter().zip(b).map(|(x, y)| x / y).collect(),
            _ => Vec::new(),
        }
    };
    let changed_over_pass: Vec<f64> = ratio("p1_priority_changed_p99_ms", "p1_priority_pass_s")
        .into_iter()
        .map(|r| r / 1e3)
        .collect();
    for r in changed_over_pass {
        out.push("p1_priority_changed_p99_over_pass", r, "x");
    }
    out.push_ratios(&[(
        "p1_pass_priority_over_fifo",
        "p1_priority_pass_s",
        "p1_fifo_pass_s",
    )]);
    server.shutdown().await;
    Ok(out)
}

fn main() {
    let (mut runs, mut quick, mut benching) = (None, false, false);
    let (mut foos, mut changed, mut reconcile_ms, mut workers) = (None, None, None, None);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--runs" => runs = Some(runs_value(args.next())),
            "--foos" => foos = Some(count_value(args.next(), "--foos").max(10)),
            "--changed" => changed = Some(count_value(args.next(), "--changed").max(1)),
            "--reconcile-ms" => reconcile_ms = Some(count_value(args.next(), "--reconcile-ms")),
            "--workers" => workers = Some(count_value(args.next(), "--workers").max(1)),
            "--quick" => quick = true,
            "--bench" => benching = true,
            _ => {} // the test harness's flags
        }
    }
    // `cargo test` runs this binary without `--bench`: a smoke run, never the full benchmark.
    let mut scale = if quick || !benching { QUICK } else { FULL };
    scale.foos = foos.unwrap_or(scale.foos);
    scale.changed = changed.unwrap_or(scale.changed);
    scale.workers = workers.unwrap_or(scale.workers);
    if let Some(ms) = reconcile_ms {
        scale.reconcile = Duration::from_millis(ms as u64);
    }
    scale.changed = scale.changed.min(scale.foos);
    let runs = runs.unwrap_or(if benching && !quick { 5 } else { 1 });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a Tokio runtime");
    match rt.block_on(bench(scale, runs)) {
        Ok(out) => out.print(),
        Err(e) => {
            eprintln!("p1: {e}");
            std::process::exit(1);
        }
    }
}
