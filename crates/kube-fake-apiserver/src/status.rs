//! `Status` error bodies exactly as the Kubernetes API server renders them.
use serde_json::{Value, json};

use crate::schema::Cause;

/// An API error: HTTP code plus the `Status` object the server returns for it.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub code: u16,
    pub reason: String,
    pub message: String,
    /// `details` of the Status (`None` renders no `details` key).
    pub details: Option<Value>,
    /// Extra response headers (e.g. `Retry-After`).
    pub retry_after: Option<u64>,
    /// `metadata.continue` of the Status (the inconsistent-continue token of an expired list).
    /// Boxed: one pointer keeps every `Result<_, ApiError>` small (clippy's `result_large_err`).
    #[allow(clippy::box_collection)]
    pub list_continue: Option<Box<String>>,
}

/// `foos.example.com` or `configmaps` (core group) as the server prints a group-resource.
pub fn qualified(group: &str, plural: &str) -> String {
    if group.is_empty() {
        plural.to_string()
    } else {
        format!("{plural}.{group}")
    }
}

impl ApiError {
    pub fn new(code: u16, reason: &str, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason: reason.to_string(),
            message: message.into(),
            details: None,
            retry_after: None,
            list_continue: None,
        }
    }

    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    pub fn to_status(&self) -> Value {
        let mut s = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(d) = &self.details {
            s["details"] = d.clone();
        }
        if let Some(c) = &self.list_continue {
            s["metadata"] = json!({"continue": c});
        }
        if self.reason.is_empty()
            && let Some(m) = s.as_object_mut()
        {
            m.remove("reason");
        }
        s
    }

    fn resource_details(group: &str, plural: &str, name: &str) -> Value {
        let mut d = json!({"name": name, "kind": plural});
        if !group.is_empty() {
            d["group"] = json!(group);
        }
        if name.is_empty() {
            d.as_object_mut().map(|m| m.remove("name"));
        }
        d
    }

    pub fn not_found(group: &str, plural: &str, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", qualified(group, plural)),
        )
        .with_details(Self::resource_details(group, plural, name))
    }

    /// The generic 404 for paths no route serves.
    pub fn path_not_found() -> Self {
        Self::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
        .with_details(json!({}))
    }

    pub fn already_exists(group: &str, plural: &str, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", qualified(group, plural)),
        )
        .with_details(Self::resource_details(group, plural, name))
    }

    pub fn conflict(group: &str, plural: &str, name: &str, why: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": {why}",
                qualified(group, plural)
            ),
        )
        .with_details(Self::resource_details(group, plural, name))
    }

    /// 403 as `errors.NewForbidden` renders it (no name: `<resource> is forbidden: ...`).
    pub fn forbidden(group: &str, plural: &str, name: &str, why: &str) -> Self {
        let what = qualified(group, plural);
        let message = if name.is_empty() {
            format!("{what} is forbidden: {why}")
        } else {
            format!("{what} \"{name}\" is forbidden: {why}")
        };
        Self::new(403, "Forbidden", message)
            .with_details(Self::resource_details(group, plural, name))
    }

    pub fn stale(group: &str, plural: &str, name: &str) -> Self {
        Self::conflict(
            group,
            plural,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 422 Invalid; `kind` is the Kind (not the plural), as `errors.NewInvalid` prints it.
    pub fn invalid(group: &str, kind: &str, name: &str, causes: &[Cause]) -> Self {
        let gk = if group.is_empty() {
            kind.to_string()
        } else {
            format!("{kind}.{group}")
        };
        let rendered: Vec<String> = causes
            .iter()
            .map(|c| {
                if c.field.is_empty() {
                    c.message.clone()
                } else {
                    format!("{}: {}", c.field, c.message)
                }
            })
            .collect();
        let summary = if rendered.len() == 1 {
            rendered[0].clone()
        } else {
            format!("[{}]", rendered.join(", "))
        };
        let mut details = json!({"name": name, "kind": kind});
        if !group.is_empty() {
            details["group"] = json!(group);
        }
        details["causes"] = Value::Array(
            causes
                .iter()
                .map(|c| json!({"reason": c.reason, "message": c.message, "field": c.field}))
                .collect(),
        );
        Self::new(
            422,
            "Invalid",
            format!("{gk} \"{name}\" is invalid: {summary}"),
        )
        .with_details(details)
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    pub fn unsupported_media_type(accepted: &[&str]) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: {}",
                accepted.join(", ")
            ),
        )
    }

    pub fn method_not_allowed() -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )
        .with_details(json!({}))
    }

    pub fn not_acceptable(message: impl Into<String>) -> Self {
        Self::new(406, "NotAcceptable", message)
    }

    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    pub fn too_old(requested: u64, oldest: u64) -> Self {
        Self::expired(format!("too old resource version: {requested} ({oldest})"))
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(
            500,
            "InternalError",
            format!("Internal error occurred: {}", message.into()),
        )
        .with_details(json!({"causes": [{"message": "injected fault"}]}))
    }

    /// An error the client should retry after one second (`Retry-After` header and details).
    fn retry_after(code: u16, reason: &str, message: &str) -> Self {
        let mut e = Self::new(code, reason, message).with_details(json!({"retryAfterSeconds": 1}));
        e.retry_after = Some(1);
        e
    }

    /// A fault-injected error for `code` (500, 429, 503 or anything else).
    pub fn injected(code: u16) -> Self {
        match code {
            429 => Self::retry_after(
                429,
                "TooManyRequests",
                "Too many requests, please try again later.",
            ),
            503 => Self::retry_after(
                503,
                "ServiceUnavailable",
                "the server is currently unable to handle the request",
            ),
            500 => Self::internal("injected fault"),
            504 => Self::new(
                504,
                "Timeout",
                "the server was unable to return a response in the time allotted",
            ),
            other => Self::new(other, "", "injected fault"),
        }
    }

    /// Shorthand for a single-cause 422 on a non-resource kind such as `ListOptions.meta.k8s.io`.
    pub fn invalid_options(kind: &str, field: &str, reason: &str, message: &str) -> Self {
        let cause = Cause {
            reason: reason.into(),
            message: message.into(),
            field: field.into(),
        };
        Self::invalid("meta.k8s.io", kind, "", &[cause])
    }
}

/// The success `Status` some deletes return.
pub fn success_status(group: &str, plural: &str, name: &str, uid: &str) -> Value {
    let mut d = json!({"name": name, "kind": plural, "uid": uid});
    if !group.is_empty() {
        d["group"] = json!(group);
    }
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": d})
}
