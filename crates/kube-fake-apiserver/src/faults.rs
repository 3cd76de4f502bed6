//! Fault injection and request recording: what is injected (read by the serving code), and the
//! recorded requests' type. The public handle that sets them, `Faults`, is in `lib.rs`, so this
//! module (held by `state::Shared`) names nothing above it.
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::Mutex;

/// One request as the server saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedRequest {
    /// Kubernetes verb: get, list, watch, create, update, patch, delete, deletecollection (or the
    /// lowercase HTTP method for non-resource paths).
    pub verb: String,
    /// HTTP method.
    pub method: String,
    /// Request path without the query string (`/api/v1/namespaces/default/configmaps`).
    pub path: String,
    /// Raw query string (empty when none).
    pub query: String,
    /// Request body as text (lossy UTF-8).
    pub body: String,
}

#[derive(Debug, Clone)]
struct FailRule {
    remaining: usize,
    code: u16,
    prefix: Option<String>,
}

#[derive(Default)]
pub(crate) struct FaultState {
    end_after: AtomicUsize,
    fail: Mutex<Vec<FailRule>>,
    latency: Mutex<Duration>,
    pub recording: AtomicBool,
    /// Lists (with a continue token or an exact resourceVersion) still to answer 410.
    expire_lists: AtomicUsize,
    /// Down: new connections are closed as soon as they are accepted.
    down: AtomicBool,
}

impl FaultState {
    /// Whether the server plays dead (connections refused).
    pub fn is_down(&self) -> bool {
        self.down.load(Ordering::Acquire)
    }

    pub fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::Release);
    }

    /// `Some(code)` when this request must fail by injection.
    pub fn take_failure(&self, path: &str) -> Option<u16> {
        let mut rules = self.fail.lock();
        let idx = rules.iter().position(|r| {
            r.remaining > 0 && r.prefix.as_deref().is_none_or(|p| path.starts_with(p))
        })?;
        let r = &mut rules[idx];
        r.remaining -= 1;
        let code = r.code;
        if r.remaining == 0 {
            rules.remove(idx);
        }
        Some(code)
    }
    pub fn latency(&self) -> Duration {
        *self.latency.lock()
    }
    /// Whether this list must answer 410 as if its snapshot were compacted (counts one down).
    pub fn take_list_expiry(&self) -> bool {
        self.expire_lists
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .is_ok()
    }
    /// Events after which every watch ends (0: never).
    pub fn end_after(&self) -> usize {
        self.end_after.load(Ordering::Relaxed)
    }
    pub fn set_end_after(&self, n: usize) {
        self.end_after.store(n, Ordering::Relaxed);
    }
    pub fn set_expire_lists(&self, n: usize) {
        self.expire_lists.store(n, Ordering::Relaxed);
    }
    /// The next `count` requests (whose path starts with `prefix`, if given) fail with `code`.
    pub fn push_failure(&self, count: usize, code: u16, prefix: Option<String>) {
        self.fail.lock().push(FailRule {
            remaining: count,
            code,
            prefix,
        });
    }
    pub fn clear_failures(&self) {
        self.fail.lock().clear();
    }
    pub fn set_latency(&self, latency: Duration) {
        *self.latency.lock() = latency;
    }
}
