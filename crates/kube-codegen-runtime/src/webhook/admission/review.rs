//! The `AdmissionReview` on the wire: a lean request (each object kept as its JSON text, so the
//! mutating webhook can diff against exactly what was sent) and the answer, written as
//! controller-runtime's `webhook.Webhook` writes it.

use base64::Engine as _;
use k8s_openapi::api::authentication::v1::UserInfo;
use kube::core::Status;
use kube::core::response::StatusSummary;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// A group, version and kind, as `AdmissionRequest.kind` carries them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct GroupVersionKind {
    /// API group (empty for the core group).
    #[serde(default)]
    pub group: String,
    /// Version.
    #[serde(default)]
    pub version: String,
    /// Kind.
    #[serde(default)]
    pub kind: String,
}

/// A group, version and resource (plural), as `AdmissionRequest.resource` carries them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct GroupVersionResource {
    /// API group (empty for the core group).
    #[serde(default)]
    pub group: String,
    /// Version.
    #[serde(default)]
    pub version: String,
    /// Resource (plural).
    #[serde(default)]
    pub resource: String,
}

/// The operation under admission.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// `CREATE`.
    Create,
    /// `UPDATE`.
    Update,
    /// `DELETE`.
    Delete,
    /// `CONNECT`.
    Connect,
}

impl Operation {
    fn parse(s: &str) -> Option<Operation> {
        Some(match s {
            "CREATE" => Operation::Create,
            "UPDATE" => Operation::Update,
            "DELETE" => Operation::Delete,
            "CONNECT" => Operation::Connect,
            _ => return None,
        })
    }

    /// The operation as the API writes it (`CREATE`).
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }
}

/// What the hooks see of the request (`admission.k8s.io/v1` `AdmissionRequest`), without the
/// objects, which they get typed.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AdmissionRequest {
    /// The request's uid, echoed in the answer.
    pub uid: String,
    /// The kind of the object as sent to the webhook (after conversion, for `Equivalent`).
    pub kind: GroupVersionKind,
    /// The resource as sent to the webhook.
    pub resource: GroupVersionResource,
    /// The subresource (`status`, `scale`), if any.
    pub sub_resource: Option<String>,
    /// The kind of the original request, when the server converted it.
    pub request_kind: Option<GroupVersionKind>,
    /// The resource of the original request.
    pub request_resource: Option<GroupVersionResource>,
    /// `metadata.name` (empty on a create with `generateName`).
    pub name: String,
    /// The namespace, for namespaced kinds.
    pub namespace: Option<String>,
    /// The operation.
    pub operation: Operation,
    /// Who asked.
    pub user_info: UserInfo,
    /// Whether the write is a dry run (a webhook with side effects must not make them).
    pub dry_run: bool,
    /// The operation's options (`CreateOptions`, `UpdateOptions`, `DeleteOptions`) as sent.
    pub options: Option<serde_json::Value>,
}

/// The review as decoded: everything borrowed from the body where it can be.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ReviewIn<'a> {
    #[serde(default, borrow)]
    pub api_version: Option<&'a str>,
    #[serde(default, borrow)]
    pub kind: Option<&'a str>,
    #[serde(default, borrow)]
    pub request: Option<RequestIn<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RequestIn<'a> {
    #[serde(default)]
    uid: String,
    #[serde(default)]
    kind: GroupVersionKind,
    #[serde(default)]
    resource: GroupVersionResource,
    #[serde(default)]
    sub_resource: Option<String>,
    #[serde(default)]
    request_kind: Option<GroupVersionKind>,
    #[serde(default)]
    request_resource: Option<GroupVersionResource>,
    #[serde(default)]
    name: String,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    operation: String,
    #[serde(default)]
    user_info: UserInfo,
    #[serde(default, borrow)]
    pub object: Option<&'a RawValue>,
    #[serde(default, borrow)]
    pub old_object: Option<&'a RawValue>,
    #[serde(default)]
    dry_run: Option<bool>,
    #[serde(default)]
    options: Option<serde_json::Value>,
}

impl RequestIn<'_> {
    pub(super) fn uid(&self) -> &str {
        &self.uid
    }

    /// The hooks' view, or the answer for an operation that is none of the four.
    pub(super) fn split(self) -> Result<AdmissionRequest, String> {
        let Some(operation) = Operation::parse(&self.operation) else {
            return Err(format!("unknown operation {:?}", self.operation));
        };
        Ok(AdmissionRequest {
            uid: self.uid,
            kind: self.kind,
            resource: self.resource,
            sub_resource: self.sub_resource.filter(|s| !s.is_empty()),
            request_kind: self.request_kind,
            request_resource: self.request_resource,
            name: self.name,
            namespace: self.namespace.filter(|s| !s.is_empty()),
            operation,
            user_info: self.user_info,
            dry_run: self.dry_run.unwrap_or(false),
            options: self.options,
        })
    }
}

/// Decodes a review body. Like controller-runtime, a review with no `apiVersion` and `kind` is
/// taken as `admission.k8s.io/v1`; `v1beta1` (the same types) is answered in `v1beta1`; any
/// other type is refused (answered with code 400 inside a v1 review).
pub(super) fn decode(body: &[u8]) -> Result<(ReviewIn<'_>, &str), String> {
    // serde would take a JSON array for a struct; Go's decoder does not.
    if body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
        return Err(
            "couldn't decode the request body as an admission.k8s.io AdmissionReview: a JSON array, not an object"
                .to_owned(),
        );
    }
    let review: ReviewIn<'_> = serde_json::from_slice(body).map_err(|e| {
        format!("couldn't decode the request body as an admission.k8s.io AdmissionReview: {e}")
    })?;
    let api_version = match (review.api_version, review.kind) {
        (None | Some(""), None | Some("")) => "admission.k8s.io/v1",
        (
            Some(v @ ("admission.k8s.io/v1" | "admission.k8s.io/v1beta1")),
            Some("AdmissionReview"),
        ) => v,
        (v, k) => {
            let (v, k) = (v.unwrap_or(""), k.unwrap_or(""));
            return Err(format!(
                "no kind {k:?} is registered for version {v:?}: expected an AdmissionReview of admission.k8s.io/v1 or v1beta1"
            ));
        }
    };
    Ok((review, api_version))
}

/// An answer before it is written: controller-runtime's `admission.Response`.
#[derive(Debug, Clone)]
pub(super) struct Answer {
    pub allowed: bool,
    pub status: Box<Status>,
    pub patch: Option<Vec<u8>>,
    pub warnings: Vec<String>,
}

impl Answer {
    /// `admission.Allowed("")`.
    pub fn allowed() -> Answer {
        Answer {
            allowed: true,
            status: Box::new(status(200, "", "")),
            patch: None,
            warnings: Vec::new(),
        }
    }

    /// `admission.Errored(code, err)`: not allowed, the code and message, no reason.
    pub fn errored(code: u16, message: impl Into<String>) -> Answer {
        Answer {
            allowed: false,
            status: Box::new(status(code, "", &message.into())),
            patch: None,
            warnings: Vec::new(),
        }
    }

    /// `admission.Denied(message)`: 403 Forbidden.
    pub fn denied(message: &str) -> Answer {
        Answer {
            allowed: false,
            status: Box::new(status(403, "Forbidden", message)),
            patch: None,
            warnings: Vec::new(),
        }
    }

    /// `validationResponseFromStatus(false, status)`: the status as it is.
    pub fn from_status(status: Box<Status>) -> Answer {
        Answer {
            allowed: false,
            status,
            patch: None,
            warnings: Vec::new(),
        }
    }

    pub fn with_warnings(mut self, warnings: Vec<String>) -> Answer {
        self.warnings = warnings;
        self
    }

    /// The review's JSON, in the request's `apiVersion`, with the request's `uid`.
    pub fn encode(self, api_version: &str, uid: &str) -> Vec<u8> {
        let patch = self
            .patch
            .as_deref()
            .map(|p| base64::engine::general_purpose::STANDARD.encode(p));
        let review = ReviewOut {
            api_version,
            kind: "AdmissionReview",
            response: ResponseOut {
                uid,
                allowed: self.allowed,
                status: &self.status,
                patch_type: patch.as_ref().map(|_| "JSONPatch"),
                patch,
                warnings: &self.warnings,
            },
        };
        // Plain data with string keys: serializing cannot fail.
        serde_json::to_vec(&review).unwrap_or_default()
    }
}

fn status(code: u16, reason: &str, message: &str) -> Status {
    Status {
        status: None,
        code,
        message: message.to_owned(),
        // Go writes the Status's `metadata: {}` always.
        metadata: Some(Default::default()),
        reason: reason.to_owned(),
        details: None,
    }
}

/// `status: Failure` on a status a hook returned without one, as apierrors' constructors set it.
pub(super) fn failure(mut s: Box<Status>) -> Box<Status> {
    if s.status.is_none() {
        s.status = Some(StatusSummary::Failure);
    }
    if s.metadata.is_none() {
        s.metadata = Some(Default::default());
    }
    s
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ReviewOut<'a> {
    api_version: &'a str,
    kind: &'a str,
    response: ResponseOut<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ResponseOut<'a> {
    uid: &'a str,
    allowed: bool,
    status: &'a Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    patch: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    patch_type: Option<&'static str>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    warnings: &'a [String],
}
