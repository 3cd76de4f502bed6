//! Audit logging as kube-apiserver's `--audit-policy-file` and `--audit-log-path` do it: every
//! request the policy gives a level is written as `audit.k8s.io/v1` `Event` JSON lines, at
//! `RequestReceived` and `ResponseComplete` (and `ResponseStarted` for a watch, whose
//! `ResponseComplete` is written when its stream ends), less the policy's omitted stages, with
//! the user (and the impersonated one), the object reference, the response status, the request
//! and response bodies at the `Request` / `RequestResponse` levels, and the annotations
//! authorization and admission add (the decision and its reason; ValidatingAdmissionPolicies'
//! audit annotations and `validation_failure`; webhooks' `auditAnnotations` and mutation
//! records).
//!
//! This module holds the policy, the log and each request's [`Record`]; `http::audit` writes
//! a request's events.
//!
//! Left out: a request refused by authentication (a 401) is not logged, the source IP is always
//! `127.0.0.1`, protobuf answers are not decoded for `responseObject`, and there is no log
//! rotation (ARCHITECTURE.md lists the rest).
pub mod policy;

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::Value;

use crate::auth_config::User;
use policy::Policy;

/// What the request's handling learns for its audit event: who asked (and who they act as) and
/// the annotations authorization and admission add. Shared by the request's steps.
#[derive(Debug, Default)]
pub struct Record {
    pub user: Option<User>,
    pub impersonated: Option<User>,
    /// Each with the least level of the events it goes on.
    pub annotations: BTreeMap<String, (String, policy::Level)>,
}

/// A request's [`Record`]; `None` when no audit log is on, so nothing is recorded or built.
pub type Context = Option<Arc<Mutex<Record>>>;

/// A request's context: recording only when `auditor` is on.
pub fn context(auditor: Option<&Arc<Auditor>>) -> Context {
    auditor.map(|_| Arc::default())
}

/// Runs `f` on the record, if there is one.
pub fn record(ctx: &Context, f: impl FnOnce(&mut Record)) {
    if let Some(r) = ctx {
        f(&mut r.lock());
    }
}

/// Adds an annotation to the request's event (`AddAuditAnnotation`: the first value of a key
/// stays).
pub fn annotate(ctx: &Context, key: &str, value: &str) {
    annotate_with(ctx, key, policy::Level::Metadata, || value.to_string());
}

/// Adds an annotation that goes only on events of `level` or more
/// (`AddAnnotationWithLevel`); its value is made only when there is a record.
pub fn annotate_with(
    ctx: &Context,
    key: &str,
    level: policy::Level,
    value: impl FnOnce() -> String,
) {
    record(ctx, |r| {
        r.annotations
            .entry(key.to_string())
            .or_insert_with(|| (value(), level));
    });
}

/// The policy and where its events go.
pub struct Auditor {
    policy: Policy,
    sink: Mutex<Box<dyn Write + Send>>,
}

impl std::fmt::Debug for Auditor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Auditor").finish_non_exhaustive()
    }
}

impl Auditor {
    /// A policy file's text and the log path (`-`: standard output), opened for appending.
    pub fn open(policy: &str, path: &std::path::Path) -> Result<Auditor, String> {
        let policy = Policy::parse(policy)?;
        let sink: Box<dyn Write + Send> = if path.as_os_str() == "-" {
            Box::new(std::io::stdout())
        } else {
            Box::new(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .map_err(|e| format!("opening the audit log {}: {e}", path.display()))?,
            )
        };
        Ok(Auditor {
            policy,
            sink: Mutex::new(sink),
        })
    }

    /// Appends one event.
    pub fn write(&self, event: &Value) {
        let mut line = serde_json::to_vec(event).unwrap_or_default();
        line.push(b'\n');
        let mut sink = self.sink.lock();
        // A log that cannot be written loses the event, as the real backend drops it.
        let _ = sink.write_all(&line).and_then(|_| sink.flush());
    }

    /// The policy's decision for a request by `user`.
    pub fn decide(&self, user: &User, request: &policy::Request) -> policy::Decision {
        self.policy.decide(user, request)
    }
}
