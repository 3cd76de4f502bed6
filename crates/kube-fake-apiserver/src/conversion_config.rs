//! What a CRD's `spec.conversion` says and how `clientConfig.service` names are reached: plain
//! data, kept by the registry (`Resource::conversion`) and the server state (`Shared::resolver`).
//! The converter that acts on it (the `ConversionReview` call and its checks) is `conversion`,
//! above the write pipeline; this module sits at the bottom, so the registry and the state need
//! nothing from above them.
use std::net::SocketAddr;
use std::sync::Arc;

use base64::Engine as _;
use serde_json::{Value, json};

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
    pub fn api_version(self) -> &'static str {
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
    let (target, ca_bundle) = client_config(hook.get("clientConfig"));
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

/// A webhook's `clientConfig` (a CRD's conversion webhook or an admission webhook: the same
/// `WebhookClientConfig`): where it is and the CA that verifies it.
pub fn client_config(cc: Option<&Value>) -> (Target, Option<Vec<u8>>) {
    let cc = cc.cloned().unwrap_or(json!({}));
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
    (target, ca_bundle)
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
}
