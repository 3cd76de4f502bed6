//! `rbac.authorization.k8s.io/v1`: defaults from `pkg/apis/rbac/v1/defaults.go`, validation
//! from `pkg/apis/rbac/validation/validation.go`.
use serde_json::{Value, json};

use super::field::{Path, invalid, invalid_str, not_supported, q, required};
use super::json::{default_str, has, items, items_mut, obj_at, s};
use super::labelselector as sel;
use super::names::{NameRule, dns1123_subdomain};
use crate::schema::Cause;

const GROUP: &str = "rbac.authorization.k8s.io";

pub fn default(kind: &str, o: &mut Value) {
    if kind.ends_with("Binding") {
        if let Some(r) = obj_at(o, "roleRef") {
            default_str(r, "apiGroup", GROUP);
        }
        for subj in items_mut(o, "subjects") {
            if s(subj, "apiGroup").is_empty() {
                match s(subj, "kind") {
                    "User" | "Group" => subj["apiGroup"] = json!(GROUP),
                    // `apiGroup` is `omitempty`: an empty one is not written back.
                    "ServiceAccount" => {
                        if let Some(m) = subj.as_object_mut() {
                            m.remove("apiGroup");
                        }
                    }
                    _ => {}
                }
            }
        }
    }
}

fn string_slice(v: Option<&Value>) -> String {
    super::field::string_list(v)
}

fn policy_rule(r: &Value, namespaced: bool, p: &Path, out: &mut Vec<Cause>) {
    if items(r, "verbs").next().is_none() {
        out.push(required(
            &p.child("verbs"),
            "verbs must contain at least one value",
        ));
    }
    if items(r, "nonResourceURLs").next().is_some() {
        let urls = string_slice(r.get("nonResourceURLs"));
        if namespaced {
            out.push(invalid(
                &p.child("nonResourceURLs"),
                &urls,
                "namespaced rules cannot apply to non-resource URLs",
            ));
        }
        if ["apiGroups", "resources", "resourceNames"]
            .iter()
            .any(|f| items(r, f).next().is_some())
        {
            out.push(invalid(
                &p.child("nonResourceURLs"),
                &urls,
                "rules cannot apply to both regular resources and non-resource URLs",
            ));
        }
        return;
    }
    if items(r, "apiGroups").next().is_none() {
        out.push(required(
            &p.child("apiGroups"),
            "resource rules must supply at least one api group",
        ));
    }
    if items(r, "resources").next().is_none() {
        out.push(required(
            &p.child("resources"),
            "resource rules must supply at least one resource",
        ));
    }
}

fn subject(subj: &Value, namespaced: bool, p: &Path, out: &mut Vec<Cause>) {
    let name = s(subj, "name");
    if name.is_empty() {
        out.push(required(&p.child("name"), ""));
    }
    let group = s(subj, "apiGroup");
    match s(subj, "kind") {
        "ServiceAccount" => {
            if !name.is_empty() {
                for m in dns1123_subdomain(name) {
                    out.push(invalid_str(&p.child("name"), name, &m));
                }
            }
            if !group.is_empty() {
                out.push(not_supported(&p.child("apiGroup"), &q(group), &[""]));
            }
            if !namespaced && s(subj, "namespace").is_empty() {
                out.push(required(&p.child("namespace"), ""));
            }
        }
        "User" | "Group" => {
            if group != GROUP {
                out.push(not_supported(&p.child("apiGroup"), &q(group), &[GROUP]));
            }
        }
        other => out.push(not_supported(
            &p.child("kind"),
            &q(other),
            &["ServiceAccount", "User", "Group"],
        )),
    }
}

pub fn validate(kind: &str, o: &Value, out: &mut Vec<Cause>) {
    let namespaced = kind == "Role" || kind == "RoleBinding";
    match kind {
        "Role" | "ClusterRole" => {
            for (idx, r) in items(o, "rules").enumerate() {
                policy_rule(r, namespaced, &Path::new("rules").index(idx), out);
            }
            if kind == "ClusterRole"
                && let Some(ar) = o.get("aggregationRule").filter(|v| v.is_object())
            {
                for (idx, x) in items(ar, "clusterRoleSelectors").enumerate() {
                    sel::validate(
                        Some(x),
                        &Path::new("aggregationRule.clusterRoleSelectors").index(idx),
                        out,
                    );
                }
            }
        }
        "RoleBinding" | "ClusterRoleBinding" => {
            let rr = o.get("roleRef").cloned().unwrap_or(json!({}));
            let rp = Path::new("roleRef");
            let g = s(&rr, "apiGroup");
            if g != GROUP {
                out.push(not_supported(&rp.child("apiGroup"), &q(g), &[GROUP]));
            }
            let k = s(&rr, "kind");
            if namespaced {
                if !matches!(k, "Role" | "ClusterRole") {
                    out.push(not_supported(
                        &rp.child("kind"),
                        &q(k),
                        &["Role", "ClusterRole"],
                    ));
                }
            } else if k != "ClusterRole" {
                out.push(not_supported(&rp.child("kind"), &q(k), &["ClusterRole"]));
            }
            let n = s(&rr, "name");
            if n.is_empty() {
                out.push(required(&rp.child("name"), ""));
            } else {
                for m in NameRule::PathSegment.check(n, false) {
                    out.push(invalid_str(&rp.child("name"), n, &m));
                }
            }
            for (idx, subj) in items(o, "subjects").enumerate() {
                subject(subj, namespaced, &Path::new("subjects").index(idx), out);
            }
        }
        _ => {}
    }
}

/// A binding's `roleRef` cannot change.
pub fn validate_update(kind: &str, new: &Value, old: &Value, out: &mut Vec<Cause>) {
    if kind.ends_with("Binding") && new.get("roleRef") != old.get("roleRef") && has(old, "roleRef")
    {
        let rr = new.get("roleRef").cloned().unwrap_or(json!({}));
        out.push(invalid(
            &Path::new("roleRef"),
            &format!(
                "rbac.RoleRef{{APIGroup:{}, Kind:{}, Name:{}}}",
                q(s(&rr, "apiGroup")),
                q(s(&rr, "kind")),
                q(s(&rr, "name"))
            ),
            "cannot change roleRef",
        ));
    }
}
