"""What the client offers beyond plain CRUD: server-side apply (`application/apply-patch+yaml`
with `field_manager` and `force`; a 409 naming the conflicting manager), dry-run (`dry_run="All"`
stores nothing), the Table output asked through the Accept header, and `managedFields`."""
from check import *

load()
v1 = client.CoreV1Api()
apps = client.AppsV1Api()
NS = "default"
APPLY = "application/apply-patch+yaml"

DEPLOY = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "ssa"}, "spec": {
    "replicas": 2, "selector": {"matchLabels": {"app": "ssa"}},
    "template": {"metadata": {"labels": {"app": "ssa"}}, "spec": {"containers": [
        {"name": "web", "image": "nginx:1.27"}]}}}}


@step
def server_side_apply():
    d = apps.patch_namespaced_deployment("ssa", NS, DEPLOY, field_manager="py-a", _content_type=APPLY)
    eq("applied replicas", d.spec.replicas, 2)
    mf = {(m.manager, m.operation) for m in d.metadata.managed_fields}
    eq("managedFields", mf, {("py-a", "Apply")})
    # another manager changing a field py-a owns: 409 naming py-a
    other = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "ssa"}, "spec": {"replicas": 5}}
    body = api_error("apply conflict", lambda: apps.patch_namespaced_deployment(
        "ssa", NS, other, field_manager="py-b", _content_type=APPLY), 409, "Conflict")
    if body:
        eq("conflict message", body["message"],
           'Apply failed with 1 conflict: conflict with "py-a": .spec.replicas')
        eq("conflict cause", body["details"]["causes"],
           [{"reason": "FieldManagerConflict", "message": 'conflict with "py-a"', "field": ".spec.replicas"}])
    d = apps.patch_namespaced_deployment("ssa", NS, other, field_manager="py-b", force=True, _content_type=APPLY)
    eq("forced apply", d.spec.replicas, 5)
    # apply merges containers by name (a list map keyed on name)
    sidecar = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "ssa"}, "spec": {
        "template": {"spec": {"containers": [{"name": "side", "image": "busybox"}]}}}}
    d = apps.patch_namespaced_deployment("ssa", NS, sidecar, field_manager="py-c", _content_type=APPLY)
    eq("containers merged by name", [c.name for c in d.spec.template.spec.containers], ["web", "side"])
    # apply needs a field manager (`ValidatePatchOptions`: a 422 about PatchOptions)
    body = api_error("apply without fieldManager", lambda: apps.patch_namespaced_deployment(
        "ssa", NS, sidecar, _content_type=APPLY), 422, "Invalid")
    if body:
        eq("fieldManager message", body["message"],
           'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch')
    # a YAML body, as `kubectl apply --server-side` sends it
    yaml_body = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\ndata:\n  k: v\n"
    cm = raw("PATCH", f"/api/v1/namespaces/{NS}/configmaps/from-yaml", yaml_body, content_type=APPLY,
             query=[("fieldManager", "py-yaml")])
    eq("YAML apply creates", cm["data"], {"k": "v"})


@step
def dry_run():
    cm = v1.create_namespaced_config_map(NS, {"metadata": {"name": "dry"}, "data": {"k": "v"}}, dry_run="All")
    eq("dry-run answer", cm.data, {"k": "v"})
    true("dry-run has a uid", bool(cm.metadata.uid))
    eq("dry-run create stores nothing", gone(lambda: v1.read_namespaced_config_map("dry", NS)), True)
    v1.create_namespaced_config_map(NS, {"metadata": {"name": "wet"}, "data": {"k": "v"}})
    p = v1.patch_namespaced_config_map("wet", NS, {"data": {"k": "changed"}}, dry_run="All")
    eq("dry-run patch answer", p.data, {"k": "changed"})
    eq("dry-run patch stores nothing", v1.read_namespaced_config_map("wet", NS).data, {"k": "v"})
    v1.delete_namespaced_config_map("wet", NS, dry_run="All")
    eq("dry-run delete keeps", v1.read_namespaced_config_map("wet", NS).metadata.name, "wet")
    api_error("unknown dryRun value", lambda: v1.create_namespaced_config_map(
        NS, {"metadata": {"name": "dry2"}}, dry_run="Some"), 400, "BadRequest")
    d = apps.create_namespaced_deployment(NS, dict(DEPLOY, metadata={"name": "dry-deploy"}), dry_run="All")
    eq("dry-run defaults applied", d.spec.strategy.type, "RollingUpdate")


@step
def table():
    t = raw("GET", f"/apis/apps/v1/namespaces/{NS}/deployments",
            accept="application/json;as=Table;v=v1;g=meta.k8s.io")
    eq("table kind", (t["kind"], t["apiVersion"]), ("Table", "meta.k8s.io/v1"))
    eq("columns", [c["name"] for c in t["columnDefinitions"]][:5], ["Name", "Ready", "Up-to-date", "Available", "Age"])
    eq("rows", [r["cells"][0] for r in t["rows"]], ["ssa"])
    eq("row object is metadata", t["rows"][0]["object"]["kind"], "PartialObjectMetadata")
    t = raw("GET", f"/api/v1/namespaces/{NS}/configmaps/from-yaml",
            accept="application/json;as=Table;v=v1;g=meta.k8s.io")
    eq("configmap table", [c["name"] for c in t["columnDefinitions"]], ["Name", "Data", "Age"])
    eq("configmap row", t["rows"][0]["cells"][:2], ["from-yaml", 1])


finish()
