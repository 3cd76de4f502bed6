//! The TCP (optionally TLS) listener serving HTTP/1.1 connections.
use std::convert::Infallible;
use std::sync::Arc;

use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;

use crate::auth::PeerCertificate;
use crate::state::Shared;

async fn serve_conn<S>(shared: Arc<Shared>, io: S, peer: Option<PeerCertificate>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let svc = service_fn(move |mut req: http::Request<Incoming>| {
        let shared = shared.clone();
        // The connection's verified client certificate goes with each of its requests.
        if let Some(p) = &peer {
            req.extensions_mut().insert(p.clone());
        }
        async move { Ok::<_, Infallible>(crate::dispatch::handle_any(shared, req).await) }
    });
    // Connection errors (client went away, reset) end only this connection.
    let _ = http1::Builder::new()
        .serve_connection(TokioIo::new(io), svc)
        .await;
}

/// Accepts connections until the returned task is aborted.
pub fn spawn_accept(
    shared: Arc<Shared>,
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                // e.g. out of file descriptors: back off instead of spinning.
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                continue;
            };
            if shared.faults.is_down() {
                drop(stream); // refused, as far as a client can tell
                continue;
            }
            let _ = stream.set_nodelay(true);
            let s = shared.clone();
            let tls = tls.clone();
            let task = tokio::spawn(async move {
                match tls {
                    Some(acceptor) => {
                        if let Ok(stream) = acceptor.accept(stream).await {
                            let peer = stream
                                .get_ref()
                                .1
                                .peer_certificates()
                                .and_then(|c| c.first())
                                .and_then(|c| crate::auth::x509::subject(c));
                            serve_conn(s, stream, peer).await;
                        }
                    }
                    None => serve_conn(s, stream, None).await,
                }
            });
            // A block of its own: the guard is gone before the next `accept().await`.
            {
                let mut conns = shared.conns.lock();
                conns.retain(|h| !h.is_finished());
                conns.push(task.abort_handle());
            }
        }
    })
}
