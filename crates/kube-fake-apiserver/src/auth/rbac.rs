//! The RBAC authorizer (`plugin/pkg/auth/authorizer/rbac/rbac.go`) over the Roles,
//! ClusterRoles and bindings in the store, with the rule resolver of
//! `pkg/registry/rbac/validation/rule.go`: ClusterRoleBindings first, then the RoleBindings of
//! the request's namespace; a binding applies when a subject names the user, one of its groups,
//! or (`system:serviceaccount:<ns>:<name>`) its ServiceAccount.
use serde_json::Value;

use super::request_info::Attributes;
use crate::auth_config::{MASTERS, User};
use crate::state::Db;
use crate::util::{meta_str, str_list};

const GROUP: &str = "rbac.authorization.k8s.io";

/// A `PolicyRule`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rule {
    pub verbs: Vec<String>,
    pub api_groups: Vec<String>,
    pub resources: Vec<String>,
    pub resource_names: Vec<String>,
    pub non_resource_urls: Vec<String>,
}

impl Rule {
    pub fn from_json(r: &Value) -> Rule {
        Rule {
            verbs: str_list(r.get("verbs")),
            api_groups: str_list(r.get("apiGroups")),
            resources: str_list(r.get("resources")),
            resource_names: str_list(r.get("resourceNames")),
            non_resource_urls: str_list(r.get("nonResourceURLs")),
        }
    }

    /// `RuleAllows`.
    pub fn allows(&self, a: &Attributes) -> bool {
        let verb = has_or_star(&self.verbs, &a.verb);
        if !a.resource_request {
            return verb
                && self
                    .non_resource_urls
                    .iter()
                    .any(|u| url_matches(u, &a.path));
        }
        let combined = if a.subresource.is_empty() {
            a.resource.clone()
        } else {
            format!("{}/{}", a.resource, a.subresource)
        };
        verb && has_or_star(&self.api_groups, &a.api_group)
            && self
                .resources
                .iter()
                .any(|r| resource_matches(r, &combined, &a.subresource))
            && (self.resource_names.is_empty() || self.resource_names.contains(&a.name))
    }
}

fn has_or_star(list: &[String], want: &str) -> bool {
    list.iter().any(|x| x == "*" || x == want)
}

/// `ResourceMatches`: `*`, the exact `resource[/subresource]`, or `*/<subresource>`.
fn resource_matches(rule: &str, combined: &str, sub: &str) -> bool {
    rule == "*"
        || rule == combined
        || (!sub.is_empty()
            && rule.len() == sub.len() + 2
            && rule.starts_with("*/")
            && rule.ends_with(sub))
}

/// `NonResourceURLMatches`: `*`, the exact path, or a prefix ending in `*`.
fn url_matches(rule: &str, path: &str) -> bool {
    rule == "*"
        || rule == path
        || (rule.ends_with('*') && path.starts_with(rule.trim_end_matches('*')))
}

/// `serviceaccount.MatchesUsername`.
fn is_service_account(ns: &str, name: &str, user: &str) -> bool {
    user.strip_prefix("system:serviceaccount:")
        .and_then(|r| r.split_once(':'))
        .is_some_and(|(n, m)| n == ns && m == name)
}

/// The index of the first subject of `binding` naming `user` (`appliesTo`).
fn applies_to(user: &User, binding: &Value, namespace: &str) -> Option<usize> {
    binding.get("subjects")?.as_array()?.iter().position(|s| {
        let name = s.get("name").and_then(Value::as_str).unwrap_or("");
        match s.get("kind").and_then(Value::as_str).unwrap_or("") {
            "User" => user.name == name,
            "Group" => user.groups.iter().any(|g| g == name),
            "ServiceAccount" => {
                let ns = s
                    .get("namespace")
                    .and_then(Value::as_str)
                    .filter(|n| !n.is_empty());
                let ns = ns.unwrap_or(namespace);
                !ns.is_empty() && is_service_account(ns, name, &user.name)
            }
            _ => false,
        }
    })
}

/// `describeSubject`.
fn describe_subject(s: &Value, binding_ns: &str) -> String {
    let kind = s.get("kind").and_then(Value::as_str).unwrap_or("");
    let name = s.get("name").and_then(Value::as_str).unwrap_or("");
    if kind == "ServiceAccount" {
        let ns = s
            .get("namespace")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty());
        format!(
            "{kind} {:?}",
            format!("{name}/{}", ns.unwrap_or(binding_ns))
        )
    } else {
        format!("{kind} {name:?}")
    }
}

/// The rules a binding's `roleRef` names (`GetRoleReferenceRules`), or the lister's error.
pub fn role_rules(db: &Db, role_ref: &Value, namespace: &str) -> Result<Vec<Rule>, String> {
    let kind = role_ref.get("kind").and_then(Value::as_str).unwrap_or("");
    let name = role_ref.get("name").and_then(Value::as_str).unwrap_or("");
    let (resource, ns, singular) = match kind {
        "Role" => ("roles", namespace, "role"),
        "ClusterRole" => ("clusterroles", "", "clusterrole"),
        other => return Err(format!("unsupported role reference kind: {other:?}")),
    };
    let key = crate::store::Key {
        group: GROUP.into(),
        resource: resource.into(),
        namespace: ns.into(),
        name: name.into(),
    };
    let role = db
        .store
        .get(&key)
        .ok_or_else(|| format!("{singular}.{GROUP} {name:?} not found"))?;
    Ok(role
        .get("rules")
        .and_then(Value::as_array)
        .map(|rs| rs.iter().map(Rule::from_json).collect())
        .unwrap_or_default())
}

/// What the rule resolver hands its visitor: a rule and the binding it came from, or an error
/// (a binding naming a missing role).
pub enum Visit<'a> {
    Rule { source: &'a str, rule: &'a Rule },
    Error(String),
}

/// `VisitRulesFor`: calls `visit` with each rule that applies to `user` in `namespace`, or with
/// an error; stops when `visit` returns false.
pub fn visit_rules(db: &Db, user: &User, namespace: &str, visit: &mut dyn FnMut(Visit) -> bool) {
    for (_, crb) in db.store.list(GROUP, "clusterrolebindings", None) {
        let Some(i) = applies_to(user, &crb, "") else {
            continue;
        };
        match role_rules(db, &crb["roleRef"], "") {
            Err(e) => {
                if !visit(Visit::Error(e)) {
                    return;
                }
            }
            Ok(rules) => {
                let source = format!(
                    "ClusterRoleBinding {:?} of {} {:?} to {}",
                    meta_str(&crb, "name"),
                    crb["roleRef"]["kind"].as_str().unwrap_or(""),
                    crb["roleRef"]["name"].as_str().unwrap_or(""),
                    describe_subject(&crb["subjects"][i], "")
                );
                for r in &rules {
                    if !visit(Visit::Rule {
                        source: &source,
                        rule: r,
                    }) {
                        return;
                    }
                }
            }
        }
    }
    if namespace.is_empty() {
        return;
    }
    for (_, rb) in db.store.list(GROUP, "rolebindings", Some(namespace)) {
        let Some(i) = applies_to(user, &rb, namespace) else {
            continue;
        };
        match role_rules(db, &rb["roleRef"], namespace) {
            Err(e) => {
                if !visit(Visit::Error(e)) {
                    return;
                }
            }
            Ok(rules) => {
                let source = format!(
                    "RoleBinding {:?} of {} {:?} to {}",
                    format!("{}/{namespace}", meta_str(&rb, "name")),
                    rb["roleRef"]["kind"].as_str().unwrap_or(""),
                    rb["roleRef"]["name"].as_str().unwrap_or(""),
                    describe_subject(&rb["subjects"][i], namespace)
                );
                for r in &rules {
                    if !visit(Visit::Rule {
                        source: &source,
                        rule: r,
                    }) {
                        return;
                    }
                }
            }
        }
    }
}

/// An authorizer's answer: allowed or not, and its reason (kube-apiserver puts a denial's
/// reason after the 403 message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    pub reason: String,
}

/// kube-apiserver's chain with `--authorization-mode=RBAC`: the `system:masters` group is
/// allowed everything, then RBAC decides.
pub fn authorize(db: &Db, user: &User, a: &Attributes) -> Decision {
    if user.groups.iter().any(|g| g == MASTERS) {
        return Decision {
            allowed: true,
            reason: String::new(),
        };
    }
    let mut allowed_by = None;
    let mut errors = Vec::new();
    visit_rules(db, user, &a.namespace, &mut |v| match v {
        Visit::Error(e) => {
            errors.push(e);
            true
        }
        Visit::Rule { source, rule } if rule.allows(a) => {
            allowed_by = Some(source.to_string());
            false
        }
        Visit::Rule { .. } => true,
    });
    match allowed_by {
        Some(source) => Decision {
            allowed: true,
            reason: format!("RBAC: allowed by {source}"),
        },
        None => Decision {
            allowed: false,
            reason: aggregate_errors(&errors)
                .map(|e| format!("RBAC: {e}"))
                .unwrap_or_default(),
        },
    }
}

/// `utilerrors.NewAggregate(errs).Error()`: one error alone, several in `[a, b]`.
pub fn aggregate_errors(errors: &[String]) -> Option<String> {
    match errors {
        [] => None,
        [one] => Some(one.clone()),
        many => Some(format!("[{}]", many.join(", "))),
    }
}

/// Every rule that applies to `user` in `namespace` (`RulesFor`), and the errors met.
pub fn rules_for(db: &Db, user: &User, namespace: &str) -> (Vec<Rule>, Vec<String>) {
    let mut rules = Vec::new();
    let mut errors = Vec::new();
    if user.groups.iter().any(|g| g == MASTERS) {
        let star = || vec!["*".to_string()];
        rules.push(Rule {
            verbs: star(),
            api_groups: star(),
            resources: star(),
            ..Rule::default()
        });
        rules.push(Rule {
            verbs: star(),
            non_resource_urls: star(),
            ..Rule::default()
        });
    }
    visit_rules(db, user, namespace, &mut |v| {
        match v {
            Visit::Rule { rule, .. } => rules.push(rule.clone()),
            Visit::Error(e) => errors.push(e),
        }
        true
    });
    (rules, errors)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn attrs(verb: &str, group: &str, resource: &str, sub: &str, name: &str) -> Attributes {
        Attributes {
            resource_request: true,
            verb: verb.into(),
            api_group: group.into(),
            resource: resource.into(),
            subresource: sub.into(),
            name: name.into(),
            ..Default::default()
        }
    }

    #[test]
    fn rule_matching() {
        let r = Rule::from_json(
            &json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods", "*/status"], "resourceNames": ["a"]}),
        );
        assert!(r.allows(&attrs("get", "", "pods", "", "a")));
        assert!(!r.allows(&attrs("get", "", "pods", "", "b")));
        assert!(!r.allows(&attrs("list", "", "pods", "", "a")));
        assert!(!r.allows(&attrs("get", "apps", "pods", "", "a")));
        assert!(r.allows(&attrs("get", "", "deployments", "status", "a")));
        assert!(!r.allows(&attrs("get", "", "pods", "log", "a")));
        let star =
            Rule::from_json(&json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}));
        assert!(star.allows(&attrs("watch", "x.io", "foos", "scale", "")));
        let url =
            Rule::from_json(&json!({"verbs": ["get"], "nonResourceURLs": ["/apis/*", "/version"]}));
        let nr = |p: &str| Attributes {
            verb: "get".into(),
            path: p.into(),
            ..Default::default()
        };
        assert!(url.allows(&nr("/apis/apps")) && url.allows(&nr("/version")));
        assert!(!url.allows(&nr("/version/")) && !url.allows(&nr("/api")));
        assert!(!url.allows(&attrs("get", "", "pods", "", "")));
    }

    #[test]
    fn service_account_subjects_default_to_the_binding_namespace() {
        let user = User {
            name: "system:serviceaccount:ns:sa".into(),
            ..User::default()
        };
        let b = json!({"subjects": [{"kind": "User", "name": "x"}, {"kind": "ServiceAccount", "name": "sa"}]});
        assert_eq!(applies_to(&user, &b, "ns"), Some(1));
        assert_eq!(applies_to(&user, &b, "other"), None);
        assert_eq!(applies_to(&user, &b, ""), None);
        assert_eq!(
            describe_subject(&b["subjects"][1], "ns"),
            "ServiceAccount \"sa/ns\""
        );
    }
}
