//! What every controller program's `main` needs (controller-runtime's `SetupSignalHandler`,
//! `GetConfig`, and client-go programs' identity and flag helpers).

use std::path::Path;

use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use tokio::signal::unix::{SignalKind, signal};

/// A future resolving on shutdown; clone it to wait in several places.
pub type Shutdown = Shared<BoxFuture<'static, ()>>;

/// Resolves on the first SIGTERM or SIGINT (logged); later signals are ignored. The handlers
/// are installed when this is called, so call it first: a signal during startup is then seen
/// instead of killing the process. Clone it to wait in several places.
pub fn shutdown_signal() -> std::io::Result<Shutdown> {
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let (tx, rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        let name = tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        };
        tracing::info!("{name}: shutting down");
        tx.send_replace(true);
        // Keep the handlers (and the sender) for good: later signals are ignored.
        std::future::pending::<()>().await;
    });
    Ok(async move {
        let mut rx = rx;
        let _ = rx.wait_for(|s| *s).await;
    }
    .boxed()
    .shared())
}

/// The client config from `kubeconfig` when given, else kube's inference (`$KUBECONFIG`,
/// `~/.kube/config`, then the in-cluster service account).
pub async fn load_config(kubeconfig: Option<&Path>) -> Result<kube::Config, ConfigError> {
    let Some(path) = kubeconfig else {
        return kube::Config::infer().await.map_err(ConfigError::Infer);
    };
    let display = path.display().to_string();
    let file = kube::config::Kubeconfig::read_from(path)
        .map_err(|e| ConfigError::Read(display.clone(), e))?;
    kube::Config::from_custom_kubeconfig(file, &Default::default())
        .await
        .map_err(|e| ConfigError::Read(display, e))
}

/// Why [`load_config`] failed.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// No kubeconfig and not in a cluster.
    #[error("no kubeconfig ($KUBECONFIG, ~/.kube/config) and not in a cluster: {0}")]
    Infer(#[source] kube::config::InferConfigError),
    /// The kubeconfig given could not be read or used.
    #[error("kubeconfig {0}: {1}")]
    Read(String, #[source] kube::config::KubeconfigError),
}

/// A leader-election identity (also an event reporting instance): the hostname (else
/// `fallback`) and a random suffix, as client-go programs make it, so two replicas on one
/// host differ.
pub fn unique_identity(fallback: &str) -> String {
    use std::hash::{BuildHasher, Hasher};
    let host = hostname()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| fallback.to_owned());
    // RandomState is seeded from the OS's randomness: enough for a unique suffix.
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    format!("{host}_{:016x}", hasher.finish())
}

fn hostname() -> Option<String> {
    std::env::var("HOSTNAME").ok().or_else(|| {
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .map(|h| h.trim().to_owned())
    })
}

/// A Go-style duration for flags: a non-negative number with a unit, `ms`, `s`, `m` or `h`
/// (`500ms`, `1.5s`, `2m`).
pub fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let units = [("ms", 0.001), ("s", 1.0), ("m", 60.0), ("h", 3600.0)];
    let (number, scale) = units
        .iter()
        .find_map(|(unit, scale)| Some((text.strip_suffix(unit)?, *scale)))
        .ok_or_else(|| format!("{text:?} has no unit (ms, s, m or h), e.g. 15s"))?;
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration, e.g. 15s or 500ms"))?;
    if !value.is_finite() || value < 0.0 {
        return Err(format!("{text:?} is not a non-negative duration"));
    }
    std::time::Duration::try_from_secs_f64(value * scale).map_err(|e| format!("{text:?}: {e}"))
}

/// An error and its causes on one line, skipping a cause whose text is already there (kube's
/// errors repeat their source in their own message).
pub fn describe_error(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = String::new();
    let mut cause = Some(e);
    while let Some(c) = cause {
        let s = c.to_string();
        if !text.contains(&s) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&s);
        }
        cause = c.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn durations_parse_like_go() {
        assert_eq!(parse_duration("15s"), Ok(Duration::from_secs(15)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
        for bad in ["15", "s", "-1s", "abc", "1e400s", "NaNs", ""] {
            assert!(parse_duration(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn identities_differ_per_call() {
        assert_ne!(unique_identity("x"), unique_identity("x"));
        assert!(unique_identity("x").contains('_'));
    }
}
