//! The server's certificates: a CA generated per server, a serving certificate it signs for
//! 127.0.0.1 and localhost, and a rustls acceptor that asks for (but does not require) a client
//! certificate signed by the same CA, as kube-apiserver's `--client-ca-file` does.
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::TlsAcceptor;

/// The CA (PEM for kubeconfig `certificate-authority-data`, DER for clients' roots), the
/// acceptor, and the CA's key to sign client certificates.
pub struct Tls {
    pub cert_pem: String,
    pub cert_der: Vec<u8>,
    pub acceptor: TlsAcceptor,
    pub issuer: Arc<Issuer<'static, KeyPair>>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls").finish_non_exhaustive()
    }
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// Errors are the TLS library's text (`lib.rs` wraps them in `Error::Tls`).
pub fn generate() -> Result<Tls, String> {
    let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(err)?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "kube-fake-apiserver-ca");
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_key = KeyPair::generate().map_err(err)?;
    let ca_cert = ca.self_signed(&ca_key).map_err(err)?;
    let issuer = Issuer::new(ca, ca_key);

    let mut serving =
        CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
            .map_err(err)?;
    serving
        .distinguished_name
        .push(DnType::CommonName, "kube-apiserver");
    serving.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let serving_key = KeyPair::generate().map_err(err)?;
    let serving_cert = serving.signed_by(&serving_key, &issuer).map_err(err)?;

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca_cert.der().clone()).map_err(err)?;
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .allow_unauthenticated()
    .build()
    .map_err(err)?;
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(serving_key.serialize_der()));
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(err)?
        .with_client_cert_verifier(verifier)
        .with_single_cert(vec![CertificateDer::from(serving_cert.der().to_vec())], key)
        .map_err(err)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Tls {
        cert_pem: ca_cert.pem(),
        cert_der: ca_cert.der().to_vec(),
        acceptor: TlsAcceptor::from(Arc::new(config)),
        issuer: Arc::new(issuer),
    })
}

/// A client certificate signed by the server's CA for `user` (the subject's CN) in `group`
/// (its O, if any): PEM certificate and PEM PKCS#8 key.
pub fn client_certificate(
    issuer: &Issuer<'static, KeyPair>,
    user: &str,
    group: Option<&str>,
) -> Result<(String, String), String> {
    let mut params = CertificateParams::new(Vec::<String>::new()).map_err(err)?;
    params.distinguished_name.push(DnType::CommonName, user);
    if let Some(g) = group {
        params.distinguished_name.push(DnType::OrganizationName, g);
    }
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let key = KeyPair::generate().map_err(err)?;
    let cert = params.signed_by(&key, issuer).map_err(err)?;
    Ok((cert.pem(), key.serialize_pem()))
}
