//! The [`Manager`](super::Manager)'s HTTP endpoints (feature `webhook`, which brings hyper):
//! `/metrics` for Prometheus (feature `prometheus`) and `/healthz`, `/readyz` for the kubelet's
//! probes, as controller-runtime's metrics server and health probe server answer them (its
//! `pkg/healthz` texts: `ok`, `?verbose` listings, `[-]name failed: reason withheld`, one check
//! at `/healthz/<name>`, `?exclude=name`).

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::task::JoinSet;

/// A reflector that failed this many rounds in a row (about a minute of retries at client-go's
/// backoff) fails the manager's built-in `reflectors` health check.
pub const REFLECTOR_FAILURES_UNHEALTHY: u32 = 6;

/// A named health or readiness check: `Err(reason)` fails it (the reason is logged, and shown
/// only at the check's own path).
pub type Check = Arc<dyn Fn() -> Result<(), String> + Send + Sync>;

/// What the manager serves, and where (`None`: not served).
#[derive(Clone, Default)]
pub struct Endpoints {
    pub(crate) metrics_addr: Option<SocketAddr>,
    pub(crate) probe_addr: Option<SocketAddr>,
    pub(crate) healthz: Vec<(String, Check)>,
    pub(crate) readyz: Vec<(String, Check)>,
    #[cfg(feature = "prometheus")]
    pub(crate) registry: Option<Arc<prometheus_client::registry::Registry>>,
}

impl std::fmt::Debug for Endpoints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names = |v: &[(String, Check)]| v.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
        f.debug_struct("Endpoints")
            .field("metrics_addr", &self.metrics_addr)
            .field("probe_addr", &self.probe_addr)
            .field("healthz", &names(&self.healthz))
            .field("readyz", &names(&self.readyz))
            .finish_non_exhaustive()
    }
}

/// A parsed bind address flag: `None` is off. (An alias, so clap does not take the flag as an
/// optional one.)
pub type BindAddress = Option<SocketAddr>;

/// controller-runtime's bind address flags: `0` (or empty) turns the server off, `:8080`
/// listens on every interface, `host:port` on one (`localhost` is 127.0.0.1).
pub fn parse_bind_address(s: &str) -> Result<BindAddress, String> {
    let s = s.trim();
    if s.is_empty() || s == "0" {
        return Ok(None);
    }
    let (host, port) = s
        .rsplit_once(':')
        .ok_or_else(|| format!("{s:?}: expected host:port, :port or 0"))?;
    let port: u16 = port
        .parse()
        .map_err(|_| format!("{s:?}: {port:?} is not a port number"))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let ip = match host {
        "" => std::net::Ipv4Addr::UNSPECIFIED.into(),
        "localhost" => std::net::Ipv4Addr::LOCALHOST.into(),
        h => h
            .parse()
            .map_err(|_| format!("{s:?}: {h:?} is not an IP address"))?,
    };
    Ok(Some(SocketAddr::new(ip, port)))
}

type Body = Full<Bytes>;

fn text(code: StatusCode, body: String) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = code;
    let h = r.headers_mut();
    h.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    h.insert(
        "x-content-type-options",
        http::HeaderValue::from_static("nosniff"),
    );
    r
}

/// Go's `http.NotFound`.
fn not_found() -> Response<Body> {
    text(StatusCode::NOT_FOUND, "404 page not found\n".into())
}

fn query_values<'a>(query: &'a str, key: &str) -> impl Iterator<Item = &'a str> {
    query.split('&').filter_map(move |kv| {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        (k == key).then_some(v)
    })
}

/// One probe endpoint (`/healthz` or `/readyz`) with its checks.
fn probe(kind: &str, checks: &[(String, Check)], rest: &str, query: &str) -> Response<Body> {
    if let Some(name) = rest.strip_prefix('/').filter(|n| !n.is_empty()) {
        // One check: its reason is shown here, as controller-runtime's CheckHandler does.
        return match checks.iter().find(|(n, _)| n == name) {
            None => not_found(),
            Some((_, check)) => match check() {
                Ok(()) => text(StatusCode::OK, "ok".into()),
                Err(e) => text(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("internal server error: {e}\n"),
                ),
            },
        };
    }
    if !rest.is_empty() {
        return not_found();
    }
    let mut excluded: BTreeSet<&str> = query_values(query, "exclude").collect();
    let mut parts: Vec<(String, Option<bool>)> = Vec::new(); // None: excluded
    let mut failed = false;
    for (name, check) in checks {
        if excluded.remove(name.as_str()) {
            parts.push((name.clone(), None));
            continue;
        }
        let ok = match check() {
            Ok(()) => true,
            Err(e) => {
                tracing::info!(checker = %name, error = %e, "{kind} check failed");
                false
            }
        };
        failed |= !ok;
        parts.push((name.clone(), Some(ok)));
    }
    if checks.is_empty() {
        parts.push(("ping".into(), Some(true)));
    }
    for name in excluded {
        tracing::debug!(
            checker = name,
            "cannot exclude {kind} check, no matches for it"
        );
    }
    parts.sort_by(|a, b| a.0.cmp(&b.0));
    let mut status = String::new();
    for (name, ok) in &parts {
        status.push_str(&match ok {
            None => format!("[+]{name} excluded: ok\n"),
            Some(true) => format!("[+]{name} ok\n"),
            Some(false) => format!("[-]{name} failed: reason withheld\n"),
        });
    }
    if failed {
        return text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("{status}{kind} check failed\n"),
        );
    }
    if query_values(query, "verbose").next().is_none() {
        return text(StatusCode::OK, "ok".into());
    }
    text(StatusCode::OK, format!("{status}{kind} check passed\n"))
}

impl Endpoints {
    fn answer_probe(&self, path: &str, query: &str) -> Response<Body> {
        if let Some(rest) = path.strip_prefix("/healthz") {
            probe("healthz", &self.healthz, rest, query)
        } else if let Some(rest) = path.strip_prefix("/readyz") {
            probe("readyz", &self.readyz, rest, query)
        } else {
            not_found()
        }
    }

    fn answer_metrics(&self, path: &str, accept: &str) -> Response<Body> {
        if path != "/metrics" {
            return not_found();
        }
        #[cfg(feature = "prometheus")]
        if let Some(registry) = &self.registry {
            let mut out = String::new();
            if let Err(e) = prometheus_client::encoding::text::encode(&mut out, registry) {
                return text(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("encoding metrics: {e}\n"),
                );
            }
            return exposition(out, accept);
        }
        let _ = accept;
        text(StatusCode::OK, String::new())
    }

    /// Binds the configured servers and serves them on `tasks` until aborted.
    pub(crate) async fn serve(
        &self,
        tasks: &mut JoinSet<()>,
    ) -> Result<(), super::ControllerError> {
        let this = Arc::new(self.clone());
        for (addr, metrics) in [(self.metrics_addr, true), (self.probe_addr, false)] {
            let Some(addr) = addr else { continue };
            let what = if metrics { "metrics" } else { "health probes" };
            let listener = TcpListener::bind(addr).await.map_err(|e| {
                super::ControllerError::Endpoint(format!("serving {what} at {addr}: {e}"))
            })?;
            tracing::info!(addr = %listener.local_addr().unwrap_or(addr), "serving {what}");
            let this = this.clone();
            tasks.spawn(async move {
                let mut conns = JoinSet::new();
                loop {
                    let Ok((stream, _)) = listener.accept().await else {
                        continue;
                    };
                    let this = this.clone();
                    let service = service_fn(move |req: Request<Incoming>| {
                        let this = this.clone();
                        async move { Ok::<_, std::convert::Infallible>(this.answer(&req, metrics)) }
                    });
                    conns.spawn(async move {
                        let _ = http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    });
                    while conns.try_join_next().is_some() {}
                }
            });
        }
        Ok(())
    }

    fn answer<B>(&self, req: &Request<B>, metrics: bool) -> Response<Body> {
        if req.method() != http::Method::GET && req.method() != http::Method::HEAD {
            return text(
                StatusCode::METHOD_NOT_ALLOWED,
                "Method Not Allowed\n".into(),
            );
        }
        let path = req.uri().path();
        let query = req.uri().query().unwrap_or("");
        if metrics {
            let accept = req
                .headers()
                .get(http::header::ACCEPT)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            self.answer_metrics(path, accept)
        } else {
            self.answer_probe(path, query)
        }
    }
}

/// OpenMetrics text (what prometheus-client writes) when the scraper asks for it, else the
/// classic Prometheus text format 0.0.4 every Prometheus parser reads: the counter families
/// named with their `_total` (as their samples are), no `# UNIT` or `# EOF` lines.
#[cfg(feature = "prometheus")]
fn exposition(openmetrics: String, accept: &str) -> Response<Body> {
    if accept.contains("application/openmetrics-text") {
        let mut r = text(StatusCode::OK, openmetrics);
        r.headers_mut().insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static(
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            ),
        );
        return r;
    }
    let counters: BTreeSet<&str> = openmetrics
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.strip_suffix(" counter"))
        .collect();
    let mut out = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let renamed = ["# HELP ", "# TYPE "].iter().find_map(|prefix| {
            let rest = line.strip_prefix(prefix)?;
            let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
            counters
                .contains(name)
                .then(|| format!("{prefix}{name}_total {tail}"))
        });
        out.push_str(renamed.as_deref().unwrap_or(line));
        out.push('\n');
    }
    let mut r = text(StatusCode::OK, out);
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(ok: bool) -> Check {
        Arc::new(move || if ok { Ok(()) } else { Err("boom".into()) })
    }

    fn body(r: Response<Body>) -> (u16, String) {
        use http_body_util::BodyExt;
        let code = r.status().as_u16();
        let bytes = futures::executor::block_on(r.into_body().collect())
            .unwrap()
            .to_bytes();
        (code, String::from_utf8(bytes.to_vec()).unwrap())
    }

    #[test]
    fn bind_addresses_as_controller_runtime_reads_them() {
        assert_eq!(parse_bind_address("0"), Ok(None));
        assert_eq!(parse_bind_address(""), Ok(None));
        assert_eq!(
            parse_bind_address(":8081"),
            Ok(Some("0.0.0.0:8081".parse().unwrap()))
        );
        assert_eq!(
            parse_bind_address("127.0.0.1:9"),
            Ok(Some("127.0.0.1:9".parse().unwrap()))
        );
        assert_eq!(
            parse_bind_address("localhost:8080"),
            Ok(Some("127.0.0.1:8080".parse().unwrap()))
        );
        assert_eq!(
            parse_bind_address("[::1]:8080"),
            Ok(Some("[::1]:8080".parse().unwrap()))
        );
        assert!(parse_bind_address("8080").is_err());
        assert!(parse_bind_address(":http").is_err());
    }

    #[test]
    fn probes_answer_as_controller_runtime_healthz() {
        let e = Endpoints {
            healthz: vec![("b".into(), check(true)), ("a".into(), check(false))],
            readyz: vec![("synced".into(), check(true))],
            ..Endpoints::default()
        };
        assert_eq!(
            body(e.answer_probe("/healthz", "")),
            (
                500,
                "[-]a failed: reason withheld\n[+]b ok\nhealthz check failed\n".into()
            )
        );
        assert_eq!(
            body(e.answer_probe("/healthz", "exclude=a&verbose")),
            (
                200,
                "[+]a excluded: ok\n[+]b ok\nhealthz check passed\n".into()
            )
        );
        assert_eq!(
            body(e.answer_probe("/healthz/a", "")),
            (500, "internal server error: boom\n".into())
        );
        assert_eq!(body(e.answer_probe("/healthz/b", "")), (200, "ok".into()));
        assert_eq!(body(e.answer_probe("/healthz/c", "")).0, 404);
        assert_eq!(body(e.answer_probe("/readyz", "")), (200, "ok".into()));
        assert_eq!(body(e.answer_probe("/livez", "")).0, 404);
        // No checks: a ping.
        let none = Endpoints::default();
        assert_eq!(
            body(none.answer_probe("/readyz", "verbose")),
            (200, "[+]ping ok\nreadyz check passed\n".into())
        );
    }

    #[cfg(feature = "prometheus")]
    #[test]
    fn metrics_in_the_classic_text_format_unless_openmetrics_is_asked_for() {
        use prometheus_client::metrics::counter::Counter;
        use prometheus_client::metrics::gauge::Gauge;
        let mut registry = prometheus_client::registry::Registry::default();
        let c: Counter = Counter::default();
        c.inc();
        registry.register("things", "Things done", c);
        let g: Gauge = Gauge::default();
        g.set(3);
        registry.register("depth", "Depth", g);
        let e = Endpoints {
            registry: Some(Arc::new(registry)),
            ..Endpoints::default()
        };
        let (code, classic) = body(e.answer_metrics("/metrics", "text/plain"));
        assert_eq!(code, 200);
        assert_eq!(
            classic,
            "# HELP things_total Things done.\n# TYPE things_total counter\nthings_total 1\n\
             # HELP depth Depth.\n# TYPE depth gauge\ndepth 3\n"
        );
        let (_, om) = body(e.answer_metrics("/metrics", "application/openmetrics-text"));
        assert!(om.ends_with("# EOF\n"), "{om}");
        assert!(
            om.contains("# TYPE things counter\nthings_total 1\n"),
            "{om}"
        );
        assert_eq!(body(e.answer_metrics("/other", "")).0, 404);
    }
}
