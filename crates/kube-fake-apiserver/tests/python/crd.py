"""ApiextensionsV1Api creates a CRD (Established, NamesAccepted), CustomObjectsApi works on its
custom resources (create, get, list with a label selector and pages, the default merge patch,
the status subresource, delete), a 422 from the CRD's schema, and the dynamic client finds the
new kind through discovery."""
from check import *
from kubernetes import dynamic

load()
ext = client.ApiextensionsV1Api()
co = client.CustomObjectsApi()
G, V, P, NS = "stable.example.com", "v1", "crontabs", "default"

CRD = {
    "metadata": {"name": f"{P}.{G}"},
    "spec": {
        "group": G, "scope": "Namespaced",
        "names": {"plural": P, "singular": "crontab", "kind": "CronTab", "shortNames": ["ct"]},
        "versions": [{
            "name": V, "served": True, "storage": True,
            "subresources": {"status": {}},
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {
                    "cronSpec": {"type": "string"},
                    "replicas": {"type": "integer", "minimum": 1, "maximum": 10, "default": 1}}},
                "status": {"type": "object", "properties": {"phase": {"type": "string"}}}}}},
        }],
    },
}


def crontab(name, app="a", spec=None):
    return {"apiVersion": f"{G}/{V}", "kind": "CronTab",
            "metadata": {"name": name, "labels": {"app": app}},
            "spec": spec if spec is not None else {"cronSpec": "* * * * */5"}}


@step
def create_crd():
    crd = ext.create_custom_resource_definition(CRD)
    eq("crd name", crd.metadata.name, f"{P}.{G}")
    eq("listKind defaulted", crd.spec.names.list_kind, "CronTabList")
    eq("conversion defaulted", crd.spec.conversion.strategy, "None")

    def established():
        c = ext.read_custom_resource_definition(f"{P}.{G}")
        conds = {x.type: x.status for x in (c.status.conditions or [])}
        return conds.get("Established") == "True" and conds.get("NamesAccepted") == "True"
    eventually("CRD established", established)
    st = ext.read_custom_resource_definition_status(f"{P}.{G}")
    eq("accepted names", st.status.accepted_names.kind, "CronTab")
    eq("stored versions", st.status.stored_versions, [V])


@step
def custom_objects():
    o = co.create_namespaced_custom_object(G, V, NS, P, crontab("one"))
    eq("schema default applied", o["spec"]["replicas"], 1)
    eq("generation", o["metadata"]["generation"], 1)
    for i in range(4):
        co.create_namespaced_custom_object(G, V, NS, P, crontab(f"more-{i}", app="b"))
    l = co.list_namespaced_custom_object(G, V, NS, P, label_selector="app=b")
    eq("selected", [x["metadata"]["name"] for x in l["items"]], [f"more-{i}" for i in range(4)])
    eq("list kind", l["kind"], "CronTabList")
    page = co.list_namespaced_custom_object(G, V, NS, P, limit=2)
    eq("page size", len(page["items"]), 2)
    rest = co.list_namespaced_custom_object(G, V, NS, P, limit=10, _continue=page["metadata"]["continue"])
    eq("second page", len(rest["items"]), 3)
    every = co.list_cluster_custom_object(G, V, P)
    eq("cluster-wide list", len(every["items"]), 5)
    got = co.get_namespaced_custom_object(G, V, NS, P, "one")
    eq("get", got["spec"]["cronSpec"], "* * * * */5")
    # the client's default patch for custom objects is a JSON merge patch
    p = co.patch_namespaced_custom_object(G, V, NS, P, "one", {"spec": {"replicas": 3, "cronSpec": None}})
    eq("merge-patched", p["spec"], {"replicas": 3})
    eq("generation bumped", p["metadata"]["generation"], 2)
    # status through its subresource
    s = co.patch_namespaced_custom_object_status(G, V, NS, P, "one", {"status": {"phase": "Ready"}})
    eq("status patched", s["status"], {"phase": "Ready"})
    eq("status write keeps generation", s["metadata"]["generation"], 2)
    s = co.get_namespaced_custom_object_status(G, V, NS, P, "one")
    eq("status read", s["status"]["phase"], "Ready")
    p = co.patch_namespaced_custom_object(G, V, NS, P, "one", {"status": {"phase": "Ignored"}})
    eq("status ignored on the main resource", p["status"], {"phase": "Ready"})
    # replace with the read object
    got = co.get_namespaced_custom_object(G, V, NS, P, "one")
    got["spec"]["replicas"] = 4
    r = co.replace_namespaced_custom_object(G, V, NS, P, "one", got)
    eq("replaced", r["spec"]["replicas"], 4)
    api_error("stale replace", lambda: co.replace_namespaced_custom_object(G, V, NS, P, "one", got), 409, "Conflict")
    d = co.delete_namespaced_custom_object(G, V, NS, P, "one")
    eq("delete answers with the object", (d.get("kind"), d["metadata"]["name"]), ("CronTab", "one"))
    api_error("get after delete", lambda: co.get_namespaced_custom_object(G, V, NS, P, "one"), 404, "NotFound")


@step
def schema_refusal():
    body = api_error("replicas over maximum", lambda: co.create_namespaced_custom_object(
        G, V, NS, P, crontab("big", spec={"replicas": 11})), 422, "Invalid")
    if body:
        causes = body["details"]["causes"]
        eq("cause", [(c["reason"], c["field"]) for c in causes], [("FieldValueInvalid", "spec.replicas")])
        eq("message", body["message"],
           'CronTab.stable.example.com "big" is invalid: spec.replicas: Invalid value: 11: '
           "spec.replicas in body should be less than or equal to 10")
        eq("details", (body["details"]["group"], body["details"]["kind"], body["details"]["name"]),
           (G, "CronTab", "big"))


@step
def dynamic_client():
    dyn = dynamic.DynamicClient(client.ApiClient())
    res = dyn.resources.get(api_version=f"{G}/{V}", kind="CronTab")
    eq("discovered plural", res.name, P)
    eq("namespaced", res.namespaced, True)
    l = res.get(namespace=NS, label_selector="app=b")
    eq("dynamic list", [x.metadata.name for x in l.items], [f"more-{i}" for i in range(4)])
    deps = dyn.resources.get(api_version="apps/v1", kind="Deployment")
    eq("built-in via discovery", deps.name, "deployments")
    sts = dyn.resources.get(api_version="apps/v1", kind="StatefulSet")
    eq("statefulset short names", sts.short_names, ["sts"])
    cm = dyn.resources.get(api_version="v1", kind="ConfigMap")
    made = cm.create(body={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dyn"}, "data": {"a": "b"}},
                     namespace=NS)
    eq("dynamic create", made.data.a, "b")


finish()
