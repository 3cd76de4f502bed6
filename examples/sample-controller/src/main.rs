//! `sample-controller`: for every Foo, keeps a Deployment of `spec.replicas` nginx pods and
//! reports its available replicas in the Foo's status (kubernetes/sample-controller's
//! `main.go`). See README.md.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Parser;
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::ListParams;
use kube_codegen_runtime::cache::ReflectorOptions;
use kube_codegen_runtime::controller::{self, Controller, LeaderElection};
use kube_codegen_runtime::events::{Recorder, Reporter};
use kube_codegen_runtime::{LeaderElectionConfig, LeaseLock, SharedInformerFactory};
use sample_controller::controller::{ApiWrites, CONTROLLER_NAME, Controller as FooSync};
use sample_controller::{Clientset, InformerFactoryExt};

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
    #[arg(long, value_name = "DURATION", default_value = "15s", value_parser = controller::parse_duration)]
    leader_elect_lease_duration: Duration,
    /// How long the leader keeps acting without a successful renewal.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = controller::parse_duration)]
    leader_elect_renew_deadline: Duration,
    /// How often candidates try to acquire, and the leader renews, the Lease.
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = controller::parse_duration)]
    leader_elect_retry_period: Duration,
    /// Every this often, sync every Foo again from the cache (0s: never). Upstream's 30 s.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = controller::parse_duration)]
    resync_period: Duration,
    /// Give up (exit 1) when the server has not answered, or the caches have not synced,
    /// within this long.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = controller::parse_duration)]
    startup_timeout: Duration,
    /// On SIGTERM/SIGINT, how long queued and in-flight syncs may take before they are
    /// abandoned.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = controller::parse_duration)]
    shutdown_timeout: Duration,
    /// First delay before an informer lists again after an error (doubles up to
    /// --backoff-max-ms, with jitter). client-go's default; tests lower it to converge fast.
    #[arg(long, value_name = "MS", default_value_t = 800, value_parser = clap::value_parser!(u64).range(1..))]
    backoff_initial_ms: u64,
    /// Largest delay between an informer's retries (before jitter).
    #[arg(long, value_name = "MS", default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(1..))]
    backoff_max_ms: u64,
}

fn main() -> ExitCode {
    let args = Args::parse(); // usage errors exit 2, as clap does
    let filter = tracing_subscriber::EnvFilter::try_from_default_env();
    let filter = filter.unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let logs = tracing_subscriber::fmt().with_env_filter(filter).with_ansi(ansi);
    logs.with_writer(std::io::stderr).init(); // RUST_LOG filters; default info
    let result = tokio::runtime::Runtime::new().map_err(anyhow::Error::from).and_then(|rt| {
        let result = rt.block_on(run(args));
        rt.shutdown_timeout(Duration::from_secs(1)); // informer and handler tasks are dropped
        result
    });
    result.map(|()| ExitCode::SUCCESS).unwrap_or_else(|e| {
        eprintln!("sample-controller: {}", controller::describe_error(&*e));
        ExitCode::FAILURE
    })
}

async fn run(args: Args) -> anyhow::Result<()> {
    // First, so that a signal during startup is seen rather than killing the process.
    let shutdown = controller::shutdown_signal().context("installing signal handlers")?;
    let config = controller::load_config(args.kubeconfig.as_deref()).await?;
    let server = config.cluster_url.to_string();
    let clientset = Clientset::new(kube::Client::try_from(config).context("building the client")?);
    // The informers retry forever, so an unreachable server or a missing CRD would look like
    // a hang; one small list answers both before anything starts.
    let (v1beta1, one) = (clientset.samplecontroller_v1beta1(), ListParams::default().limit(1));
    let probe = async {
        match &args.namespace {
            Some(ns) => v1beta1.foos(ns).list(&one).await.map(drop),
            None => v1beta1.foos_all().list(&one).await.map(drop),
        }
    };
    tokio::select! {
        listed = tokio::time::timeout(args.startup_timeout, probe) => match listed {
            Err(_) => bail!("{server} did not answer within {:?}", args.startup_timeout),
            Ok(Err(kube::Error::Api(status))) if status.code == 404 => bail!(
                "foos.samplecontroller.k8s.io/v1beta1 is not served at {server}: install the CRD \
                 first (kubectl apply -f artifacts/crd.yaml)"
            ),
            Ok(listed) => listed.with_context(|| format!("listing foos.samplecontroller.k8s.io/v1beta1 at {server}"))?,
        },
        () = shutdown.clone() => return Ok(()),
    }

    let identity = controller::unique_identity(CONTROLLER_NAME);
    tracing::info!(identity = %identity, server = %server, "sample-controller starting");
    let reporter =
        Reporter { controller: CONTROLLER_NAME.to_owned(), instance: Some(identity.clone()) };
    let recorder = Recorder::new(clientset.client().clone(), reporter);
    let backoff = |ms| Duration::from_millis(ms);
    let reflector = ReflectorOptions::default()
        .backoff(backoff(args.backoff_initial_ms), backoff(args.backoff_max_ms));
    let mut factory = SharedInformerFactory::builder(clientset.clone())
        .reflector(reflector)
        .resync(args.resync_period);
    if let Some(ns) = &args.namespace {
        factory = factory.namespace(ns);
    }
    let factory = factory.build();
    let foos = factory.samplecontroller().v1beta1().foos();
    let deployments = factory.informer_for::<Deployment>().lister();
    let sync =
        FooSync::new(foos.lister(), deployments, ApiWrites::new(clientset, recorder.clone()));
    let mut controller = Controller::new(&factory, foos.informer())
        .name(CONTROLLER_NAME)
        .owns::<Deployment>()
        .workers(args.workers as usize)
        .recorder(recorder)
        .sync_timeout(Some(args.startup_timeout))
        .shutdown_timeout(args.shutdown_timeout);
    if args.leader_elect {
        let lock = LeaseLock {
            namespace: args.leader_elect_lease_namespace,
            name: args.leader_elect_lease_name,
            identity,
        };
        let config = LeaderElectionConfig {
            lease_duration: args.leader_elect_lease_duration,
            renew_deadline: args.leader_elect_renew_deadline,
            retry_period: args.leader_elect_retry_period,
            release_on_cancel: true,
        };
        // Only the leader runs informers, as upstream: one watch per kind in the deployment.
        controller = controller.leader_election(LeaderElection::new(lock, config).cold_standby());
    }
    // A lost lease ends here with "leader election lost", after the workers stopped: exit 1, as
    // client-go programs do, and let a restart campaign again.
    Ok(controller.run(sync, shutdown).await?)
}

#[cfg(test)]
mod tests {
    use super::*;

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
