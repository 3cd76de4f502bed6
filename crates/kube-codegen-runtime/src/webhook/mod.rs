//! Serving webhooks kube-apiserver calls (feature `webhook`): today the conversion webhook
//! ([`Converter`]), designed so admission webhooks fit beside it.
//!
//! # Design
//!
//! A webhook is a [`ReviewHandler`]: it answers one review body (JSON, a `ConversionReview`
//! today, an `AdmissionReview` later) with the answer's JSON, or refuses a body that is not a
//! review of its kind ([`BadReview`] -> HTTP 400). Everything HTTP is shared and knows nothing
//! of the review types:
//!
//! - [`handle`] serves one handler at whatever path it is mounted on: `POST` only (405
//!   otherwise), `Content-Type: application/json` (415 otherwise), a bounded body (413), the
//!   handler's answer as `200 application/json`;
//! - [`Router`] maps exact paths to handlers (404 for others) and is a `tower::Service`, to
//!   mount in axum (`route_service`) or serve with hyper;
//! - [`WebhookServer`] serves a [`Router`] over HTTPS (rustls) with certificate files reloaded
//!   when they change, and shuts down gracefully.
//!
//! An admission webhook ([`admission`]) is one more `ReviewHandler` (a validating or mutating
//! handler decoding `AdmissionReview`) added with [`WebhookServerBuilder::admission`] at its
//! own path (`/validate-...`, `/mutate-...`) beside `/convert`, on the same server and
//! certificate. [`ReviewHandler::review`] returns a future so handlers may await.

use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::future::BoxFuture;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Body;

/// The error type a request body may have.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

pub use crate::conversion::BadReview;
use crate::conversion::Converter;

pub mod admission;
mod server;
mod tls;

pub use server::{ServerError, WebhookServer, WebhookServerBuilder};

/// The largest request body accepted by default: 64 MiB (kube-apiserver sends every object of
/// a list in one review; objects are at most ~1.5 MiB each in etcd).
pub const DEFAULT_MAX_BODY_BYTES: usize = 64 << 20;

/// One kind of webhook: answers a review body with the answer's body.
pub trait ReviewHandler: Send + Sync + 'static {
    /// Answers `body` (the request's JSON) with the response's JSON, or refuses a body that is
    /// not a review this handler answers (served as HTTP 400 with the message).
    fn review(&self, body: Bytes) -> BoxFuture<'_, Result<Vec<u8>, BadReview>>;
}

impl ReviewHandler for Converter {
    fn review(&self, body: Bytes) -> BoxFuture<'_, Result<Vec<u8>, BadReview>> {
        // Converting is CPU work with no await point: done on the connection's task, as
        // controller-runtime does on the request's goroutine.
        let answer = self.review_json(&body);
        Box::pin(std::future::ready(answer))
    }
}

impl<H: ReviewHandler + ?Sized> ReviewHandler for Arc<H> {
    fn review(&self, body: Bytes) -> BoxFuture<'_, Result<Vec<u8>, BadReview>> {
        (**self).review(body)
    }
}

/// Serves `request` with `handler` (whatever its path): see the [module documentation](self)
/// for the statuses. Never panics on a malformed request.
///
/// To mount the conversion webhook in axum: `Router::new().route("/convert",
/// post(move |req| async move { conversion::handle(&*converter, req).await }))`, or mount a
/// [`Router`] with `route_service`.
pub async fn handle<H, B>(handler: &H, request: Request<B>) -> Response<Full<Bytes>>
where
    H: ReviewHandler + ?Sized,
    B: Body,
    B::Error: Into<BoxError>,
{
    handle_limited(handler, request, DEFAULT_MAX_BODY_BYTES).await
}

async fn handle_limited<H, B>(
    handler: &H,
    request: Request<B>,
    max_body: usize,
) -> Response<Full<Bytes>>
where
    H: ReviewHandler + ?Sized,
    B: Body,
    B::Error: Into<BoxError>,
{
    if request.method() != Method::POST {
        let mut r = text(
            StatusCode::METHOD_NOT_ALLOWED,
            format!("method {} not allowed: POST a review", request.method()),
        );
        r.headers_mut()
            .insert(header::ALLOW, header::HeaderValue::from_static("POST"));
        return r;
    }
    if !is_json(request.headers().get(header::CONTENT_TYPE)) {
        let got = request
            .headers()
            .get(header::CONTENT_TYPE)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        return text(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!(
                "Content-Type {}: expected application/json",
                got.as_deref().unwrap_or("missing")
            ),
        );
    }
    let body = match Limited::new(request.into_body(), max_body).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) => {
            if e.is::<http_body_util::LengthLimitError>() {
                return text(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!("request body larger than {max_body} bytes"),
                );
            }
            return text(
                StatusCode::BAD_REQUEST,
                format!("cannot read the request body: {e}"),
            );
        }
    };
    match handler.review(body).await {
        Ok(answer) => Response::builder()
            .status(StatusCode::OK)
            .header(header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(answer)))
            .expect("a static status and header"),
        Err(BadReview(message)) => text(StatusCode::BAD_REQUEST, message),
    }
}

fn is_json(value: Option<&header::HeaderValue>) -> bool {
    let Some(Ok(v)) = value.map(|v| v.to_str()) else {
        return false;
    };
    let essence = v.split(';').next().unwrap_or("").trim();
    essence.eq_ignore_ascii_case("application/json")
}

fn text(status: StatusCode, message: String) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "text/plain; charset=utf-8")
        .body(Full::new(Bytes::from(message)))
        .expect("a static status and header")
}

/// Webhooks by exact path (the query is ignored), each served by [`handle`]; 404 for any other
/// path. Cheap to clone (shared); a `tower::Service` for any request body.
///
/// ```
/// # use kube_codegen_runtime::{conversion::Converter, webhook::Router};
/// let router = Router::new().route("/convert", Converter::new());
/// // axum: axum::Router::new().route_service("/convert", router.clone())
/// # let _ = router;
/// ```
#[derive(Clone)]
pub struct Router {
    inner: Arc<RouterInner>,
}

#[derive(Clone)]
struct RouterInner {
    routes: Vec<(String, Arc<dyn ReviewHandler>)>,
    max_body: usize,
}

impl fmt::Debug for Router {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Router")
            .field(
                "paths",
                &self
                    .inner
                    .routes
                    .iter()
                    .map(|(p, _)| p.as_str())
                    .collect::<Vec<_>>(),
            )
            .field("max_body", &self.inner.max_body)
            .finish()
    }
}

impl Default for Router {
    fn default() -> Self {
        Router::new()
    }
}

impl Router {
    /// A router with no routes and [`DEFAULT_MAX_BODY_BYTES`].
    pub fn new() -> Self {
        Router {
            inner: Arc::new(RouterInner {
                routes: Vec::new(),
                max_body: DEFAULT_MAX_BODY_BYTES,
            }),
        }
    }

    /// Serves `handler` at `path` (replacing a handler at the same path).
    pub fn route(self, path: impl Into<String>, handler: impl ReviewHandler) -> Self {
        self.route_arc(path, Arc::new(handler))
    }

    /// [`Router::route`] with a shared handler.
    pub fn route_arc(mut self, path: impl Into<String>, handler: Arc<dyn ReviewHandler>) -> Self {
        let path = path.into();
        let inner = Arc::make_mut(&mut self.inner);
        inner.routes.retain(|(p, _)| *p != path);
        inner.routes.push((path, handler));
        self
    }

    /// Serves an admission webhook at its own path
    /// ([`AdmissionWebhook::registration`](admission::AdmissionWebhook::registration)).
    pub fn admission(self, webhook: impl admission::AdmissionWebhook) -> Self {
        let path = webhook.registration().path;
        self.route(path, webhook)
    }

    /// Refuses bodies larger than `bytes` with 413.
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        Arc::make_mut(&mut self.inner).max_body = bytes;
        self
    }

    /// The paths served.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.inner.routes.iter().map(|(p, _)| p.as_str())
    }

    /// Serves `request` with the handler of its path (404 when none).
    pub async fn handle<B>(&self, request: Request<B>) -> Response<Full<Bytes>>
    where
        B: Body,
        B::Error: Into<BoxError>,
    {
        let path = request.uri().path();
        match self.inner.routes.iter().find(|(p, _)| p == path) {
            Some((_, handler)) => handle_limited(&**handler, request, self.inner.max_body).await,
            None => text(
                StatusCode::NOT_FOUND,
                format!("no webhook at {path} (serving: {})", self.describe_paths()),
            ),
        }
    }

    fn describe_paths(&self) -> String {
        self.paths().collect::<Vec<_>>().join(", ")
    }
}

impl<B> tower::Service<Request<B>> for Router
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    type Response = Response<Full<Bytes>>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let router = self.clone();
        Box::pin(async move { Ok(router.handle(request).await) })
    }
}
