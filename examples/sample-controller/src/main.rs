//! `sample-controller`: for every Foo, keeps a Deployment of `spec.replicas` nginx pods and
//! reports its available replicas in the Foo's status (kubernetes/sample-controller's
//! `main.go` + `Controller.Run`). See README.md.

// The kind is called Foo, so `foo` is the natural name, not a placeholder.
#![allow(clippy::disallowed_names)]

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::pin::pin;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use clap::Parser;
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::ListParams;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube_codegen_runtime::cache::ReflectorOptions;
use kube_codegen_runtime::events::{Recorder, Reporter};
use kube_codegen_runtime::workqueue::{Action, WorkQueue, run_workers};
use kube_codegen_runtime::{
    LeaderCallbacks, LeaderElectionConfig, LeaderElector, LeaseLock, RunOutcome,
    SharedInformerFactory,
};
use parking_lot::Mutex;
use sample_controller::controller::{
    ApiWrites, CONTROLLER_NAME, Controller, deployment_event_handler, foo_event_handler,
};
use sample_controller::{Clientset, InformerFactoryExt};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::watch;

/// For every Foo (samplecontroller.k8s.io/v1beta1), keeps a Deployment named by
/// spec.deployment.name with spec.replicas nginx pods, and reports its available replicas in the
/// Foo's status.
#[derive(Debug, Parser)]
#[command(name = "sample-controller", version)]
struct Args {
    /// Kubeconfig file. Without it, kube's inference: $KUBECONFIG or ~/.kube/config, else the
    /// in-cluster service account.
    #[arg(long, value_name = "PATH")]
    kubeconfig: Option<PathBuf>,
    /// Only watch and reconcile Foos and Deployments in this namespace (default: all).
    #[arg(long, value_name = "NS")]
    namespace: Option<String>,
    /// Number of Foos synced concurrently.
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=1000))]
    workers: u32,
    /// Run only while holding a coordination.k8s.io/v1 Lease, so that of several replicas
    /// exactly one acts.
    #[arg(long)]
    leader_elect: bool,
    /// Name of the leader election Lease.
    #[arg(long, value_name = "NAME", default_value = CONTROLLER_NAME)]
    leader_elect_lease_name: String,
    /// Namespace of the leader election Lease.
    #[arg(long, value_name = "NS", default_value = "default")]
    leader_elect_lease_namespace: String,
    /// How long others wait, after the leader's last renewal, before taking over.
    #[arg(long, value_name = "DURATION", default_value = "15s", value_parser = parse_duration)]
    leader_elect_lease_duration: Duration,
    /// How long the leader keeps acting without a successful renewal.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    leader_elect_renew_deadline: Duration,
    /// How often candidates try to acquire, and the leader renews, the Lease.
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = parse_duration)]
    leader_elect_retry_period: Duration,
    /// Every this often, sync every Foo again from the cache (0s: never). Upstream's 30 s.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    resync_period: Duration,
    /// Give up (exit 1) when the server has not answered, or the caches have not synced,
    /// within this long.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration)]
    startup_timeout: Duration,
    /// On SIGTERM/SIGINT, how long queued and in-flight syncs may take before they are
    /// abandoned.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    shutdown_timeout: Duration,
    /// First delay before an informer lists again after an error (doubles up to
    /// --backoff-max-ms, with jitter). client-go's default; tests lower it to converge fast.
    #[arg(long, value_name = "MS", default_value_t = 800, value_parser = clap::value_parser!(u64).range(1..))]
    backoff_initial_ms: u64,
    /// Largest delay between an informer's retries (before jitter).
    #[arg(long, value_name = "MS", default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(1..))]
    backoff_max_ms: u64,
}

/// A Go-style duration: a non-negative number with a unit, `ms`, `s`, `m` or `h` (`500ms`,
/// `1.5s`, `2m`).
fn parse_duration(text: &str) -> Result<Duration, String> {
    let units = [("ms", 0.001), ("s", 1.0), ("m", 60.0), ("h", 3600.0)];
    let (number, scale) = units
        .iter()
        .find_map(|(unit, scale)| Some((text.strip_suffix(unit)?, *scale)))
        .ok_or_else(|| format!("{text:?} has no unit (ms, s, m or h), e.g. 15s"))?;
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration, e.g. 15s or 500ms"))?;
    if !value.is_finite() || value < 0.0 {
        return Err(format!("{text:?} is not a non-negative duration"));
    }
    Duration::try_from_secs_f64(value * scale).map_err(|e| format!("{text:?}: {e}"))
}

fn main() -> ExitCode {
    let args = Args::parse(); // usage errors exit 2, as clap does
    init_logging();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("sample-controller: starting the Tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(run(args));
    // Whatever is still running (informers, event handler tasks) is dropped here.
    runtime.shutdown_timeout(Duration::from_secs(1));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sample-controller: {}", describe(&e));
            ExitCode::FAILURE
        }
    }
}

/// Logs to stderr; `RUST_LOG` filters (default `info`).
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}

/// The error and its causes, skipping a cause whose text the message already holds (kube's
/// errors repeat their source in their own message).
fn describe(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let cause = cause.to_string();
        if text.contains(&cause) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&cause);
    }
    text
}

/// What the controller needs once it runs, shared by every term of leadership.
struct Ctx {
    clientset: Clientset,
    recorder: Recorder,
    namespace: Option<String>,
    workers: usize,
    resync: Duration,
    reflector: ReflectorOptions,
    startup_timeout: Duration,
    shutdown_timeout: Duration,
}

/// Why the controller stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// SIGTERM/SIGINT: finish the work at hand, then exit.
    Shutdown,
    /// Leadership lost: another replica may act already, so write nothing more.
    LeadershipLost,
}

async fn run(args: Args) -> anyhow::Result<()> {
    // Installed first, so a signal during startup is seen rather than killing the process.
    let mut term = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    let mut int = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
    let (stop_tx, stop_rx) = watch::channel(false);
    tokio::spawn(async move {
        let name = tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        };
        tracing::info!("{name}: shutting down");
        stop_tx.send_replace(true);
        // Keep the sender (and the handlers) alive: later signals are ignored.
        std::future::pending::<()>().await;
    });
    let stopped = || {
        let mut rx = stop_rx.clone();
        async move {
            // An error means the sender is gone, which only happens at exit.
            let _ = rx.wait_for(|s| *s).await;
        }
    };

    let config = load_config(args.kubeconfig.as_deref()).await?;
    let server = config.cluster_url.to_string();
    let client = kube::Client::try_from(config).context("building the client")?;
    let clientset = Clientset::new(client.clone());

    // The informers retry forever, so an unreachable server or a missing CRD would look like
    // a hang; one small list answers both before anything starts.
    let probe = async {
        let one = ListParams::default().limit(1);
        let v1beta1 = clientset.samplecontroller_v1beta1();
        match &args.namespace {
            Some(ns) => v1beta1.foos(ns).list(&one).await.map(drop),
            None => v1beta1.foos_all().list(&one).await.map(drop),
        }
    };
    tokio::select! {
        listed = tokio::time::timeout(args.startup_timeout, probe) => {
            let listed = listed
                .map_err(|_| anyhow!("{server} did not answer within {:?}", args.startup_timeout))?;
            match listed {
                Ok(()) => {}
                Err(kube::Error::Api(status)) if status.code == 404 => bail!(
                    "foos.samplecontroller.k8s.io/v1beta1 is not served at {server}: install \
                     the CRD first (kubectl apply -f artifacts/crd.yaml)"
                ),
                Err(e) => {
                    return Err(e).context(format!(
                        "listing foos.samplecontroller.k8s.io/v1beta1 at {server}"
                    ));
                }
            }
        }
        () = stopped() => return Ok(()),
    }

    let identity = identity();
    tracing::info!(identity = %identity, server = %server, "sample-controller starting");
    let reporter = Reporter {
        controller: CONTROLLER_NAME.to_owned(),
        instance: Some(identity.clone()),
    };
    let ctx = Arc::new(Ctx {
        recorder: Recorder::new(client.clone(), reporter),
        clientset,
        namespace: args.namespace.clone(),
        workers: args.workers as usize,
        resync: args.resync_period,
        reflector: ReflectorOptions::default().backoff(
            Duration::from_millis(args.backoff_initial_ms),
            Duration::from_millis(args.backoff_max_ms),
        ),
        startup_timeout: args.startup_timeout,
        shutdown_timeout: args.shutdown_timeout,
    });

    if !args.leader_elect {
        let stop = async {
            stopped().await;
            Stop::Shutdown
        };
        return control(&ctx, stop).await;
    }

    let lock = LeaseLock {
        namespace: args.leader_elect_lease_namespace.clone(),
        name: args.leader_elect_lease_name.clone(),
        identity: identity.clone(),
    };
    let config = LeaderElectionConfig {
        lease_duration: args.leader_elect_lease_duration,
        renew_deadline: args.leader_elect_renew_deadline,
        retry_period: args.leader_elect_retry_period,
        release_on_cancel: true,
    };
    let elector = LeaderElector::new(client, lock, config).context("leader election")?;
    tokio::spawn({
        let (elector, stopped) = (elector.clone(), stopped());
        async move {
            stopped.await;
            elector.shutdown();
        }
    });
    // A failure inside the leader's work (the caches never synced) ends the election, then
    // the program with that error.
    let failure: Arc<Mutex<Option<anyhow::Error>>> = Arc::default();
    // Set once the leader's work has stopped: on a lost lease the elector returns without
    // waiting for it, and exiting first could cut the workers' stop short.
    let (work_stopped_tx, mut work_stopped) = watch::channel(false);
    let callbacks = LeaderCallbacks::new({
        let (ctx, elector, failure, stop_rx) = (
            ctx.clone(),
            elector.clone(),
            failure.clone(),
            stop_rx.clone(),
        );
        let work_stopped_tx = work_stopped_tx.clone();
        move |leadership| async move {
            tracing::info!("started leading");
            let stop = async {
                leadership.cancelled().await;
                if *stop_rx.borrow() {
                    Stop::Shutdown
                } else {
                    Stop::LeadershipLost
                }
            };
            let result = control(&ctx, stop).await;
            work_stopped_tx.send_replace(true);
            if let Err(e) = result {
                *failure.lock() = Some(e);
                elector.shutdown();
            }
        }
    })
    .on_new_leader(|holder| tracing::info!(holder, "new leader"));
    let outcome = elector.run(callbacks).await.context("leader election")?;
    if let Some(e) = failure.lock().take() {
        return Err(e);
    }
    match outcome {
        RunOutcome::Shutdown => Ok(()),
        // As client-go programs do: exit, and let a restart campaign again from scratch.
        RunOutcome::LostLeadership => {
            // The work sees its leadership cancelled at once and stops its workers.
            let _ = tokio::time::timeout(
                Duration::from_secs(5),
                work_stopped.wait_for(|stopped| *stopped),
            )
            .await;
            bail!("leader election lost")
        }
    }
}

/// Runs the controller until `stop` (upstream's `Controller.Run`): two informers from one
/// factory feeding one rate-limited queue, then the workers.
async fn control(ctx: &Ctx, stop: impl Future<Output = Stop>) -> anyhow::Result<()> {
    let mut stop = pin!(stop);
    let mut factory = SharedInformerFactory::builder(ctx.clientset.clone())
        .reflector(ctx.reflector.clone())
        .resync(ctx.resync);
    if let Some(ns) = &ctx.namespace {
        factory = factory.namespace(ns);
    }
    let factory = factory.build();
    let foos = factory.samplecontroller().v1beta1().foos();
    let deployments = factory.informer_for::<Deployment>();
    // client-go's default controller rate limiter: per-key 5 ms doubling to 1000 s, and
    // 10 qps overall with a burst of 100.
    let queue: WorkQueue<String> = WorkQueue::builder().name("foos").build();
    // Both handlers only put keys in the workqueue, so they run inline on the informers'
    // reflector tasks (no task wake-up per event; see `add_inline_event_handler`).
    foos.informer()
        .add_inline_event_handler(foo_event_handler(queue.clone()))
        .context("adding the foo event handler")?;
    deployments
        .add_inline_event_handler(deployment_event_handler(queue.clone(), foos.lister()))
        .context("adding the deployment event handler")?;

    tracing::info!("starting informers");
    factory.start();
    tokio::select! {
        synced = tokio::time::timeout(ctx.startup_timeout, factory.wait_for_cache_sync()) => {
            synced.map_err(|_| anyhow!(
                "the foo and deployment caches did not sync within {:?}", ctx.startup_timeout
            ))?;
        }
        _ = &mut stop => {
            factory.shutdown();
            queue.shutdown();
            return Ok(());
        }
    }

    let controller = Arc::new(Controller::new(
        foos.lister(),
        deployments.lister(),
        ApiWrites::new(ctx.clientset.clone(), ctx.recorder.clone()),
    ));
    tracing::info!(workers = ctx.workers, "caches synced; starting workers");
    let mut workers = tokio::spawn(run_workers(queue.clone(), ctx.workers, move |key| {
        let controller = controller.clone();
        async move {
            controller.sync(&key).await?;
            Ok::<_, sample_controller::controller::SyncError>(Action::Done)
        }
    }));

    match stop.await {
        Stop::Shutdown => {
            // No new work (the informers stop; the listers keep answering from the cache),
            // then what is queued or in flight is finished.
            factory.shutdown();
            tracing::info!(
                queued = queue.len(),
                in_flight = queue.len_in_flight(),
                "draining the work queue"
            );
            let drained =
                tokio::time::timeout(ctx.shutdown_timeout, queue.shutdown_with_drain()).await;
            if drained.is_err() {
                tracing::warn!(
                    "the work queue did not drain within {:?}; abandoning it",
                    ctx.shutdown_timeout
                );
                queue.shutdown();
                workers.abort();
            }
            // Workers return once the drained queue hands out nothing more.
            if tokio::time::timeout(Duration::from_secs(5), &mut workers)
                .await
                .is_err()
            {
                workers.abort();
            }
            tracing::info!("workers stopped");
        }
        Stop::LeadershipLost => {
            // Another replica may lead already: stop writing at once, mid-sync if need be.
            tracing::error!("leadership lost; stopping workers");
            workers.abort();
            queue.shutdown();
            factory.shutdown();
        }
    }
    Ok(())
}

/// `--kubeconfig PATH`, else kube's inference.
async fn load_config(path: Option<&Path>) -> anyhow::Result<kube::Config> {
    let Some(path) = path else {
        return kube::Config::infer()
            .await
            .context("no kubeconfig ($KUBECONFIG, ~/.kube/config) and not in a cluster");
    };
    let kubeconfig = Kubeconfig::read_from(path)
        .with_context(|| format!("reading kubeconfig {}", path.display()))?;
    kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .with_context(|| format!("kubeconfig {}", path.display()))
}

/// This replica's identity (the Lease holder and the events' reporting instance): the
/// hostname and a random suffix, as client-go programs make it, so that two replicas on one
/// host differ.
fn identity() -> String {
    use std::hash::{BuildHasher, Hasher};
    let host = hostname::get()
        .ok()
        .and_then(|h| h.into_string().ok())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| CONTROLLER_NAME.to_owned());
    // RandomState is seeded from the OS's randomness: enough for a unique suffix, with no
    // extra dependency.
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    format!("{host}_{:016x}", hasher.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_like_go() {
        assert_eq!(parse_duration("15s"), Ok(Duration::from_secs(15)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
        for bad in ["15", "s", "-1s", "abc", "1e400s", "NaNs", ""] {
            assert!(parse_duration(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn identities_differ_per_process_start() {
        assert_ne!(identity(), identity());
        assert!(identity().contains('_'));
    }

    #[test]
    fn flags_have_upstream_defaults() {
        let args = Args::try_parse_from(["sample-controller"]).unwrap();
        assert_eq!(args.workers, 2);
        assert!(!args.leader_elect);
        assert_eq!(args.leader_elect_lease_name, "sample-controller");
        assert_eq!(args.leader_elect_lease_namespace, "default");
        assert_eq!(args.leader_elect_lease_duration, Duration::from_secs(15));
        assert_eq!(args.resync_period, Duration::from_secs(30));
        assert!(Args::try_parse_from(["sample-controller", "--workers", "0"]).is_err());
    }
}
