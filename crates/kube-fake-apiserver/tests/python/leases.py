"""CoordinationV1Api Leases (MicroTime round trips, optimistic concurrency) and the client's
`leaderelection` module with its LeaseLock: one candidate leads, a second takes over once the
first stops renewing and its lease expires."""
import datetime
import threading

from check import *
from kubernetes.leaderelection import electionconfig, leaderelection
from kubernetes.leaderelection.resourcelock.leaselock import LeaseLock

load()
coord = client.CoordinationV1Api()
NS = "default"


@step
def lease_crud():
    now = datetime.datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=datetime.timezone.utc)
    l = coord.create_namespaced_lease(NS, client.V1Lease(
        metadata=client.V1ObjectMeta(name="lock"),
        spec=client.V1LeaseSpec(holder_identity="a", lease_duration_seconds=15,
                                acquire_time=now, renew_time=now, lease_transitions=0)))
    eq("holder", l.spec.holder_identity, "a")
    eq("microtime keeps microseconds", l.spec.renew_time, now)
    got = coord.read_namespaced_lease("lock", NS)
    eq("read renewTime", got.spec.renew_time, now)
    got.spec.holder_identity = "b"
    got.spec.lease_transitions = 1
    rep = coord.replace_namespaced_lease("lock", NS, got)
    eq("replaced holder", rep.spec.holder_identity, "b")
    api_error("stale lease replace", lambda: coord.replace_namespaced_lease("lock", NS, got), 409, "Conflict")
    l = coord.list_namespaced_lease(NS)
    eq("listed", [x.metadata.name for x in l.items], ["lock"])
    coord.delete_namespaced_lease("lock", NS)
    eq("deleted", gone(lambda: coord.read_namespaced_lease("lock", NS)), True)


def candidate(identity, started, stop):
    """Runs an elector; `started` is set when it leads; it stops leading (its callback
    raises) once `stop` is set."""
    def lead():
        started.set()
        stop.wait(60)
        raise RuntimeError(f"{identity} stops leading")

    config = electionconfig.Config(LeaseLock("py-elector", NS, identity), lease_duration=3,
                                   renew_deadline=2, retry_period=1, onstarted_leading=lead,
                                   onstopped_leading=lambda: None)
    t = threading.Thread(target=leaderelection.LeaderElection(config).run, daemon=True)
    t.start()
    return t


@step
def leader_election():
    a_leads, a_stop = threading.Event(), threading.Event()
    b_leads, b_stop = threading.Event(), threading.Event()
    a = candidate("candidate-a", a_leads, a_stop)
    true("a leads", a_leads.wait(20), "candidate-a did not acquire the lease")
    lease = coord.read_namespaced_lease("py-elector", NS)
    eq("lease holder", lease.spec.holder_identity, "candidate-a")
    eq("lease duration", lease.spec.lease_duration_seconds, 3)
    true("renewTime set", lease.spec.renew_time is not None)
    b = candidate("candidate-b", b_leads, b_stop)
    # while a renews, b cannot take the lease: it is still a's after a's renewals
    eventually("a renews", lambda: coord.read_namespaced_lease("py-elector", NS).spec.renew_time
               > lease.spec.renew_time, timeout=15)
    true("b follows while a renews", not b_leads.is_set())
    a_stop.set()
    a.join(20)
    true("b takes over after a stopped", b_leads.wait(30), "candidate-b never led")
    eq("new holder", coord.read_namespaced_lease("py-elector", NS).spec.holder_identity, "candidate-b")
    b_stop.set()
    b.join(20)


finish()
