//! C1's and A1's HTTPS leg: a self-signed certificate for 127.0.0.1 written where a
//! `WebhookServer` reads it, and one kept-alive HTTP/1.1 connection to it that trusts only that
//! certificate (as kube-apiserver trusts a webhook's `caBundle`).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::Full;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use rustls::pki_types::CertificateDer;

/// A fresh self-signed certificate for 127.0.0.1, as `tls.crt` and `tls.key` in `dir`.
pub struct TestCert {
    pub crt: PathBuf,
    pub key: PathBuf,
    der: CertificateDer<'static>,
}

impl TestCert {
    pub fn write(dir: &Path) -> TestCert {
        std::fs::create_dir_all(dir).expect("certificate directory");
        let ck = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned()])
            .expect("a self-signed certificate");
        let (crt, key) = (dir.join("tls.crt"), dir.join("tls.key"));
        std::fs::write(&crt, ck.cert.pem()).expect("tls.crt written");
        std::fs::write(&key, ck.signing_key.serialize_pem()).expect("tls.key written");
        TestCert {
            crt,
            key,
            der: ck.cert.der().clone(),
        }
    }

    /// One HTTPS connection to `addr` (no Nagle delay), trusting this certificate only; its
    /// driver runs on the current runtime.
    pub async fn connect(&self, addr: SocketAddr) -> SendRequest<Full<Bytes>> {
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(self.der.clone())
            .expect("the certificate as a root");
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("default TLS versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
        let tcp = tokio::net::TcpStream::connect(addr)
            .await
            .expect("connecting to the webhook");
        tcp.set_nodelay(true).expect("TCP_NODELAY");
        let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
            .connect(
                rustls::pki_types::ServerName::try_from("127.0.0.1").expect("an IP name"),
                tcp,
            )
            .await
            .expect("TLS handshake");
        let (send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
            .await
            .expect("HTTP/1.1 handshake");
        tokio::spawn(conn);
        send
    }
}

/// Requests sent one after another on `send` before timing starts.
pub const WARM_UP: usize = 500;

/// Sends `requests` requests (after [`WARM_UP`] untimed ones), each answered 200 and read
/// whole; returns each round trip in microseconds, sorted.
pub async fn round_trips_us(
    send: &mut SendRequest<Full<Bytes>>,
    requests: usize,
    request: impl Fn() -> http::Request<Full<Bytes>>,
) -> Vec<f64> {
    use http_body_util::BodyExt;
    let mut us = Vec::with_capacity(requests);
    for i in 0..requests + WARM_UP {
        let started = std::time::Instant::now();
        send.ready().await.expect("connection ready");
        let response = send.send_request(request()).await.expect("an answer");
        assert_eq!(response.status(), http::StatusCode::OK);
        let answer = response
            .into_body()
            .collect()
            .await
            .expect("the body")
            .to_bytes();
        let took = started.elapsed();
        std::hint::black_box(answer);
        if i >= WARM_UP {
            us.push(took.as_secs_f64() * 1e6);
        }
    }
    us.sort_by(f64::total_cmp);
    us
}

/// The `q`-quantile of sorted `us`.
pub fn quantile(us: &[f64], q: f64) -> f64 {
    us[((us.len() as f64 * q) as usize).min(us.len() - 1)]
}
