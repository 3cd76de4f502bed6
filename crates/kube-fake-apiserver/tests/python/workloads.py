"""AppsV1Api and BatchV1Api at the client's defaults: Deployment defaults, strategic merge of
containers by name, the scale and status subresources, deletion with propagation (Foreground,
Background, Orphan) through the garbage collector; Job defaults (the generated selector and
labels) and its immutable template."""
from check import *

load()
apps = client.AppsV1Api()
batch = client.BatchV1Api()
v1 = client.CoreV1Api()
NS = "default"


def deployment(name, image="nginx:1.27"):
    return {"metadata": {"name": name, "labels": {"app": name}}, "spec": {
        "replicas": 2, "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [
            {"name": "web", "image": image, "ports": [{"containerPort": 80}]},
            {"name": "side", "image": "busybox:1.36"}]}}}}


@step
def deployment_defaults():
    d = apps.create_namespaced_deployment(NS, deployment("web"))
    s = d.spec
    eq("strategy type", s.strategy.type, "RollingUpdate")
    eq("maxSurge", s.strategy.rolling_update.max_surge, "25%")
    eq("maxUnavailable", s.strategy.rolling_update.max_unavailable, "25%")
    eq("revisionHistoryLimit", s.revision_history_limit, 10)
    eq("progressDeadlineSeconds", s.progress_deadline_seconds, 600)
    eq("generation", d.metadata.generation, 1)
    c = s.template.spec.containers[0]
    eq("imagePullPolicy of a tagged image", c.image_pull_policy, "IfNotPresent")
    eq("container port protocol", c.ports[0].protocol, "TCP")
    eq("template restartPolicy", s.template.spec.restart_policy, "Always")


@step
def strategic_merge_by_name():
    # the default patch type for a dict body is strategic merge: containers merge on `name`
    d = apps.patch_namespaced_deployment("web", NS, {"spec": {"template": {"spec": {
        "containers": [{"name": "side", "image": "busybox:1.37"}]}}}})
    cs = d.spec.template.spec.containers
    eq("containers kept", [c.name for c in cs], ["web", "side"])
    eq("side image", cs[1].image, "busybox:1.37")
    eq("web image untouched", cs[0].image, "nginx:1.27")
    eq("generation bumped", d.metadata.generation, 2)
    # the $patch: delete directive of strategic merge
    d = apps.patch_namespaced_deployment("web", NS, {"spec": {"template": {"spec": {
        "containers": [{"name": "side", "$patch": "delete"}]}}}})
    eq("container deleted", [c.name for c in d.spec.template.spec.containers], ["web"])


@step
def scale_subresource():
    sc = apps.read_namespaced_deployment_scale("web", NS)
    eq("scale kind", (sc.spec.replicas, sc.status.selector), (2, "app=web"))
    sc = apps.patch_namespaced_deployment_scale("web", NS, {"spec": {"replicas": 4}})
    eq("scaled", sc.spec.replicas, 4)
    eq("deployment replicas", apps.read_namespaced_deployment("web", NS).spec.replicas, 4)
    sc = apps.replace_namespaced_deployment_scale("web", NS, {
        "metadata": {"name": "web", "namespace": NS}, "spec": {"replicas": 1}})
    eq("replaced scale", sc.spec.replicas, 1)


@step
def status_subresource():
    st = apps.patch_namespaced_deployment_status("web", NS, {"status": {
        "replicas": 1, "readyReplicas": 1, "observedGeneration": 7}})
    eq("status patched", (st.status.ready_replicas, st.status.observed_generation), (1, 7))
    d = apps.read_namespaced_deployment_status("web", NS)
    eq("status read", d.status.ready_replicas, 1)
    # a status write does not change the generation
    eq("generation after status write", d.metadata.generation, st.metadata.generation)


@step
def deployment_validation():
    bad = deployment("bad")
    bad["spec"]["template"]["metadata"]["labels"] = {"app": "other"}
    body = api_error("selector/template mismatch", lambda: apps.create_namespaced_deployment(NS, bad),
                     422, "Invalid")
    if body:
        causes = body["details"]["causes"]
        eq("cause field", [c["field"] for c in causes], ["spec.template.metadata.labels"])
        eq("cause reason", causes[0]["reason"], "FieldValueInvalid")
        eq("details kind/group", (body["details"]["kind"], body["details"]["group"], body["details"]["name"]),
           ("Deployment", "apps", "bad"))
        true("message", body["message"].startswith('Deployment.apps "bad" is invalid: '), body["message"])
    # the selector is immutable
    body = api_error("selector change", lambda: apps.patch_namespaced_deployment("web", NS, {
        "spec": {"selector": {"matchLabels": {"app": "web", "x": "y"}},
                 "template": {"metadata": {"labels": {"app": "web", "x": "y"}}}}}), 422, "Invalid")
    if body:
        eq("selector cause", [c["field"] for c in body["details"]["causes"]], ["spec.selector"])


def owned_configmap(name, owner):
    return v1.create_namespaced_config_map(NS, {"metadata": {"name": name, "ownerReferences": [{
        "apiVersion": "apps/v1", "kind": "Deployment", "name": owner.metadata.name,
        "uid": owner.metadata.uid, "blockOwnerDeletion": True, "controller": True}]}})


@step
def delete_with_propagation():
    # Background (the default for deployments): the owner goes, the garbage collector removes
    # the dependent
    owner = apps.create_namespaced_deployment(NS, deployment("bg"))
    owned_configmap("bg-child", owner)
    apps.delete_namespaced_deployment("bg", NS, propagation_policy="Background")
    eq("background: owner gone", gone(lambda: apps.read_namespaced_deployment("bg", NS)), True)
    eventually("background: dependent collected",
               lambda: gone(lambda: v1.read_namespaced_config_map("bg-child", NS)))
    # Foreground: the owner is kept with the foregroundDeletion finalizer until its dependents
    # are gone
    owner = apps.create_namespaced_deployment(NS, deployment("fg"))
    owned_configmap("fg-child", owner)
    st = apps.delete_namespaced_deployment("fg", NS, propagation_policy="Foreground")
    true("foreground: answer carries the object or a status", st is not None)
    eventually("foreground: dependent collected",
               lambda: gone(lambda: v1.read_namespaced_config_map("fg-child", NS)))
    eventually("foreground: owner gone", lambda: gone(lambda: apps.read_namespaced_deployment("fg", NS)))
    # Orphan: the dependent stays, without its owner reference
    owner = apps.create_namespaced_deployment(NS, deployment("or"))
    owned_configmap("or-child", owner)
    apps.delete_namespaced_deployment("or", NS, propagation_policy="Orphan")
    eventually("orphan: owner gone", lambda: gone(lambda: apps.read_namespaced_deployment("or", NS)))
    eventually("orphan: ownerReferences removed",
               lambda: not v1.read_namespaced_config_map("or-child", NS).metadata.owner_references)
    # a body with DeleteOptions works too
    apps.create_namespaced_deployment(NS, deployment("opts"))
    apps.delete_namespaced_deployment("opts", NS, body={"propagationPolicy": "Background", "gracePeriodSeconds": 0})
    eq("deleted with a body", gone(lambda: apps.read_namespaced_deployment("opts", NS)), True)


@step
def statefulset_and_daemonset():
    ss = apps.create_namespaced_stateful_set(NS, {"metadata": {"name": "db"}, "spec": {
        "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
        "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [
            {"name": "db", "image": "postgres:17"}]}}}})
    eq("statefulset replicas default", ss.spec.replicas, 1)
    # non-omitempty counters are encoded at zero (the client's model requires `replicas`)
    eq("statefulset status", (ss.status.replicas, ss.status.available_replicas), (0, 0))
    eq("podManagementPolicy", ss.spec.pod_management_policy, "OrderedReady")
    eq("updateStrategy", ss.spec.update_strategy.type, "RollingUpdate")
    ds = apps.create_namespaced_daemon_set(NS, {"metadata": {"name": "agent"}, "spec": {
        "selector": {"matchLabels": {"app": "agent"}},
        "template": {"metadata": {"labels": {"app": "agent"}}, "spec": {"containers": [
            {"name": "a", "image": "agent:1"}]}}}})
    eq("daemonset updateStrategy", ds.spec.update_strategy.type, "RollingUpdate")
    eq("daemonset maxUnavailable", ds.spec.update_strategy.rolling_update.max_unavailable, 1)
    eq("daemonset status", (ds.status.current_number_scheduled, ds.status.number_ready), (0, 0))
    rs = apps.create_namespaced_replica_set(NS, {"metadata": {"name": "rs"}, "spec": {
        "selector": {"matchLabels": {"app": "rs"}},
        "template": {"metadata": {"labels": {"app": "rs"}}, "spec": {"containers": [
            {"name": "a", "image": "agent:1"}]}}}})
    eq("replicaset status", rs.status.replicas, 0)
    l = apps.list_namespaced_stateful_set(NS)
    eq("statefulset listed", [x.metadata.name for x in l.items], ["db"])


@step
def job_defaults():
    j = batch.create_namespaced_job(NS, {"metadata": {"name": "pi"}, "spec": {"template": {"spec": {
        "restartPolicy": "Never", "containers": [{"name": "pi", "image": "perl:5.34"}]}}}})
    s = j.spec
    eq("completions", s.completions, 1)
    eq("parallelism", s.parallelism, 1)
    eq("backoffLimit", s.backoff_limit, 6)
    eq("completionMode", s.completion_mode, "NonIndexed")
    eq("suspend", s.suspend, False)
    eq("manualSelector", s.manual_selector, False)
    uid = j.metadata.uid
    eq("generated selector", s.selector.match_labels, {"batch.kubernetes.io/controller-uid": uid})
    labels = s.template.metadata.labels
    eq("template controller-uid", labels.get("batch.kubernetes.io/controller-uid"), uid)
    eq("template job-name", labels.get("batch.kubernetes.io/job-name"), "pi")
    eq("legacy template labels", (labels.get("controller-uid"), labels.get("job-name")), (uid, "pi"))
    # the pod template is immutable
    body = api_error("template change", lambda: batch.patch_namespaced_job("pi", NS, {"spec": {"template": {
        "spec": {"containers": [{"name": "pi", "image": "perl:5.36"}]}}}}), 422, "Invalid")
    if body:
        eq("template cause", [c["field"] for c in body["details"]["causes"]], ["spec.template"])
    cj = batch.create_namespaced_cron_job(NS, {"metadata": {"name": "tick"}, "spec": {
        "schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": {"spec": {
            "restartPolicy": "OnFailure", "containers": [{"name": "t", "image": "busybox"}]}}}}}})
    eq("cronjob concurrencyPolicy", cj.spec.concurrency_policy, "Allow")
    eq("cronjob history limits", (cj.spec.successful_jobs_history_limit, cj.spec.failed_jobs_history_limit), (3, 1))
    eq("cronjob suspend", cj.spec.suspend, False)
    batch.delete_namespaced_job("pi", NS, propagation_policy="Background")
    eq("job deleted", gone(lambda: batch.read_namespaced_job("pi", NS)), True)


finish()
