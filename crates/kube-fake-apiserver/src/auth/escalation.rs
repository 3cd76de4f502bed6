//! RBAC's escalation check on writes of Roles, ClusterRoles and their bindings
//! (`pkg/registry/rbac/{role,clusterrole,rolebinding,clusterrolebinding}/policybased`,
//! `pkg/registry/rbac/validation/rule.go` `ConfirmNoEscalation` and `Covers`): a user may only
//! write a role whose rules they hold themselves, and bind a role whose rules they hold, unless
//! they are in `system:masters` or allowed `escalate` (roles) / `bind` (bindings) on it. Runs
//! after authorization allowed the create or update; the body is the object to be written.
use serde_json::Value;

use super::rbac::{self, Rule};
use super::request_info::Attributes;
use crate::auth_config::{MASTERS, User};
use crate::state::Db;
use crate::status::ApiError;

const GROUP: &str = "rbac.authorization.k8s.io";

/// The 403 (or nothing) for writing `body` as `user`; `a` is the request.
pub fn check(db: &Db, user: &User, a: &Attributes, body: &Value) -> Result<(), ApiError> {
    let is_write = matches!(a.verb.as_str(), "create" | "update");
    if !is_write || a.api_group != GROUP || !a.subresource.is_empty() {
        return Ok(());
    }
    if user.groups.iter().any(|g| g == MASTERS) {
        return Ok(());
    }
    let name = body
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or(&a.name)
        .to_string();
    let forbidden = |why: String| ApiError::forbidden(GROUP, &a.resource, &name, &why);
    let allowed = |verb: &str, resource: &str, name: &str| {
        let attrs = Attributes {
            resource_request: true,
            verb: verb.into(),
            api_group: GROUP.into(),
            api_version: a.api_version.clone(),
            namespace: a.namespace.clone(),
            resource: resource.into(),
            name: name.into(),
            ..Default::default()
        };
        rbac::authorize(db, user, &attrs).allowed
    };
    match a.resource.as_str() {
        "roles" | "clusterroles" => {
            if allowed("escalate", &a.resource, &a.name) {
                return Ok(());
            }
            let rules: Vec<Rule> = body
                .get("rules")
                .and_then(Value::as_array)
                .map(|rs| rs.iter().map(Rule::from_json).collect())
                .unwrap_or_default();
            confirm_no_escalation(db, user, &a.namespace, &rules).map_err(&forbidden)?;
            if a.resource == "clusterroles"
                && body.get("aggregationRule").is_some_and(|r| !r.is_null())
            {
                let star = || vec!["*".to_string()];
                let full = [
                    Rule {
                        verbs: star(),
                        api_groups: star(),
                        resources: star(),
                        ..Rule::default()
                    },
                    Rule {
                        verbs: star(),
                        non_resource_urls: star(),
                        ..Rule::default()
                    },
                ];
                confirm_no_escalation(db, user, &a.namespace, &full).map_err(|_| {
                    forbidden(
                        "must have cluster-admin privileges to use the aggregationRule".into(),
                    )
                })?;
            }
            Ok(())
        }
        "rolebindings" | "clusterrolebindings" => {
            let role_ref = body.get("roleRef").cloned().unwrap_or(Value::Null);
            let kind = role_ref.get("kind").and_then(Value::as_str).unwrap_or("");
            let role = role_ref.get("name").and_then(Value::as_str).unwrap_or("");
            let bound = if kind == "Role" {
                "roles"
            } else {
                "clusterroles"
            };
            if allowed("bind", bound, role) {
                return Ok(());
            }
            let rules = rbac::role_rules(db, &role_ref, &a.namespace).map_err(&forbidden)?;
            confirm_no_escalation(db, user, &a.namespace, &rules).map_err(&forbidden)
        }
        _ => Ok(()),
    }
}

/// `ConfirmNoEscalation`: every rule is covered by the user's own rules in `namespace`.
fn confirm_no_escalation(
    db: &Db,
    user: &User,
    namespace: &str,
    rules: &[Rule],
) -> Result<(), String> {
    let (owner, errors) = rbac::rules_for(db, user, namespace);
    let missing: Vec<Rule> = rules
        .iter()
        .flat_map(breakdown)
        .filter(|sub| !owner.iter().any(|o| covers(o, sub)))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let mut lines: Vec<String> = compact(missing).iter().map(compact_string).collect();
    lines.sort();
    lines.dedup();
    let mut msg = format!(
        "user {:?} (groups={}) is attempting to grant RBAC permissions not currently held:\n{}",
        user.name,
        go_quoted_list(&user.groups),
        lines.join("\n")
    );
    if !errors.is_empty() {
        msg.push_str(&format!("; resolution errors: [{}]", errors.join(" ")));
    }
    Err(msg)
}

/// `BreakdownRule`: one rule per group, resource, verb (and name), and per URL and verb.
fn breakdown(r: &Rule) -> Vec<Rule> {
    let mut out = Vec::new();
    let one = |s: &String| vec![s.clone()];
    for g in &r.api_groups {
        for res in &r.resources {
            for v in &r.verbs {
                if r.resource_names.is_empty() {
                    out.push(Rule {
                        api_groups: one(g),
                        resources: one(res),
                        verbs: one(v),
                        ..Rule::default()
                    });
                }
                for n in &r.resource_names {
                    out.push(Rule {
                        api_groups: one(g),
                        resources: one(res),
                        verbs: one(v),
                        resource_names: one(n),
                        ..Rule::default()
                    });
                }
            }
        }
    }
    for u in &r.non_resource_urls {
        for v in &r.verbs {
            out.push(Rule {
                non_resource_urls: one(u),
                verbs: one(v),
                ..Rule::default()
            });
        }
    }
    out
}

fn has_all(set: &[String], want: &[String]) -> bool {
    want.iter().all(|w| set.contains(w))
}

fn has_star(set: &[String]) -> bool {
    set.iter().any(|s| s == "*")
}

/// `ruleCovers`.
fn covers(owner: &Rule, sub: &Rule) -> bool {
    let verbs = has_star(&owner.verbs) || has_all(&owner.verbs, &sub.verbs);
    let groups = has_star(&owner.api_groups) || has_all(&owner.api_groups, &sub.api_groups);
    let resources = has_star(&owner.resources)
        || sub.resources.iter().all(|r| {
            owner.resources.contains(r)
                || r.split_once('/')
                    .is_some_and(|(_, s)| owner.resources.contains(&format!("*/{s}")))
        });
    let urls = sub.non_resource_urls.iter().all(|u| {
        owner
            .non_resource_urls
            .iter()
            .any(|o| o == u || (o.ends_with('*') && u.starts_with(o.trim_end_matches('*'))))
    });
    let names = owner.resource_names.is_empty()
        || (!sub.resource_names.is_empty() && has_all(&owner.resource_names, &sub.resource_names));
    verbs && groups && resources && urls && names
}

/// `CompactRules`: resource rules of one group and resource without names merge their verbs.
fn compact(rules: Vec<Rule>) -> Vec<Rule> {
    let mut out: Vec<Rule> = Vec::new();
    for r in rules {
        let simple = r.resource_names.is_empty() && r.non_resource_urls.is_empty();
        if simple
            && let Some(prev) = out.iter_mut().find(|p| {
                p.resource_names.is_empty()
                    && p.non_resource_urls.is_empty()
                    && p.api_groups == r.api_groups
                    && p.resources == r.resources
            })
        {
            for v in r.verbs {
                if !prev.verbs.contains(&v) {
                    prev.verbs.push(v);
                }
            }
            continue;
        }
        out.push(r);
    }
    out
}

/// Go's `%q` of a `[]string`: `["a" "b"]`.
fn go_quoted_list(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| format!("{s:?}")).collect();
    format!("[{}]", quoted.join(" "))
}

/// `rbacv1helpers.CompactString`.
fn compact_string(r: &Rule) -> String {
    let mut parts = Vec::new();
    for (label, v) in [
        ("APIGroups", &r.api_groups),
        ("Resources", &r.resources),
        ("NonResourceURLs", &r.non_resource_urls),
        ("ResourceNames", &r.resource_names),
        ("Verbs", &r.verbs),
    ] {
        if !v.is_empty() {
            parts.push(format!("{label}:{}", go_quoted_list(v)));
        }
    }
    format!("{{{}}}", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(verbs: &[&str], groups: &[&str], resources: &[&str], names: &[&str]) -> Rule {
        let v = |x: &[&str]| x.iter().map(|s| s.to_string()).collect();
        Rule {
            verbs: v(verbs),
            api_groups: v(groups),
            resources: v(resources),
            resource_names: v(names),
            ..Rule::default()
        }
    }

    #[test]
    fn covering() {
        let owner = rule(&["get", "list"], &[""], &["pods", "*/status"], &[]);
        assert!(covers(&owner, &rule(&["get"], &[""], &["pods"], &[])));
        assert!(covers(&owner, &rule(&["get"], &[""], &["pods"], &["a"])));
        assert!(covers(
            &owner,
            &rule(&["list"], &[""], &["deployments/status"], &[])
        ));
        assert!(!covers(&owner, &rule(&["watch"], &[""], &["pods"], &[])));
        assert!(!covers(&owner, &rule(&["get"], &["apps"], &["pods"], &[])));
        let named = rule(&["get"], &[""], &["pods"], &["a"]);
        assert!(!covers(&named, &rule(&["get"], &[""], &["pods"], &[])));
        assert!(covers(&named, &rule(&["get"], &[""], &["pods"], &["a"])));
        let missing = compact(breakdown(&rule(
            &["get", "list"],
            &["apps"],
            &["deployments"],
            &[],
        )));
        assert_eq!(
            compact_string(&missing[0]),
            "{APIGroups:[\"apps\"], Resources:[\"deployments\"], Verbs:[\"get\" \"list\"]}"
        );
    }
}
