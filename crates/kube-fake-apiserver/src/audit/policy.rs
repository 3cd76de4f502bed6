//! The audit policy (`audit.k8s.io/v1` `Policy`) and how kube-apiserver picks a request's level
//! and omitted stages from it (`apiserver/pkg/audit/policy/checker.go`): the first rule that
//! matches decides; no rule matching is level `None`.
use serde::Deserialize;

use crate::auth_config::User;

/// What a rule looks at in a request (`authorizer.Attributes` without the user).
#[derive(Debug, Clone, Default)]
pub struct Request<'a> {
    pub resource_request: bool,
    pub verb: &'a str,
    pub path: &'a str,
    pub api_group: &'a str,
    pub namespace: &'a str,
    pub resource: &'a str,
    pub subresource: &'a str,
    pub name: &'a str,
}

/// How much of a request an event records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
pub enum Level {
    None,
    Metadata,
    Request,
    RequestResponse,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::None => "None",
            Level::Metadata => "Metadata",
            Level::Request => "Request",
            Level::RequestResponse => "RequestResponse",
        }
    }
}

/// A stage of a request's handling an event can be written at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum Stage {
    RequestReceived,
    ResponseStarted,
    ResponseComplete,
    Panic,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::RequestReceived => "RequestReceived",
            Stage::ResponseStarted => "ResponseStarted",
            Stage::ResponseComplete => "ResponseComplete",
            Stage::Panic => "Panic",
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct GroupResources {
    #[serde(default)]
    group: String,
    #[serde(default)]
    resources: Vec<String>,
    #[serde(default)]
    resource_names: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Rule {
    level: Level,
    #[serde(default)]
    users: Vec<String>,
    #[serde(default)]
    user_groups: Vec<String>,
    #[serde(default)]
    verbs: Vec<String>,
    #[serde(default)]
    resources: Vec<GroupResources>,
    #[serde(default)]
    namespaces: Vec<String>,
    #[serde(default, rename = "nonResourceURLs")]
    non_resource_urls: Vec<String>,
    #[serde(default)]
    omit_stages: Vec<Stage>,
    omit_managed_fields: Option<bool>,
}

/// An audit policy.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Policy {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    rules: Vec<Rule>,
    #[serde(default)]
    omit_stages: Vec<Stage>,
    #[serde(default)]
    omit_managed_fields: bool,
}

/// What the policy says of one request.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub level: Level,
    pub omit_stages: Vec<Stage>,
    pub omit_managed_fields: bool,
}

impl Policy {
    /// Reads a policy file (YAML or JSON) as `policy/reader.go` loads it: another group, version
    /// or kind refused (1.35 reads only `audit.k8s.io/v1`), unknown fields ignored (its
    /// universal decoder is not strict), an unknown level or stage refused (decoding here,
    /// `ValidatePolicy` there, so the wording differs), and no rules refused.
    pub fn parse(text: &str) -> Result<Policy, String> {
        let value = kube_codegen_crd::read::yaml_value("audit policy", text)
            .map_err(|e| format!("failed decoding audit policy: {e}"))?;
        let p: Policy = serde_json::from_value(value)
            .map_err(|e| format!("failed decoding audit policy: {e}"))?;
        if p.kind != "Policy" || p.api_version != "audit.k8s.io/v1" {
            // `schema.GroupVersionKind`'s `String()`.
            let (group, version) = p
                .api_version
                .rsplit_once('/')
                .unwrap_or(("", &p.api_version));
            return Err(format!(
                "unknown group version field {group}/{version}, Kind={} in policy",
                p.kind
            ));
        }
        if p.rules.is_empty() {
            return Err("loaded illegal policy with 0 rules".into());
        }
        Ok(p)
    }

    /// The level and omitted stages for a request by `user`.
    pub fn decide(&self, user: &User, attrs: &Request) -> Decision {
        let rule = self.rules.iter().find(|r| r.matches(user, attrs));
        let mut omit_stages = self.omit_stages.clone();
        match rule {
            Some(r) => {
                omit_stages.extend(r.omit_stages.iter().copied());
                Decision {
                    level: r.level,
                    omit_stages,
                    omit_managed_fields: r.omit_managed_fields.unwrap_or(self.omit_managed_fields),
                }
            }
            None => Decision {
                level: Level::None,
                omit_stages,
                omit_managed_fields: self.omit_managed_fields,
            },
        }
    }
}

impl Rule {
    /// `ruleMatches`.
    fn matches(&self, user: &User, a: &Request) -> bool {
        if !self.users.is_empty() && !self.users.contains(&user.name) {
            return false;
        }
        if !self.user_groups.is_empty() && !user.groups.iter().any(|g| self.user_groups.contains(g))
        {
            return false;
        }
        if !self.verbs.is_empty() && !self.verbs.iter().any(|v| v == a.verb) {
            return false;
        }
        if !self.namespaces.is_empty() || !self.resources.is_empty() {
            return self.matches_resource(a);
        }
        if !self.non_resource_urls.is_empty() {
            return !a.resource_request
                && self
                    .non_resource_urls
                    .iter()
                    .any(|u| match u.strip_suffix('*') {
                        Some(prefix) => a.path.starts_with(prefix),
                        None => *u == a.path,
                    });
        }
        true
    }

    /// `ruleMatchesResource`: namespaces (`""` is cluster scope), then the group's resources
    /// (`*`, `resource/subresource`, `*/subresource`, `resource/*`) and names.
    fn matches_resource(&self, a: &Request) -> bool {
        if !a.resource_request {
            return false;
        }
        if !self.namespaces.is_empty() && !self.namespaces.iter().any(|n| n == a.namespace) {
            return false;
        }
        if self.resources.is_empty() {
            return true;
        }
        let combined = if a.subresource.is_empty() {
            a.resource.to_string()
        } else {
            format!("{}/{}", a.resource, a.subresource)
        };
        self.resources
            .iter()
            .filter(|gr| gr.group == a.api_group)
            .any(|gr| {
                if gr.resources.is_empty() {
                    return true;
                }
                if !gr.resource_names.is_empty() && !gr.resource_names.iter().any(|n| n == a.name) {
                    return false;
                }
                gr.resources.iter().any(|r| {
                    *r == combined
                        || r == "*"
                        || (!a.subresource.is_empty()
                            && r.strip_prefix("*/") == Some(a.subresource))
                        || r.strip_suffix("/*") == Some(a.resource)
                })
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs<'a>(
        verb: &'a str,
        group: &'a str,
        resource: &'a str,
        sub: &'a str,
        ns: &'a str,
    ) -> Request<'a> {
        Request {
            resource_request: true,
            verb,
            api_group: group,
            resource,
            subresource: sub,
            namespace: ns,
            ..Default::default()
        }
    }

    #[test]
    fn the_first_matching_rule_decides() {
        let p = Policy::parse(
            r#"
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: None
  users: ["system:kube-proxy"]
- level: RequestResponse
  resources: [{group: "", resources: ["secrets", "pods/*"]}]
  omitManagedFields: true
- level: Request
  namespaces: ["kube-system"]
- level: None
  nonResourceURLs: ["/healthz*", "/version"]
- level: Metadata
"#,
        )
        .unwrap();
        let alice = User {
            name: "alice".into(),
            ..User::default()
        };
        let level = |a: &Request| p.decide(&alice, a).level;
        assert_eq!(
            level(&attrs("get", "", "secrets", "", "default")),
            Level::RequestResponse
        );
        assert_eq!(
            level(&attrs("get", "", "pods", "log", "default")),
            Level::RequestResponse
        );
        // `resource/*` matches the resource itself too (`checker.go` does not ask for a
        // subresource there).
        assert_eq!(
            level(&attrs("get", "", "pods", "", "default")),
            Level::RequestResponse
        );
        assert_eq!(
            level(&attrs("get", "", "configmaps", "", "default")),
            Level::Metadata
        );
        assert_eq!(
            level(&attrs("list", "apps", "deployments", "", "kube-system")),
            Level::Request
        );
        let health = Request {
            verb: "get",
            path: "/healthz/ready",
            ..Default::default()
        };
        assert_eq!(level(&health), Level::None);
        let proxy = User {
            name: "system:kube-proxy".into(),
            ..User::default()
        };
        assert_eq!(
            p.decide(&proxy, &attrs("get", "", "secrets", "", "d"))
                .level,
            Level::None
        );
        let d = p.decide(&alice, &attrs("get", "", "secrets", "", "default"));
        assert_eq!(d.omit_stages, vec![Stage::RequestReceived]);
        assert!(d.omit_managed_fields);
    }

    #[test]
    fn malformed_policies_are_refused() {
        for (text, why) in [
            (
                "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: []\n",
                "0 rules",
            ),
            (
                "apiVersion: audit.k8s.io/v1beta1\nkind: Policy\nrules: [{level: None}]\n",
                "unknown group version field audit.k8s.io/v1beta1, Kind=Policy in policy",
            ),
            (
                "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Loud}]\n",
                "unknown variant",
            ),
        ] {
            let e = Policy::parse(text).unwrap_err();
            assert!(e.contains(why), "{text}: {e}");
        }
        // Unknown fields are ignored, as the universal decoder ignores them.
        let p = Policy::parse(
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nmetadata: {name: x}\nrules: [{level: Metadata, verb: [get]}]\n",
        )
        .unwrap();
        let anyone = User::default();
        let list = Request {
            verb: "list",
            ..Default::default()
        };
        assert_eq!(p.decide(&anyone, &list).level, Level::Metadata);
    }
}
