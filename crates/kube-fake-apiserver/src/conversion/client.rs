//! The HTTPS `POST` of a `ConversionReview` to a webhook, as kube-apiserver's webhook client
//! makes it: `?timeout=30s` on the URL and a 30 s bound, the CRD's `caBundle` (or the system
//! roots) to verify the certificate, `clientConfig.service` resolved through the server's
//! resolver and verified as `<name>.<namespace>.svc`. Errors are the text Go's client prints
//! (`Post "<url>": <cause>`), which the converter puts after `failed: `.
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::Value;
use tokio::net::TcpStream;

use crate::conversion_config::{Target, Webhook};
use crate::state::Shared;

/// The webhook call's bound (and its `?timeout=`), as kube-apiserver's.
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// Where to connect and what to call it.
struct Endpoint {
    /// The URL as Go prints it in errors, with `?timeout=30s`.
    url: String,
    /// The name the certificate must be valid for (and the `Host` header's host).
    host: String,
    port: u16,
    /// Path and query of the request line.
    path_and_query: String,
    /// Set when the service resolver picked the address.
    addr: Option<SocketAddr>,
}

fn with_timeout(path_and_query: &str, timeout: Duration) -> String {
    let sep = if path_and_query.contains('?') {
        '&'
    } else {
        '?'
    };
    format!("{path_and_query}{sep}timeout={}s", timeout.as_secs())
}

fn endpoint(shared: &Shared, hook: &Webhook, timeout: Duration) -> Result<Endpoint, String> {
    match &hook.target {
        Target::Url(url) => {
            let uri: http::Uri = url
                .parse()
                .map_err(|e| format!("parse {url:?}: invalid URL: {e}"))?;
            let host = uri
                .host()
                .unwrap_or("")
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_string();
            let pq = uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
            let pq = with_timeout(if pq.is_empty() { "/" } else { pq }, timeout);
            let authority = uri.authority().map(|a| a.as_str()).unwrap_or("");
            let scheme = uri.scheme_str().unwrap_or("");
            let shown = format!("{scheme}://{authority}{pq}");
            if scheme != "https" {
                return Err(format!(
                    "Post {shown:?}: unsupported protocol scheme {scheme:?}"
                ));
            }
            Ok(Endpoint {
                url: shown,
                host,
                port: uri.port_u16().unwrap_or(443),
                path_and_query: pq,
                addr: None,
            })
        }
        Target::Service {
            namespace,
            name,
            path,
            port,
        } => {
            let host = format!("{name}.{namespace}.svc");
            let pq = with_timeout(if path.is_empty() { "/" } else { path }, timeout);
            let url = format!("https://{host}:{port}{pq}");
            let addr = shared
                .resolver
                .0
                .as_ref()
                .and_then(|f| f(namespace, name, *port));
            let Some(addr) = addr else {
                return Err(format!("Post {url:?}: service {name:?} not found"));
            };
            Ok(Endpoint {
                url,
                host,
                port: *port,
                path_and_query: pq,
                addr: Some(addr),
            })
        }
    }
}

fn tls_config(hook: &Webhook) -> Result<rustls::ClientConfig, String> {
    let mut roots = rustls::RootCertStore::empty();
    match &hook.ca_bundle {
        Some(pem) => {
            for cert in CertificateDer::pem_slice_iter(pem).flatten() {
                let _ = roots.add(cert);
            }
            if roots.is_empty() {
                return Err(
                    "unable to load root certificates: unable to parse bytes as PEM block".into(),
                );
            }
        }
        None => {
            let native = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(native.certs);
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// A TLS failure as Go's `crypto/tls` and `crypto/x509` print it.
fn tls_error(e: &std::io::Error, host: &str) -> String {
    use rustls::CertificateError as C;
    let Some(r) = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) else {
        return match e.kind() {
            std::io::ErrorKind::UnexpectedEof => "EOF".into(),
            _ => e.to_string(),
        };
    };
    let verify = |why: &str| format!("tls: failed to verify certificate: x509: {why}");
    match r {
        rustls::Error::InvalidCertificate(C::UnknownIssuer | C::BadSignature) => {
            verify("certificate signed by unknown authority")
        }
        rustls::Error::InvalidCertificate(
            C::NotValidForName | C::NotValidForNameContext { .. },
        ) => verify(&format!("certificate is not valid for {host}")),
        rustls::Error::InvalidCertificate(
            C::Expired | C::ExpiredContext { .. } | C::NotValidYet | C::NotValidYetContext { .. },
        ) => verify("certificate has expired or is not yet valid"),
        other => format!("tls: {other}"),
    }
}

/// `errors.NewGenericServerResponse`: what Go's REST client reports for a non-2xx answer that is
/// not a `Status`.
fn generic_response_error(code: u16, body: &[u8]) -> String {
    if let Ok(v) = serde_json::from_slice::<Value>(body)
        && v.get("kind").and_then(Value::as_str) == Some("Status")
        && let Some(m) = v
            .get("message")
            .and_then(Value::as_str)
            .filter(|m| !m.is_empty())
    {
        return m.to_string();
    }
    match code {
        409 => "the server reported a conflict".into(),
        404 => "the server could not find the requested resource".into(),
        400 => "the server rejected our request for an unknown reason".into(),
        401 => "the server has asked for the client to provide credentials".into(),
        403 => "the server does not allow access to the requested resource".into(),
        405 => "the server does not allow this method on the requested resource".into(),
        406 => "the server was unable to respond with a content type that the client supports".into(),
        415 => "the server was unable to handle the media type requested".into(),
        422 => "the server rejected our request due to an error in our request".into(),
        429 => "the server has received too many requests and has asked us to try again later".into(),
        503 => "the server is currently unable to handle the request".into(),
        504 => "the server was unable to return a response in the time allotted, but may still be processing the request".into(),
        c if c >= 500 => format!(
            "an error on the server ({:?}) has prevented the request from succeeding",
            String::from_utf8_lossy(body).trim()
        ),
        c => format!("the server responded with the status code {c} but did not return more information"),
    }
}

/// POSTs `body` to the webhook; the answer's body, or the cause as Go prints it.
pub async fn post(shared: &Shared, hook: &Webhook, body: Vec<u8>) -> Result<Vec<u8>, String> {
    let ep = endpoint(shared, hook, TIMEOUT)?;
    let url = ep.url.clone();
    match tokio::time::timeout(TIMEOUT, exchange(hook, &ep, body)).await {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(cause)) => Err(cause),
        Err(_) => Err(format!(
            "Post {url:?}: context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
        )),
    }
}

/// POSTs `body` within `timeout`, as an admission webhook is called: the request's context
/// carries the webhook's `timeoutSeconds` (and `?timeout=` says it), so running out of time is
/// the context's `context deadline exceeded`.
pub async fn post_within(
    shared: &Shared,
    hook: &Webhook,
    body: Vec<u8>,
    timeout: Duration,
) -> Result<Vec<u8>, String> {
    let ep = endpoint(shared, hook, timeout)?;
    let url = ep.url.clone();
    match tokio::time::timeout(timeout, exchange(hook, &ep, body)).await {
        Ok(answer) => answer,
        Err(_) => Err(format!("Post {url:?}: context deadline exceeded")),
    }
}

type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

/// Who a kept-alive connection reaches: the same name, port, address and CA.
#[derive(Clone, PartialEq, Eq, Hash)]
struct PoolKey {
    host: String,
    port: u16,
    addr: Option<SocketAddr>,
    ca: Option<Vec<u8>>,
}

/// Idle connections to webhooks, kept alive between calls as Go's HTTP client keeps them (a
/// TLS handshake per call cost most of a call). Process-wide: a key names the webhook and the
/// CA that verified it.
static POOL: std::sync::OnceLock<parking_lot::Mutex<HashMap<PoolKey, Vec<Sender>>>> =
    std::sync::OnceLock::new();

/// Idle connections kept per webhook.
const IDLE_PER_WEBHOOK: usize = 8;

fn pool() -> &'static parking_lot::Mutex<HashMap<PoolKey, Vec<Sender>>> {
    POOL.get_or_init(Default::default)
}

async fn connect(hook: &Webhook, ep: &Endpoint) -> Result<Sender, String> {
    let url = &ep.url;
    let post = |cause: String| format!("Post {url:?}: {cause}");
    let addrs: Vec<SocketAddr> = match ep.addr {
        Some(a) => vec![a],
        None => tokio::net::lookup_host((ep.host.as_str(), ep.port))
            .await
            .map_err(|_| post(format!("dial tcp: lookup {}: no such host", ep.host)))?
            .collect(),
    };
    let mut last = post(format!("dial tcp: lookup {}: no such host", ep.host));
    let mut stream = None;
    for a in addrs {
        match TcpStream::connect(a).await {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                last = post(format!("dial tcp {a}: connect: connection refused"));
            }
            Err(e) => last = post(format!("dial tcp {a}: {e}")),
        }
    }
    let stream = stream.ok_or(last)?;
    let config = tls_config(hook).map_err(post)?;
    let name = ServerName::try_from(ep.host.clone())
        .map_err(|e| post(format!("tls: invalid server name {:?}: {e}", ep.host)))?;
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, stream)
        .await
        .map_err(|e| post(tls_error(&e, &ep.host)))?;
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| post(e.to_string()))?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
}

/// The `POST` of `body` to the endpoint (a path the request line cannot carry is an error).
fn request(ep: &Endpoint, body: &Bytes) -> Result<http::Request<Full<Bytes>>, String> {
    let host = if ep.port == 443 {
        ep.host.clone()
    } else {
        format!("{}:{}", ep.host, ep.port)
    };
    http::Request::post(ep.path_and_query.as_str())
        .header(http::header::HOST, host)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, "application/json, */*")
        .header(http::header::USER_AGENT, "kube-apiserver-admission")
        .body(Full::new(body.clone()))
        .map_err(|e| e.to_string())
}

/// One request on `sender`: the status and body, or hyper's error.
async fn send(
    sender: &mut Sender,
    req: http::Request<Full<Bytes>>,
) -> Result<(u16, Bytes), hyper::Error> {
    sender.ready().await?;
    let resp = sender.send_request(req).await?;
    let code = resp.status().as_u16();
    let bytes = resp.into_body().collect().await?.to_bytes();
    Ok((code, bytes))
}

async fn exchange(hook: &Webhook, ep: &Endpoint, body: Vec<u8>) -> Result<Vec<u8>, String> {
    let url = &ep.url;
    let post = |cause: String| format!("Post {url:?}: {cause}");
    let key = PoolKey {
        host: ep.host.clone(),
        port: ep.port,
        addr: ep.addr,
        ca: hook.ca_bundle.clone(),
    };
    let body = Bytes::from(body);
    let idle = pool().lock().get_mut(&key).and_then(Vec::pop);
    // A kept-alive connection the webhook closed meanwhile fails at once: then a new one.
    let reused = match idle {
        Some(mut sender) => send(&mut sender, request(ep, &body).map_err(post)?)
            .await
            .ok()
            .map(|r| (sender, r)),
        None => None,
    };
    let (sender, (code, bytes)) = match reused {
        Some(done) => done,
        None => {
            let req = request(ep, &body).map_err(post)?;
            let mut sender = connect(hook, ep).await?;
            let answer = send(&mut sender, req).await.map_err(|e| {
                post(if e.is_incomplete_message() {
                    "EOF".into()
                } else {
                    e.to_string()
                })
            })?;
            (sender, answer)
        }
    };
    if !sender.is_closed() {
        let mut p = pool().lock();
        let idle = p.entry(key).or_default();
        if idle.len() < IDLE_PER_WEBHOOK {
            idle.push(sender);
        }
    }
    if !(200..300).contains(&code) {
        return Err(generic_response_error(code, &bytes));
    }
    Ok(bytes.to_vec())
}
