//! `admissionregistration.k8s.io/v1`: webhook configurations, ValidatingAdmissionPolicies and
//! their bindings. Defaults from `pkg/apis/admissionregistration/v1/defaults.go`, validation
//! from `pkg/apis/admissionregistration/validation/validation.go` (CEL expressions are not
//! compiled or type-checked here).
use std::collections::HashSet;

use serde_json::{Value, json};

use super::field::{
    Path, duplicate, invalid, invalid_str, not_supported, q, required, string_list,
};
use super::json::{default, has, i, items, items_mut, obj_at, s};
use super::labelselector as sel;
use super::names::{dns1035_label, dns1123_subdomain};
use crate::schema::Cause;
use crate::util::str_of;

/// `SetDefaults_Rule`: `scope: "*"`.
fn default_rules(holder: &mut Value, key: &str) {
    for r in items_mut(holder, key) {
        if r.is_object() {
            default(r, "scope", json!("*"));
        }
    }
}

/// `SetDefaults_MatchResources`.
fn default_match_resources(m: &mut Value) {
    if !m.is_object() {
        return;
    }
    default(m, "matchPolicy", json!("Equivalent"));
    default(m, "namespaceSelector", json!({}));
    default(m, "objectSelector", json!({}));
    default_rules(m, "resourceRules");
    default_rules(m, "excludeResourceRules");
}

pub fn default_kind(kind: &str, o: &mut Value) {
    match kind {
        "ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration" => {
            for w in items_mut(o, "webhooks").filter(|w| w.is_object()) {
                default(w, "failurePolicy", json!("Fail"));
                default(w, "matchPolicy", json!("Equivalent"));
                default(w, "namespaceSelector", json!({}));
                default(w, "objectSelector", json!({}));
                default(w, "timeoutSeconds", json!(10));
                if kind == "MutatingWebhookConfiguration" {
                    default(w, "reinvocationPolicy", json!("Never"));
                }
                default_rules(w, "rules");
                if let Some(svc) = w
                    .pointer_mut("/clientConfig/service")
                    .filter(|v| v.is_object())
                {
                    default(svc, "port", json!(443));
                }
            }
        }
        "ValidatingAdmissionPolicy" | "MutatingAdmissionPolicy" => {
            let Some(spec) = obj_at(o, "spec") else {
                return;
            };
            default(spec, "failurePolicy", json!("Fail"));
            if let Some(m) = spec.get_mut("matchConstraints") {
                default_match_resources(m);
            }
            // `reinvocationPolicy` has no default: it is required (v1beta1 `defaults.go`).
        }
        "ValidatingAdmissionPolicyBinding" | "MutatingAdmissionPolicyBinding" => {
            let Some(spec) = obj_at(o, "spec") else {
                return;
            };
            if let Some(m) = spec.get_mut("matchResources") {
                default_match_resources(m);
            }
        }
        _ => {}
    }
}

/// `ValidatingAdmissionPolicyStrategy.PrepareForCreate`: an empty status (a
/// MutatingAdmissionPolicy has none in v1beta1).
pub fn prepare_create(kind: &str, o: &mut Value) {
    if kind == "ValidatingAdmissionPolicy" {
        o["status"] = json!({});
    }
}

fn has_wildcard(v: &Value, key: &str) -> bool {
    items(v, key).any(|x| x.as_str() == Some("*"))
}

/// `validateRule` (with sub-resources allowed).
fn rule(r: &Value, p: &Path, out: &mut Vec<Cause>) {
    let n = |k: &str| r.get(k).and_then(Value::as_array).map_or(0, Vec::len);
    if n("apiGroups") == 0 {
        out.push(required(&p.child("apiGroups"), ""));
    }
    if n("apiGroups") > 1 && has_wildcard(r, "apiGroups") {
        out.push(invalid(
            &p.child("apiGroups"),
            &string_list(r.get("apiGroups")),
            "if '*' is present, must not specify other API groups",
        ));
    }
    if n("apiVersions") == 0 {
        out.push(required(&p.child("apiVersions"), ""));
    }
    if n("apiVersions") > 1 && has_wildcard(r, "apiVersions") {
        out.push(invalid(
            &p.child("apiVersions"),
            &string_list(r.get("apiVersions")),
            "if '*' is present, must not specify other API versions",
        ));
    }
    for (idx, v) in items(r, "apiVersions").enumerate() {
        if v.as_str().unwrap_or_default().is_empty() {
            out.push(required(&p.child("apiVersions").index(idx), ""));
        }
    }
    if n("resources") == 0 {
        out.push(required(&p.child("resources"), ""));
    }
    // `validateResources`: empty entries and the wildcard combinations.
    let resources: Vec<&str> = items(r, "resources").filter_map(Value::as_str).collect();
    let mut double = false;
    let mut single = false;
    let mut plain = false;
    for (idx, res) in resources.iter().enumerate() {
        if res.is_empty() {
            out.push(required(&p.child("resources").index(idx), ""));
            continue;
        }
        double |= *res == "*/*";
        single |= *res == "*";
        if !res.contains('/') {
            plain |= *res != "*";
        }
    }
    if double && resources.len() > 1 {
        out.push(invalid(
            &p.child("resources"),
            &string_list(r.get("resources")),
            "if '*/*' is present, must not specify other resources",
        ));
    }
    if single && plain {
        out.push(invalid(
            &p.child("resources"),
            &string_list(r.get("resources")),
            "if '*' is present, must not specify other resources without subresources",
        ));
    }
    if has(r, "scope") {
        let sc = s(r, "scope");
        if !matches!(sc, "*" | "Cluster" | "Namespaced") {
            out.push(not_supported(
                &p.child("scope"),
                &q(sc),
                &["*", "Cluster", "Namespaced"],
            ));
        }
    }
}

/// `validateRuleWithOperations`.
fn rule_with_operations(r: &Value, p: &Path, out: &mut Vec<Cause>) {
    let ops: Vec<&str> = items(r, "operations").filter_map(Value::as_str).collect();
    if ops.is_empty() {
        out.push(required(&p.child("operations"), ""));
    }
    if ops.len() > 1 && ops.contains(&"*") {
        out.push(invalid(
            &p.child("operations"),
            &string_list(r.get("operations"))
                .replace("[]string", "[]admissionregistration.OperationType"),
            "if '*' is present, must not specify other operations",
        ));
    }
    for (idx, op) in ops.iter().enumerate() {
        if !matches!(*op, "*" | "CONNECT" | "CREATE" | "DELETE" | "UPDATE") {
            out.push(not_supported(
                &p.child("operations").index(idx),
                &q(op),
                &["*", "CONNECT", "CREATE", "DELETE", "UPDATE"],
            ));
        }
    }
    rule(r, p, out);
}

fn fully_qualified(name: &str, p: &Path, out: &mut Vec<Cause>) {
    if name.is_empty() {
        out.push(required(p, ""));
        return;
    }
    let errs = dns1123_subdomain(name);
    if !errs.is_empty() {
        out.push(invalid_str(p, name, &errs.join(",")));
    } else if name.split('.').count() < 3 {
        out.push(invalid_str(
            p,
            name,
            "should be a domain with at least three segments separated by dots",
        ));
    }
}

fn one_of(v: &Value, key: &str, p: &Path, valid: &[&str], out: &mut Vec<Cause>) {
    if has(v, key) {
        let x = s(v, key);
        if !valid.contains(&x) {
            out.push(not_supported(&p.child(key), &q(x), valid));
        }
    }
}

/// `ValidateWebhookURL` (https only).
fn webhook_url(url: &str, p: &Path, out: &mut Vec<Cause>) {
    const FORM: &str = "; desired format: https://host[/path]";
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    if scheme != "https" {
        out.push(invalid_str(
            p,
            scheme,
            &format!("'https' is the only allowed URL scheme{FORM}"),
        ));
    }
    let host_part = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let (user, host) = match host_part.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, host_part),
    };
    if host.is_empty() || scheme.is_empty() {
        out.push(invalid_str(
            p,
            if scheme.is_empty() { "" } else { host },
            &format!("host must be specified{FORM}"),
        ));
    }
    if let Some(u) = user {
        out.push(invalid_str(
            p,
            u,
            "user information is not permitted in the URL",
        ));
    }
    if let Some((_, frag)) = url.split_once('#')
        && !frag.is_empty()
    {
        out.push(invalid_str(
            p,
            frag,
            "fragments are not permitted in the URL",
        ));
    }
    if let Some((_, query)) = url.split('#').next().unwrap_or_default().split_once('?')
        && !query.is_empty()
    {
        out.push(invalid_str(
            p,
            query,
            "query parameters are not permitted in the URL",
        ));
    }
}

/// `ValidateWebhookService`.
fn webhook_service(svc: &Value, p: &Path, out: &mut Vec<Cause>) {
    if s(svc, "name").is_empty() {
        out.push(required(&p.child("name"), "service name is required"));
    }
    if s(svc, "namespace").is_empty() {
        out.push(required(
            &p.child("namespace"),
            "service namespace is required",
        ));
    }
    let port = i(svc, "port").unwrap_or(443);
    if !(1..=65535).contains(&port) {
        out.push(invalid(
            &p.child("port"),
            &port.to_string(),
            "port is not valid: must be between 1 and 65535, inclusive",
        ));
    }
    let path = s(svc, "path");
    if has(svc, "path") && !path.is_empty() && !path.starts_with('/') {
        out.push(invalid_str(&p.child("path"), path, "must start with a '/'"));
    }
}

fn match_conditions(w: &Value, p: &Path, out: &mut Vec<Cause>) {
    let mut names = HashSet::new();
    for (idx, mc) in items(w, "matchConditions").enumerate() {
        let mp = p.child("matchConditions").index(idx);
        let name = s(mc, "name");
        if name.is_empty() {
            out.push(required(&mp.child("name"), ""));
        } else {
            for m in super::names::qualified_name_errors(name) {
                out.push(invalid_str(&mp.child("name"), name, &m));
            }
            if !names.insert(name.to_string()) {
                out.push(duplicate(&mp.child("name"), &q(name)));
            }
        }
        if s(mc, "expression").trim().is_empty() {
            out.push(required(&mp.child("expression"), ""));
        }
    }
}

fn webhook(w: &Value, p: &Path, out: &mut Vec<Cause>) {
    fully_qualified(s(w, "name"), &p.child("name"), out);
    for (idx, r) in items(w, "rules").enumerate() {
        rule_with_operations(r, &p.child("rules").index(idx), out);
    }
    one_of(w, "failurePolicy", p, &["Fail", "Ignore"], out);
    one_of(w, "matchPolicy", p, &["Equivalent", "Exact"], out);
    if !has(w, "sideEffects") {
        out.push(required(
            &p.child("sideEffects"),
            "must specify one of None, NoneOnDryRun",
        ));
    } else {
        one_of(w, "sideEffects", p, &["None", "NoneOnDryRun"], out);
    }
    if let Some(t) = i(w, "timeoutSeconds")
        && !(1..=30).contains(&t)
    {
        out.push(invalid(
            &p.child("timeoutSeconds"),
            &t.to_string(),
            "the timeout value must be between 1 and 30 seconds",
        ));
    }
    sel::validate(
        w.get("namespaceSelector"),
        &p.child("namespaceSelector"),
        out,
    );
    sel::validate(w.get("objectSelector"), &p.child("objectSelector"), out);
    let cc = w.get("clientConfig").cloned().unwrap_or(json!({}));
    let cp = p.child("clientConfig");
    match (has(&cc, "url"), has(&cc, "service")) {
        (true, false) => webhook_url(s(&cc, "url"), &cp.child("url"), out),
        (false, true) => webhook_service(&cc["service"], &cp.child("service"), out),
        _ => out.push(required(&cp, "exactly one of url or service is required")),
    }
    match_conditions(w, p, out);
}

fn review_versions(w: &Value, p: &Path, out: &mut Vec<Cause>) {
    let vs: Vec<&str> = items(w, "admissionReviewVersions")
        .filter_map(Value::as_str)
        .collect();
    if vs.is_empty() {
        out.push(required(p, "must specify one of v1, v1beta1"));
        return;
    }
    let mut seen = HashSet::new();
    let mut accepted = false;
    for (idx, v) in vs.iter().enumerate() {
        if !seen.insert(*v) {
            out.push(invalid_str(&p.index(idx), v, "duplicate version"));
            continue;
        }
        for m in dns1035_label(v) {
            out.push(invalid_str(&p.index(idx), v, &m));
        }
        accepted |= matches!(*v, "v1" | "v1beta1");
    }
    if !accepted {
        out.push(invalid(
            p,
            &string_list(w.get("admissionReviewVersions")),
            "must include at least one of v1, v1beta1",
        ));
    }
}

/// `validateMatchResources` (policies and bindings).
fn match_resources(m: Option<&Value>, p: &Path, out: &mut Vec<Cause>) {
    let Some(m) = m.filter(|v| v.is_object()) else {
        return;
    };
    if !has(m, "matchPolicy") {
        out.push(required(&p.child("matchPolicy"), ""));
    } else {
        one_of(m, "matchPolicy", p, &["Equivalent", "Exact"], out);
    }
    for key in ["namespaceSelector", "objectSelector"] {
        if !has(m, key) {
            out.push(required(&p.child(key), ""));
        } else {
            sel::validate(m.get(key), &p.child(key), out);
        }
    }
    for key in ["resourceRules", "excludeResourceRules"] {
        for (idx, r) in items(m, key).enumerate() {
            let rp = p.child(key).index(idx);
            for (n, name) in items(r, "resourceNames").enumerate() {
                let name = name.as_str().unwrap_or_default();
                for msg in dns1123_subdomain(name) {
                    out.push(invalid_str(&rp.child("resourceNames").index(n), name, &msg));
                }
            }
            rule_with_operations(r, &rp, out);
        }
    }
}

fn policy(kind: &str, o: &Value, out: &mut Vec<Cause>) {
    let spec = o.get("spec").cloned().unwrap_or(json!({}));
    let sp = Path::new("spec");
    if !has(&spec, "failurePolicy") {
        out.push(required(&sp.child("failurePolicy"), ""));
    } else {
        one_of(&spec, "failurePolicy", &sp, &["Fail", "Ignore"], out);
    }
    if let Some(pk) = spec.get("paramKind").filter(|v| v.is_object()) {
        let pp = sp.child("paramKind");
        if s(pk, "kind").is_empty() {
            out.push(required(&pp.child("kind"), ""));
        }
        if s(pk, "apiVersion").is_empty() {
            out.push(required(&pp.child("apiVersion"), ""));
        }
    }
    match spec.get("matchConstraints").filter(|v| v.is_object()) {
        None => out.push(required(&sp.child("matchConstraints"), "")),
        Some(mc) => {
            match_resources(Some(mc), &sp.child("matchConstraints"), out);
            if items(mc, "resourceRules").next().is_none() {
                out.push(required(&sp.at("matchConstraints.resourceRules"), ""));
            }
            if kind == "MutatingAdmissionPolicy" {
                mutable_operations(mc, &sp.at("matchConstraints.resourceRules.operations"), out);
            }
        }
    }
    match_conditions(&spec, &sp, out);
    if kind == "MutatingAdmissionPolicy" {
        mutating_policy(&spec, &sp, out);
        return;
    }
    if items(&spec, "validations").next().is_none()
        && items(&spec, "auditAnnotations").next().is_none()
    {
        let msg = "validations or auditAnnotations must contain at least one item";
        out.push(required(&sp.child("validations"), msg));
        out.push(required(&sp.child("auditAnnotations"), msg));
        return;
    }
    for (idx, v) in items(&spec, "validations").enumerate() {
        let vp = sp.child("validations").index(idx);
        if s(v, "expression").trim().is_empty() {
            out.push(required(
                &vp.child("expression"),
                "expression is not specified",
            ));
        }
        let me = s(v, "messageExpression");
        if !me.is_empty() && me.trim().is_empty() {
            out.push(invalid_str(
                &vp.child("messageExpression"),
                me,
                "must be non-empty if specified",
            ));
        }
        let msg = s(v, "message");
        if !msg.is_empty() && msg.trim().is_empty() {
            out.push(invalid_str(
                &vp.child("message"),
                msg,
                "message must be non-empty if specified",
            ));
        } else if msg.trim().contains(['\n', '\r']) {
            out.push(invalid_str(
                &vp.child("message"),
                msg,
                "message must not contain line breaks",
            ));
        }
        if has(v, "reason") {
            let r = s(v, "reason");
            let ok = [
                "Unauthorized",
                "Forbidden",
                "Invalid",
                "RequestEntityTooLarge",
            ];
            if !ok.contains(&r) {
                out.push(not_supported(
                    &vp.child("reason"),
                    &q(r),
                    &[
                        "Forbidden",
                        "Invalid",
                        "RequestEntityTooLarge",
                        "Unauthorized",
                    ],
                ));
            }
        }
    }
    for (idx, a) in items(&spec, "auditAnnotations").enumerate() {
        let ap = sp.child("auditAnnotations").index(idx);
        if s(a, "key").is_empty() {
            out.push(required(&ap.child("key"), ""));
        }
        if s(a, "valueExpression").trim().is_empty() {
            out.push(required(
                &ap.child("valueExpression"),
                "valueExpression is not specified",
            ));
        }
    }
}

/// "It is only possible to mutate create and update requests": every operation of a mutating
/// policy's (or binding's) resource rules is one of `supportedMutatingOperations` (the path
/// carries no index, as the source's does not).
fn mutable_operations(m: &Value, p: &Path, out: &mut Vec<Cause>) {
    const SUPPORTED: &[&str] = &["*", "CONNECT", "CREATE", "UPDATE"];
    for r in items(m, "resourceRules") {
        for op in items(r, "operations").filter_map(Value::as_str) {
            if !SUPPORTED.contains(&op) {
                out.push(not_supported(p, &q(op), SUPPORTED));
            }
        }
    }
}

/// `validateVariable` without the CEL compile.
fn variables(spec: &Value, sp: &Path, out: &mut Vec<Cause>) {
    for (idx, v) in items(spec, "variables").enumerate() {
        let vp = sp.child("variables").index(idx);
        let name = s(v, "name");
        if name.trim().is_empty() {
            out.push(required(&vp.child("name"), "name is not specified"));
        } else if !kube_codegen_crd::cel_words::is_identifier(name) {
            out.push(invalid_str(
                &vp.child("name"),
                name,
                "name is not a valid CEL identifier",
            ));
        }
        if s(v, "expression").trim().is_empty() {
            out.push(required(
                &vp.child("expression"),
                "expression is not specified",
            ));
        }
    }
}

/// The rest of `validateMutatingAdmissionPolicySpec` (1.35): variables, each mutation's
/// `patchType` union (`validateMutation`; expressions not compiled here) and the required
/// `reinvocationPolicy`.
fn mutating_policy(spec: &Value, sp: &Path, out: &mut Vec<Cause>) {
    variables(spec, sp, out);
    if items(spec, "mutations").next().is_none() {
        out.push(required(
            &sp.child("mutations"),
            "mutations must contain at least one item",
        ));
    }
    for (idx, m) in items(spec, "mutations").enumerate() {
        let mp = sp.child("mutations").index(idx);
        let present = |k: &str| m.get(k).is_some_and(|v| !v.is_null());
        // Go's `%#v` of the internal struct the other member holds.
        let shown = |k: &str, go_type: &str| {
            format!(
                "admissionregistration.{go_type}{{Expression:{:?}}}",
                str_of(m.get(k).and_then(|v| v.get("expression")))
            )
        };
        let (this, this_type, other, other_type) = match s(m, "patchType") {
            "" => {
                out.push(required(&mp.child("patchType"), ""));
                continue;
            }
            "JSONPatch" => (
                "jsonPatch",
                "JSONPatch",
                "applyConfiguration",
                "ApplyConfiguration",
            ),
            "ApplyConfiguration" => (
                "applyConfiguration",
                "ApplyConfiguration",
                "jsonPatch",
                "JSONPatch",
            ),
            other => {
                out.push(not_supported(
                    &mp.child("patchType"),
                    &q(other),
                    &["ApplyConfiguration", "JSONPatch"],
                ));
                continue;
            }
        };
        if !present(this) {
            out.push(required(
                &mp.child(this),
                &format!("must be specified when patchType is {this_type}"),
            ));
        } else if s(&m[this], "expression").trim().is_empty() {
            out.push(required(&mp.child(this).child("expression"), ""));
        }
        if present(other) {
            out.push(invalid(
                &mp.child(other),
                &shown(other, other_type),
                &format!("must not be specified when patchType is {this_type}"),
            ));
        }
    }
    match s(spec, "reinvocationPolicy") {
        "" => out.push(required(&sp.child("reinvocationPolicy"), "")),
        "Never" | "IfNeeded" => {}
        other => out.push(not_supported(
            &sp.child("reinvocationPolicy"),
            &q(other),
            &["Never", "IfNeeded"],
        )),
    }
}

fn binding(kind: &str, o: &Value, out: &mut Vec<Cause>) {
    let spec = o.get("spec").cloned().unwrap_or(json!({}));
    let sp = Path::new("spec");
    let pn = s(&spec, "policyName");
    if pn.is_empty() {
        out.push(required(&sp.child("policyName"), ""));
    } else {
        for m in dns1123_subdomain(pn) {
            out.push(invalid_str(&sp.child("policyName"), pn, &m));
        }
    }
    if let Some(pr) = spec.get("paramRef").filter(|v| v.is_object()) {
        let pp = sp.child("paramRef");
        if has(pr, "name") && has(pr, "selector") {
            out.push(super::field::forbidden(
                &pp.child("name"),
                "name and selector are mutually exclusive",
            ));
        }
        if !has(pr, "name") && !has(pr, "selector") {
            out.push(required(&pp, "one of name or selector must be specified"));
        }
        if !has(pr, "parameterNotFoundAction") {
            out.push(required(&pp.child("parameterNotFoundAction"), ""));
        } else {
            one_of(pr, "parameterNotFoundAction", &pp, &["Allow", "Deny"], out);
        }
    }
    if kind == "MutatingAdmissionPolicyBinding" {
        // Spelled right here (`validateMutatingAdmissionPolicyBindingSpec`).
        let mp = sp.child("matchResources");
        match_resources(spec.get("matchResources"), &mp, out);
        if let Some(m) = spec.get("matchResources").filter(|v| v.is_object()) {
            mutable_operations(m, &mp.at("resourceRules.operations"), out);
        }
        return;
    }
    // The source spells this path `matchResouces`.
    match_resources(spec.get("matchResources"), &sp.child("matchResouces"), out);
    let vp = sp.child("validationActions");
    let actions: Vec<&str> = items(&spec, "validationActions")
        .filter_map(Value::as_str)
        .collect();
    let mut seen = HashSet::new();
    for (idx, a) in actions.iter().enumerate() {
        if !matches!(*a, "Audit" | "Deny" | "Warn") {
            out.push(not_supported(
                &vp.index(idx),
                &q(a),
                &["Audit", "Deny", "Warn"],
            ));
        }
        if !seen.insert(*a) {
            out.push(duplicate(&vp.index(idx), &q(a)));
        }
    }
    if seen.contains("Deny") && seen.contains("Warn") {
        out.push(invalid(
            &vp,
            &string_list(spec.get("validationActions")).replace("[]string", "[]admissionregistration.ValidationAction"),
            "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        ));
    }
    if seen.is_empty() {
        out.push(required(&vp, "at least one validation action is required"));
    }
}

pub fn validate(kind: &str, o: &Value, out: &mut Vec<Cause>) {
    match kind {
        "ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration" => {
            let mut names = HashSet::new();
            for (idx, w) in items(o, "webhooks").enumerate() {
                let p = Path::new("webhooks").index(idx);
                webhook(w, &p, out);
                review_versions(w, &p.child("admissionReviewVersions"), out);
                let name = s(w, "name");
                if !name.is_empty() && !names.insert(name.to_string()) {
                    out.push(duplicate(&p.child("name"), &q(name)));
                }
            }
        }
        "ValidatingAdmissionPolicy" | "MutatingAdmissionPolicy" => policy(kind, o, out),
        "ValidatingAdmissionPolicyBinding" | "MutatingAdmissionPolicyBinding" => {
            binding(kind, o, out)
        }
        _ => {}
    }
}
