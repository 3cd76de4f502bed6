//! The `AdmissionReview` a webhook is sent and what its answer must be, as
//! `admission/plugin/webhook/request` builds and verifies them (`CreateAdmissionObjects`,
//! `VerifyAdmissionResponse`).
use base64::Engine as _;
use serde_json::{Value, json};

use super::Attributes;

/// `admission.k8s.io/v1` or `v1beta1`: the first of a webhook's `admissionReviewVersions` the
/// server speaks (the configuration's validation makes sure there is one).
pub fn review_version(versions: &[String]) -> &'static str {
    match versions
        .iter()
        .find(|v| matches!(v.as_str(), "v1" | "v1beta1"))
    {
        Some(v) if v == "v1beta1" => "admission.k8s.io/v1beta1",
        _ => "admission.k8s.io/v1",
    }
}

fn gvk(group: &str, version: &str, kind: &str) -> Value {
    json!({"group": group, "version": version, "kind": kind})
}

fn gvr(group: &str, version: &str, resource: &str) -> Value {
    json!({"group": group, "version": version, "resource": resource})
}

/// The `request` of a review of `attrs`, with the objects seen through `version` (`object` and
/// `old` already converted to it). Also the `request` variable of admission CEL.
pub fn request(
    uid: &str,
    attrs: &Attributes,
    version: &str,
    object: Option<&Value>,
    old: Option<&Value>,
) -> Value {
    let res = &attrs.res;
    let (kind_group, kind_version, kind) = attrs.kind_seen(version);
    let (req_group, req_version, req_kind) = attrs.kind_seen(&attrs.version);
    let mut r = json!({
        "uid": uid,
        "kind": gvk(&kind_group, &kind_version, &kind),
        "resource": gvr(&res.group, version, &res.plural),
        "requestKind": gvk(&req_group, &req_version, &req_kind),
        "requestResource": gvr(&res.group, &attrs.version, &res.plural),
        "operation": attrs.operation.as_str(),
        "userInfo": attrs.user_info,
        "object": object.cloned().unwrap_or(Value::Null),
        "oldObject": old.cloned().unwrap_or(Value::Null),
        "dryRun": attrs.dry_run,
        "options": attrs.options,
    });
    if !attrs.subresource.is_empty() {
        r["subResource"] = json!(attrs.subresource);
        r["requestSubResource"] = json!(attrs.subresource);
    }
    if !attrs.name.is_empty() {
        r["name"] = json!(attrs.name);
    }
    if !attrs.namespace.is_empty() {
        r["namespace"] = json!(attrs.namespace);
    }
    if attrs.options.is_null() {
        r.as_object_mut().map(|m| m.remove("options"));
    }
    r
}

/// A review to send.
pub fn review(api_version: &str, request: Value) -> Value {
    json!({"kind": "AdmissionReview", "apiVersion": api_version, "request": request})
}

/// What a webhook answered, once checked.
#[derive(Debug, Default)]
pub struct Verdict {
    pub allowed: bool,
    /// `response.status` (a denial's `metav1.Status`).
    pub status: Option<Value>,
    /// The decoded JSON patch (mutating webhooks only).
    pub patch: Option<Vec<u8>>,
    pub warnings: Vec<String>,
    /// `response.auditAnnotations`.
    pub audit_annotations: Vec<(String, String)>,
}

/// Checks a webhook's answer as `VerifyAdmissionResponse` does; the error is its text.
pub fn verify(
    uid: &str,
    api_version: &str,
    mutating: bool,
    body: &[u8],
) -> Result<Verdict, String> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| format!("couldn't get version/kind; json parse error: {e}"))?;
    let got_version = v.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let got_kind = v.get("kind").and_then(Value::as_str).unwrap_or("");
    if got_version != api_version || got_kind != "AdmissionReview" {
        return Err(format!(
            "expected webhook response of {api_version}, Kind=AdmissionReview, got {got_version}, Kind={got_kind}"
        ));
    }
    let Some(r) = v.get("response").filter(|r| r.is_object()) else {
        return Err("webhook response was absent".into());
    };
    let got_uid = r.get("uid").and_then(Value::as_str).unwrap_or("");
    if got_uid != uid {
        return Err(format!("expected response.uid={uid:?}, got {got_uid:?}"));
    }
    let patch_type = r.get("patchType").and_then(Value::as_str).unwrap_or("");
    let patch = match r
        .get("patch")
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty())
    {
        Some(p) => Some(
            base64::engine::general_purpose::STANDARD
                .decode(p)
                .map_err(|e| format!("illegal base64 data in response.patch: {e}"))?,
        ),
        None => None,
    };
    // v1 requires the patch type with a patch; v1beta1 took a patch alone as a JSON patch.
    if api_version.ends_with("/v1") {
        if patch.is_some() && patch_type.is_empty() {
            return Err("webhook returned response.patch but not response.patchType".into());
        }
        if !patch_type.is_empty() && patch_type != "JSONPatch" {
            return Err(format!(
                "webhook returned invalid response.patchType of {patch_type:?}"
            ));
        }
    }
    if !mutating && patch.is_some() {
        return Err("validating webhook may not return response.patch".into());
    }
    if !mutating && !patch_type.is_empty() {
        return Err("validating webhook may not return response.patchType".into());
    }
    Ok(Verdict {
        allowed: r.get("allowed").and_then(Value::as_bool).unwrap_or(false),
        status: r.get("status").filter(|s| s.is_object()).cloned(),
        patch,
        warnings: crate::util::str_list(r.get("warnings")),
        audit_annotations: r
            .get("auditAnnotations")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
            .collect(),
    })
}
