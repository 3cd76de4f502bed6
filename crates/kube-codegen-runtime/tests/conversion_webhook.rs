//! The conversion webhook served: the mountable handler and `Router` over hyper, and
//! `WebhookServer` over HTTPS with its certificate files reloaded.
#![cfg(feature = "webhook")]

use crate::support::foo;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use foo::{FooConversion, foo, review};
use http::{Request, StatusCode, header};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use kube_codegen_runtime::conversion::{self, Converter, WebhookServer};
use kube_codegen_runtime::webhook::{Router, ServerError};
use rustls::pki_types::CertificateDer;
use serde_json::Value;
use tokio::net::{TcpListener, TcpStream};

const V1: &str = "apiextensions.k8s.io/v1";

fn post(path: &str, content_type: Option<&str>, body: Vec<u8>) -> Request<Full<Bytes>> {
    let mut b = Request::post(path).header(header::HOST, "127.0.0.1");
    if let Some(ct) = content_type {
        b = b.header(header::CONTENT_TYPE, ct);
    }
    b.body(Full::new(Bytes::from(body))).unwrap()
}

async fn read(
    response: http::Response<impl hyper::body::Body<Error = impl std::fmt::Debug>>,
) -> (StatusCode, http::HeaderMap, Bytes) {
    let (parts, body) = response.into_parts();
    let bytes = body.collect().await.unwrap().to_bytes();
    (parts.status, parts.headers, bytes)
}

fn converted_names(body: &[u8]) -> Vec<String> {
    let v: Value = serde_json::from_slice(body).unwrap();
    assert_eq!(v["response"]["result"]["status"], "Success", "{v}");
    v["response"]["convertedObjects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            assert_eq!(o["apiVersion"], "example.com/v2");
            o["metadata"]["name"].as_str().unwrap().to_owned()
        })
        .collect()
}

/// `handle` and `Router` served by hyper on plain HTTP (as mounted behind a server that
/// terminates TLS itself), through a hyper client.
#[tokio::test]
async fn handler_and_router_over_hyper() {
    let converter = Arc::new(Converter::new().with(FooConversion));
    let router = Router::new()
        .route_arc("/convert", converter.clone())
        .max_body_bytes(1 << 20);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let router = router.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req| {
                    let router = router.clone();
                    async move { Ok::<_, std::convert::Infallible>(router.handle(req).await) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);

    // Several requests on one keep-alive connection.
    let objects = (0..50).map(|i| foo("v1", &format!("f{i}"), i)).collect();
    let (status, headers, body) = read(
        send.send_request(post(
            "/convert",
            Some("application/json"),
            review(V1, "example.com/v2", objects),
        ))
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers[header::CONTENT_TYPE], "application/json");
    let names = converted_names(&body);
    assert_eq!(names, (0..50).map(|i| format!("f{i}")).collect::<Vec<_>>());

    let cases: Vec<(Request<Full<Bytes>>, StatusCode, &str)> = vec![
        (
            Request::get("/convert").body(Full::default()).unwrap(),
            StatusCode::METHOD_NOT_ALLOWED,
            "method GET not allowed: POST a review",
        ),
        (
            post("/convert", Some("text/plain"), b"{}".to_vec()),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Content-Type text/plain: expected application/json",
        ),
        (
            post("/convert", None, b"{}".to_vec()),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Content-Type missing: expected application/json",
        ),
        (
            post("/validate", Some("application/json"), b"{}".to_vec()),
            StatusCode::NOT_FOUND,
            "no webhook at /validate (serving: /convert)",
        ),
        (
            post(
                "/convert",
                Some("application/json; charset=utf-8"),
                b"{\"apiVersion\":".to_vec(),
            ),
            StatusCode::BAD_REQUEST,
            "cannot decode the ConversionReview: EOF while parsing a value at line 1 column 14",
        ),
        (
            post(
                "/convert",
                Some("application/json"),
                vec![b' '; (1 << 20) + 1],
            ),
            StatusCode::PAYLOAD_TOO_LARGE,
            "request body larger than 1048576 bytes",
        ),
    ];
    for (request, expected, message) in cases {
        let stream = TcpStream::connect(addr).await.unwrap();
        let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .unwrap();
        tokio::spawn(conn);
        let (status, headers, body) = read(send.send_request(request).await.unwrap()).await;
        assert_eq!(
            (status, std::str::from_utf8(&body).unwrap()),
            (expected, message)
        );
        if status == StatusCode::METHOD_NOT_ALLOWED {
            assert_eq!(headers[header::ALLOW], "POST");
        }
    }

    // The same handler as a function (any body type) and the router as a tower::Service.
    let response = conversion::handle(
        &*converter,
        post(
            "/anywhere",
            Some("application/json"),
            review(V1, "example.com/v2", vec![foo("v1", "a", 1)]),
        ),
    )
    .await;
    let (status, _, body) = read(response).await;
    assert_eq!(
        (status, converted_names(&body)),
        (StatusCode::OK, vec!["a".to_owned()])
    );
    use tower::ServiceExt;
    let router = Router::new().route_arc("/convert", converter);
    let response = router
        .oneshot(post(
            "/convert?timeout=30s",
            Some("application/json"),
            review(V1, "example.com/v2", vec![foo("v1", "b", 1)]),
        ))
        .await
        .unwrap();
    let (status, _, body) = read(response).await;
    assert_eq!(
        (status, converted_names(&body)),
        (StatusCode::OK, vec!["b".to_owned()])
    );
}

/// A test CA and serving certificates it signs for 127.0.0.1.
struct Ca {
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
    der: CertificateDer<'static>,
}

impl Ca {
    fn new() -> Ca {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "webhook test CA");
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        Ca {
            der: cert.der().clone(),
            issuer: rcgen::Issuer::new(params, key),
        }
    }

    /// A leaf for 127.0.0.1: (cert PEM, key PEM, cert DER).
    fn leaf(&self, name: &str) -> (String, String, Vec<u8>) {
        let mut params =
            rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
                .unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        (cert.pem(), key.serialize_pem(), cert.der().to_vec())
    }

    fn client(&self) -> tokio_rustls::TlsConnector {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(self.der.clone()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        tokio_rustls::TlsConnector::from(Arc::new(config))
    }
}

/// Connects over TLS: the request sender and the server's certificate (DER).
async fn connect(
    ca: &Ca,
    addr: SocketAddr,
) -> std::io::Result<(
    hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    Vec<u8>,
)> {
    let tcp = TcpStream::connect(addr).await?;
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let tls = ca.client().connect(name, tcp).await?;
    let peer = tls.get_ref().1.peer_certificates().unwrap()[0].to_vec();
    let (send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(std::io::Error::other)?;
    tokio::spawn(conn);
    Ok((send, peer))
}

async fn convert(
    send: &mut hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    name: &str,
) -> Vec<String> {
    let request = post(
        "/convert",
        Some("application/json"),
        review(V1, "example.com/v2", vec![foo("v1", name, 1)]),
    );
    send.ready().await.unwrap();
    let (status, _, body) = read(send.send_request(request).await.unwrap()).await;
    assert_eq!(status, StatusCode::OK);
    converted_names(&body)
}

fn write(dir: &Path, cert: &str, key: &str) {
    std::fs::write(dir.join("tls.crt"), cert).unwrap();
    std::fs::write(dir.join("tls.key"), key).unwrap();
}

#[tokio::test]
async fn https_server_reloads_its_certificate_and_shuts_down_gracefully() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new();
    let (cert1, key1, der1) = ca.leaf("first");
    write(dir.path(), &cert1, &key1);
    let server = WebhookServer::builder(Converter::new().with(FooConversion))
        .listen("127.0.0.1:0".parse().unwrap())
        .tls_files(dir.path().join("tls.crt"), dir.path().join("tls.key"))
        .shutdown_timeout(Duration::from_secs(5))
        .bind()
        .await
        .unwrap();
    let addr = server.local_addr();
    assert_eq!(server.router().paths().collect::<Vec<_>>(), ["/convert"]);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server.serve(async {
        let _ = stopped.await;
    }));

    // A keep-alive connection: several reviews on it.
    let (mut first, peer) = connect(&ca, addr).await.unwrap();
    assert_eq!(peer, der1);
    for name in ["a", "b", "c"] {
        assert_eq!(convert(&mut first, name).await, [name]);
    }

    // New files: the next connection sees the new certificate; the open one goes on.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let (cert2, key2, der2) = ca.leaf("second");
    write(dir.path(), &cert2, &key2);
    let (mut second, peer) = connect(&ca, addr).await.unwrap();
    assert_eq!(peer, der2, "the rewritten certificate is served");
    assert_eq!(convert(&mut second, "d").await, ["d"]);
    assert_eq!(convert(&mut first, "e").await, ["e"]);

    // A broken key (or a cert with another's key) keeps the previous certificate.
    tokio::time::sleep(Duration::from_millis(50)).await;
    std::fs::write(dir.path().join("tls.key"), "not a key").unwrap();
    let (mut third, peer) = connect(&ca, addr).await.unwrap();
    assert_eq!(peer, der2);
    assert_eq!(convert(&mut third, "f").await, ["f"]);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let (cert3, key3, der3) = ca.leaf("third");
    write(dir.path(), &cert3, &key1);
    assert_eq!(connect(&ca, addr).await.unwrap().1, der2, "mismatched key");
    // Rotation completes: the key arrives.
    tokio::time::sleep(Duration::from_millis(50)).await;
    std::fs::write(dir.path().join("tls.key"), &key3).unwrap();
    let (mut fourth, peer) = connect(&ca, addr).await.unwrap();
    assert_eq!(peer, der3);
    assert_eq!(convert(&mut fourth, "g").await, ["g"]);
    // A file briefly missing keeps serving too.
    std::fs::remove_file(dir.path().join("tls.crt")).unwrap();
    assert_eq!(connect(&ca, addr).await.unwrap().1, der3);

    // Shutdown: idle keep-alive connections are closed, serve returns, nothing accepts.
    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(5), serving)
        .await
        .expect("serve returns after shutdown")
        .unwrap();
    assert!(TcpStream::connect(addr).await.is_err(), "still accepting");
    assert!(
        first
            .send_request(post("/convert", Some("application/json"), vec![]))
            .await
            .is_err()
    );
}

#[tokio::test]
async fn bind_refuses_missing_or_mismatched_tls_files() {
    let dir = tempfile::tempdir().unwrap();
    let builder =
        || WebhookServer::builder(Converter::new()).listen("127.0.0.1:0".parse().unwrap());
    assert!(matches!(builder().bind().await, Err(ServerError::NoTls)));
    let missing = builder()
        .tls_files(dir.path().join("tls.crt"), dir.path().join("tls.key"))
        .bind()
        .await
        .unwrap_err();
    assert!(missing.to_string().contains("tls.crt"), "{missing}");
    let ca = Ca::new();
    let (cert, _, _) = ca.leaf("a");
    let (_, other_key, _) = ca.leaf("b");
    write(dir.path(), &cert, &other_key);
    let mismatched = builder()
        .tls_files(dir.path().join("tls.crt"), dir.path().join("tls.key"))
        .bind()
        .await
        .unwrap_err();
    assert!(matches!(mismatched, ServerError::Tls(_)), "{mismatched}");
}
