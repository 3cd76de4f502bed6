//! Self-signed certificate for 127.0.0.1 and a rustls acceptor using it.
use std::sync::Arc;

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::TlsAcceptor;

/// A generated certificate: PEM (for kubeconfig `certificate-authority-data`), DER, and the acceptor.
pub struct Tls {
    pub cert_pem: String,
    pub cert_der: Vec<u8>,
    pub acceptor: TlsAcceptor,
}

/// Errors are the TLS library's text (`lib.rs` wraps them in `Error::Tls`).
pub fn generate() -> Result<Tls, String> {
    let ck =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string(), "localhost".to_string()])
            .map_err(|e| e.to_string())?;
    let cert_der = ck.cert.der().to_vec();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(ck.signing_key.serialize_der()));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(vec![CertificateDer::from(cert_der.clone())], key)
        .map_err(|e| e.to_string())?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Tls {
        cert_pem: ck.cert.pem(),
        cert_der,
        acceptor: TlsAcceptor::from(Arc::new(config)),
    })
}
