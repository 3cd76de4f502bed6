//! The permissions a controller program needs, derived from what it is built to do (as
//! kubebuilder derives RBAC from `+kubebuilder:rbac` markers, but from the builder calls
//! themselves): every kind it lists and watches, the kinds it owns (it creates, updates and
//! deletes them), the writes declared with [`Controller::writes`](super::Controller::writes),
//! its Events, and the Leases of leader election or of a shard ring. [`Permissions::manifests`]
//! writes the ClusterRole or Role and the bindings for a ServiceAccount, least privilege:
//! namespaced where the factory is.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

/// Where a rule applies.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Scope {
    /// Wherever the factory watches: the whole cluster, or its namespace.
    Watched,
    /// Always cluster-wide (a cluster-scoped kind).
    Cluster,
    /// One namespace (the Leases').
    Namespace(String),
}

/// The verbs of reading a kind through an informer.
pub const READ: &[&str] = &["get", "list", "watch"];
/// The verbs of a kind a controller owns: it reads, creates, changes and deletes them.
pub const OWN: &[&str] = &[
    "get", "list", "watch", "create", "update", "patch", "delete",
];

/// What a controller program needs: `(scope, group, resource) -> verbs`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Permissions {
    rules: BTreeMap<(Scope, String, String), BTreeSet<String>>,
}

impl Permissions {
    fn add(&mut self, scope: Scope, group: &str, resource: &str, verbs: &[&str]) {
        self.rules
            .entry((scope, group.to_owned(), resource.to_owned()))
            .or_default()
            .extend(verbs.iter().map(|v| (*v).to_owned()));
    }

    /// `verbs` on `resource` (`plural` or `plural/subresource`) of `group`, a kind that is
    /// `namespaced` or not.
    pub fn allow(&mut self, group: &str, resource: &str, namespaced: bool, verbs: &[&str]) {
        let scope = if namespaced {
            Scope::Watched
        } else {
            Scope::Cluster
        };
        self.add(scope, group, resource, verbs);
    }

    /// `verbs` on `resource` of `group` in `namespace` only.
    pub fn allow_in(&mut self, namespace: &str, group: &str, resource: &str, verbs: &[&str]) {
        self.add(
            Scope::Namespace(namespace.to_owned()),
            group,
            resource,
            verbs,
        );
    }

    /// Everything `other` allows too.
    pub fn merge(&mut self, other: &Permissions) {
        for ((scope, group, resource), verbs) in &other.rules {
            let set = self
                .rules
                .entry((scope.clone(), group.clone(), resource.clone()))
                .or_default();
            set.extend(verbs.iter().cloned());
        }
    }

    /// The Events every controller records (kube's recorder: `events.k8s.io/v1`, created or
    /// patched when repeated).
    pub(crate) fn events(&mut self) {
        self.allow("events.k8s.io", "events", true, &["create", "patch"]);
    }

    /// The RBAC objects that grant exactly these permissions to the ServiceAccount
    /// `sa_namespace/sa_name`, named `name`: a ClusterRole and ClusterRoleBinding for what is
    /// cluster-wide (everything watched when `watched_namespace` is `None`), a Role and
    /// RoleBinding per namespace otherwise. Rules with the same group and verbs share one entry.
    pub fn manifests(
        &self,
        name: &str,
        sa_namespace: &str,
        sa_name: &str,
        watched_namespace: Option<&str>,
    ) -> Vec<Value> {
        let mut by_place: BTreeMap<Option<String>, Vec<RuleRef<'_>>> = BTreeMap::new();
        for ((scope, group, resource), verbs) in &self.rules {
            let place = match (scope, watched_namespace) {
                (Scope::Cluster, _) | (Scope::Watched, None) => None,
                (Scope::Watched, Some(ns)) => Some(ns.to_owned()),
                (Scope::Namespace(ns), _) => Some(ns.clone()),
            };
            by_place
                .entry(place)
                .or_default()
                .push((group, resource, verbs));
        }
        let subject =
            json!([{"kind": "ServiceAccount", "name": sa_name, "namespace": sa_namespace}]);
        let mut out = Vec::new();
        for (place, rules) in by_place {
            let rules = compact(&rules);
            let (role_kind, binding_kind) = match place {
                None => ("ClusterRole", "ClusterRoleBinding"),
                Some(_) => ("Role", "RoleBinding"),
            };
            let mut meta = json!({"name": name});
            if let Some(ns) = &place {
                meta["namespace"] = json!(ns);
            }
            out.push(json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": role_kind,
                "metadata": meta,
                "rules": rules,
            }));
            out.push(json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": binding_kind,
                "metadata": meta,
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": name},
                "subjects": subject,
            }));
        }
        out
    }
}

/// One rule: group, resource, verbs.
type RuleRef<'a> = (&'a str, &'a str, &'a BTreeSet<String>);

/// One PolicyRule per (group, verbs), its resources sorted.
fn compact(rules: &[RuleRef<'_>]) -> Vec<Value> {
    let mut merged: BTreeMap<(&str, &BTreeSet<String>), Vec<&str>> = BTreeMap::new();
    for (group, resource, verbs) in rules {
        merged.entry((group, verbs)).or_default().push(resource);
    }
    merged
        .into_iter()
        .map(|((group, verbs), mut resources)| {
            resources.sort_unstable();
            json!({"apiGroups": [group], "resources": resources, "verbs": verbs})
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_wide_or_namespaced_as_the_factory_watches() {
        let mut p = Permissions::default();
        p.allow("apps", "deployments", true, OWN);
        p.allow("example.com", "foos", true, READ);
        p.allow("example.com", "foos/status", true, &["update", "patch"]);
        p.allow("", "nodes", false, READ);
        p.events();
        p.allow_in(
            "kube-system",
            "coordination.k8s.io",
            "leases",
            &["get", "create", "update"],
        );

        let all = p.manifests("ctl", "ops", "ctl-sa", None);
        let kinds: Vec<&str> = all.iter().map(|o| o["kind"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            ["ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"]
        );
        assert_eq!(
            all[0]["rules"],
            json!([
                {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]},
                {"apiGroups": ["apps"], "resources": ["deployments"],
                 "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"]},
                {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch"]},
                {"apiGroups": ["example.com"], "resources": ["foos"], "verbs": ["get", "list", "watch"]},
                {"apiGroups": ["example.com"], "resources": ["foos/status"], "verbs": ["patch", "update"]},
            ])
        );
        assert_eq!(
            all[2]["metadata"],
            json!({"name": "ctl", "namespace": "kube-system"})
        );
        assert_eq!(
            all[1]["subjects"],
            json!([{"kind": "ServiceAccount", "name": "ctl-sa", "namespace": "ops"}])
        );
        assert_eq!(all[1]["roleRef"]["kind"], "ClusterRole");

        // A namespaced factory: the namespaced kinds in a Role there, nodes still cluster-wide.
        let ns = p.manifests("ctl", "ops", "ctl-sa", Some("team"));
        let places: Vec<(&str, Option<&str>)> = ns
            .iter()
            .map(|o| {
                (
                    o["kind"].as_str().unwrap(),
                    o["metadata"]["namespace"].as_str(),
                )
            })
            .collect();
        assert_eq!(
            places,
            [
                ("ClusterRole", None),
                ("ClusterRoleBinding", None),
                ("Role", Some("kube-system")),
                ("RoleBinding", Some("kube-system")),
                ("Role", Some("team")),
                ("RoleBinding", Some("team")),
            ]
        );
        assert_eq!(ns[0]["rules"].as_array().unwrap().len(), 1, "only nodes");
    }
}
