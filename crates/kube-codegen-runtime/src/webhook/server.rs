//! [`WebhookServer`]: a [`Router`] served over HTTPS.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::admission::{AdmissionWebhook, Registration};
use super::tls::ReloadingTls;
use super::{ReviewHandler, Router};
use crate::conversion::Converter;

/// Why a [`WebhookServer`] could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// No certificate and key files were given.
    #[error("the webhook server needs TLS certificate and key files (tls_files)")]
    NoTls,
    /// The certificate or key could not be read or do not make a TLS configuration.
    #[error("webhook TLS: {0}")]
    Tls(String),
    /// The listen address could not be bound.
    #[error("binding {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The cause.
        source: std::io::Error,
    },
}

/// Builds a [`WebhookServer`]; see [`WebhookServer::builder`].
#[must_use]
pub struct WebhookServerBuilder {
    listen: SocketAddr,
    cert: Option<PathBuf>,
    key: Option<PathBuf>,
    conversion: Option<Arc<Converter>>,
    path: String,
    routes: Vec<(String, Arc<dyn ReviewHandler>)>,
    registrations: Vec<Registration>,
    max_body: usize,
    handshake_timeout: Duration,
    shutdown_timeout: Duration,
}

impl std::fmt::Debug for WebhookServerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookServerBuilder")
            .field("listen", &self.listen)
            .field("cert", &self.cert)
            .field("key", &self.key)
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl WebhookServerBuilder {
    /// The address to listen on (default `0.0.0.0:9443`, controller-runtime's webhook port;
    /// port 0 picks a free one, see [`WebhookServer::local_addr`]).
    pub fn listen(mut self, addr: SocketAddr) -> Self {
        self.listen = addr;
        self
    }

    /// The PEM files of the serving certificate (chain, leaf first) and its private key
    /// (PKCS#8, PKCS#1 or SEC1). Both are checked on every new connection and loaded again when
    /// either changed (mtime, size or inode); a pair that fails to load keeps the previous one
    /// and logs a warning, so rotating the files one after the other is safe.
    pub fn tls_files(mut self, cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> Self {
        self.cert = Some(cert.into());
        self.key = Some(key.into());
        self
    }

    /// The conversion webhook's path (default `/convert`).
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// Serves another webhook at `path` on the same server (an admission webhook: [`WebhookServerBuilder::admission`]).
    pub fn route(mut self, path: impl Into<String>, handler: impl ReviewHandler) -> Self {
        self.routes.push((path.into(), Arc::new(handler)));
        self
    }

    /// Serves an admission webhook ([`admission::defaulting`](super::admission::defaulting),
    /// [`admission::validating`](super::admission::validating)) at its path, and records it for
    /// [`WebhookServer::registrations`].
    pub fn admission(mut self, webhook: impl AdmissionWebhook) -> Self {
        let registration = webhook.registration();
        self.registrations.retain(|r| r.path != registration.path);
        self.routes
            .push((registration.path.clone(), Arc::new(webhook)));
        self.registrations.push(registration);
        self
    }

    /// The admission webhooks added so far (for their configurations, before binding).
    pub fn registrations(&self) -> &[Registration] {
        &self.registrations
    }

    /// Refuses request bodies larger than `bytes` with 413 (default
    /// [`DEFAULT_MAX_BODY_BYTES`](super::DEFAULT_MAX_BODY_BYTES)).
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body = bytes;
        self
    }

    /// How long a client may take for the TLS handshake (default 10 s).
    pub fn handshake_timeout(mut self, timeout: Duration) -> Self {
        self.handshake_timeout = timeout;
        self
    }

    /// How long [`WebhookServer::serve`] waits, once shutdown is asked, for requests in flight
    /// before closing their connections (default 30 s).
    pub fn shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.shutdown_timeout = timeout;
        self
    }

    /// Loads the certificate and binds the address.
    pub async fn bind(self) -> Result<WebhookServer, ServerError> {
        let (Some(cert), Some(key)) = (self.cert, self.key) else {
            return Err(ServerError::NoTls);
        };
        let tls = ReloadingTls::new(cert, key).map_err(ServerError::Tls)?;
        let listener =
            TcpListener::bind(self.listen)
                .await
                .map_err(|source| ServerError::Bind {
                    addr: self.listen,
                    source,
                })?;
        let local_addr = listener.local_addr().map_err(|source| ServerError::Bind {
            addr: self.listen,
            source,
        })?;
        let mut router = Router::new().max_body_bytes(self.max_body);
        if let Some(converter) = self.conversion {
            router = router.route_arc(self.path, converter);
        }
        for (path, handler) in self.routes {
            router = router.route_arc(path, handler);
        }
        Ok(WebhookServer {
            listener,
            local_addr,
            tls: Arc::new(tls),
            router,
            registrations: self.registrations,
            handshake_timeout: self.handshake_timeout,
            shutdown_timeout: self.shutdown_timeout,
        })
    }
}

/// A standalone HTTPS server for webhooks: the conversion webhook at `/convert` (and any
/// [`route`](WebhookServerBuilder::route) added beside it), HTTP/1.1 with keep-alive over
/// rustls.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use kube_codegen_runtime::conversion::{Converter, WebhookServer};
/// let converter = Converter::new(); // .with(generated conversions)
/// let server = WebhookServer::builder(converter)
///     .listen("0.0.0.0:9443".parse()?)
///     .tls_files("/tls/tls.crt", "/tls/tls.key")
///     .bind()
///     .await?;
/// server.serve(async { tokio::signal::ctrl_c().await.ok(); }).await;
/// # Ok(()) }
/// ```
pub struct WebhookServer {
    listener: TcpListener,
    local_addr: SocketAddr,
    tls: Arc<ReloadingTls>,
    router: Router,
    registrations: Vec<Registration>,
    handshake_timeout: Duration,
    shutdown_timeout: Duration,
}

impl std::fmt::Debug for WebhookServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookServer")
            .field("local_addr", &self.local_addr)
            .field("router", &self.router)
            .finish_non_exhaustive()
    }
}

impl WebhookServer {
    /// A builder serving `converter` at `/convert`.
    pub fn builder(converter: impl Into<Arc<Converter>>) -> WebhookServerBuilder {
        WebhookServerBuilder {
            conversion: Some(converter.into()),
            ..WebhookServer::builder_without_conversion()
        }
    }

    /// A builder with no conversion webhook (only [`route`](WebhookServerBuilder::route)s).
    pub fn builder_without_conversion() -> WebhookServerBuilder {
        WebhookServerBuilder {
            listen: SocketAddr::from(([0, 0, 0, 0], 9443)),
            cert: None,
            key: None,
            conversion: None,
            path: "/convert".to_owned(),
            routes: Vec::new(),
            registrations: Vec::new(),
            max_body: super::DEFAULT_MAX_BODY_BYTES,
            handshake_timeout: Duration::from_secs(10),
            shutdown_timeout: Duration::from_secs(30),
        }
    }

    /// The address bound.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The routes served.
    pub fn router(&self) -> &Router {
        &self.router
    }

    /// The admission webhooks served, for
    /// [`admission::configurations`](super::admission::configurations).
    pub fn registrations(&self) -> &[Registration] {
        &self.registrations
    }

    /// Serves until `shutdown` completes; then stops accepting, lets requests in flight finish
    /// (closing idle keep-alive connections) for up to the shutdown timeout, and returns.
    pub async fn serve(self, shutdown: impl Future<Output = ()>) {
        let (stop_tx, stop_rx) = watch::channel(false);
        let mut connections = JoinSet::new();
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                () = &mut shutdown => break,
                accepted = self.listener.accept() => {
                    let (stream, peer) = match accepted {
                        Ok(a) => a,
                        Err(error) => {
                            // e.g. out of file descriptors: back off instead of spinning.
                            tracing::warn!(%error, "webhook: accept failed");
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            continue;
                        }
                    };
                    let _ = stream.set_nodelay(true);
                    let acceptor = self.tls.acceptor();
                    let router = self.router.clone();
                    let timeout = self.handshake_timeout;
                    let mut stop = stop_rx.clone();
                    connections.spawn(async move {
                        let stream = match tokio::time::timeout(timeout, acceptor.accept(stream)).await {
                            Ok(Ok(s)) => s,
                            Ok(Err(error)) => {
                                tracing::debug!(%peer, %error, "webhook: TLS handshake failed");
                                return;
                            }
                            Err(_) => {
                                tracing::debug!(%peer, "webhook: TLS handshake timed out");
                                return;
                            }
                        };
                        let service = service_fn(move |request: http::Request<Incoming>| {
                            let router = router.clone();
                            async move { Ok::<_, std::convert::Infallible>(router.handle(request).await) }
                        });
                        let conn = http1::Builder::new()
                            // A timer turns on hyper's header read timeout (30 s).
                            .timer(TokioTimer::new())
                            .serve_connection(TokioIo::new(stream), service);
                        tokio::pin!(conn);
                        tokio::select! {
                            result = conn.as_mut() => {
                                if let Err(error) = result {
                                    tracing::debug!(%peer, %error, "webhook: connection ended");
                                }
                                return;
                            }
                            _ = stop.wait_for(|stop| *stop) => {}
                        }
                        conn.as_mut().graceful_shutdown();
                        let _ = conn.await;
                    });
                    // Reap finished connections so the set stays as large as the live ones.
                    while connections.try_join_next().is_some() {}
                }
            }
        }
        drop(self.listener);
        let _ = stop_tx.send(true);
        let drained = tokio::time::timeout(self.shutdown_timeout, async {
            while connections.join_next().await.is_some() {}
        })
        .await;
        if drained.is_err() {
            tracing::warn!(
                open = connections.len(),
                "webhook: closing connections still busy after the shutdown timeout"
            );
            connections.shutdown().await;
        }
    }
}
