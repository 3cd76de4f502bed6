//! The flags and `main` every controller program has (feature `cli`): client-go programs'
//! `--kubeconfig` and `--leader-elect*` flags, the informers' resync and backoff, workers and
//! timeouts, as clap `Args` to `#[command(flatten)]`; a startup that fails fast when the
//! server does not answer or does not serve the primary kind; and [`run_program`], which
//! sets up logging, the Tokio runtime and the signals, and turns an error into exit code 1.

use std::error::Error;
use std::future::Future;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use kube::Resource;
use kube::api::ListParams;

use super::builder::{Controller, Watched};
use super::manager::LeaderElection;
use super::program::{ConfigError, Shutdown, describe_error, load_config, parse_duration};
use crate::cache::ReflectorOptions;
use crate::factory::{FactoryScope, SharedInformerFactory};
use crate::leaderelection::{LeaderElectionConfig, LeaseLock};
#[cfg(all(feature = "webhook", feature = "prometheus"))]
use crate::workqueue::PrometheusMetricsProvider;
#[cfg(all(feature = "webhook", feature = "prometheus"))]
use prometheus_client::registry::Registry;
#[cfg(all(feature = "webhook", feature = "prometheus"))]
use std::sync::Arc;

/// A controller program's common flags (clap `Args`: `#[command(flatten)]` them). Defaults
/// are kubernetes/sample-controller's and client-go's.
#[derive(Debug, Clone, clap::Args)]
pub struct ControllerFlags {
    /// Kubeconfig file. Without it, kube's inference: $KUBECONFIG or ~/.kube/config, else the
    /// in-cluster service account.
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// Only watch and reconcile objects in this namespace (default: all).
    #[arg(long, value_name = "NS")]
    pub namespace: Option<String>,
    /// Number of objects reconciled concurrently.
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub workers: u32,
    /// `--leader-elect*`.
    #[command(flatten)]
    pub leader_election: LeaderElectionFlags,
    /// Every this often, reconcile every object again from the cache (0s: never).
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    pub resync_period: Duration,
    /// Give up (exit 1) when the server has not answered, or the caches have not synced,
    /// within this long.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration)]
    pub startup_timeout: Duration,
    /// On SIGTERM/SIGINT, how long queued and in-flight reconciles may take before they are
    /// abandoned.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    pub shutdown_timeout: Duration,
    /// First delay before an informer lists again after an error (doubles up to
    /// --backoff-max-ms, with jitter). client-go's default; tests lower it to converge fast.
    #[arg(long, value_name = "MS", default_value_t = 800, value_parser = clap::value_parser!(u64).range(1..))]
    pub backoff_initial_ms: u64,
    /// Largest delay between an informer's retries (before jitter).
    #[arg(long, value_name = "MS", default_value_t = 30_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub backoff_max_ms: u64,
    /// Serve Prometheus metrics at /metrics on this address (`:8080`, `127.0.0.1:8080`; `0`:
    /// off, the default, so replicas on one machine do not collide).
    #[cfg(feature = "webhook")]
    #[arg(long, value_name = "ADDR", default_value = "0", value_parser = super::endpoints::parse_bind_address)]
    pub metrics_bind_address: super::endpoints::BindAddress,
    /// Serve the /healthz and /readyz probes on this address (`:8081`; `0`: off, the default).
    #[cfg(feature = "webhook")]
    #[arg(long, value_name = "ADDR", default_value = "0", value_parser = super::endpoints::parse_bind_address)]
    pub health_probe_bind_address: super::endpoints::BindAddress,
    /// The metrics the flags set up (with `--metrics-bind-address`), shared by the factory and
    /// the controller.
    #[cfg(all(feature = "webhook", feature = "prometheus"))]
    #[arg(skip)]
    pub metrics: FlagMetrics,
}

/// A Prometheus registry with the runtime's metric families, made on first use and shared by
/// every clone of the flags (see [`ControllerFlags::factory_builder`] and
/// [`ControllerFlags::configure`]).
#[cfg(all(feature = "webhook", feature = "prometheus"))]
#[derive(Clone, Default)]
pub struct FlagMetrics(Arc<std::sync::OnceLock<(Arc<Registry>, Arc<PrometheusMetricsProvider>)>>);

#[cfg(all(feature = "webhook", feature = "prometheus"))]
impl FlagMetrics {
    /// The registry and the provider recording into it.
    pub fn get(&self) -> (Arc<Registry>, Arc<PrometheusMetricsProvider>) {
        self.0
            .get_or_init(|| {
                let mut registry = Registry::default();
                let provider = PrometheusMetricsProvider::new(&mut registry);
                (Arc::new(registry), Arc::new(provider))
            })
            .clone()
    }
}

#[cfg(all(feature = "webhook", feature = "prometheus"))]
impl std::fmt::Debug for FlagMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FlagMetrics")
    }
}

/// client-go programs' leader election flags.
#[derive(Debug, Clone, clap::Args)]
pub struct LeaderElectionFlags {
    /// Run only while holding a coordination.k8s.io/v1 Lease, so that of several replicas
    /// exactly one acts.
    #[arg(long)]
    pub leader_elect: bool,
    /// Name of the leader election Lease [default: the controller's name].
    #[arg(long, value_name = "NAME")]
    pub leader_elect_lease_name: Option<String>,
    /// Namespace of the leader election Lease.
    #[arg(long, value_name = "NS", default_value = "default")]
    pub leader_elect_lease_namespace: String,
    /// How long others wait, after the leader's last renewal, before taking over.
    #[arg(long, value_name = "DURATION", default_value = "15s", value_parser = parse_duration)]
    pub leader_elect_lease_duration: Duration,
    /// How long the leader keeps acting without a successful renewal.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    pub leader_elect_renew_deadline: Duration,
    /// How often candidates try to acquire, and the leader renews, the Lease.
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = parse_duration)]
    pub leader_elect_retry_period: Duration,
}

impl LeaderElectionFlags {
    /// With `--leader-elect`, the election of `identity` for the Lease named by the flags
    /// (else `default_name`), informers warm while standing by.
    pub fn election(&self, identity: &str, default_name: &str) -> Option<LeaderElection> {
        if !self.leader_elect {
            return None;
        }
        let name = self
            .leader_elect_lease_name
            .as_deref()
            .unwrap_or(default_name);
        let lock = LeaseLock {
            namespace: self.leader_elect_lease_namespace.clone(),
            name: name.to_owned(),
            identity: identity.to_owned(),
        };
        let config = LeaderElectionConfig {
            lease_duration: self.leader_elect_lease_duration,
            renew_deadline: self.leader_elect_renew_deadline,
            retry_period: self.leader_elect_retry_period,
            release_on_cancel: true,
        };
        Some(LeaderElection::new(lock, config))
    }
}

/// Why a controller program could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    /// No usable kubeconfig.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The client could not be built from the config.
    #[error("building the client: {0}")]
    Client(#[source] kube::Error),
    /// The server did not answer the probe in time.
    #[error("{server} did not answer within {timeout:?}")]
    Timeout {
        /// The server's URL.
        server: String,
        /// `--startup-timeout`.
        timeout: Duration,
    },
    /// The server does not serve the primary kind (its CRD is not installed).
    #[error("{resource} is not served at {server}: install its CustomResourceDefinition first")]
    NotServed {
        /// `plural.group/version`.
        resource: String,
        /// The server's URL.
        server: String,
    },
    /// The probe failed otherwise.
    #[error("listing {resource} at {server}: {source}")]
    Probe {
        /// `plural.group/version`.
        resource: String,
        /// The server's URL.
        server: String,
        /// The server's answer.
        #[source]
        source: kube::Error,
    },
}

fn resource_name<K: Resource<DynamicType = ()>>() -> String {
    let (plural, group, version) = (K::plural(&()), K::group(&()), K::version(&()));
    match group.is_empty() {
        true => format!("{plural}/{version}"),
        false => format!("{plural}.{group}/{version}"),
    }
}

impl ControllerFlags {
    /// The client, once the server has answered a list of `K` (the primary kind) within
    /// `--startup-timeout`: the informers retry forever, so an unreachable server or a
    /// missing CRD would otherwise look like a hang. `None` when `shutdown` came first.
    pub async fn connect<K>(&self, shutdown: Shutdown) -> Result<Option<kube::Client>, StartupError>
    where
        K: Watched,
        K::Scope: FactoryScope,
    {
        let config = load_config(self.kubeconfig.as_deref()).await?;
        let server = config.cluster_url.to_string();
        let client = kube::Client::try_from(config).map_err(StartupError::Client)?;
        let api = <K::Scope as FactoryScope>::api::<K>(client.clone(), self.namespace.as_deref());
        let one = ListParams::default().limit(1);
        let probe = api.list(&one);
        let resource = resource_name::<K>();
        let listed = tokio::select! {
            listed = tokio::time::timeout(self.startup_timeout, probe) => listed,
            () = shutdown => return Ok(None),
        };
        match listed {
            Ok(Ok(_)) => Ok(Some(client)),
            Err(_) => Err(StartupError::Timeout {
                server,
                timeout: self.startup_timeout,
            }),
            Ok(Err(kube::Error::Api(s))) if s.code == 404 => {
                Err(StartupError::NotServed { resource, server })
            }
            Ok(Err(source)) => Err(StartupError::Probe {
                resource,
                server,
                source,
            }),
        }
    }

    /// The informer factory over `client` with the flags' namespace, resync period and
    /// backoff.
    pub fn factory(&self, client: impl Into<kube::Client>) -> SharedInformerFactory {
        self.factory_builder(client).build()
    }

    /// The builder [`factory`](Self::factory) builds, for more options (e.g. ring mode's
    /// `.sharded(ring.scope())`).
    pub fn factory_builder(
        &self,
        client: impl Into<kube::Client>,
    ) -> crate::factory::SharedInformerFactoryBuilder {
        let backoff = Duration::from_millis;
        let reflector = ReflectorOptions::default().backoff(
            backoff(self.backoff_initial_ms),
            backoff(self.backoff_max_ms),
        );
        let mut factory = SharedInformerFactory::builder(client)
            .reflector(reflector)
            .resync(self.resync_period);
        if let Some(ns) = &self.namespace {
            factory = factory.namespace(ns);
        }
        #[cfg(all(feature = "webhook", feature = "prometheus"))]
        if self.metrics_bind_address.is_some() {
            factory = factory.metrics(self.metrics.get().1);
        }
        factory
    }

    /// `controller` with the flags' workers, cache-sync deadline (`--startup-timeout`) and
    /// shutdown timeout. Leader election is [`LeaderElectionFlags::election`].
    pub fn configure<K: Watched>(&self, controller: Controller<K>) -> Controller<K> {
        let controller = controller
            .workers(self.workers as usize)
            .sync_timeout(Some(self.startup_timeout))
            .shutdown_timeout(self.shutdown_timeout);
        #[cfg(feature = "webhook")]
        let controller = controller
            .metrics_bind_address(self.metrics_bind_address)
            .health_probe_bind_address(self.health_probe_bind_address);
        #[cfg(all(feature = "webhook", feature = "prometheus"))]
        let controller = match self.metrics_bind_address {
            Some(_) => {
                let (registry, provider) = self.metrics.get();
                controller.metrics(provider).metrics_registry(registry)
            }
            None => controller,
        };
        controller
    }
}

/// A controller program's `main`: logs to stderr (`RUST_LOG`, default `info`), installs the
/// SIGTERM/SIGINT handlers first (so a signal during startup is seen), runs `program` on a
/// Tokio runtime, and exits 0, or 1 printing `name: error: causes` on one line.
pub fn run_program<F, Fut, E>(name: &str, program: F) -> ExitCode
where
    F: FnOnce(Shutdown) -> Fut,
    Fut: Future<Output = Result<(), E>>,
    E: Into<Box<dyn Error + Send + Sync>>,
{
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(std::io::stderr)
        .init();
    let result: Result<(), Box<dyn Error + Send + Sync>> = match tokio::runtime::Runtime::new() {
        Err(e) => Err(e.into()),
        Ok(rt) => {
            let result = rt.block_on(async {
                let shutdown = super::program::shutdown_signal()
                    .map_err(|e| format!("installing signal handlers: {e}"))?;
                program(shutdown).await.map_err(Into::into)
            });
            // Informer and handler tasks still running are dropped.
            rt.shutdown_timeout(Duration::from_secs(1));
            result
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{name}: {}", describe_error(&*e));
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Args {
        #[command(flatten)]
        flags: ControllerFlags,
    }

    #[test]
    fn flags_have_upstream_defaults() {
        let args = Args::try_parse_from(["sample-controller"]).unwrap().flags;
        assert_eq!(args.workers, 2);
        let le = &args.leader_election;
        assert!(!le.leader_elect);
        assert!(le.election("me", "sample-controller").is_none());
        assert_eq!(args.resync_period, Duration::from_secs(30));
        assert!(Args::try_parse_from(["sample-controller", "--workers", "0"]).is_err());
        #[cfg(feature = "webhook")]
        {
            assert_eq!(args.metrics_bind_address, None, "off by default");
            assert_eq!(args.health_probe_bind_address, None, "off by default");
            let on = Args::try_parse_from([
                "c",
                "--metrics-bind-address",
                ":8080",
                "--health-probe-bind-address=127.0.0.1:8081",
            ])
            .unwrap()
            .flags;
            assert_eq!(
                on.metrics_bind_address,
                Some("0.0.0.0:8080".parse().unwrap())
            );
            assert_eq!(
                on.health_probe_bind_address,
                Some("127.0.0.1:8081".parse().unwrap())
            );
            let off = ["c", "--metrics-bind-address", "0"];
            assert_eq!(
                Args::try_parse_from(off)
                    .unwrap()
                    .flags
                    .metrics_bind_address,
                None
            );
            assert!(Args::try_parse_from(["c", "--health-probe-bind-address", "8081"]).is_err());
        }

        let args = Args::try_parse_from(["c", "--leader-elect"]).unwrap().flags;
        let election = args
            .leader_election
            .election("me", "sample-controller")
            .unwrap();
        assert_eq!(election.lock.name, "sample-controller");
        assert_eq!(election.lock.namespace, "default");
        assert_eq!(election.lock.identity, "me");
        assert_eq!(election.config.lease_duration, Duration::from_secs(15));
        assert_eq!(election.config.renew_deadline, Duration::from_secs(10));
        assert_eq!(election.config.retry_period, Duration::from_secs(2));
        assert!(election.warm_standby);

        let named = ["c", "--leader-elect", "--leader-elect-lease-name", "x"];
        let args = Args::try_parse_from(named).unwrap().flags;
        let election = args
            .leader_election
            .election("me", "sample-controller")
            .unwrap();
        assert_eq!(election.lock.name, "x");
        assert!(Args::try_parse_from(["c", "--leader-elect-lease-duration", "15"]).is_err());
    }
}
