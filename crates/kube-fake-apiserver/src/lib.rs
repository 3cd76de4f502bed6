//! An in-memory Kubernetes API server for tests: real HTTP protocol, real watch semantics, fault injection.
//!
//! The controllers tests depend on run in-process: a garbage collector, the namespace lifecycle,
//! CRD naming/establishing and a deployment status stand-in (see
//! [`ServerBuilder`]).
//!
//! ```no_run
//! # async fn demo() -> Result<(), kube_fake_apiserver::Error> {
//! let server = kube_fake_apiserver::FakeApiServer::start().await?;
//! let client = server.client();
//! // ... use `client` with kube::Api, then:
//! server.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! # Public API
//!
//! - [`FakeApiServer`]: a running server (start, clients, kubeconfig, CRDs and extra kinds,
//!   recorded requests, shutdown) and [`ServerBuilder`], its options (`FakeApiServer::builder()`).
//! - [`Faults`]: fault injection (dropped watches, failures, latency, compaction, restarts), and
//!   [`RecordedRequest`], one request the server received.
//! - [`KindSpec`]: a kind served without a CRD, like the built-ins.
//! - [`Error`]: why starting the server or registering a kind or CRD failed.
//! - [`structural`]: the structural-schema pruning, defaulting and validation the server applies
//!   to custom resources, for tools that check samples the same way.
//!
//! Everything else (routing, storage, OpenAPI, tables, selectors, server-side apply) is
//! implementation, reached through HTTP.
//!
//! # Features
//!
//! - `cli` (default): the `kube-fake-apiserver` binary and its dependencies (clap, anyhow). A test
//!   that only uses the library can depend on this crate with `default-features = false`.

// Every lock here is a sync (parking_lot) lock: none may be held across an `.await`.
#![warn(clippy::await_holding_lock)]
#![deny(missing_docs)]

mod admission;
mod audit;
mod auth;
mod auth_config;
mod builtin;
mod builtin_schemas;
mod controllers;
mod conversion;
mod conversion_config;
mod crd;
mod deletion;
mod dispatch;
mod events;
mod faults;
pub mod feature_gates;
mod field_labels;
mod handlers;
mod http;
mod kubeconfig;
mod limits;
mod namespaces;
mod objects;
mod openapi;
mod printers;
mod proto;
mod registry;
mod schema;
mod selector;
mod shard_selector;
mod ssa;
mod state;
mod status;
mod store;
mod strategic_merge;
mod table;
mod tls;
mod util;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::task::JoinHandle;

pub use faults::RecordedRequest;
pub use registry::KindSpec;

/// The server's protobuf transcoding of built-in kinds (the `k8s\0` envelope, as client-go
/// sends and reads it), for tests that build protobuf bodies or read protobuf answers.
pub mod protobuf {
    pub use crate::proto::{DecodeError, decode, encode, watch_frame};
}

/// Structural-schema handling exactly as the server applies it to custom resources: pruning,
/// defaulting and validation against a CRD version's `openAPIV3Schema`.
pub mod structural {
    pub use crate::schema::{Cause, apply_defaults, prune, validate};
}
use state::Shared;

/// Errors starting or controlling the server.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The port could not be bound on 127.0.0.1.
    #[error("binding 127.0.0.1:{port}: {source}")]
    Bind {
        /// The port asked for (0: any free port).
        port: u16,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The self-signed certificate could not be made.
    #[error("TLS setup: {0}")]
    Tls(String),
    /// The token file was malformed, or RBAC was asked for without the built-in kinds.
    #[error("authentication setup: {0}")]
    Auth(String),
    /// The audit policy was refused or the audit log could not be opened.
    #[error("audit setup: {0}")]
    Audit(String),
    /// A CRD given to `register_crd`, or a kind given to `register_kind`, was refused (the
    /// message is the `Status` message the API would answer).
    #[error("CRD rejected ({code}): {message}")]
    Rejected {
        /// The HTTP status code the API would answer (422 for an invalid CRD, 409 for a kind a
        /// CRD already defines).
        code: u16,
        /// The `Status` message.
        message: String,
    },
}

/// Options for [`FakeApiServer::builder`].
#[derive(Debug, Clone)]
pub struct ServerBuilder {
    tls: bool,
    history_limit: usize,
    builtins: bool,
    port: u16,
    require_namespaces: bool,
    garbage_collector: bool,
    crd_establish_delay: Duration,
    workloads: controllers::WorkloadDelays,
    resolver: conversion_config::Resolver,
    limits: limits::Limits,
    shard_selectors: bool,
    auth: auth_config::AuthConfig,
    token_file: Option<String>,
    gates: feature_gates::FeatureGates,
    beta_versions: Vec<String>,
    /// The audit policy's text and the log's path.
    audit: Option<(String, std::path::PathBuf)>,
}

impl Default for ServerBuilder {
    fn default() -> Self {
        ServerBuilder {
            tls: false,
            history_limit: 10_000,
            builtins: true,
            port: 0,
            require_namespaces: false,
            garbage_collector: true,
            crd_establish_delay: Duration::ZERO,
            workloads: Default::default(),
            resolver: conversion_config::Resolver::default(),
            limits: limits::Limits::default(),
            shard_selectors: false,
            auth: auth_config::AuthConfig::default(),
            token_file: None,
            gates: feature_gates::FeatureGates::default(),
            beta_versions: Vec::new(),
            audit: None,
        }
    }
}

impl ServerBuilder {
    /// Serve HTTPS with a generated self-signed certificate (the kubeconfig carries it as CA data).
    pub fn tls(mut self, on: bool) -> Self {
        self.tls = on;
        self
    }
    /// How many events the watch history keeps (older resourceVersions get 410).
    pub fn history_limit(mut self, n: usize) -> Self {
        self.history_limit = n;
        self
    }
    /// Register the built-in kinds (namespaces, configmaps, secrets, events, services, pods,
    /// serviceaccounts, deployments, events.k8s.io events, leases) and the namespaces a cluster
    /// starts with (`default`, `kube-system`, `kube-public`, `kube-node-lease`).
    pub fn builtins(mut self, on: bool) -> Self {
        self.builtins = on;
        self
    }
    /// Refuse (404 `namespaces "x" not found`) to create objects in namespaces that do not exist,
    /// as the real server does. Off by default so tests can use any namespace without creating it.
    pub fn require_namespaces(mut self, on: bool) -> Self {
        self.require_namespaces = on;
        self
    }
    /// Run the garbage collector (on by default): dependents whose owners (matched by uid) are
    /// gone are deleted, and DELETE with `propagationPolicy` `Orphan` or `Foreground` gets the
    /// `orphan` / `foregroundDeletion` finalizer semantics. Off: owners go at once and
    /// dependents stay, for tests that want to see orphans.
    pub fn garbage_collector(mut self, on: bool) -> Self {
        self.garbage_collector = on;
        self
    }
    /// How long a new CRD stays `Established=False` (reason `Installing`) before it is
    /// established and its resources are served. Zero (the default): at once.
    pub fn crd_establish_delay(mut self, delay: Duration) -> Self {
        self.crd_establish_delay = delay;
        self
    }
    /// The deployment controller stand-in always sets a Deployment's `status.observedGeneration`
    /// to its generation, at once. With `Some(delay)`, `delay` after each new generation
    /// `replicas`, `updatedReplicas`, `readyReplicas` and `availableReplicas` also equal
    /// `spec.replicas` (with an `Available` condition). `None` (the default): the replica
    /// counts are left to the clients.
    pub fn deployments_become_available(mut self, delay: Option<Duration>) -> Self {
        self.workloads.deployments = delay;
        self
    }
    /// With `Some(delay)`, `delay` after each new generation a StatefulSet's status reports
    /// `spec.replicas` ready, current, updated and available, with `currentRevision` =
    /// `updateRevision` and `observedGeneration`, as the StatefulSet controller writes once its
    /// pods run. `None` (the default): StatefulSet status is left to the clients.
    pub fn statefulsets_become_ready(mut self, delay: Option<Duration>) -> Self {
        self.workloads.statefulsets = delay;
        self
    }
    /// With `Some(delay)`, `delay` after each new generation a DaemonSet's status reports its
    /// pod scheduled, ready and available on the one node the server pretends to have
    /// (`desiredNumberScheduled: 1`, `numberReady: 1`, ...). `None` (the default): off.
    pub fn daemonsets_become_ready(mut self, delay: Option<Duration>) -> Self {
        self.workloads.daemonsets = delay;
        self
    }
    /// With `Some(delay)`, `delay` after each new generation a ReplicaSet's status reports
    /// `spec.replicas` fully labeled, ready and available. `None` (the default): off.
    pub fn replicasets_become_ready(mut self, delay: Option<Duration>) -> Self {
        self.workloads.replicasets = delay;
        self
    }
    /// With `Some(delay)`, a Job starts at once (`startTime`, `active`) and succeeds `delay`
    /// later: `succeeded` = `spec.completions`, `completionTime`, and the conditions
    /// `SuccessCriteriaMet` then `Complete` (reason `CompletionsReached`), as the 1.35 Job
    /// controller writes them. Suspended Jobs are left alone. `None` (the default): off.
    pub fn jobs_complete_after(mut self, delay: Option<Duration>) -> Self {
        self.workloads.jobs = delay;
        self
    }
    /// How conversion webhooks named by a CRD's `clientConfig.service` are reached: `resolve`
    /// gets the service's namespace, name and port (443 unless the CRD sets one) and returns the
    /// address to connect to, or `None` when the service does not exist (the conversion then
    /// fails as on a real server: `service "NAME" not found`). The webhook's certificate is
    /// verified against the CRD's `caBundle` for the name `NAME.NAMESPACE.svc`, as kube-apiserver
    /// does. Without a resolver every service is missing. Webhooks given by `clientConfig.url`
    /// are called at that URL.
    ///
    /// ```no_run
    /// # async fn demo(webhook: std::net::SocketAddr) -> Result<(), kube_fake_apiserver::Error> {
    /// let server = kube_fake_apiserver::FakeApiServer::builder()
    ///     .resolve_service(move |namespace, name, _port| {
    ///         (namespace == "operators" && name == "conversion").then_some(webhook)
    ///     })
    ///     .start()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn resolve_service<F>(mut self, resolve: F) -> Self
    where
        F: Fn(&str, &str, u16) -> Option<SocketAddr> + Send + Sync + 'static,
    {
        self.resolver = conversion_config::Resolver(Some(Arc::new(resolve)));
        self
    }
    /// The longest request body a create, update, patch or delete may have (kube-apiserver's
    /// `--max-resource-write-bytes`, 3 MiB by default; 0: no limit). A longer one is a 413
    /// `RequestEntityTooLarge` (`Request entity too large: limit is 3145728`).
    pub fn max_request_body_bytes(mut self, n: usize) -> Self {
        self.limits.max_request_body_bytes = n;
        self
    }
    /// etcd's `--max-request-bytes` (1.5 MiB by default): an object whose write makes a larger
    /// raft entry is refused as etcd refuses it, a 500 `etcdserver: request is too large`.
    /// Whatever this says, a write whose etcd transaction is over 2 MiB is refused as
    /// kube-apiserver's etcd client refuses to send it (a 500 `rpc error: code =
    /// ResourceExhausted desc = trying to send message larger than max (N vs. 2097152)`).
    pub fn etcd_max_request_bytes(mut self, n: usize) -> Self {
        self.limits.etcd_max_request_bytes = n;
        self
    }
    /// kube-apiserver's `--feature-gates` (see [`feature_gates::FeatureGates`]):
    /// `ShardedListAndWatch` turns on [`ServerBuilder::shard_selectors`];
    /// `MutatingAdmissionPolicy` the MutatingAdmissionPolicy admission plugin and, with
    /// [`runtime_config`](Self::runtime_config) serving `admissionregistration.k8s.io/v1beta1`,
    /// its two kinds.
    pub fn feature_gates(mut self, gates: feature_gates::FeatureGates) -> Self {
        self.gates = gates;
        self.shard_selectors(gates.sharded_list_and_watch)
    }
    /// kube-apiserver's `--runtime-config`: the beta group versions to serve (see
    /// [`feature_gates::parse_runtime_config`]; 1.35 serves none by default).
    pub fn runtime_config(mut self, beta_versions: Vec<String>) -> Self {
        self.beta_versions = beta_versions;
        self
    }
    /// Serves `shardSelector` on lists and watches as Kubernetes 1.36 with the
    /// `ShardedListAndWatch` feature gate does (KEP-5866): objects outside the selector's hash
    /// ranges are left out, a list and a watch-list's initial-events-end bookmark echo the
    /// selector in `metadata.shardInfo.selector`, a malformed selector is a 400, and OpenAPI v3
    /// lists the parameter. Off by default: the parameter is ignored as a 1.35 server ignores it.
    pub fn shard_selectors(mut self, on: bool) -> Self {
        self.shard_selectors = on;
        self
    }
    /// kube-apiserver's `--authorization-mode=RBAC`: every request is authenticated (a client
    /// certificate signed by the server's CA, a bearer token from
    /// [`token_auth_file`](Self::token_auth_file) or the TokenRequest API, else anonymous) and
    /// authorized by RBAC over the Roles, ClusterRoles and bindings in the store, which start
    /// with kube-apiserver's default cluster roles (`cluster-admin`, `admin`, `edit`, `view`,
    /// `system:discovery`, ...). Refused requests get kube-apiserver's 401 and 403. The
    /// kubeconfig and [`client`](FakeApiServer::client) stay an admin (`system:masters`). Off
    /// by default: every request is allowed.
    pub fn rbac(mut self, on: bool) -> Self {
        self.auth.rbac = on;
        self
    }
    /// kube-apiserver's `--anonymous-auth` (on by default): with RBAC, a request without
    /// credentials runs as `system:anonymous` (group `system:unauthenticated`); off, it is a 401.
    pub fn anonymous_auth(mut self, on: bool) -> Self {
        self.auth.anonymous = on;
        self
    }
    /// The rows of kube-apiserver's `--token-auth-file` (CSV: `token,user,uid[,"g1,g2"]`):
    /// bearer tokens and the users they authenticate as (with `system:authenticated`). A
    /// malformed file is an [`Error::Auth`] at [`start`](Self::start).
    pub fn token_auth_file(mut self, csv: &str) -> Self {
        self.token_file = Some(csv.to_string());
        self
    }
    /// kube-apiserver's `--audit-policy-file` (the policy's YAML or JSON text) and
    /// `--audit-log-path` (`-`: standard output): every request the policy gives a level is
    /// appended to the log as `audit.k8s.io/v1` `Event` JSON lines, with the annotations
    /// authorization and admission add (ValidatingAdmissionPolicies' `auditAnnotations` and
    /// `Audit` action, webhooks' `auditAnnotations`). A policy kube-apiserver would refuse, or
    /// a log that cannot be opened, is an [`Error::Audit`] at [`start`](Self::start). Off by
    /// default.
    pub fn audit(mut self, policy: &str, log_path: impl Into<std::path::PathBuf>) -> Self {
        self.audit = Some((policy.to_string(), log_path.into()));
        self
    }
    /// Port on 127.0.0.1 (0: any free port).
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// Binds the port and starts serving.
    pub async fn start(mut self) -> Result<FakeApiServer, Error> {
        if let Some(csv) = &self.token_file {
            let rows = auth_config::parse_token_file(csv).map_err(Error::Auth)?;
            let mut tokens = (*self.auth.tokens).clone();
            tokens.extend(rows);
            self.auth.tokens = Arc::new(tokens);
        }
        let audit = match &self.audit {
            Some((policy, path)) => Some(Arc::new(
                audit::Auditor::open(policy, path).map_err(Error::Audit)?,
            )),
            None => None,
        };
        let shared = Shared::new(&state::Settings {
            audit,
            history_limit: self.history_limit,
            builtins: self.builtins,
            require_namespaces: self.require_namespaces,
            gc_enabled: self.garbage_collector,
            crd_establish_delay: self.crd_establish_delay,
            resolver: self.resolver.clone(),
            limits: self.limits,
            shard_selectors: self.shard_selectors,
            auth: self.auth.clone(),
            gates: self.gates,
            beta_versions: self.beta_versions.clone(),
        });
        if self.builtins {
            // The namespaces a cluster starts with, before anything can watch.
            namespaces::create_initial(&mut shared.db.lock().store);
        }
        if self.auth.rbac {
            // The default roles and bindings, before the first request (as the post-start
            // hook does before kube-apiserver reports ready).
            auth::bootstrap::create(&mut shared.db.lock()).map_err(Error::Auth)?;
        }
        let listener = TcpListener::bind(("127.0.0.1", self.port))
            .await
            .map_err(|source| Error::Bind {
                port: self.port,
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| Error::Bind {
            port: self.port,
            source,
        })?;
        *shared.address.lock() = addr.to_string();
        let tls = if self.tls {
            Some(tls::generate().map_err(Error::Tls)?)
        } else {
            None
        };
        let accept = http::serve::spawn_accept(
            shared.clone(),
            listener,
            tls.as_ref().map(|t| t.acceptor.clone()),
        );
        let controllers = controllers::spawn(
            shared.clone(),
            controllers::ControllerSettings {
                gc: self.garbage_collector,
                crd_establish_delay: self.crd_establish_delay,
                workloads: self.workloads,
            },
        );
        Ok(FakeApiServer {
            shared,
            addr,
            accept: Some(accept),
            controllers: Some(controllers),
            ca_pem: tls.as_ref().map(|t| t.cert_pem.clone()),
            issuer: tls.as_ref().map(|t| t.issuer.clone()),
            ca_der: tls.map(|t| t.cert_der),
        })
    }
}

/// A running in-memory API server on 127.0.0.1. Dropping it stops accepting connections.
pub struct FakeApiServer {
    shared: Arc<Shared>,
    addr: SocketAddr,
    accept: Option<JoinHandle<()>>,
    /// The controllers' task (garbage collector, namespaces, CRDs, deployments).
    controllers: Option<JoinHandle<()>>,
    ca_pem: Option<String>,
    ca_der: Option<Vec<u8>>,
    /// The CA's key, to sign client certificates (TLS only).
    issuer: Option<Arc<rcgen::Issuer<'static, rcgen::KeyPair>>>,
}

impl std::fmt::Debug for FakeApiServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeApiServer")
            .field("url", &self.url())
            .finish_non_exhaustive()
    }
}

impl FakeApiServer {
    /// Starts a server on 127.0.0.1 with a free port and the built-in kinds registered.
    pub async fn start() -> Result<FakeApiServer, Error> {
        Self::builder().start().await
    }

    /// Options for a server: TLS, history size, built-in kinds, namespaces, port.
    pub fn builder() -> ServerBuilder {
        ServerBuilder::default()
    }

    /// The address it listens on (127.0.0.1).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT` (or `https://` with TLS).
    pub fn url(&self) -> String {
        let scheme = if self.ca_pem.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{}", self.addr)
    }

    /// A `kube::Config` for this server (default namespace `default`). Note kube's default retry
    /// policy (`default_retry`) retries 429/503/504 on its own; turn it off to observe injected faults.
    pub fn client_config(&self) -> kube::Config {
        let uri = self.url().parse().unwrap_or_default();
        let mut config = kube::Config::new(uri);
        if let Some(der) = &self.ca_der {
            config.root_cert = Some(vec![der.clone()]);
        }
        if self.shared.auth.rbac {
            // An admin, as the kubeconfig's user.
            config.auth_info.token = Some(auth_config::ADMIN_TOKEN.to_string().into());
        }
        config
    }

    /// A client certificate signed by the server's CA (TLS only) for `user` (its CN) in
    /// `group` (its O): PEM certificate and PEM key. With RBAC on, a request presenting it
    /// authenticates as that user and group (plus `system:authenticated`), as with
    /// kube-apiserver's `--client-ca-file`.
    pub fn client_certificate(
        &self,
        user: &str,
        group: Option<&str>,
    ) -> Result<(String, String), Error> {
        let issuer = self
            .issuer
            .as_ref()
            .ok_or_else(|| Error::Tls("the server does not serve TLS".into()))?;
        tls::client_certificate(issuer, user, group).map_err(Error::Tls)
    }

    /// A `kube::Config` for this server that authenticates with the bearer token `token` (a
    /// token-file row's, or a ServiceAccount token from the TokenRequest API).
    pub fn client_config_with_token(&self, token: &str) -> kube::Config {
        let mut config = self.client_config();
        config.auth_info.token = Some(token.to_string().into());
        config
    }

    /// A `kube::Client` talking HTTP to this server.
    ///
    /// # Panics
    /// Only if the kube client cannot be built from a valid local config (never expected).
    pub fn client(&self) -> kube::Client {
        kube::Client::try_from(self.client_config())
            .expect("a kube client for a local URL always builds")
    }

    /// A `kube::Client` that calls the server in-process (a tower `Service`, no socket).
    pub fn in_process_client(&self) -> kube::Client {
        let shared = self.shared.clone();
        let svc = tower::service_fn(move |mut req: ::http::Request<kube::client::Body>| {
            let shared = shared.clone();
            // The in-process client is an admin too.
            if shared.auth.rbac && !req.headers().contains_key(::http::header::AUTHORIZATION) {
                let bearer = format!("Bearer {}", auth_config::ADMIN_TOKEN);
                if let Ok(v) = bearer.parse() {
                    req.headers_mut().insert(::http::header::AUTHORIZATION, v);
                }
            }
            async move { Ok::<_, Infallible>(dispatch::handle_any(shared, req).await) }
        });
        kube::Client::new(svc, "default")
    }

    /// A kubeconfig pointing at this server.
    pub fn kubeconfig_yaml(&self) -> String {
        kubeconfig::render(&self.url(), self.ca_pem.as_deref())
    }

    /// Writes [`kubeconfig_yaml`](Self::kubeconfig_yaml) to `path`.
    pub fn write_kubeconfig(&self, path: &std::path::Path) -> std::io::Result<()> {
        std::fs::write(path, self.kubeconfig_yaml())
    }

    /// Fault-injection controls.
    pub fn faults(&self) -> Faults {
        Faults {
            shared: self.shared.clone(),
        }
    }

    /// Every request received so far (verb, path, query, body).
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.faults().requests()
    }

    /// Serves another built-in-style kind (stored generically, no schema), e.g. `batch/v1 jobs`.
    /// Replaces a kind registered under the same group and plural; CRD-defined kinds are refused.
    pub fn register_kind(&self, spec: KindSpec) -> Result<(), Error> {
        let mut db = self.shared.db.lock();
        if db
            .registry
            .get(&spec.group, &spec.plural)
            .is_some_and(|r| r.custom)
        {
            return Err(Error::Rejected {
                code: 409,
                message: format!("{}.{} is defined by a CRD", spec.plural, spec.group),
            });
        }
        db.registry.insert(spec.into_resource());
        drop(db);
        // The collector looks again at references to the kind.
        self.shared.kinds_changed.notify_one();
        Ok(())
    }

    /// Creates (or replaces) a `apiextensions.k8s.io/v1` CustomResourceDefinition and serves its resources.
    pub fn register_crd(&self, crd_json: serde_json::Value) -> Result<(), Error> {
        let mut db = self.shared.db.lock();
        let res = db
            .registry
            .lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
            .ok_or_else(|| Error::Rejected {
                code: 404,
                message: "CRDs are not served".into(),
            })?;
        let name = util::meta_str(&crd_json, "name").to_string();
        let opts = objects::WriteOpts {
            dry_run: false,
            manager: "kube-fake-apiserver".into(),
            ..Default::default()
        };
        let write = objects::Write {
            res: &res,
            version: "v1",
            ns: None,
            opts: &opts,
            operation: ssa::Operation::Update,
        };
        let exists = db.store.get(&objects::key_of(&res, None, &name)).is_some();
        let result = if exists {
            let mut body = crd_json.clone();
            if let Some(m) = body.get_mut("metadata").and_then(|m| m.as_object_mut()) {
                m.remove("resourceVersion");
            }
            write.update(&mut db, &name, body, objects::Mode::Main, &crd_json)
        } else {
            write.create(&mut db, crd_json)
        };
        result.map(|_| ()).map_err(|e| Error::Rejected {
            code: e.code,
            message: e.message,
        })
    }

    /// Stops the server: no new connections, open connections and watches are dropped.
    pub async fn shutdown(mut self) {
        self.stop();
        tokio::task::yield_now().await;
    }

    fn stop(&mut self) {
        if let Some(a) = self.accept.take() {
            a.abort();
        }
        if let Some(c) = self.controllers.take() {
            c.abort();
        }
        self.shared.drop_watches();
        self.shared.drop_connections();
    }
}

impl Drop for FakeApiServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Handle on the fault-injection controls of a running server. Cheap to clone.
#[derive(Clone)]
pub struct Faults {
    pub(crate) shared: Arc<Shared>,
}

impl std::fmt::Debug for Faults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Faults").finish_non_exhaustive()
    }
}

impl Faults {
    /// Ends every open watch now (the stream ends cleanly, as when the server closes it).
    pub fn drop_watches(&self) {
        self.shared.drop_watches();
    }

    /// Ends every watch after it has sent `n` events (bookmarks included); `None` turns this off.
    pub fn end_watches_after(&self, n: Option<usize>) {
        self.shared.faults.set_end_after(n.unwrap_or(0));
    }

    /// Forgets the event history: the next watch (or list) from an older resourceVersion gets 410 Expired.
    pub fn compact(&self) {
        self.shared.db.lock().store.compact();
    }

    /// The next `n` lists that could expire answer 410 `Expired` as if their snapshot had been
    /// compacted: a list with a `continue` token gets the "continue parameter is too old" Status
    /// carrying the inconsistent-continue token in `metadata.continue`, a list at an exact
    /// resourceVersion (`resourceVersionMatch=Exact`, or a `limit` with a resourceVersion) gets
    /// "The resourceVersion for the provided list is too old.". Other lists are served and do not
    /// count. Lets a test drive a client's fallback (relist from scratch, or continue
    /// inconsistently) without compacting the history.
    pub fn expire_lists(&self, n: usize) {
        self.shared.faults.set_expire_lists(n);
    }

    /// The next `count` requests fail with `code` (500, 429 with `Retry-After`, 503, ...).
    pub fn fail_next(&self, count: usize, code: u16) {
        self.shared.faults.push_failure(count, code, None);
    }

    /// The next `count` requests whose path starts with `path_prefix` fail with `code`.
    pub fn fail_next_matching(&self, count: usize, code: u16, path_prefix: &str) {
        self.shared
            .faults
            .push_failure(count, code, Some(path_prefix.into()));
    }

    /// Cancels pending injected failures.
    pub fn clear_failures(&self) {
        self.shared.faults.clear_failures();
    }

    /// Delay added before every request is handled (`Duration::ZERO` to turn off).
    pub fn set_latency(&self, latency: Duration) {
        self.shared.faults.set_latency(latency);
    }

    /// Simulates an API server restart: data is kept, every connection and watch is dropped, and with
    /// `lose_history` the event history is gone (watches from older resourceVersions get 410).
    pub fn restart(&self, lose_history: bool) {
        if lose_history {
            self.compact();
        }
        self.shared.drop_watches();
        self.shared.drop_connections();
    }

    /// Takes the server down as a stopped kube-apiserver is (a control-plane upgrade restarts it):
    /// every watch and connection is dropped and new connections are closed at once, until
    /// [`bring_up`](Self::bring_up). Data and history are kept.
    pub fn take_down(&self) {
        self.shared.faults.set_down(true);
        self.shared.drop_watches();
        self.shared.drop_connections();
    }

    /// Ends a [`take_down`](Self::take_down): connections are served again.
    pub fn bring_up(&self) {
        self.shared.faults.set_down(false);
    }

    /// Requests recorded so far (recording is on by default).
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.requests.lock().clone()
    }

    /// Forgets the requests recorded so far (recording goes on).
    pub fn clear_requests(&self) {
        self.shared.requests.lock().clear();
    }

    /// Turns request recording on or off.
    pub fn set_recording(&self, on: bool) {
        self.shared
            .faults
            .recording
            .store(on, std::sync::atomic::Ordering::Relaxed);
    }
}
