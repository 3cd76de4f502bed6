"""How the client surfaces the server's failures: the `ApiException` subclass per code, its
status and reason, and the `Status` body callers parse (`reason`, `message`, `details` and
`details.causes`), for 404, 409 (exists, conflict), 422, 400 and a missing namespace."""
from check import *
from kubernetes.client import exceptions

load()
v1 = client.CoreV1Api()
apps = client.AppsV1Api()
NS = "default"


def raised(call):
    try:
        call()
    except ApiException as e:
        return e
    return None


@step
def not_found():
    e = raised(lambda: v1.read_namespaced_config_map("missing", NS))
    eq("404 class", type(e).__name__, "NotFoundException")
    eq("404 status/reason", (e.status, e.reason), (404, "Not Found"))
    eq("content type", e.headers.get("content-type"), "application/json")
    body = json.loads(e.body)
    eq("404 body", body, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                          "message": 'configmaps "missing" not found', "reason": "NotFound",
                          "details": {"name": "missing", "kind": "configmaps"}, "code": 404})
    e = raised(lambda: apps.read_namespaced_deployment("missing", NS))
    eq("404 details of a grouped kind", json.loads(e.body)["details"],
       {"name": "missing", "group": "apps", "kind": "deployments"})
    e = raised(lambda: v1.create_namespaced_config_map("nope", {"metadata": {"name": "x"}}))
    body = json.loads(e.body)
    eq("missing namespace", (e.status, body["reason"], body["message"], body["details"]),
       (404, "NotFound", 'namespaces "nope" not found', {"name": "nope", "kind": "namespaces"}))


@step
def already_exists():
    v1.create_namespaced_config_map(NS, {"metadata": {"name": "dup"}})
    e = raised(lambda: v1.create_namespaced_config_map(NS, {"metadata": {"name": "dup"}}))
    eq("409 class", type(e).__name__, "ConflictException")
    body = json.loads(e.body)
    eq("409 body", (body["reason"], body["message"], body["details"], body["code"]),
       ("AlreadyExists", 'configmaps "dup" already exists', {"name": "dup", "kind": "configmaps"}, 409))


@step
def invalid():
    e = raised(lambda: v1.create_namespaced_config_map(NS, {"metadata": {"name": "Bad_Name"}}))
    eq("422 class", type(e).__name__, "UnprocessableEntityException")
    eq("422 status/reason", (e.status, e.reason), (422, "Unprocessable Entity"))
    body = json.loads(e.body)
    rfc = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
           "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
           "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
    eq("422 reason", body["reason"], "Invalid")
    eq("422 message", body["message"], f'ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": {rfc}')
    eq("422 details", (body["details"]["name"], body["details"]["kind"]), ("Bad_Name", "ConfigMap"))
    eq("422 causes", body["details"]["causes"],
       [{"reason": "FieldValueInvalid", "message": f'Invalid value: "Bad_Name": {rfc}', "field": "metadata.name"}])
    # two causes, in the order the server validates
    d = {"metadata": {"name": "two"}, "spec": {"replicas": -1, "selector": {"matchLabels": {"a": "b"}},
         "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "Bad_Name", "image": "x"}]}}}}
    e = raised(lambda: apps.create_namespaced_deployment(NS, d))
    body = json.loads(e.body) if e else {}
    fields = [c["field"] for c in body.get("details", {}).get("causes", [])]
    eq("deployment causes", fields, ["spec.replicas", "spec.template.spec.containers[0].name"])


@step
def bad_request():
    e = raised(lambda: v1.list_namespaced_config_map(NS, label_selector="a in (b"))
    eq("400 class", type(e).__name__, "BadRequestException")
    body = json.loads(e.body)
    eq("400 reason", body["reason"], "BadRequest")
    # (not checked: a field selector on a field the kind does not support, e.g. `spec.nope=1` on
    # configmaps, is a 400 `"spec.nope" is not a known field selector: only "metadata.name",
    # "metadata.namespace"` on kube-apiserver; this server answers 200 with nothing selected)

finish()
