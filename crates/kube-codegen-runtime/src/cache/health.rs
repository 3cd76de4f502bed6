//! What a program can see of a reflector's failures besides log lines: the last error that
//! ended a round, how many rounds in a row failed, and when (client-go only logs these or
//! passes them to the `WatchErrorHandler`, which must be set before the informer starts).

use std::fmt;
use std::sync::Arc;
use std::time::SystemTime;

use parking_lot::Mutex;

/// The reflector's last failure, while nothing has worked since (see
/// [`ReflectorHealth::last_error`](super::ReflectorHealth::last_error)).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ReflectorError {
    /// The error (a server status keeps its code: `kube::Error::Api`).
    pub error: Arc<kube::Error>,
    /// When it happened.
    pub at: SystemTime,
    /// Failures in a row, this one included.
    pub consecutive: u32,
}

impl fmt::Display for ReflectorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({} failed rounds in a row)",
            self.error, self.consecutive
        )
    }
}

/// Shared between a reflector and whoever asks about it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Health(Arc<Mutex<Option<ReflectorError>>>);

impl Health {
    /// A round ended with `error`.
    pub(crate) fn failed(&self, error: kube::Error) {
        let mut last = self.0.lock();
        let consecutive = last.as_ref().map_or(0, |e| e.consecutive) + 1;
        *last = Some(ReflectorError {
            error: Arc::new(error),
            at: SystemTime::now(),
            consecutive,
        });
    }

    /// The reflector stored a full list or opened a watch: whatever failed before is over.
    pub(crate) fn recovered(&self) {
        let mut last = self.0.lock();
        if last.is_some() {
            *last = None;
        }
    }

    pub(crate) fn last_error(&self) -> Option<ReflectorError> {
        self.0.lock().clone()
    }
}
