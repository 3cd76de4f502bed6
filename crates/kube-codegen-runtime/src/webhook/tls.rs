//! The server's TLS configuration, read from PEM files and read again when they change.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use parking_lot::Mutex;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;

/// What identifies a version of a file: a rewrite in place changes its mtime or length, a
/// Kubernetes secret volume swaps a symlink (another inode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    modified: Option<SystemTime>,
    len: u64,
    inode: u64,
}

fn stamp(path: &Path) -> io::Result<Stamp> {
    let m = std::fs::metadata(path)?;
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(&m);
    #[cfg(not(unix))]
    let inode = 0;
    Ok(Stamp {
        modified: m.modified().ok(),
        len: m.len(),
        inode,
    })
}

/// A TLS acceptor whose certificate and key files are checked on every new connection (two
/// `stat`s) and loaded again when either changed; a failed load keeps the previous
/// configuration (logged once per change of the files).
pub(crate) struct ReloadingTls {
    cert: PathBuf,
    key: PathBuf,
    state: Mutex<State>,
}

struct State {
    /// The files' stamps when last tried, loaded or not.
    tried: (Stamp, Stamp),
    acceptor: TlsAcceptor,
}

impl ReloadingTls {
    /// Loads the files once; fails when they do not make a configuration.
    pub(crate) fn new(cert: PathBuf, key: PathBuf) -> Result<Self, String> {
        let stamps = (
            stamp(&cert).map_err(|e| format!("{}: {e}", cert.display()))?,
            stamp(&key).map_err(|e| format!("{}: {e}", key.display()))?,
        );
        let acceptor = load(&cert, &key)?;
        Ok(ReloadingTls {
            cert,
            key,
            state: Mutex::new(State {
                tried: stamps,
                acceptor,
            }),
        })
    }

    /// The acceptor for a new connection, after loading the files again if they changed.
    pub(crate) fn acceptor(&self) -> TlsAcceptor {
        let mut state = self.state.lock();
        let (Ok(cert), Ok(key)) = (stamp(&self.cert), stamp(&self.key)) else {
            // Mid-rotation (a file briefly missing): keep serving what we have.
            return state.acceptor.clone();
        };
        if (cert, key) != state.tried {
            state.tried = (cert, key);
            match load(&self.cert, &self.key) {
                Ok(acceptor) => {
                    tracing::info!(
                        cert = %self.cert.display(),
                        key = %self.key.display(),
                        "webhook: reloaded the TLS certificate"
                    );
                    state.acceptor = acceptor;
                }
                Err(error) => tracing::warn!(
                    %error,
                    "webhook: cannot reload the TLS certificate, keeping the previous one"
                ),
            }
        }
        state.acceptor.clone()
    }
}

/// A rustls server configuration (ring, TLS 1.2 and 1.3, HTTP/1.1) from PEM files.
fn load(cert_path: &Path, key_path: &Path) -> Result<TlsAcceptor, String> {
    let certs = CertificateDer::pem_file_iter(cert_path)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("reading certificates from {}: {e}", cert_path.display()))?;
    if certs.is_empty() {
        return Err(format!("no certificate in {}", cert_path.display()));
    }
    let key = PrivateKeyDer::from_pem_file(key_path)
        .map_err(|e| format!("reading a private key from {}: {e}", key_path.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        // Checks that the key is the certificate's.
        .with_single_cert(certs, key)
        .map_err(|e| {
            format!(
                "certificate {} with key {}: {e}",
                cert_path.display(),
                key_path.display()
            )
        })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}
