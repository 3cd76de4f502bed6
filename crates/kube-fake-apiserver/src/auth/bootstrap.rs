//! The default cluster roles and bindings kube-apiserver's RBAC post-start hook creates
//! (`plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go`): `cluster-admin` bound to
//! `system:masters`, the discovery, basic-user and public-info-viewer roles bound to every
//! (un)authenticated user, `system:monitoring`, and the aggregated `admin`, `edit` and `view`
//! whose rules the aggregation controller fills from the `system:aggregate-to-*` roles.
use serde_json::{Value, json};

use crate::auth_config::{AUTHENTICATED, MASTERS, UNAUTHENTICATED};
use crate::state::Db;

const READ: &[&str] = &["get", "list", "watch"];
const WRITE: &[&str] = &["create", "delete", "deletecollection", "patch", "update"];
const READ_WRITE: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];
const AGGREGATE: &str = "rbac.authorization.k8s.io/aggregate-to-";

fn rule(verbs: &[&str], groups: &[&str], resources: &[&str]) -> Value {
    json!({"verbs": verbs, "apiGroups": groups, "resources": resources})
}

fn urls(verbs: &[&str], urls: &[&str]) -> Value {
    json!({"verbs": verbs, "nonResourceURLs": urls})
}

fn role(name: &str, labels: &[&str], rules: Vec<Value>) -> Value {
    let mut l = serde_json::Map::new();
    l.insert("kubernetes.io/bootstrapping".into(), json!("rbac-defaults"));
    for to in labels {
        l.insert(format!("{AGGREGATE}{to}"), json!("true"));
    }
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": name, "labels": l,
                     "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}},
        "rules": rules,
    })
}

fn aggregated(name: &str, labels: &[&str], from: &str) -> Value {
    let mut r = role(name, labels, vec![]);
    r["aggregationRule"] =
        json!({"clusterRoleSelectors": [{"matchLabels": {format!("{AGGREGATE}{from}"): "true"}}]});
    r
}

/// The default ClusterRoles.
pub fn cluster_roles() -> Vec<Value> {
    let core = &[""];
    vec![
        role(
            "cluster-admin",
            &[],
            vec![rule(&["*"], &["*"], &["*"]), urls(&["*"], &["*"])],
        ),
        role(
            "system:discovery",
            &[],
            vec![urls(
                &["get"],
                &[
                    "/livez",
                    "/readyz",
                    "/healthz",
                    "/version",
                    "/version/",
                    "/openapi",
                    "/openapi/*",
                    "/api",
                    "/api/*",
                    "/apis",
                    "/apis/*",
                ],
            )],
        ),
        role(
            "system:monitoring",
            &[],
            vec![urls(
                &["get"],
                &[
                    "/metrics",
                    "/metrics/slis",
                    "/livez",
                    "/readyz",
                    "/healthz",
                    "/livez/*",
                    "/readyz/*",
                    "/healthz/*",
                ],
            )],
        ),
        role(
            "system:basic-user",
            &[],
            vec![
                rule(
                    &["create"],
                    &["authorization.k8s.io"],
                    &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                ),
                rule(
                    &["create"],
                    &["authentication.k8s.io"],
                    &["selfsubjectreviews"],
                ),
            ],
        ),
        role(
            "system:public-info-viewer",
            &[],
            vec![urls(
                &["get"],
                &["/livez", "/readyz", "/healthz", "/version", "/version/"],
            )],
        ),
        aggregated("admin", &[], "admin"),
        aggregated("edit", &["admin"], "edit"),
        aggregated("view", &["edit"], "view"),
        role(
            "system:aggregate-to-admin",
            &["admin"],
            vec![
                rule(
                    &["create"],
                    &["authorization.k8s.io"],
                    &["localsubjectaccessreviews"],
                ),
                rule(
                    READ_WRITE,
                    &["rbac.authorization.k8s.io"],
                    &["rolebindings", "roles"],
                ),
            ],
        ),
        role(
            "system:aggregate-to-edit",
            &["edit"],
            vec![
                rule(
                    READ,
                    core,
                    &[
                        "pods/attach",
                        "pods/exec",
                        "pods/portforward",
                        "pods/proxy",
                        "secrets",
                        "services/proxy",
                    ],
                ),
                rule(&["impersonate"], core, &["serviceaccounts"]),
                rule(
                    WRITE,
                    core,
                    &[
                        "pods",
                        "pods/attach",
                        "pods/exec",
                        "pods/portforward",
                        "pods/proxy",
                    ],
                ),
                rule(&["create"], core, &["pods/eviction"]),
                rule(
                    WRITE,
                    core,
                    &[
                        "configmaps",
                        "events",
                        "persistentvolumeclaims",
                        "replicationcontrollers",
                        "replicationcontrollers/scale",
                        "secrets",
                        "serviceaccounts",
                        "services",
                        "services/proxy",
                    ],
                ),
                rule(&["create"], core, &["serviceaccounts/token"]),
                rule(
                    WRITE,
                    &["apps"],
                    &[
                        "daemonsets",
                        "deployments",
                        "deployments/rollback",
                        "deployments/scale",
                        "replicasets",
                        "replicasets/scale",
                        "statefulsets",
                        "statefulsets/scale",
                    ],
                ),
                rule(WRITE, &["autoscaling"], &["horizontalpodautoscalers"]),
                rule(WRITE, &["batch"], &["cronjobs", "jobs"]),
                rule(WRITE, &["policy"], &["poddisruptionbudgets"]),
                rule(
                    WRITE,
                    &["networking.k8s.io"],
                    &["ingresses", "networkpolicies"],
                ),
                rule(READ_WRITE, &["coordination.k8s.io"], &["leases"]),
            ],
        ),
        role(
            "system:aggregate-to-view",
            &["view"],
            vec![
                rule(
                    READ,
                    core,
                    &[
                        "configmaps",
                        "endpoints",
                        "persistentvolumeclaims",
                        "persistentvolumeclaims/status",
                        "pods",
                        "replicationcontrollers",
                        "replicationcontrollers/scale",
                        "serviceaccounts",
                        "services",
                        "services/status",
                    ],
                ),
                rule(
                    READ,
                    core,
                    &[
                        "bindings",
                        "events",
                        "limitranges",
                        "namespaces/status",
                        "pods/log",
                        "pods/status",
                        "replicationcontrollers/status",
                        "resourcequotas",
                        "resourcequotas/status",
                    ],
                ),
                rule(READ, core, &["namespaces"]),
                rule(READ, &["discovery.k8s.io"], &["endpointslices"]),
                rule(
                    READ,
                    &["apps"],
                    &[
                        "controllerrevisions",
                        "daemonsets",
                        "daemonsets/status",
                        "deployments",
                        "deployments/scale",
                        "deployments/status",
                        "replicasets",
                        "replicasets/scale",
                        "replicasets/status",
                        "statefulsets",
                        "statefulsets/scale",
                        "statefulsets/status",
                    ],
                ),
                rule(
                    READ,
                    &["autoscaling"],
                    &[
                        "horizontalpodautoscalers",
                        "horizontalpodautoscalers/status",
                    ],
                ),
                rule(
                    READ,
                    &["batch"],
                    &["cronjobs", "cronjobs/status", "jobs", "jobs/status"],
                ),
                rule(
                    READ,
                    &["policy"],
                    &["poddisruptionbudgets", "poddisruptionbudgets/status"],
                ),
                rule(
                    READ,
                    &["networking.k8s.io"],
                    &["ingresses", "ingresses/status", "networkpolicies"],
                ),
            ],
        ),
    ]
}

fn binding(role: &str, groups: &[&str]) -> Value {
    let subjects: Vec<Value> = groups
        .iter()
        .map(|g| json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": g}))
        .collect();
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": role, "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
                     "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": subjects,
    })
}

/// The default ClusterRoleBindings.
pub fn cluster_role_bindings() -> Vec<Value> {
    vec![
        binding("cluster-admin", &[MASTERS]),
        binding("system:discovery", &[AUTHENTICATED]),
        binding("system:basic-user", &[AUTHENTICATED]),
        binding(
            "system:public-info-viewer",
            &[AUTHENTICATED, UNAUTHENTICATED],
        ),
        binding("system:monitoring", &["system:monitoring"]),
    ]
}

/// Creates the default roles and bindings that do not exist yet (as the post-start hook
/// reconciles them at every start). A refused write is the server's own bug: it is reported.
pub fn create(db: &mut Db) -> Result<(), String> {
    let items = cluster_roles()
        .into_iter()
        .map(|r| ("clusterroles", r))
        .chain(
            cluster_role_bindings()
                .into_iter()
                .map(|b| ("clusterrolebindings", b)),
        );
    for (plural, obj) in items {
        let res = db
            .registry
            .get("rbac.authorization.k8s.io", plural)
            .cloned()
            .ok_or("the RBAC kinds are not served (builtins off)")?;
        let name = crate::util::meta_str(&obj, "name").to_string();
        if db
            .store
            .get(&crate::objects::key_of(&res, None, &name))
            .is_some()
        {
            continue;
        }
        let opts = crate::objects::WriteOpts {
            manager: "kube-apiserver".into(),
            ..Default::default()
        };
        let write = crate::objects::Write {
            res: &res,
            version: "v1",
            ns: None,
            opts: &opts,
            operation: crate::ssa::Operation::Update,
        };
        write
            .create(db, obj)
            .map_err(|e| format!("bootstrapping {plural} {name}: {}", e.message))?;
    }
    Ok(())
}
