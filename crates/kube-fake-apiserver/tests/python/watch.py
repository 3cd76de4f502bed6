"""`watch.Watch().stream` at the client's defaults: replay from a `resource_version`, the
server ending the stream at `timeout_seconds`, the synthetic ADDED events of a watch without a
resource version, label- and field-selected watches (an object leaving the selection is a
DELETED event, entering it an ADDED one), and the 410 `Expired` ERROR event the client raises
for a compacted resource version (the test server keeps 20 events of history)."""
import time

from check import *
from kubernetes import watch

load()
v1 = client.CoreV1Api()
NS = "default"


def events(**kw):
    """Streams ConfigMap events of NS until the server ends the stream; (type, name) pairs and
    how long it took."""
    start = time.monotonic()
    got = []
    for e in watch.Watch().stream(v1.list_namespaced_config_map, NS, **kw):
        got.append((e["type"], e["object"].metadata.name))
        true("event object is a model", isinstance(e["object"], client.V1ConfigMap), type(e["object"]))
    return got, time.monotonic() - start


@step
def replay_and_timeout():
    v1.create_namespaced_config_map(NS, {"metadata": {"name": "before"}})
    rv = v1.list_namespaced_config_map(NS).metadata.resource_version
    v1.create_namespaced_config_map(NS, {"metadata": {"name": "w", "labels": {"sel": "yes"}}})
    v1.patch_namespaced_config_map("w", NS, {"data": {"k": "v"}})
    v1.delete_namespaced_config_map("w", NS)
    got, took = events(resource_version=rv, timeout_seconds=2)
    eq("replayed events", got, [("ADDED", "w"), ("MODIFIED", "w"), ("DELETED", "w")])
    true("the server ends the stream at timeoutSeconds", 1.5 <= took < 15, f"took {took:.1f}s")


@step
def initial_events():
    got, _ = events(timeout_seconds=1)
    eq("synthetic ADDED of what exists", got, [("ADDED", "before")])


@step
def selectors():
    rv = v1.list_namespaced_config_map(NS).metadata.resource_version
    v1.create_namespaced_config_map(NS, {"metadata": {"name": "s", "labels": {"sel": "yes"}}})
    v1.patch_namespaced_config_map("s", NS, {"metadata": {"labels": {"sel": "no"}}})
    v1.patch_namespaced_config_map("s", NS, {"metadata": {"labels": {"sel": "yes"}}})
    v1.create_namespaced_config_map(NS, {"metadata": {"name": "other", "labels": {"sel": "yes"}}})
    got, _ = events(resource_version=rv, timeout_seconds=1, label_selector="sel=yes")
    eq("label-selected events", got,
       [("ADDED", "s"), ("DELETED", "s"), ("ADDED", "s"), ("ADDED", "other")])
    got, _ = events(resource_version=rv, timeout_seconds=1, field_selector="metadata.name=other")
    eq("field-selected events", got, [("ADDED", "other")])


@step
def expired():
    rv = v1.list_namespaced_config_map(NS).metadata.resource_version
    for i in range(30):
        v1.create_namespaced_config_map(NS, {"metadata": {"name": f"fill-{i}"}})
    try:
        got, _ = events(resource_version=rv, timeout_seconds=2)
        FAILURES.append(f"watch from a compacted resourceVersion: no error, events {got[:3]}...")
    except ApiException as e:
        eq("410 raised by the client", e.status, 410)
        true("reason Expired", str(e.reason).startswith("Expired: too old resource version: "), e.reason)

finish()
