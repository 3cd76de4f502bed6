"""RbacV1Api: Roles, ClusterRoles, bindings; the binding's immutable roleRef and the rule
validation messages of kube-apiserver 1.35."""
from check import *

load()
rbac = client.RbacAuthorizationV1Api()
NS = "default"


@step
def roles_and_bindings():
    r = rbac.create_namespaced_role(NS, {"metadata": {"name": "reader"}, "rules": [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}]})
    eq("role rules", r.rules[0].verbs, ["get", "list", "watch"])
    cr = rbac.create_cluster_role({"metadata": {"name": "py-admin", "labels": {"team": "py"}}, "rules": [
        {"apiGroups": ["apps"], "resources": ["deployments", "deployments/scale"], "verbs": ["*"]},
        {"nonResourceURLs": ["/healthz"], "verbs": ["get"]}]})
    eq("clusterrole non-resource rule", cr.rules[1].non_resource_urls, ["/healthz"])
    rb = rbac.create_namespaced_role_binding(NS, {"metadata": {"name": "read"}, "roleRef": {
        "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"}, "subjects": [
        {"kind": "ServiceAccount", "name": "default", "namespace": NS},
        {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "jane"}]})
    eq("binding subjects", [s.kind for s in rb.subjects], ["ServiceAccount", "User"])
    crb = rbac.create_cluster_role_binding({"metadata": {"name": "py-admin"}, "roleRef": {
        "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "py-admin"}, "subjects": [
        {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "devs"}]})
    eq("cluster binding", crb.role_ref.name, "py-admin")
    l = rbac.list_cluster_role(label_selector="team=py")
    eq("clusterroles by label", [x.metadata.name for x in l.items], ["py-admin"])
    # the aggregation rule of a ClusterRole
    agg = rbac.create_cluster_role({"metadata": {"name": "py-agg"}, "aggregationRule": {
        "clusterRoleSelectors": [{"matchLabels": {"team": "py"}}]}})
    eq("aggregation selector", agg.aggregation_rule.cluster_role_selectors[0].match_labels, {"team": "py"})
    # patch a role's rules (strategic merge: rules has no merge key, the list is replaced)
    r = rbac.patch_namespaced_role("reader", NS, {"rules": [
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]})
    eq("rules replaced", [x.resources for x in r.rules], [["secrets"]])


@step
def role_ref_immutable():
    body = api_error("roleRef change", lambda: rbac.patch_namespaced_role_binding("read", NS, {
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "other"}}),
        422, "Invalid")
    if body:
        causes = body["details"]["causes"]
        eq("roleRef cause field", [c["field"] for c in causes], ["roleRef"])
        eq("roleRef cause message", causes[0]["message"].endswith("cannot change roleRef"), True)


@step
def rule_validation():
    # the typed methods refuse these bodies locally (the models require the fields): sent raw
    roles = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{NS}/roles"
    body = api_error("rule without verbs", lambda: raw("POST", roles, {
        "metadata": {"name": "bad"}, "rules": [{"apiGroups": [""], "resources": ["pods"]}]}), 422, "Invalid")
    if body:
        eq("verbs cause", [(c["reason"], c["field"]) for c in body["details"]["causes"]],
           [("FieldValueRequired", "rules[0].verbs")])
        eq("message", body["message"],
           'Role.rbac.authorization.k8s.io "bad" is invalid: rules[0].verbs: Required value: verbs must contain at least one value')
    bindings = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{NS}/rolebindings"
    body = api_error("subject without name", lambda: raw("POST", bindings, {
        "metadata": {"name": "bad"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                                 "name": "reader"},
        "subjects": [{"kind": "ServiceAccount", "namespace": NS}]}), 422, "Invalid")
    if body:
        eq("subject cause", [(c["reason"], c["field"]) for c in body["details"]["causes"]],
           [("FieldValueRequired", "subjects[0].name")])


finish()
