//! `crontab-events [--kubeconfig PATH]`: prints the CronTab informer's handler calls as JSON
//! lines, `SYNCED <n>` once the cache holds its first list, and on SIGTERM/SIGINT `FINAL` and the
//! cache's `key resourceVersion` lines. See README.md for the output format.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use clap::Parser;
use crontab_events::output::{Output, event_handler, final_lines};
use crontab_events::{Clientset, InformerFactoryExt};
use kube::api::ListParams;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::core::Selector;
use kube_codegen_runtime::SharedInformerFactory;
use kube_codegen_runtime::cache::ReflectorOptions;
use tokio::signal::unix::{Signal, SignalKind, signal};

/// Watches CronTabs (stable.example.com/v1) in every namespace through a shared informer and
/// prints each event handler call as a JSON line.
#[derive(Debug, Parser)]
#[command(name = "crontab-events", version)]
struct Args {
    /// Kubeconfig file. Without it, kube's inference: $KUBECONFIG or ~/.kube/config, else the
    /// in-cluster service account.
    #[arg(long, value_name = "PATH")]
    kubeconfig: Option<PathBuf>,
    /// Give up (exit 1) when the server has not answered, or the cache has not synced, within
    /// this many seconds.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..), value_name = "SECONDS", default_value_t = 60)]
    sync_timeout: u64,
    /// First delay before the reflector lists again after an error (doubles up to
    /// --backoff-max-ms, with jitter). client-go's default; tests lower it to converge fast.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..), value_name = "MS", default_value_t = 800)]
    backoff_initial_ms: u64,
    /// Largest delay between the reflector's retries (before jitter). Zero delays are refused:
    /// they would retry a failing server in a hot loop.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..), value_name = "MS", default_value_t = 30_000)]
    backoff_max_ms: u64,
}

fn main() -> ExitCode {
    let args = Args::parse(); // usage errors exit 2, as clap does
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("crontab-events: starting the Tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(run(args));
    // Handler and informer tasks end here; don't wait long for one stuck writing to a full pipe.
    runtime.shutdown_timeout(Duration::from_secs(1));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("crontab-events: {}", describe(&e));
            ExitCode::FAILURE
        }
    }
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

async fn run(args: Args) -> anyhow::Result<()> {
    // Installed first, so a signal during startup is seen rather than killing the process.
    let mut signals = Signals::new()?;
    let timeout = Duration::from_secs(args.sync_timeout);
    let config = load_config(args.kubeconfig.as_deref()).await?;
    let server = config.cluster_url.to_string();
    let clientset = Clientset::new(kube::Client::try_from(config).context("building the client")?);

    // The reflector retries forever, so an unreachable server or a missing CRD would look like
    // a hang; one small list answers both before anything starts.
    let all = clientset.stable_v1().crontabs_all();
    let one = ListParams::default().limit(1);
    let probe = all.list(&one);
    tokio::select! {
        listed = tokio::time::timeout(timeout, probe) => {
            listed
                .map_err(|_| anyhow!("{server} did not answer within {}s", timeout.as_secs()))?
                .with_context(|| format!("listing crontabs.stable.example.com/v1 at {server}"))?;
        }
        sig = signals.recv() => bail!("stopped by {sig} before the cache synced"),
    }

    let reflector = ReflectorOptions::default().backoff(
        Duration::from_millis(args.backoff_initial_ms),
        Duration::from_millis(args.backoff_max_ms),
    );
    let factory = SharedInformerFactory::builder(clientset)
        .reflector(reflector)
        .build();
    let crontabs = factory.stable().v1().crontabs();
    let out = Arc::new(Output::stdout());
    let registration = crontabs
        .informer()
        .add_event_handler(event_handler(out.clone()))
        .context("adding the event handler")?;
    factory.start();

    // SYNCED comes after the cache's first list AND after the handler has returned from every
    // initial-list add, so those adds are printed before it and none is lost. The registration
    // has no async wait, hence the short poll.
    let synced = async {
        factory.wait_for_cache_sync().await;
        while !registration.has_synced() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::select! {
        done = tokio::time::timeout(timeout, synced) => done.map_err(|_| {
            anyhow!("the CronTab cache did not sync within {}s (server {server})", timeout.as_secs())
        })?,
        sig = signals.recv() => bail!("stopped by {sig} before the cache synced"),
        () = out.failed() => bail!("writing to stdout failed"),
    }
    let lister = crontabs.lister();
    let cached = lister
        .list(&Selector::default())
        .map_err(|e| anyhow!("reading the cache: {e}"))?;
    out.line(&format!("SYNCED {}", cached.len()))
        .context("writing to stdout")?;

    tokio::select! {
        sig = signals.recv() => eprintln!("crontab-events: {sig}, stopping"),
        () = out.failed() => bail!("writing to stdout failed"),
    }
    // The listing is taken from the cache as it is now; `finish` closes the output, so no event
    // line can follow FINAL.
    let cached = lister
        .list(&Selector::default())
        .map_err(|e| anyhow!("reading the cache: {e}"))?;
    out.finish(final_lines(&cached))
        .context("writing to stdout")?;
    factory.shutdown();
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

/// SIGTERM and SIGINT.
struct Signals {
    term: Signal,
    int: Signal,
}

impl Signals {
    fn new() -> anyhow::Result<Self> {
        Ok(Signals {
            term: signal(SignalKind::terminate()).context("installing the SIGTERM handler")?,
            int: signal(SignalKind::interrupt()).context("installing the SIGINT handler")?,
        })
    }

    /// The name of the next signal received.
    async fn recv(&mut self) -> &'static str {
        tokio::select! {
            _ = self.term.recv() => "SIGTERM",
            _ = self.int.recv() => "SIGINT",
        }
    }
}
