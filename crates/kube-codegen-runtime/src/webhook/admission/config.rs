//! The webhook configurations for the admission webhooks served, as controller-gen writes them
//! from kubebuilder's `+kubebuilder:webhook` markers: one webhook per kind and direction, named
//! `m<kind>-<version>.kb.io` / `v<kind>-<version>.kb.io` (kind in lower case), in the
//! configurations `mutating-webhook-configuration` and `validating-webhook-configuration`,
//! with `sideEffects: None`, `admissionReviewVersions: [v1]`, `failurePolicy: Fail`, and
//! rules for the kind's group, version and plural (`matchPolicy` left to the server's default,
//! `Equivalent`, so writes through another served version are converted to the webhook's).

use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhook, MutatingWebhookConfiguration, RuleWithOperations, ServiceReference,
    ValidatingWebhook, ValidatingWebhookConfiguration, WebhookClientConfig,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::Registration;

/// How the API server reaches the webhook server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientConfig {
    /// A Service in the cluster (the path of each webhook is added).
    Service {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// Its port (`None`: the server's default, 443).
        port: Option<i32>,
    },
    /// A base URL (`https://host:port`); each webhook's path is appended.
    Url(String),
}

/// What the configurations are written with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigOptions {
    /// How the server reaches the webhooks.
    pub client: ClientConfig,
    /// The PEM CA bundle that signed the serving certificate (`None`: left for a CA injector).
    pub ca_bundle: Option<Vec<u8>>,
    /// The MutatingWebhookConfiguration's name (controller-gen: `mutating-webhook-configuration`).
    pub mutating_name: String,
    /// The ValidatingWebhookConfiguration's name (`validating-webhook-configuration`).
    pub validating_name: String,
    /// `failurePolicy` (`Fail`, kubebuilder's default; or `Ignore`).
    pub failure_policy: String,
}

impl ConfigOptions {
    /// Reached through Service `namespace/name` (kubebuilder's `webhook-service`).
    pub fn service(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        ConfigOptions::with(ClientConfig::Service {
            namespace: namespace.into(),
            name: name.into(),
            port: None,
        })
    }

    /// Reached at `base` (`https://127.0.0.1:9443`).
    pub fn url(base: impl Into<String>) -> Self {
        ConfigOptions::with(ClientConfig::Url(base.into()))
    }

    fn with(client: ClientConfig) -> Self {
        ConfigOptions {
            client,
            ca_bundle: None,
            mutating_name: "mutating-webhook-configuration".into(),
            validating_name: "validating-webhook-configuration".into(),
            failure_policy: "Fail".into(),
        }
    }

    /// The CA bundle (PEM).
    pub fn ca_bundle(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.ca_bundle = Some(pem.into());
        self
    }

    fn client_config(&self, path: &str) -> WebhookClientConfig {
        let mut c = WebhookClientConfig {
            ca_bundle: self.ca_bundle.clone().map(ByteString),
            ..WebhookClientConfig::default()
        };
        match &self.client {
            ClientConfig::Service {
                namespace,
                name,
                port,
            } => {
                c.service = Some(ServiceReference {
                    namespace: namespace.clone(),
                    name: name.clone(),
                    path: Some(path.to_owned()),
                    port: *port,
                })
            }
            ClientConfig::Url(base) => {
                c.url = Some(format!("{}{path}", base.trim_end_matches('/')));
            }
        }
        c
    }
}

/// kubebuilder's webhook name: `m<kind>-<version>.kb.io` or `v...`.
fn webhook_name(r: &Registration) -> String {
    let prefix = if r.mutating { 'm' } else { 'v' };
    format!("{prefix}{}-{}.kb.io", r.kind.to_lowercase(), r.version)
}

fn rules(r: &Registration) -> Vec<RuleWithOperations> {
    vec![RuleWithOperations {
        api_groups: Some(vec![r.group.clone()]),
        api_versions: Some(vec![r.version.clone()]),
        operations: Some(r.operations.iter().map(|o| o.as_str().to_owned()).collect()),
        resources: Some(vec![r.plural.clone()]),
        scope: None,
    }]
}

/// The configurations for `registrations` (see
/// [`WebhookServer::registrations`](crate::webhook::WebhookServer::registrations)), each
/// `None` when no webhook of its direction is served. Webhooks are sorted by name, as
/// controller-gen sorts them.
pub fn configurations(
    registrations: &[Registration],
    options: &ConfigOptions,
) -> (
    Option<MutatingWebhookConfiguration>,
    Option<ValidatingWebhookConfiguration>,
) {
    let mut regs: Vec<&Registration> = registrations.iter().collect();
    regs.sort_by_key(|r| webhook_name(r));
    let meta = |name: &str| ObjectMeta {
        name: Some(name.to_owned()),
        ..ObjectMeta::default()
    };
    let mutating: Vec<MutatingWebhook> = regs
        .iter()
        .filter(|r| r.mutating)
        .map(|r| MutatingWebhook {
            name: webhook_name(r),
            admission_review_versions: vec!["v1".into()],
            client_config: options.client_config(&r.path),
            failure_policy: Some(options.failure_policy.clone()),
            rules: Some(rules(r)),
            side_effects: "None".into(),
            ..MutatingWebhook::default()
        })
        .collect();
    let validating: Vec<ValidatingWebhook> = regs
        .iter()
        .filter(|r| !r.mutating)
        .map(|r| ValidatingWebhook {
            name: webhook_name(r),
            admission_review_versions: vec!["v1".into()],
            client_config: options.client_config(&r.path),
            failure_policy: Some(options.failure_policy.clone()),
            rules: Some(rules(r)),
            side_effects: "None".into(),
            ..ValidatingWebhook::default()
        })
        .collect();
    (
        (!mutating.is_empty()).then(|| MutatingWebhookConfiguration {
            metadata: meta(&options.mutating_name),
            webhooks: Some(mutating),
        }),
        (!validating.is_empty()).then(|| ValidatingWebhookConfiguration {
            metadata: meta(&options.validating_name),
            webhooks: Some(validating),
        }),
    )
}
