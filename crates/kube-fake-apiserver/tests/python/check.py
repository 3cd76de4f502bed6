"""Shared by the scripts of tests/python_client.rs: load the kubeconfig given as argv[1] as a
user would (`config.load_kube_config`, the client's defaults), run steps, record mismatches.

Each step runs even when an earlier one failed, so one run lists every difference; `finish()`
prints them and exits 1 when there was one."""
import json
import sys
import time
import traceback

from kubernetes import client, config
from kubernetes.client.rest import ApiException

FAILURES = []
CHECKS = [0]


def load():
    """Loads the kubeconfig at argv[1] into the client's default configuration."""
    config.load_kube_config(config_file=sys.argv[1])


def eq(what, got, want):
    CHECKS[0] += 1
    if got != want:
        FAILURES.append(f"{what}: got {got!r}, want {want!r}")
        return False
    return True


def true(what, cond, detail=""):
    CHECKS[0] += 1
    if not cond:
        FAILURES.append(f"{what}: {detail}")
    return cond


def api_error(what, call, status, reason=None):
    """Runs `call`, which must raise an ApiException with `status` (and `reason` in its Status
    body); returns the body parsed as JSON (as callers of the client do), or None."""
    CHECKS[0] += 1
    try:
        call()
    except ApiException as e:
        if e.status != status:
            FAILURES.append(f"{what}: status {e.status}, want {status}: {e.body}")
            return None
        body = json.loads(e.body)
        eq(f"{what}: kind", body.get("kind"), "Status")
        eq(f"{what}: status", body.get("status"), "Failure")
        eq(f"{what}: code", body.get("code"), status)
        if reason is not None:
            eq(f"{what}: reason", body.get("reason"), reason)
        eq(f"{what}: reason on the exception", e.reason is not None, True)
        return body
    FAILURES.append(f"{what}: succeeded, want {status}")
    return None


def step(fn):
    """Runs `fn` at once (used as a decorator), recording an exception as a failure."""
    print(f"--- {fn.__name__}", flush=True)
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - every failure is reported, the run goes on
        detail = e.body if isinstance(e, ApiException) else ""
        FAILURES.append(f"{fn.__name__}: {type(e).__name__}: {e} {detail}\n{traceback.format_exc()}")
    return fn


def eventually(what, fn, timeout=10.0):
    """Polls `fn` every 50 ms until it returns a true value; records a failure after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.monotonic() > deadline:
            FAILURES.append(f"{what}: not within {timeout}s")
            return v
        time.sleep(0.05)


def finish():
    for f in FAILURES:
        print(f"MISMATCH {f}")
    if FAILURES:
        print(f"{len(FAILURES)} of {CHECKS[0]} checks failed")
        sys.exit(1)
    print(f"all {CHECKS[0]} checks passed")


def gone(read):
    """True when `read` raises a 404."""
    try:
        read()
        return False
    except ApiException as e:
        return e.status == 404


def raw(method, path, body=None, content_type="application/json", accept="application/json", query=None):
    """One request through the client's own ApiClient (its configuration, auth and transport)
    for what the typed methods cannot send: a body their local (pydantic) validation refuses,
    an Accept of their choosing. Raises ApiException as typed calls do; returns the body
    (parsed JSON when it is JSON)."""
    api = client.ApiClient()
    headers = {"Content-Type": content_type, "Accept": accept}
    method, url, headers, body, _ = api.param_serialize(
        method, path, query_params=query or [], header_params=headers, body=body,
        auth_settings=["BearerToken"])
    r = api.call_api(method, url, headers, body)
    r.read()
    if not 200 <= r.status <= 299:
        raise ApiException.from_response(http_resp=r, body=r.data.decode(), data=None)
    try:
        return json.loads(r.data)
    except ValueError:
        return r.data.decode()
