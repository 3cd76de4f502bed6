//! Fault injection and request recording.
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::Mutex;

use crate::state::Shared;

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
}

impl FaultState {
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
}

/// Handle on the fault-injection controls of a running server. Cheap to clone.
#[derive(Clone)]
pub struct Faults {
    pub(crate) shared: Arc<Shared>,
}

impl std::fmt::Debug for Faults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Faults").finish_non_exhaustive()
    }
}

impl Faults {
    /// Ends every open watch now (the stream ends cleanly, as when the server closes it).
    pub fn drop_watches(&self) {
        self.shared.drop_watches();
    }

    /// Ends every watch after it has sent `n` events (bookmarks included); `None` turns this off.
    pub fn end_watches_after(&self, n: Option<usize>) {
        self.shared
            .faults
            .end_after
            .store(n.unwrap_or(0), Ordering::Relaxed);
    }

    /// Forgets the event history: the next watch (or list) from an older resourceVersion gets 410 Expired.
    pub fn compact(&self) {
        self.shared.db.lock().store.compact();
    }

    /// The next `n` lists that could expire answer 410 `Expired` as if their snapshot had been
    /// compacted: a list with a `continue` token gets the "continue parameter is too old" Status
    /// carrying the inconsistent-continue token in `metadata.continue`, a list at an exact
    /// resourceVersion (`resourceVersionMatch=Exact`, or a `limit` with a resourceVersion) gets
    /// "The resourceVersion for the provided list is too old.". Other lists are served and do not
    /// count. Lets a test drive a client's fallback (relist from scratch, or continue
    /// inconsistently) without compacting the history.
    pub fn expire_lists(&self, n: usize) {
        self.shared.faults.expire_lists.store(n, Ordering::Relaxed);
    }

    /// The next `count` requests fail with `code` (500, 429 with `Retry-After`, 503, ...).
    pub fn fail_next(&self, count: usize, code: u16) {
        self.shared.faults.fail.lock().push(FailRule {
            remaining: count,
            code,
            prefix: None,
        });
    }

    /// The next `count` requests whose path starts with `path_prefix` fail with `code`.
    pub fn fail_next_matching(&self, count: usize, code: u16, path_prefix: &str) {
        self.shared.faults.fail.lock().push(FailRule {
            remaining: count,
            code,
            prefix: Some(path_prefix.into()),
        });
    }

    /// Cancels pending injected failures.
    pub fn clear_failures(&self) {
        self.shared.faults.fail.lock().clear();
    }

    /// Delay added before every request is handled (`Duration::ZERO` to turn off).
    pub fn set_latency(&self, latency: Duration) {
        *self.shared.faults.latency.lock() = latency;
    }

    /// Simulates an API server restart: data is kept, every connection and watch is dropped, and with
    /// `lose_history` the event history is gone (watches from older resourceVersions get 410).
    pub fn restart(&self, lose_history: bool) {
        if lose_history {
            self.compact();
        }
        self.shared.drop_watches();
        self.shared.drop_connections();
    }

    /// Requests recorded so far (recording is on by default).
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.requests.lock().clone()
    }

    /// Forgets the requests recorded so far (recording goes on).
    pub fn clear_requests(&self) {
        self.shared.requests.lock().clear();
    }

    /// Turns request recording on or off.
    pub fn set_recording(&self, on: bool) {
        self.shared.faults.recording.store(on, Ordering::Relaxed);
    }
}
