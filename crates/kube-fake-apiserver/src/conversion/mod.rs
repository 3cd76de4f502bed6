//! `spec.conversion` of custom resources, as apiextensions-apiserver's converter applies it.
//!
//! `strategy: None` only rewrites `apiVersion` (`objects::view`). `strategy: Webhook` sends the
//! objects that are not yet in the desired version to the CRD's webhook in one `ConversionReview`
//! ([`convert`]), checks the answer as the real converter does (count, `apiVersion`, kind,
//! name/namespace/uid, labels and annotations), restores every other piece of metadata from the
//! original, and prunes the result with the target version's schema. The HTTPS call itself is
//! [`client`]. Failures are the real server's 500 with its message (see ARCHITECTURE.md for which
//! wordings were observed and which come from the source).
//!
//! Conversion is async (an HTTP call) and so never runs under the store lock: the handlers call
//! it before and after the write pipeline (`handlers::converted`).
pub mod client;

use std::net::SocketAddr;
use std::sync::Arc;

use base64::Engine as _;
use serde_json::{Map, Value, json};

use crate::registry::Resource;
use crate::state::Shared;
use crate::status::ApiError;
use crate::util::str_of;

/// How the server reaches a webhook given by `clientConfig.service`: `(namespace, name, port)`
/// to the address to connect to (`None`: the service does not exist).
pub type ResolveFn = dyn Fn(&str, &str, u16) -> Option<SocketAddr> + Send + Sync;

/// The service resolver a server was built with (none: every service is missing).
#[derive(Clone, Default)]
pub struct Resolver(pub Option<Arc<ResolveFn>>);

impl std::fmt::Debug for Resolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Resolver(Some(..))"
        } else {
            "Resolver(None)"
        })
    }
}

/// Where the webhook is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `clientConfig.url`.
    Url(String),
    /// `clientConfig.service`.
    Service {
        namespace: String,
        name: String,
        path: String,
        port: u16,
    },
}

/// The `ConversionReview` version sent: the first of `conversionReviewVersions` the server knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReviewVersion {
    V1,
    V1beta1,
    /// None listed is `v1` or `v1beta1`.
    Unsupported,
}

impl ReviewVersion {
    fn api_version(self) -> &'static str {
        match self {
            ReviewVersion::V1beta1 => "apiextensions.k8s.io/v1beta1",
            _ => "apiextensions.k8s.io/v1",
        }
    }
}

/// A CRD's `strategy: Webhook` configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Webhook {
    pub target: Target,
    /// `caBundle`, decoded from base64 (PEM). `None`: the system roots.
    pub ca_bundle: Option<Vec<u8>>,
    pub review: ReviewVersion,
}

/// The webhook of a (validated) CRD whose `spec.conversion.strategy` is `Webhook`.
pub fn from_crd(crd: &Value) -> Option<Arc<Webhook>> {
    let conv = crd.pointer("/spec/conversion")?;
    if str_of(conv.get("strategy")) != "Webhook" {
        return None;
    }
    let hook = conv.get("webhook").cloned().unwrap_or(json!({}));
    let cc = hook.get("clientConfig").cloned().unwrap_or(json!({}));
    let target = if let Some(svc) = cc.get("service").filter(|s| s.is_object()) {
        Target::Service {
            namespace: str_of(svc.get("namespace")).to_string(),
            name: str_of(svc.get("name")).to_string(),
            path: str_of(svc.get("path")).to_string(),
            port: svc
                .get("port")
                .and_then(Value::as_u64)
                .and_then(|p| u16::try_from(p).ok())
                .unwrap_or(443),
        }
    } else {
        Target::Url(str_of(cc.get("url")).to_string())
    };
    let ca_bundle = cc
        .get("caBundle")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(|s| {
            base64::engine::general_purpose::STANDARD
                .decode(s)
                .unwrap_or_default()
        });
    let versions: Vec<String> = crate::util::str_list(hook.get("conversionReviewVersions"));
    let review = versions
        .iter()
        .find_map(|v| match v.as_str() {
            "v1" => Some(ReviewVersion::V1),
            "v1beta1" => Some(ReviewVersion::V1beta1),
            _ => None,
        })
        .unwrap_or(if versions.is_empty() {
            ReviewVersion::V1
        } else {
            ReviewVersion::Unsupported
        });
    Some(Arc::new(Webhook {
        target,
        ca_bundle,
        review,
    }))
}

/// Go's `schema.GroupVersionKind.String()`: `group/version, Kind=Kind`.
fn gvk(obj: &Value) -> String {
    format!(
        "{}, Kind={}",
        str_of(obj.get("apiVersion")),
        str_of(obj.get("kind"))
    )
}

/// A conversion failure: the real server answers it as a 500 `Status` with no reason.
fn failed(message: String) -> ApiError {
    ApiError::new(500, "", message)
}

/// Converts one object of `res` to `version` (see [`convert`]).
pub async fn convert_one(
    shared: &Shared,
    res: &Resource,
    obj: Value,
    version: &str,
) -> Result<Value, ApiError> {
    Ok(convert(shared, res, vec![obj], version)
        .await?
        .into_iter()
        .next()
        .unwrap_or_default())
}

/// Whether reading or writing `res` may call a conversion webhook.
pub fn by_webhook(res: &Resource) -> bool {
    res.conversion.is_some()
}

/// Converts `objects` of `res` to its `version`, in one review for all of them, as the real
/// converter does: objects already in the desired version are not sent and stay as they are; the
/// others come back with their metadata restored (but for labels and annotations) and are pruned
/// with the version's schema. Without a webhook only `apiVersion` changes.
pub async fn convert(
    shared: &Shared,
    res: &Resource,
    mut objects: Vec<Value>,
    version: &str,
) -> Result<Vec<Value>, ApiError> {
    let desired = res.api_version(version);
    let Some(hook) = res.conversion.clone() else {
        for o in &mut objects {
            o["apiVersion"] = json!(desired);
        }
        return Ok(objects);
    };
    let todo: Vec<usize> = (0..objects.len())
        .filter(|&i| str_of(objects[i].get("apiVersion")) != desired)
        .collect();
    let Some(&first) = todo.first() else {
        return Ok(objects);
    };
    let from = gvk(&objects[first]);
    if hook.review == ReviewVersion::Unsupported {
        return Err(failed("no supported conversion review versions".into()));
    }
    let uid = crate::util::uid();
    let review = json!({
        "apiVersion": hook.review.api_version(),
        "kind": "ConversionReview",
        "request": {
            "uid": uid,
            "desiredAPIVersion": desired,
            "objects": todo.iter().map(|&i| &objects[i]).collect::<Vec<_>>(),
        },
    });
    let body = serde_json::to_vec(&review).unwrap_or_default();
    let answer = client::post(shared, &hook, body)
        .await
        .map_err(|cause| failed(format!("conversion webhook for {from} failed: {cause}")))?;
    let converted = converted_objects(hook.review, &uid, &answer)
        .map_err(|cause| failed(format!("conversion webhook for {from} failed: {cause}")))?;
    if converted.len() != todo.len() {
        return Err(failed(format!(
            "conversion webhook for {from} returned {} objects, expected {}",
            converted.len(),
            todo.len()
        )));
    }
    let schema = res.version(version).and_then(|v| v.schema.clone());
    for (n, (&i, mut out)) in todo.iter().zip(converted).enumerate() {
        // The real converter increments its index before it formats these messages.
        let at = n + 1;
        let original = &objects[i];
        let invalid = |why: String| {
            failed(format!(
                "conversion webhook for {from} returned invalid converted object at index {at}: {why}"
            ))
        };
        if !out.is_object() {
            return Err(failed(format!(
                "conversion webhook for {from} returned invalid converted object at index {n}: \
                 Object 'Kind' is missing in '{out}'"
            )));
        }
        let got = str_of(out.get("apiVersion"));
        if got != desired {
            return Err(invalid(format!(
                "invalid groupVersion (expected {desired}, received {got})"
            )));
        }
        let (want_kind, got_kind) = (str_of(original.get("kind")), str_of(out.get("kind")));
        if want_kind != got_kind {
            return Err(invalid(format!(
                "invalid kind (expected {want_kind}, received {got_kind})"
            )));
        }
        for (field, what) in [("name", "name"), ("namespace", "namespace"), ("uid", "UID")] {
            let (a, b) = (meta_of(original, field), meta_of(&out, field));
            if a != b {
                return Err(invalid(format!("must have the same {what}: {a} != {b}")));
            }
        }
        restore_object_meta(original, &mut out).map_err(|why| {
            failed(format!(
                "conversion webhook for {from} returned invalid metadata in object at index {at}: {why}"
            ))
        })?;
        if let Some(s) = &schema {
            s.prune(&mut out);
        }
        objects[i] = out;
    }
    Ok(objects)
}

fn meta_of<'a>(obj: &'a Value, field: &str) -> &'a str {
    str_of(obj.pointer(&format!("/metadata/{field}")))
}

/// `getConvertedObjectsFromResponse`: the converted objects of a well-formed, successful answer,
/// or the cause the real server reports.
fn converted_objects(review: ReviewVersion, uid: &str, body: &[u8]) -> Result<Vec<Value>, String> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| format!("couldn't get version/kind; json parse error: {e}"))?;
    if !v.is_object() {
        return Err(format!(
            "couldn't get version/kind; json parse error: json: cannot unmarshal {} into Go value of type struct {{ APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }}",
            go_type(&v)
        ));
    }
    if review == ReviewVersion::V1 {
        let got = gvk(&v);
        if got != "apiextensions.k8s.io/v1, Kind=ConversionReview" {
            return Err(format!(
                "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got {got}"
            ));
        }
    }
    let Some(resp) = v.get("response").filter(|r| r.is_object()) else {
        return Err("no response provided".into());
    };
    if review == ReviewVersion::V1 {
        let got = str_of(resp.get("uid"));
        if got != uid {
            return Err(format!("expected response.uid={uid:?}, got {got:?}"));
        }
    }
    let status = str_of(resp.pointer("/result/status"));
    if status != "Success" {
        let message = str_of(resp.pointer("/result/message"));
        if !message.is_empty() {
            return Err(message.to_string());
        }
        return Err(format!(
            "response.result.status was '{status}', not 'Success'"
        ));
    }
    Ok(resp
        .get("convertedObjects")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default())
}

fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Array(_) => "array",
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "bool",
        _ => "null",
    }
}

/// `restoreObjectMeta`: the original's metadata, with the converted object's labels and
/// annotations (which must be valid).
fn restore_object_meta(original: &Value, converted: &mut Value) -> Result<(), String> {
    let response_meta = match converted.get("metadata") {
        None => return Err("missing metadata in converted object".into()),
        Some(Value::Object(m)) => m.clone(),
        Some(other) => {
            return Err(format!(
                "invalid metadata of type {} in converted object",
                go_value_type(other)
            ));
        }
    };
    let mut meta: Map<String, Value> = original
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for field in ["labels", "annotations"] {
        match response_meta.get(field) {
            None | Some(Value::Null) => {
                meta.remove(field);
            }
            Some(Value::Object(m)) => {
                let mut pairs = Vec::new();
                for (k, v) in m {
                    match v.as_str() {
                        Some(s) => pairs.push((k.clone(), s.to_string())),
                        None => {
                            return Err(format!(
                                "invalid metadata.{field} of type {} in converted object",
                                go_value_type(&Value::Object(m.clone()))
                            ));
                        }
                    }
                }
                let errs = if field == "labels" {
                    label_errors(&pairs)
                } else {
                    annotation_errors(&pairs)
                };
                if !errs.is_empty() {
                    return Err(aggregate(&errs));
                }
                meta.insert(field.into(), Value::Object(m.clone()));
            }
            Some(other) => {
                return Err(format!(
                    "invalid metadata.{field} of type {} in converted object",
                    go_value_type(other)
                ));
            }
        }
    }
    converted["metadata"] = Value::Object(meta);
    Ok(())
}

/// The Go type an unstructured value decodes to, as `%T` prints it.
fn go_value_type(v: &Value) -> &'static str {
    match v {
        Value::Object(_) => "map[string]interface {}",
        Value::Array(_) => "[]interface {}",
        Value::String(_) => "string",
        Value::Number(n) if n.is_i64() || n.is_u64() => "int64",
        Value::Number(_) => "float64",
        Value::Bool(_) => "bool",
        Value::Null => "<nil>",
    }
}

/// `utilerrors.NewAggregate(...).Error()`: one message as is, several in brackets.
fn aggregate(errs: &[String]) -> String {
    match errs {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// `metav1validation.ValidateLabels` on `metadata.labels`.
fn label_errors(pairs: &[(String, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (k, v) in pairs {
        for e in crate::selector::qualified_name_errors(k) {
            out.push(format!("metadata.labels: Invalid value: {k:?}: {e}"));
        }
        for e in crate::selector::label_value_errors(v) {
            out.push(format!("metadata.labels: Invalid value: {v:?}: {e}"));
        }
    }
    out
}

/// `apivalidation.ValidateAnnotations` on `metadata.annotations` (keys, and the 256 KiB total).
fn annotation_errors(pairs: &[(String, String)]) -> Vec<String> {
    let mut out = Vec::new();
    let mut total = 0usize;
    for (k, v) in pairs {
        for e in crate::selector::qualified_name_errors(&k.to_lowercase()) {
            out.push(format!("metadata.annotations: Invalid value: {k:?}: {e}"));
        }
        total += k.len() + v.len();
    }
    if total > 256 * 1024 {
        out.push(format!(
            "metadata.annotations: Too long: may not be more than {} bytes",
            256 * 1024
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_webhook_crd_is_read() {
        let crd = json!({"spec": {"conversion": {"strategy": "Webhook", "webhook": {
            "conversionReviewVersions": ["v2", "v1beta1", "v1"],
            "clientConfig": {"caBundle": "UEVN", "service": {"namespace": "ns", "name": "svc", "path": "/convert"}}}}}});
        let w = from_crd(&crd).unwrap();
        assert_eq!(w.review, ReviewVersion::V1beta1);
        assert_eq!(w.ca_bundle.as_deref(), Some(&b"PEM"[..]));
        assert_eq!(
            w.target,
            Target::Service {
                namespace: "ns".into(),
                name: "svc".into(),
                path: "/convert".into(),
                port: 443
            }
        );
        assert!(from_crd(&json!({"spec": {"conversion": {"strategy": "None"}}})).is_none());
    }

    #[test]
    fn responses_are_checked_as_the_server_does() {
        let ok = |b: Value| converted_objects(ReviewVersion::V1, "u", b.to_string().as_bytes());
        assert_eq!(
            ok(
                json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                      "response": {"uid": "x", "result": {"status": "Success"}}})
            )
            .unwrap_err(),
            "expected response.uid=\"u\", got \"x\""
        );
        assert_eq!(
            ok(
                json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                      "response": {"uid": "u", "result": {"status": "Failure"}}})
            )
            .unwrap_err(),
            "response.result.status was 'Failure', not 'Success'"
        );
        assert_eq!(
            ok(json!({"apiVersion": "v1", "kind": "Status"})).unwrap_err(),
            "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got v1, Kind=Status"
        );
        assert!(
            converted_objects(ReviewVersion::V1, "u", b"nope")
                .unwrap_err()
                .starts_with("couldn't get version/kind; json parse error: ")
        );
    }

    #[test]
    fn metadata_comes_from_the_original_but_labels_and_annotations() {
        let original =
            json!({"metadata": {"name": "a", "uid": "1", "labels": {"x": "1"}, "generation": 3}});
        let mut out =
            json!({"metadata": {"name": "a", "generation": 9, "labels": {"y": "2"}}, "spec": {}});
        restore_object_meta(&original, &mut out).unwrap();
        assert_eq!(
            out,
            json!({"metadata": {"name": "a", "uid": "1", "labels": {"y": "2"}, "generation": 3}, "spec": {}})
        );
        let mut bad = json!({"metadata": {"labels": {"a b": "c"}}});
        let e = restore_object_meta(&original, &mut bad).unwrap_err();
        assert!(
            e.starts_with("metadata.labels: Invalid value: \"a b\": name part must consist"),
            "{e}"
        );
        let mut none = json!({"spec": {}});
        assert_eq!(
            restore_object_meta(&original, &mut none).unwrap_err(),
            "missing metadata in converted object"
        );
    }
}
