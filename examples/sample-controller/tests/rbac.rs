//! `--print-rbac`: the permissions derived from how the controller is built (it reads Foos,
//! owns Deployments, writes Foo status and Events; Leases with --leader-elect or a ring), as
//! RBAC objects for a ServiceAccount, without a server.
use serde_json::{Value, json};

fn print_rbac(extra: &[&str]) -> Vec<Value> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sample-controller"))
        .args(["--print-rbac", "ops/sample"])
        .args(extra)
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list: Value = serde_json::from_slice(&out.stdout).expect("a JSON List on stdout");
    assert_eq!(list["kind"], "List");
    list["items"].as_array().unwrap().clone()
}

fn rules_of(items: &[Value], kind: &str, ns: Option<&str>) -> Value {
    items
        .iter()
        .find(|o| o["kind"] == kind && o["metadata"]["namespace"].as_str() == ns)
        .unwrap_or_else(|| panic!("no {kind} in {ns:?}: {items:?}"))["rules"]
        .clone()
}

#[test]
fn cluster_wide_rules_for_what_it_reads_owns_and_writes() {
    let items = print_rbac(&[]);
    let kinds: Vec<&str> = items.iter().map(|o| o["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["ClusterRole", "ClusterRoleBinding"]);
    assert_eq!(
        rules_of(&items, "ClusterRole", None),
        json!([
            {"apiGroups": ["apps"], "resources": ["deployments"],
             "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"]},
            {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch"]},
            {"apiGroups": ["samplecontroller.k8s.io"], "resources": ["foos"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": ["samplecontroller.k8s.io"], "resources": ["foos/status"], "verbs": ["update"]},
        ])
    );
    assert_eq!(
        items[1]["subjects"],
        json!([{"kind": "ServiceAccount", "name": "sample", "namespace": "ops"}])
    );
}

#[test]
fn leases_in_their_namespace_and_a_namespaced_factory_gets_a_role() {
    let items = print_rbac(&["--leader-elect", "--leader-elect-lease-namespace", "ops"]);
    assert_eq!(
        rules_of(&items, "Role", Some("ops")),
        json!([{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                "verbs": ["create", "get", "update"]}])
    );
    let items = print_rbac(&["--shard-ring", "foos", "--namespace", "team"]);
    assert!(
        items
            .iter()
            .all(|o| o["kind"] == "Role" || o["kind"] == "RoleBinding")
    );
    assert_eq!(
        rules_of(&items, "Role", Some("default")),
        json!([{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                "verbs": ["create", "delete", "get", "list", "update", "watch"]}])
    );
    assert_eq!(
        rules_of(&items, "Role", Some("team"))
            .as_array()
            .unwrap()
            .len(),
        4
    );
}
