//! Shared server state: registry + store behind one lock, faults, recorded requests.
//!
//! The bottom of the crate with `registry`, `store` and `faults`: it names nothing above it (the
//! initial namespaces are created by `ServerBuilder::start`; see `tests/layering.rs`).
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::watch;
use tokio::task::AbortHandle;

use crate::faults::{FaultState, RecordedRequest};
use crate::registry::{self, Registry};
use crate::store::Store;

pub(crate) struct Db {
    pub registry: Registry,
    pub store: Store,
    /// Creating in a namespace that does not exist is a 404, as with the real server.
    pub require_namespaces: bool,
    /// DELETE adds the `orphan` / `foregroundDeletion` finalizers only when a collector will
    /// remove them (as kube-apiserver with `--enable-garbage-collector=false` does not).
    pub gc_enabled: bool,
    /// How long a new CRD stays `Established=False` (zero: established by the create itself).
    pub crd_establish_delay: Duration,
    /// Request body and etcd size limits.
    pub limits: crate::limits::Limits,
}

/// What [`Shared::new`] sets up, from the builder.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// Where audit events go (`--audit-policy-file`, `--audit-log-path`).
    pub audit: Option<Arc<crate::audit::Auditor>>,
    pub history_limit: usize,
    pub builtins: bool,
    pub require_namespaces: bool,
    pub gc_enabled: bool,
    pub crd_establish_delay: Duration,
    /// How `clientConfig.service` webhooks are reached.
    pub resolver: crate::conversion_config::Resolver,
    pub limits: crate::limits::Limits,
    /// `shardSelector` is served (KEP-5866); otherwise ignored.
    pub shard_selectors: bool,
    /// Authentication and authorization (RBAC off: everything allowed).
    pub auth: crate::auth_config::AuthConfig,
    /// The feature gates on (`--feature-gates`).
    pub gates: crate::feature_gates::FeatureGates,
    /// The beta group versions served (`--runtime-config`).
    pub beta_versions: Vec<String>,
}

pub(crate) struct Shared {
    pub db: Mutex<Db>,
    pub faults: FaultState,
    pub requests: Mutex<Vec<RecordedRequest>>,
    /// Bumped to end every open watch.
    pub watch_epoch: watch::Sender<u64>,
    /// Open connections, aborted on restart/shutdown.
    pub conns: Mutex<Vec<AbortHandle>>,
    /// `host:port` the server listens on (for `/api` serverAddressByClientCIDRs).
    pub address: Mutex<String>,
    /// Wakes the controllers when kinds change without a store write (`register_kind`).
    pub kinds_changed: tokio::sync::Notify,
    /// How `clientConfig.service` conversion webhooks are reached (none: no service exists).
    pub resolver: crate::conversion_config::Resolver,
    /// `shardSelector` is served (KEP-5866); otherwise ignored like a 1.35 server does.
    pub shard_selectors: bool,
    /// Authentication and authorization (read by `auth`).
    pub auth: crate::auth_config::AuthConfig,
    /// The audit log, when on.
    pub audit: Option<Arc<crate::audit::Auditor>>,
}

impl Shared {
    pub fn new(settings: &Settings) -> Arc<Self> {
        let mut reg = Registry::default();
        reg.insert(registry::crd_resource());
        let store = Store::new(settings.history_limit);
        if settings.builtins {
            for r in registry::builtins() {
                reg.insert(r);
            }
            let gates = settings.gates;
            for r in registry::beta_builtins(
                |g| gates.is_on(g),
                |v| settings.beta_versions.iter().any(|b| b == v),
            ) {
                reg.insert(r);
            }
        }
        Arc::new(Shared {
            db: Mutex::new(Db {
                registry: reg,
                store,
                require_namespaces: settings.require_namespaces,
                gc_enabled: settings.gc_enabled,
                crd_establish_delay: settings.crd_establish_delay,
                limits: settings.limits,
            }),
            faults: {
                let f = FaultState::default();
                f.recording
                    .store(true, std::sync::atomic::Ordering::Relaxed);
                f
            },
            requests: Mutex::new(Vec::new()),
            watch_epoch: watch::channel(0).0,
            conns: Mutex::new(Vec::new()),
            address: Mutex::new(String::new()),
            kinds_changed: tokio::sync::Notify::new(),
            resolver: settings.resolver.clone(),
            shard_selectors: settings.shard_selectors,
            auth: settings.auth.clone(),
            audit: settings.audit.clone(),
        })
    }

    pub fn drop_watches(&self) {
        self.watch_epoch.send_modify(|e| *e += 1);
    }

    pub fn drop_connections(&self) {
        for h in self.conns.lock().drain(..) {
            h.abort();
        }
    }
}
