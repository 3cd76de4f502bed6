//! The create-only review APIs kube-apiserver serves without a store: SubjectAccessReview,
//! LocalSubjectAccessReview, SelfSubjectAccessReview, SelfSubjectRulesReview
//! (`authorization.k8s.io/v1`; `kubectl auth can-i [--list]`), SelfSubjectReview and
//! TokenReview (`authentication.k8s.io/v1`; `kubectl auth whoami`), and the TokenRequest
//! subresource `serviceaccounts/<name>/token`.
use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::rbac::{self, Rule};
use super::request_info::Attributes;
use crate::auth_config::User;
use crate::http::router::Target;
use crate::http::{Req, json_response};
use crate::schema::Cause;
use crate::state::Shared;
use crate::status::ApiError;

const AUTHZ: &str = "authorization.k8s.io";
const AUTHN: &str = "authentication.k8s.io";

/// Whether `t` is one of the review APIs (or TokenRequest) this module answers.
pub fn serves(t: &Target) -> bool {
    match (t.group.as_str(), t.plural.as_str()) {
        (
            AUTHZ,
            "subjectaccessreviews" | "selfsubjectaccessreviews" | "selfsubjectrulesreviews",
        ) => t.namespace.is_none() && t.name.is_none(),
        (AUTHZ, "localsubjectaccessreviews") => t.namespace.is_some() && t.name.is_none(),
        (AUTHN, "selfsubjectreviews" | "tokenreviews") => t.namespace.is_none() && t.name.is_none(),
        ("", "serviceaccounts") => t.sub.as_deref() == Some("token"),
        _ => false,
    }
}

/// Answers a review (or TokenRequest) made by `user` (`None`: authorization is off, every
/// check is allowed).
pub fn answer(
    shared: &Shared,
    req: &Req,
    t: &Target,
    user: Option<&User>,
) -> Result<http::Response<crate::http::Body>, ApiError> {
    if t.version != "v1" {
        return Err(ApiError::path_not_found());
    }
    if req.method != http::Method::POST {
        return Err(ApiError::method_not_allowed());
    }
    let mut body = crate::handlers::decode_body(req)?;
    let spec = body.get("spec").cloned().unwrap_or(json!({}));
    let status = match t.plural.as_str() {
        "subjectaccessreviews" => access_review(shared, &spec, None, "SubjectAccessReview")?,
        "localsubjectaccessreviews" => {
            let ns = t.namespace.as_deref().unwrap_or("");
            access_review(shared, &spec, Some(ns), "LocalSubjectAccessReview")?
        }
        "selfsubjectaccessreviews" => self_access_review(shared, &spec, user)?,
        "selfsubjectrulesreviews" => rules_review(shared, &spec, user),
        "selfsubjectreviews" => json!({"userInfo": crate::auth_config::user_info(user)}),
        "tokenreviews" => token_review(shared, &spec),
        _ => return token_request(shared, t, body),
    };
    if let Some(m) = body.as_object_mut() {
        m.insert("status".into(), status);
        m.entry("metadata").or_insert(json!({}));
        m.insert("apiVersion".into(), json!(format!("{}/v1", t.group)));
    }
    Ok(json_response(201, &body))
}

fn str_at<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

/// `spec.resourceAttributes` or `spec.nonResourceAttributes` as authorizer attributes; the
/// 422 kube-apiserver answers when there are both or neither.
fn attributes(spec: &Value, kind: &str) -> Result<Attributes, ApiError> {
    let ra = spec.get("resourceAttributes").filter(|v| v.is_object());
    let nra = spec.get("nonResourceAttributes").filter(|v| v.is_object());
    let cause = |reason: &str, field: &str, message: &str| Cause {
        reason: reason.into(),
        field: field.into(),
        message: message.into(),
    };
    match (ra, nra) {
        (Some(ra), None) => Ok(Attributes {
            resource_request: true,
            verb: str_at(ra, "verb").into(),
            api_group: str_at(ra, "group").into(),
            api_version: str_at(ra, "version").into(),
            namespace: str_at(ra, "namespace").into(),
            resource: str_at(ra, "resource").into(),
            subresource: str_at(ra, "subresource").into(),
            name: str_at(ra, "name").into(),
            path: String::new(),
        }),
        (None, Some(nra)) => Ok(Attributes {
            verb: str_at(nra, "verb").into(),
            path: str_at(nra, "path").into(),
            ..Default::default()
        }),
        (Some(_), Some(_)) => Err(ApiError::invalid(
            AUTHZ,
            kind,
            "",
            &[cause(
                "FieldValueInvalid",
                "spec.nonResourceAttributes",
                "Invalid value: \"\": cannot be specified in combination with resourceAttributes",
            )],
        )),
        (None, None) => Err(ApiError::invalid(
            AUTHZ,
            kind,
            "",
            &[cause(
                "FieldValueRequired",
                "spec.resourceAttributes",
                "Required value: exactly one of nonResourceAttributes or resourceAttributes must be specified",
            )],
        )),
    }
}

/// An access review's `status` for `user` and `a`.
fn decide(shared: &Shared, user: Option<&User>, a: &Attributes) -> Value {
    let Some(user) = user.filter(|_| shared.auth.rbac) else {
        return json!({"allowed": true});
    };
    let d = rbac::authorize(&shared.db.lock(), user, a);
    let mut status = json!({"allowed": d.allowed});
    if !d.reason.is_empty() {
        status["reason"] = json!(d.reason);
    }
    status
}

fn access_review(
    shared: &Shared,
    spec: &Value,
    namespace: Option<&str>,
    kind: &str,
) -> Result<Value, ApiError> {
    let mut a = attributes(spec, kind)?;
    if let Some(ns) = namespace {
        if a.resource_request && a.namespace != ns {
            return Err(ApiError::bad_request(format!(
                "spec.resourceAttributes.namespace must match namespace: {ns}"
            )));
        }
        a.namespace = ns.to_string();
    }
    let user = User {
        name: str_at(spec, "user").into(),
        uid: str_at(spec, "uid").into(),
        groups: crate::util::str_list(spec.get("groups")),
        extra: spec
            .get("extra")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), crate::util::str_list(Some(v))))
                    .collect::<BTreeMap<_, _>>()
            })
            .unwrap_or_default(),
    };
    if user.name.is_empty() && user.groups.is_empty() {
        return Err(ApiError::invalid(
            AUTHZ,
            kind,
            "",
            &[Cause {
                reason: "FieldValueInvalid".into(),
                field: "spec.user".into(),
                message: "Invalid value: \"\": at least one of user or group must be specified"
                    .into(),
            }],
        ));
    }
    Ok(decide(shared, Some(&user), &a))
}

fn self_access_review(
    shared: &Shared,
    spec: &Value,
    user: Option<&User>,
) -> Result<Value, ApiError> {
    let a = attributes(spec, "SelfSubjectAccessReview")?;
    Ok(decide(shared, user, &a))
}

/// `RulesFor` as a SelfSubjectRulesReview's status.
fn rules_review(shared: &Shared, spec: &Value, user: Option<&User>) -> Value {
    let ns = str_at(spec, "namespace");
    let (rules, errors) = match user.filter(|_| shared.auth.rbac) {
        Some(u) => rbac::rules_for(&shared.db.lock(), u, ns),
        // AlwaysAllow's rules.
        None => (
            vec![
                Rule {
                    verbs: vec!["*".into()],
                    api_groups: vec!["*".into()],
                    resources: vec!["*".into()],
                    ..Rule::default()
                },
                Rule {
                    verbs: vec!["*".into()],
                    non_resource_urls: vec!["*".into()],
                    ..Rule::default()
                },
            ],
            vec![],
        ),
    };
    let mut resource_rules = Vec::new();
    let mut non_resource_rules = Vec::new();
    for r in rules {
        if !r.resources.is_empty() {
            let mut o = json!({"verbs": r.verbs});
            if !r.api_groups.is_empty() {
                o["apiGroups"] = json!(r.api_groups);
            }
            o["resources"] = json!(r.resources);
            if !r.resource_names.is_empty() {
                o["resourceNames"] = json!(r.resource_names);
            }
            resource_rules.push(o);
        }
        if !r.non_resource_urls.is_empty() {
            non_resource_rules
                .push(json!({"verbs": r.verbs, "nonResourceURLs": r.non_resource_urls}));
        }
    }
    let mut status = json!({
        "resourceRules": resource_rules,
        "nonResourceRules": non_resource_rules,
        "incomplete": false,
    });
    if let Some(e) = rbac::aggregate_errors(&errors) {
        status["evaluationError"] = json!(e);
    }
    status
}

/// A TokenReview: whether `spec.token` is a ServiceAccount token of this server or a static one.
fn token_review(shared: &Shared, spec: &Value) -> Value {
    let token = str_at(spec, "token");
    let user = shared.auth.tokens.get(token).cloned().or_else(|| {
        super::tokens::authenticate(
            &shared.auth.signing_key,
            &shared.db.lock(),
            token,
            super::now_unix(),
        )
    });
    match user {
        Some(u) => json!({"authenticated": true, "user": crate::auth_config::user_info(Some(&u)),
                          "audiences": [super::tokens::ISSUER]}),
        None => json!({"user": {}, "error": "invalid bearer token"}),
    }
}

/// `POST .../serviceaccounts/<name>/token`: a TokenRequest's token for an existing
/// ServiceAccount (`expirationSeconds` defaults to an hour and may not be under 10 minutes).
fn token_request(
    shared: &Shared,
    t: &Target,
    mut body: Value,
) -> Result<http::Response<crate::http::Body>, ApiError> {
    let ns = t.namespace.clone().unwrap_or_default();
    let name = t.name.clone().unwrap_or_default();
    let sa = shared
        .db
        .lock()
        .store
        .get(&crate::store::Key {
            group: String::new(),
            resource: "serviceaccounts".into(),
            namespace: ns.clone(),
            name: name.clone(),
        })
        .cloned()
        .ok_or_else(|| ApiError::not_found("", "serviceaccounts", &name))?;
    let spec = body.get("spec").cloned().unwrap_or(json!({}));
    let seconds = spec
        .get("expirationSeconds")
        .and_then(Value::as_i64)
        .unwrap_or(3600);
    if seconds < 600 {
        return Err(ApiError::invalid(
            AUTHN,
            "TokenRequest",
            &name,
            &[Cause {
                reason: "FieldValueInvalid".into(),
                field: "spec.expirationSeconds".into(),
                message: format!(
                    "Invalid value: {seconds}: may not specify a duration less than 10 minutes"
                ),
            }],
        ));
    }
    let audiences = match crate::util::str_list(spec.get("audiences")) {
        a if a.is_empty() => vec![super::tokens::ISSUER.to_string()],
        a => a,
    };
    let now = super::now_unix();
    let token = super::tokens::issue(
        &shared.auth.signing_key,
        &ns,
        &name,
        crate::util::meta_str(&sa, "uid"),
        &audiences,
        now,
        seconds,
    );
    let expires = jiff::Timestamp::from_second(now + seconds)
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default();
    body["apiVersion"] = json!("authentication.k8s.io/v1");
    body["kind"] = json!("TokenRequest");
    body["metadata"] =
        json!({"name": name, "namespace": ns, "creationTimestamp": crate::util::now()});
    body["spec"] = json!({"audiences": audiences, "expirationSeconds": seconds, "boundObjectRef": spec.get("boundObjectRef").cloned().unwrap_or(Value::Null)});
    body["status"] = json!({"token": token, "expirationTimestamp": expires});
    Ok(json_response(201, &body))
}
