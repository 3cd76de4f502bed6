//! Authentication and authorization in front of every request, as kube-apiserver's filters
//! chain them (`endpoints/filters/authentication.go`, `impersonation.go`, `authorization.go`):
//! who is asking (a client certificate, a bearer token from the token file or the TokenRequest
//! API, or anonymous), who they act as (impersonation headers, each checked with the
//! `impersonate` verb), then whether RBAC lets them (a 403 with kube-apiserver's message
//! otherwise). Off unless the builder asks for RBAC: then nothing here runs.
//!
//! - [`request_info`]: what a request asks (verb, resource, namespace, ...).
//! - [`rbac`]: the RBAC authorizer and rule resolver.
//! - [`bootstrap`]: the default cluster roles and bindings.
//! - [`escalation`]: RBAC's check that a role or binding grants nothing its writer lacks.
//! - [`tokens`]: ServiceAccount tokens.
//! - [`x509`]: the subject of a client certificate.
//! - [`reviews`]: SubjectAccessReview, SelfSubjectAccessReview, SelfSubjectRulesReview,
//!   SelfSubjectReview and TokenRequest.
pub mod bootstrap;
pub mod escalation;
pub mod rbac;
pub mod request_info;
pub mod reviews;
pub mod tokens;
pub mod x509;

use std::sync::Arc;

use http::header;
use serde_json::json;

use crate::auth_config::{ANONYMOUS, AUTHENTICATED, UNAUTHENTICATED, User};
use crate::http::Req;
use crate::state::Shared;
use crate::status::ApiError;
use request_info::Attributes;

/// The verified client certificate of a TLS connection: its subject's common name and
/// organizations (set by the listener on every request of the connection).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerCertificate {
    pub common_name: String,
    pub organizations: Vec<String>,
}

/// kube-apiserver's 401.
pub fn unauthorized() -> ApiError {
    ApiError::new(401, "Unauthorized", "Unauthorized")
}

pub fn now_unix() -> i64 {
    jiff::Timestamp::now().as_second()
}

/// Authenticates, impersonates and authorizes `req`: the user it runs as, or the 401 / 403 /
/// 400 to answer. `None` when authorization is off (everything allowed, no identity).
pub fn gate(
    shared: &Shared,
    req: &Req,
    peer: Option<&PeerCertificate>,
) -> Result<Option<Arc<User>>, ApiError> {
    if !shared.auth.rbac {
        if shared.audit.is_some() {
            // AlwaysAllow: nobody is refused, but who asked still goes on the audit event.
            let user = authenticate(shared, req, peer).ok();
            crate::audit::record(&req.audit, |r| r.user = user);
            audit_decision(req, true, "");
        }
        return Ok(None);
    }
    let user = authenticate(shared, req, peer)?;
    crate::audit::record(&req.audit, |r| r.user = Some(user.clone()));
    let impersonating = req.headers.contains_key("impersonate-user");
    let user = impersonate(shared, req, user)?;
    if impersonating {
        crate::audit::record(&req.audit, |r| r.impersonated = Some(user.clone()));
    }
    let attrs = request_info::read(&req.method, &req.path, &req.query);
    let decision = rbac::authorize(&shared.db.lock(), &user, &attrs);
    audit_decision(req, decision.allowed, &decision.reason);
    if !decision.allowed {
        return Err(forbidden(&user, &attrs, &decision.reason));
    }
    // Writing a role or binding: RBAC's escalation check on the object to be written (a
    // body that does not decode is left to the handler's 400).
    if attrs.api_group == "rbac.authorization.k8s.io"
        && matches!(attrs.verb.as_str(), "create" | "update")
        && let Ok(body) = crate::handlers::decode_body(req)
    {
        escalation::check(&shared.db.lock(), &user, &attrs, &body)?;
    }
    Ok(Some(Arc::new(user)))
}

/// The `authorizer` of the request's admission CEL: its checks go to RBAC as `user` (or the
/// ServiceAccount a check names), or are all allowed when authorization is off.
pub fn cel_authorizer(
    shared: &Arc<Shared>,
    user: Option<Arc<User>>,
    request: crate::admission::authz::Check,
) -> crate::admission::authz::Authorizer {
    use crate::admission::authz::{Authorizer, Check, Decision};
    if !shared.auth.rbac {
        return Authorizer::always_allow(request);
    }
    let shared = shared.clone();
    let authorize = move |c: &Check| -> Decision {
        let sa_user;
        let who = match &c.service_account {
            Some((ns, name)) => {
                sa_user = tokens::service_account_user(ns, name);
                Some(&sa_user)
            }
            None => user.as_deref(),
        };
        let Some(who) = who else {
            return Decision::default();
        };
        let attrs = match &c.path {
            Some(path) => Attributes {
                verb: c.verb.clone(),
                path: path.clone(),
                ..Default::default()
            },
            None => Attributes {
                resource_request: true,
                verb: c.verb.clone(),
                api_group: c.group.clone(),
                api_version: "*".into(),
                namespace: c.namespace.clone(),
                resource: c.resource.clone(),
                subresource: c.subresource.clone(),
                name: c.name.clone(),
                ..Default::default()
            },
        };
        let d = rbac::authorize(&shared.db.lock(), who, &attrs);
        Decision {
            allowed: d.allowed,
            reason: d.reason,
        }
    };
    Authorizer {
        authorize: Arc::new(authorize),
        request,
    }
}

/// The authorization filter's audit annotations.
fn audit_decision(req: &Req, allowed: bool, reason: &str) {
    let decision = if allowed { "allow" } else { "forbid" };
    crate::audit::annotate(&req.audit, "authorization.k8s.io/decision", decision);
    crate::audit::annotate(&req.audit, "authorization.k8s.io/reason", reason);
}

/// The union of kube-apiserver's authenticators: a client certificate, then a bearer token
/// (token file, then ServiceAccount tokens); with neither, anonymous if allowed. A bearer
/// token nobody knows is a 401 even with anonymous access on.
fn authenticate(
    shared: &Shared,
    req: &Req,
    peer: Option<&PeerCertificate>,
) -> Result<User, ApiError> {
    let auth = &shared.auth;
    if let Some(cert) = peer {
        return Ok(with_authenticated(User {
            name: cert.common_name.clone(),
            groups: cert.organizations.clone(),
            ..User::default()
        }));
    }
    let header = req.header(header::AUTHORIZATION).trim();
    if let Some((scheme, token)) = header.split_once(' ')
        && scheme.eq_ignore_ascii_case("bearer")
    {
        let token = token.trim();
        if token.is_empty() {
            return Err(unauthorized());
        }
        if let Some(u) = auth.tokens.get(token) {
            return Ok(with_authenticated(u.clone()));
        }
        let db = shared.db.lock();
        return tokens::authenticate(&auth.signing_key, &db, token, now_unix())
            .ok_or_else(unauthorized);
    }
    if auth.anonymous {
        return Ok(User {
            name: ANONYMOUS.into(),
            groups: vec![UNAUTHENTICATED.into()],
            ..User::default()
        });
    }
    Err(unauthorized())
}

/// `AuthenticatedGroupAdder`: every authenticated user is in `system:authenticated`.
fn with_authenticated(mut u: User) -> User {
    if !u.groups.iter().any(|g| g == AUTHENTICATED) {
        u.groups.push(AUTHENTICATED.into());
    }
    u
}

const IMPERSONATE_EXTRA: &str = "impersonate-extra-";

/// kube-apiserver's impersonation filter: each `Impersonate-*` header is a request of its own
/// (`impersonate` on `users`, `groups`, `serviceaccounts`, `uids` or `userextras/<key>`) the
/// real user must be allowed; the request then runs as the impersonated user.
fn impersonate(shared: &Shared, req: &Req, real: User) -> Result<User, ApiError> {
    let values = |name: &str| -> Vec<String> {
        req.headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .map(str::to_string)
            .collect()
    };
    let name = values("impersonate-user").into_iter().next();
    let groups = values("impersonate-group");
    let uid = values("impersonate-uid").into_iter().next();
    let mut extra = std::collections::BTreeMap::<String, Vec<String>>::new();
    for (k, v) in &req.headers {
        if let Some(key) = k.as_str().strip_prefix(IMPERSONATE_EXTRA)
            && let Ok(v) = v.to_str()
        {
            let key = crate::util::url_decode(key);
            extra.entry(key).or_default().push(v.to_string());
        }
    }
    if name.is_none() {
        if !groups.is_empty() || uid.is_some() || !extra.is_empty() {
            return Err(ApiError::bad_request(
                "requested impersonation without impersonating a user",
            ));
        }
        return Ok(real);
    }
    let name = name.unwrap_or_default();
    let mut checks = Vec::new();
    let check = |resource: &str, group: &str, sub: &str, ns: &str, name: &str| Attributes {
        resource_request: true,
        verb: "impersonate".into(),
        api_group: group.into(),
        resource: resource.into(),
        subresource: sub.into(),
        namespace: ns.into(),
        name: name.into(),
        ..Default::default()
    };
    let mut user_groups = groups.clone();
    match name
        .strip_prefix("system:serviceaccount:")
        .and_then(|r| r.split_once(':'))
    {
        Some((ns, sa)) => {
            checks.push(check("serviceaccounts", "", "", ns, sa));
            if groups.is_empty() {
                user_groups = tokens::service_account_user(ns, sa).groups;
            }
        }
        None => checks.push(check("users", "", "", "", &name)),
    }
    for g in &groups {
        checks.push(check("groups", "", "", "", g));
    }
    if let Some(uid) = &uid {
        checks.push(check("uids", "authentication.k8s.io", "", "", uid));
    }
    for (k, vs) in &extra {
        for v in vs {
            checks.push(check("userextras", "authentication.k8s.io", k, "", v));
        }
    }
    {
        let db = shared.db.lock();
        for a in &checks {
            let d = rbac::authorize(&db, &real, a);
            if !d.allowed {
                return Err(forbidden(&real, a, &d.reason));
            }
        }
    }
    if name != ANONYMOUS
        && !user_groups
            .iter()
            .any(|g| g == AUTHENTICATED || g == UNAUTHENTICATED)
    {
        user_groups.push(AUTHENTICATED.into());
    }
    Ok(User {
        name,
        uid: uid.unwrap_or_default(),
        groups: user_groups,
        extra,
    })
}

/// `forbiddenMessage`.
pub fn forbidden_message(user: &User, a: &Attributes) -> String {
    if !a.resource_request {
        return format!("User {:?} cannot {} path {:?}", user.name, a.verb, a.path);
    }
    let mut resource = a.resource.clone();
    if !a.subresource.is_empty() {
        resource = format!("{resource}/{}", a.subresource);
    }
    if a.namespace.is_empty() {
        format!(
            "User {:?} cannot {} resource {resource:?} in API group {:?} at the cluster scope",
            user.name, a.verb, a.api_group
        )
    } else {
        format!(
            "User {:?} cannot {} resource {resource:?} in API group {:?} in the namespace {:?}",
            user.name, a.verb, a.api_group, a.namespace
        )
    }
}

/// `responsewriters.Forbidden`: `errors.NewForbidden` of the request's group-resource and name,
/// with the authorizer's reason after the message.
pub fn forbidden(user: &User, a: &Attributes, reason: &str) -> ApiError {
    let mut why = forbidden_message(user, a);
    if !reason.is_empty() {
        why = format!("{why}: {reason}");
    }
    if !a.resource_request || a.resource.is_empty() {
        return ApiError::new(403, "Forbidden", format!("forbidden: {why}"))
            .with_details(json!({}));
    }
    ApiError::forbidden(&a.api_group, &a.resource, &a.name, &why)
}
