"""CoreV1Api at the client's defaults: namespaces, ConfigMaps (create, read, list with label
selectors and pagination, replace, strategic merge patch, delete), Services (allocated
clusterIP and defaults), Pods (defaults, the status subresource)."""
from check import *

load()
v1 = client.CoreV1Api()
NS = "py-core"


@step
def namespace():
    ns = v1.create_namespace({"metadata": {"name": NS}})
    eq("namespace phase", ns.status.phase, "Active")
    eq("namespace finalizers", ns.spec.finalizers, ["kubernetes"])
    eq("namespace name label", ns.metadata.labels, {"kubernetes.io/metadata.name": NS})


@step
def configmap_crud():
    cm = v1.create_namespaced_config_map(
        NS, {"metadata": {"name": "one", "labels": {"app": "a"}}, "data": {"k": "v"}})
    true("uid set", bool(cm.metadata.uid))
    true("resourceVersion set", bool(cm.metadata.resource_version))
    true("creationTimestamp set", cm.metadata.creation_timestamp is not None)
    got = v1.read_namespaced_config_map("one", NS)
    eq("read data", got.data, {"k": "v"})
    eq("read rv", got.metadata.resource_version, cm.metadata.resource_version)
    # replace with the current resourceVersion
    got.data = {"k": "v2"}
    rep = v1.replace_namespaced_config_map("one", NS, got)
    eq("replaced data", rep.data, {"k": "v2"})
    true("replace bumps rv", rep.metadata.resource_version != got.metadata.resource_version)
    # a stale resourceVersion is a 409 Conflict with the server's message
    body = api_error("stale replace", lambda: v1.replace_namespaced_config_map("one", NS, got),
                     409, "Conflict")
    if body:
        eq("stale replace message", body["message"],
           'Operation cannot be fulfilled on configmaps "one": the object has been modified; '
           "please apply your changes to the latest version and try again")
        eq("stale replace details", body["details"], {"name": "one", "kind": "configmaps"})
    # the client's default patch for a dict body is a strategic merge patch
    p = v1.patch_namespaced_config_map("one", NS, {"data": {"extra": "x"}, "metadata": {"labels": {"p": "1"}}})
    eq("patched data", p.data, {"k": "v2", "extra": "x"})
    eq("patched labels", p.metadata.labels, {"app": "a", "p": "1"})
    # a JSON patch (a list body)
    p = v1.patch_namespaced_config_map("one", NS, [{"op": "remove", "path": "/data/extra"}])
    eq("json-patched data", p.data, {"k": "v2"})
    st = v1.delete_namespaced_config_map("one", NS)
    eq("delete answer", (st["kind"], st["status"], st["details"]["name"], st["details"]["kind"]),
       ("Status", "Success", "one", "configmaps"))
    api_error("read after delete", lambda: v1.read_namespaced_config_map("one", NS), 404, "NotFound")


@step
def list_selectors_and_pages():
    for i in range(7):
        v1.create_namespaced_config_map(NS, {"metadata": {
            "name": f"cm-{i}", "labels": {"app": "pages", "parity": "even" if i % 2 == 0 else "odd"}}})
    l = v1.list_namespaced_config_map(NS, label_selector="app=pages,parity=even")
    eq("selected names", [c.metadata.name for c in l.items], ["cm-0", "cm-2", "cm-4", "cm-6"])
    l = v1.list_namespaced_config_map(NS, label_selector="parity in (odd),app")
    eq("set-based selection", [c.metadata.name for c in l.items], ["cm-1", "cm-3", "cm-5"])
    l = v1.list_namespaced_config_map(NS, label_selector="parity!=odd,app=pages")
    eq("!= selection", [c.metadata.name for c in l.items], ["cm-0", "cm-2", "cm-4", "cm-6"])
    l = v1.list_namespaced_config_map(NS, field_selector="metadata.name=cm-3")
    eq("field selection", [c.metadata.name for c in l.items], ["cm-3"])
    # a label the kind does not know: kube-apiserver's default conversion refuses it
    body = api_error("unknown field label", lambda: v1.list_namespaced_config_map(
        NS, field_selector="spec.nope=1"), 400, "BadRequest")
    if body:
        eq("unknown field label message", body.get("message"),
           '"spec.nope" is not a known field selector: only "metadata.name", "metadata.namespace"')
    # pages of 3: the client passes `limit` and `_continue`
    names, token, pages = [], None, 0
    while True:
        kw = {"limit": 3, "label_selector": "app=pages"}
        if token:
            kw["_continue"] = token
        page = v1.list_namespaced_config_map(NS, **kw)
        pages += 1
        names += [c.metadata.name for c in page.items]
        true("page size", len(page.items) <= 3, f"{len(page.items)} items")
        token = page.metadata._continue
        if not token or pages > 5:
            break
    eq("pages", pages, 3)
    eq("paged names", names, [f"cm-{i}" for i in range(7)])
    first = v1.list_namespaced_config_map(NS, limit=2, label_selector="app=pages")
    eq("remainingItemCount with a selector", first.metadata.remaining_item_count, None)
    first = v1.list_namespaced_config_map(NS, limit=2)
    eq("remainingItemCount without a selector", first.metadata.remaining_item_count, 5)
    body = api_error("bad continue", lambda: v1.list_namespaced_config_map(NS, limit=2, _continue="garbage"),
                     400, "BadRequest")
    # every namespace
    every = v1.list_config_map_for_all_namespaces(label_selector="app=pages")
    eq("all-namespaces list", len(every.items), 7)
    true("list rv", bool(every.metadata.resource_version))
    # deletecollection with a selector
    v1.delete_collection_namespaced_config_map(NS, label_selector="parity=odd")
    l = v1.list_namespaced_config_map(NS, label_selector="app=pages")
    eq("after deletecollection", [c.metadata.name for c in l.items], ["cm-0", "cm-2", "cm-4", "cm-6"])


@step
def service_defaults():
    s = v1.create_namespaced_service(NS, {"metadata": {"name": "web"}, "spec": {
        "selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": "http"}]}})
    eq("type", s.spec.type, "ClusterIP")
    true("clusterIP allocated", bool(s.spec.cluster_ip) and s.spec.cluster_ip != "None", s.spec.cluster_ip)
    eq("clusterIPs", s.spec.cluster_ips, [s.spec.cluster_ip])
    eq("ipFamilies", s.spec.ip_families, ["IPv4"])
    eq("ipFamilyPolicy", s.spec.ip_family_policy, "SingleStack")
    eq("sessionAffinity", s.spec.session_affinity, "None")
    eq("internalTrafficPolicy", s.spec.internal_traffic_policy, "Cluster")
    eq("port protocol", s.spec.ports[0].protocol, "TCP")
    eq("named targetPort kept", s.spec.ports[0].target_port, "http")
    n = v1.create_namespaced_service(NS, {"metadata": {"name": "np"}, "spec": {
        "type": "NodePort", "ports": [{"port": 81}]}})
    port = n.spec.ports[0].node_port
    true("nodePort allocated", isinstance(port, int) and 30000 <= port <= 32767, repr(port))
    eq("externalTrafficPolicy", n.spec.external_traffic_policy, "Cluster")
    eq("targetPort defaults to port", n.spec.ports[0].target_port, 81)
    # clusterIP is immutable
    s.spec.cluster_ip = "10.0.0.99"
    s.spec.cluster_ips = ["10.0.0.99"]
    body = api_error("clusterIP change", lambda: v1.replace_namespaced_service("web", NS, s), 422, "Invalid")
    if body:
        fields = [c.get("field") for c in body["details"].get("causes", [])]
        true("clusterIP cause", "spec.clusterIPs[0]" in fields or "spec.clusterIP" in fields, str(fields))


@step
def pod_defaults_and_status():
    p = v1.create_namespaced_pod(NS, {"metadata": {"name": "p"}, "spec": {
        "containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80}]}]}})
    s = p.spec
    eq("restartPolicy", s.restart_policy, "Always")
    eq("dnsPolicy", s.dns_policy, "ClusterFirst")
    eq("terminationGracePeriodSeconds", s.termination_grace_period_seconds, 30)
    eq("schedulerName", s.scheduler_name, "default-scheduler")
    eq("enableServiceLinks", s.enable_service_links, True)
    c = s.containers[0]
    eq("imagePullPolicy of an untagged image", c.image_pull_policy, "Always")
    eq("terminationMessagePath", c.termination_message_path, "/dev/termination-log")
    eq("terminationMessagePolicy", c.termination_message_policy, "File")
    eq("container port protocol", c.ports[0].protocol, "TCP")
    eq("phase", p.status.phase, "Pending")
    eq("qosClass", p.status.qos_class, "BestEffort")
    # the status subresource: only status changes
    st = v1.patch_namespaced_pod_status("p", NS, {
        "status": {"phase": "Running", "podIP": "10.1.2.3"}, "spec": {"activeDeadlineSeconds": 5}})
    eq("status phase patched", st.status.phase, "Running")
    eq("status podIP patched", st.status.pod_ip, "10.1.2.3")
    eq("spec ignored on status", st.spec.active_deadline_seconds, None)
    got = v1.read_namespaced_pod_status("p", NS)
    eq("read status", got.status.phase, "Running")
    # a spec patch leaves status alone
    p2 = v1.patch_namespaced_pod("p", NS, {"metadata": {"labels": {"x": "y"}}, "status": {"phase": "Failed"}})
    eq("status kept by main resource", p2.status.phase, "Running")
    eq("label patched", p2.metadata.labels, {"x": "y"})
    # pods' own field labels (status.podIP from the status just patched)
    l = v1.list_namespaced_pod(NS, field_selector="status.podIP=10.1.2.3,status.phase=Running")
    eq("pod field selection", [x.metadata.name for x in l.items], ["p"])
    body = api_error("pods' unknown field label", lambda: v1.list_namespaced_pod(
        NS, field_selector="spec.nope=1"), 400, "BadRequest")
    if body:
        eq("pods' unknown field label message", body.get("message"), "field label not supported: spec.nope")
    # ValidatePodUpdate: a new image is fine, a node name is not
    cur = v1.read_namespaced_pod("p", NS)
    cur.spec.containers[0].image = "nginx:2"
    cur = v1.replace_namespaced_pod("p", NS, cur)
    eq("image replaced", cur.spec.containers[0].image, "nginx:2")
    cur.spec.node_name = "n1"
    body = api_error("pod spec change", lambda: v1.replace_namespaced_pod("p", NS, cur), 422, "Invalid")
    if body:
        prefix = 'Pod "p" is invalid: spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,'
        true("pod update refusal", body.get("message", "").startswith(prefix), body.get("message", "")[:160])


@step
def secret_and_sa():
    sec = v1.create_namespaced_secret(NS, {"metadata": {"name": "s"}, "stringData": {"pw": "hunter2"}})
    eq("secret type", sec.type, "Opaque")
    eq("stringData folded into data", sec.data, {"pw": "aHVudGVyMg=="})
    eq("stringData not stored", sec.string_data, None)
    # (no `default` ServiceAccount check: kube-controller-manager creates it, not the apiserver)


@step
def namespace_deletion():
    # DELETE answers with the namespace, now terminating (the client hands it back as a dict)
    ns = v1.delete_namespace(NS)
    eq("namespace terminating", ns["status"]["phase"], "Terminating")
    true("deletionTimestamp", bool(ns["metadata"].get("deletionTimestamp")))
    eventually("namespace gone", lambda: gone(lambda: v1.read_namespace(NS)))


finish()
