//! Admission as kube-apiserver 1.35 runs it on a write: MutatingAdmissionPolicies (when their
//! gate and API are on) and mutating admission webhooks (in configuration-name order, both
//! reinvoked once under `reinvocationPolicy: IfNeeded`), then the pipeline's own defaulting
//! and validation, then ValidatingAdmissionPolicies and validating webhooks. Webhook calls are HTTP and never run under the store lock:
//! `handlers::converted` runs a write in steps around them (`objects::AdmissionStep`).
//!
//! The configuration is read from the store at the start of every write ([`Config::load`]),
//! so a configuration created a moment ago applies at once. Writes to the
//! `admissionregistration.k8s.io` kinds themselves are exempt, as on the real server.
pub mod authz;
mod cel;
mod matching;
mod mutating;
pub mod policies;
mod reinvocation;
mod review;
pub mod typecheck;
mod webhooks;

use std::sync::Arc;

use serde_json::{Value, json};

use crate::registry::Resource;
use crate::state::{Db, Shared};
use crate::status::ApiError;
use crate::store::Key;

/// The operation admission is asked about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
    Delete,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
        }
    }
}

/// What admission judges (kube-apiserver's `admission.Attributes`): the objects as the
/// request's version shows them.
#[derive(Debug, Clone)]
pub struct Attributes {
    pub res: Arc<Resource>,
    /// The request's version.
    pub version: String,
    /// `status`, `scale` or empty.
    pub subresource: String,
    pub operation: Operation,
    /// The request's namespace (a namespace's own name for requests on a namespace).
    pub namespace: String,
    pub name: String,
    pub object: Option<Value>,
    pub old_object: Option<Value>,
    pub dry_run: bool,
    /// `CreateOptions`, `UpdateOptions`, `PatchOptions` or `DeleteOptions`.
    pub options: Value,
    pub user_info: Value,
    /// Where `Warning` headers go.
    pub warnings: Arc<parking_lot::Mutex<Vec<String>>>,
    /// The request's audit event (annotations).
    pub audit: crate::audit::Context,
    /// The `authorizer` its expressions see.
    pub authorizer: authz::Authorizer,
}

impl Attributes {
    pub fn is_namespace(&self) -> bool {
        self.res.group.is_empty() && self.res.plural == "namespaces"
    }

    /// The group, version and kind of the object in `version` (a `/scale` request's object is
    /// an `autoscaling/v1` Scale).
    pub fn kind_seen(&self, version: &str) -> (String, String, String) {
        if self.subresource == "scale" {
            return ("autoscaling".into(), "v1".into(), "Scale".into());
        }
        (
            self.res.group.clone(),
            version.to_string(),
            self.res.kind.clone(),
        )
    }
}

/// Who made the request, as `userInfo` shows it: the authenticated user when authentication is
/// on (`--authorization-mode=RBAC`); otherwise the user a client impersonates
/// (`Impersonate-User`, `Impersonate-Group` headers), else `system:admin` in `system:masters`,
/// as an admin kubeconfig would be.
pub fn user_info(
    authenticated: Option<&crate::auth_config::User>,
    headers: &http::HeaderMap,
) -> Value {
    // With authentication on, the user it settled on (after impersonation).
    if let Some(u) = authenticated {
        return crate::auth_config::user_info(Some(u));
    }
    let user = headers
        .get("impersonate-user")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    match user {
        Some(u) => {
            let mut groups: Vec<String> = headers
                .get_all("impersonate-group")
                .iter()
                .filter_map(|v| v.to_str().ok().map(str::to_string))
                .collect();
            groups.push("system:authenticated".into());
            json!({"username": u, "groups": groups})
        }
        None => json!({
            "username": "system:admin",
            "groups": ["system:masters", "system:authenticated"],
        }),
    }
}

/// The admission configuration in force for one request.
#[derive(Debug, Default)]
pub struct Config {
    mutating: Vec<webhooks::Hook>,
    validating: Vec<webhooks::Hook>,
    policies: Vec<policies::Bound>,
    /// MutatingAdmissionPolicies with each binding (none unless their API is served).
    mutating_policies: Vec<policies::Bound>,
    /// The params of each of `mutating_policies`.
    mutating_params: policies::Params,
    /// The request's namespace object (for `namespaceSelector` and `namespaceObject`).
    namespace: Option<Value>,
    /// The params of each of `policies`, read with the configuration.
    params: policies::Params,
}

const GROUP: &str = "admissionregistration.k8s.io";

impl Config {
    /// What may apply to a write of `res` (its subresource `sub`) in `ns`, from the store
    /// (`None`: no webhook or policy can reach it, or `res` is one of the exempt configuration
    /// kinds; the write then runs in one step, as without admission).
    pub fn load(db: &Db, res: &Resource, sub: &str, ns: Option<&str>) -> Option<Arc<Config>> {
        if res.group == GROUP {
            return None;
        }
        let (group, plural) = (res.group.as_str(), res.plural.as_str());
        let list = |plural: &str| -> Vec<Value> {
            let mut items: Vec<(Key, Value)> = db.store.list(GROUP, plural, None);
            // kube-apiserver orders configurations by name.
            items.sort_by(|a, b| a.0.name.cmp(&b.0.name));
            items.into_iter().map(|(_, v)| v).collect()
        };
        let mutating: Vec<webhooks::Hook> = list("mutatingwebhookconfigurations")
            .iter()
            .flat_map(|c| webhooks::parse(c, true))
            .filter(|h| h.could_match(group, plural, sub))
            .collect();
        let validating: Vec<webhooks::Hook> = list("validatingwebhookconfigurations")
            .iter()
            .flat_map(|c| webhooks::parse(c, false))
            .filter(|h| h.could_match(group, plural, sub))
            .collect();
        let policies: Vec<policies::Bound> = policies::bind(
            &list("validatingadmissionpolicies"),
            &list("validatingadmissionpolicybindings"),
        )
        .into_iter()
        .filter(|b| b.could_match(group, plural, sub))
        .collect();
        let mutating_policies: Vec<policies::Bound> = policies::bind(
            &list("mutatingadmissionpolicies"),
            &list("mutatingadmissionpolicybindings"),
        )
        .into_iter()
        .filter(|b| b.could_match(group, plural, sub))
        .collect();
        if mutating.is_empty()
            && validating.is_empty()
            && policies.is_empty()
            && mutating_policies.is_empty()
        {
            return None;
        }
        let namespace = ns.filter(|n| !n.is_empty()).and_then(|n| {
            db.store
                .get(&Key {
                    group: String::new(),
                    resource: "namespaces".into(),
                    namespace: String::new(),
                    name: n.to_string(),
                })
                .cloned()
        });
        let params = policies::Params::read(db, &policies, ns.unwrap_or(""));
        let mutating_params = policies::Params::read(db, &mutating_policies, ns.unwrap_or(""));
        Some(Arc::new(Config {
            mutating,
            validating,
            policies,
            mutating_policies,
            mutating_params,
            namespace,
            params,
        }))
    }

    /// Whether a mutating webhook or policy is configured (else the write needs no mutating
    /// step).
    pub fn mutates(&self) -> bool {
        !self.mutating.is_empty() || !self.mutating_policies.is_empty()
    }
}

/// Mutating admission, in kube-apiserver 1.35's plugin order: MutatingAdmissionPolicies, then
/// the mutating webhooks; when either changed the object, a second pass of both (the chain's
/// reinvocation), in which each reruns its `reinvocationPolicy: IfNeeded` invocations if the
/// object changed after they ran.
pub async fn mutate(
    shared: &Shared,
    config: &Config,
    attrs: &mut Attributes,
) -> Result<(), ApiError> {
    let mut policies = reinvocation::Reinvocation::default();
    let mut hooks = reinvocation::Reinvocation::default();
    let mut again = mutating::mutate(shared, config, attrs, &mut policies, false).await?;
    again |= webhooks::mutate(shared, config, attrs, &mut hooks, false).await?;
    if again {
        mutating::mutate(shared, config, attrs, &mut policies, true).await?;
        webhooks::mutate(shared, config, attrs, &mut hooks, true).await?;
    }
    Ok(())
}

/// Validating admission: the policies, then the webhooks (in parallel).
pub async fn validate(
    shared: &Shared,
    config: &Config,
    attrs: &Attributes,
) -> Result<(), ApiError> {
    policies::validate(shared, config, attrs).await?;
    webhooks::validate(shared, config, attrs).await
}
