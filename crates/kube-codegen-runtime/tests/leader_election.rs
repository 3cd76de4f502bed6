//! Leader election against the in-memory API server, with short durations (lease 2 s, renew
//! deadline 1 s, retry period 200 ms): one leader among candidates, takeover after a kill and
//! after a release (measured), and no two leaders at any sampled instant while Lease requests
//! fail or are slow.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube_codegen_runtime::{
    LeaderCallbacks, LeaderElectionConfig, LeaderElectionError, LeaderElector, Leadership,
    LeaseLock, RunOutcome,
};
use kube_fake_apiserver::FakeApiServer;
use parking_lot::Mutex;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::support;
use support::client;

const LEASE: Duration = Duration::from_secs(2);
const RENEW: Duration = Duration::from_secs(1);
const RETRY: Duration = Duration::from_millis(200);
/// Allowance for a GET and a PUT, or for a polling test task, on a busy two-core machine.
const GRACE: Duration = Duration::from_millis(300);
const LEASE_PATH: &str = "/apis/coordination.k8s.io/v1/namespaces/default/leases/lock";

fn config() -> LeaderElectionConfig {
    LeaderElectionConfig {
        lease_duration: LEASE,
        renew_deadline: RENEW,
        retry_period: RETRY,
        release_on_cancel: true,
    }
}

fn elector(server: &FakeApiServer, identity: &str) -> LeaderElector {
    let lock = LeaseLock {
        namespace: "default".into(),
        name: "lock".into(),
        identity: identity.into(),
    };
    LeaderElector::new(client(server), lock, config()).expect("valid config")
}

/// Runs `fut` for at most `secs` s; on timeout fails the test naming `what` it waited for.
async fn within<T>(secs: u64, what: &str, fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(secs), fut)
        .await
        .unwrap_or_else(|_| panic!("timed out after {secs} s waiting for {what}"))
}

/// Polls `check` every 5 ms until it holds, for at most 10 s; returns when it first held.
async fn until(what: &str, mut check: impl FnMut() -> bool) -> Instant {
    within(10, what, async {
        loop {
            if check() {
                return Instant::now();
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mark {
    Started,
    Stopped,
}

/// Callback calls of every candidate, in order.
type Timeline = Arc<Mutex<Vec<(Instant, &'static str, Mark)>>>;

/// A candidate's `run` loop; with `restart`, a lost leadership starts a new campaign (as a
/// restarted pod would). Returns the outcomes of its runs.
fn campaign(
    elector: &LeaderElector,
    id: &'static str,
    timeline: &Timeline,
    new_leaders: &Arc<Mutex<Vec<String>>>,
    restart: bool,
) -> JoinHandle<Vec<RunOutcome>> {
    let (elector, timeline, new_leaders) = (elector.clone(), timeline.clone(), new_leaders.clone());
    tokio::spawn(async move {
        let mut outcomes = Vec::new();
        loop {
            let (t1, t2, seen) = (timeline.clone(), timeline.clone(), new_leaders.clone());
            let callbacks = LeaderCallbacks::new(move |leadership: Leadership| {
                t1.lock().push((Instant::now(), id, Mark::Started));
                async move { leadership.cancelled().await }
            })
            .on_stopped_leading(move || t2.lock().push((Instant::now(), id, Mark::Stopped)))
            .on_new_leader(move |leader| seen.lock().push(leader.to_owned()));
            let outcome = elector.run(callbacks).await.expect("not run twice");
            outcomes.push(outcome);
            if outcome == RunOutcome::Shutdown || !restart {
                return outcomes;
            }
        }
    })
}

/// What the sampler saw.
#[derive(Debug, Default)]
struct Samples {
    total: usize,
    /// Instants (since the sampler started) at which more than one candidate led.
    overlaps: Vec<Duration>,
    /// Per candidate, samples in which it led.
    leading: Vec<usize>,
}

/// Samples `is_leader` of every candidate every ~2 ms until stopped.
fn sampler(electors: Vec<LeaderElector>) -> (Arc<AtomicBool>, JoinHandle<Samples>) {
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    let task = tokio::spawn(async move {
        let start = Instant::now();
        let mut s = Samples {
            leading: vec![0; electors.len()],
            ..Samples::default()
        };
        while !stop2.load(Ordering::Relaxed) {
            let now: Vec<bool> = electors.iter().map(LeaderElector::is_leader).collect();
            s.total += 1;
            for (i, l) in now.iter().enumerate() {
                s.leading[i] += usize::from(*l);
            }
            if now.iter().filter(|l| **l).count() > 1 {
                s.overlaps.push(start.elapsed());
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        s
    });
    (stop, task)
}

async fn stop_sampler(stop: Arc<AtomicBool>, task: JoinHandle<Samples>) -> Samples {
    stop.store(true, Ordering::Relaxed);
    within(10, "the sampler to stop", task)
        .await
        .expect("sampler task")
}

/// Leading intervals per candidate from the callbacks; an interval still open ends now.
fn intervals(timeline: &Timeline) -> Vec<(&'static str, Instant, Instant)> {
    let mut open: Vec<(&'static str, Instant)> = Vec::new();
    let mut done = Vec::new();
    for &(t, id, mark) in timeline.lock().iter() {
        match mark {
            Mark::Started => open.push((id, t)),
            Mark::Stopped => {
                let i = open
                    .iter()
                    .position(|(o, _)| *o == id)
                    .unwrap_or_else(|| panic!("{id} stopped without starting"));
                let (_, s) = open.remove(i);
                done.push((id, s, t));
            }
        }
    }
    let now = Instant::now();
    done.extend(open.into_iter().map(|(id, s)| (id, s, now)));
    done
}

fn assert_no_overlap(timeline: &Timeline) {
    let iv = intervals(timeline);
    for (i, a) in iv.iter().enumerate() {
        for b in &iv[i + 1..] {
            if a.0 != b.0 {
                assert!(
                    a.2 <= b.1 || b.2 <= a.1,
                    "leading intervals overlap: {a:?} and {b:?}"
                );
            }
        }
    }
}

async fn lease(server: &FakeApiServer) -> LeaseSpec {
    let api: Api<Lease> = Api::namespaced(client(server), "default");
    api.get("lock")
        .await
        .expect("the lease exists")
        .spec
        .expect("the lease has a spec")
}

async fn shutdown(electors: &[&LeaderElector], tasks: Vec<JoinHandle<Vec<RunOutcome>>>) {
    for e in electors {
        e.shutdown();
    }
    for t in tasks {
        within(10, "a candidate to shut down", t)
            .await
            .expect("candidate task");
    }
}

#[tokio::test]
async fn config_is_validated_like_client_go() {
    let server = FakeApiServer::start().await.unwrap();
    let lock = |id: &str| LeaseLock {
        namespace: "default".into(),
        name: "lock".into(),
        identity: id.into(),
    };
    let with = |f: fn(&mut LeaderElectionConfig)| {
        let mut c = config();
        f(&mut c);
        LeaderElector::new(client(&server), lock("a"), c).map(|_| ())
    };
    let invalid = |r: Result<(), LeaderElectionError>, what: &str| match r {
        Err(LeaderElectionError::InvalidConfig(m)) => assert!(m.contains(what), "{m}"),
        other => panic!("expected InvalidConfig({what}), got {other:?}"),
    };
    invalid(
        with(|c| c.lease_duration = RENEW),
        "lease duration must be greater than renew deadline",
    );
    invalid(
        with(|c| c.renew_deadline = Duration::from_millis(240)),
        "renew deadline must be greater than retry period * 1.2",
    );
    invalid(
        with(|c| c.retry_period = Duration::ZERO),
        "must be positive",
    );
    invalid(
        LeaderElector::new(client(&server), lock(""), config()).map(|_| ()),
        "identity is empty",
    );
    with(|c| c.renew_deadline = Duration::from_millis(241)).expect("just above 1.2 retry periods");
    let defaults = LeaderElectionConfig::default();
    assert_eq!(
        (
            defaults.lease_duration,
            defaults.renew_deadline,
            defaults.retry_period
        ),
        (
            Duration::from_secs(15),
            Duration::from_secs(10),
            Duration::from_secs(2)
        )
    );
}

#[tokio::test]
async fn two_candidates_exactly_one_leads() {
    let server = FakeApiServer::start().await.unwrap();
    let (a, b) = (elector(&server, "a"), elector(&server, "b"));
    let timeline = Timeline::default();
    let (seen_a, seen_b) = (Arc::default(), Arc::default());
    let (stop, samples) = sampler(vec![a.clone(), b.clone()]);
    let tasks = vec![
        campaign(&a, "a", &timeline, &seen_a, false),
        campaign(&b, "b", &timeline, &seen_b, false),
    ];
    until("one candidate to lead", || a.is_leader() || b.is_leader()).await;
    let (leader, follower) = if a.is_leader() { (&a, &b) } else { (&b, &a) };
    // Several lease durations: the follower must never take over a renewed lease.
    tokio::time::sleep(LEASE + LEASE).await;
    assert!(leader.is_leader() && !follower.is_leader());
    let spec = lease(&server).await;
    assert_eq!(spec.holder_identity.as_deref(), Some(leader.identity()));
    assert_eq!(spec.lease_duration_seconds, Some(2));
    assert_eq!(spec.lease_transitions, Some(0));
    assert!(spec.acquire_time.is_some() && spec.renew_time.is_some());
    assert_eq!(follower.leader().as_deref(), Some(leader.identity()));
    for seen in [&seen_a, &seen_b] {
        assert_eq!(*seen.lock(), [leader.identity().to_owned()]);
    }

    let s = stop_sampler(stop, samples).await;
    assert!(s.overlaps.is_empty(), "both led at {:?}", s.overlaps);
    assert!(s.total > 500, "sampled {} times", s.total);
    let marks: Vec<_> = timeline.lock().iter().map(|e| (e.1, e.2)).collect();
    let leader_id = if leader.identity() == "a" { "a" } else { "b" };
    assert_eq!(marks, [(leader_id, Mark::Started)]);
    shutdown(&[&a, &b], tasks).await;
}

#[tokio::test]
async fn a_killed_leader_is_replaced_within_lease_duration_plus_retry_period() {
    let server = FakeApiServer::start().await.unwrap();
    let (a, b) = (elector(&server, "a"), elector(&server, "b"));
    let timeline = Timeline::default();
    let seen = Arc::default();
    let (stop, samples) = sampler(vec![a.clone(), b.clone()]);
    let task_a = campaign(&a, "a", &timeline, &seen, false);
    until("a to lead", || a.is_leader()).await;
    let task_b = campaign(&b, "b", &timeline, &seen, false);
    until("b to observe a as leader", || {
        b.leader().as_deref() == Some("a")
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;

    // Killed: no release, no more renewals.
    task_a.abort();
    let killed = Instant::now();
    let took_over = until("b to take over", || b.is_leader()).await;
    let takeover = took_over - killed;
    eprintln!("takeover after kill: {takeover:?}");
    assert!(
        takeover <= LEASE + RETRY + GRACE,
        "took {takeover:?}, more than lease duration + retry period"
    );
    // Never before a's last renewal could have expired.
    assert!(
        takeover + RETRY + Duration::from_millis(100) >= LEASE,
        "took over after only {takeover:?}"
    );
    assert!(!a.is_leader(), "a's leadership ended at its renew deadline");
    let spec = lease(&server).await;
    assert_eq!(spec.holder_identity.as_deref(), Some("b"));
    assert_eq!(spec.lease_transitions, Some(1));

    let s = stop_sampler(stop, samples).await;
    assert!(s.overlaps.is_empty(), "both led at {:?}", s.overlaps);
    shutdown(&[&b], vec![task_b]).await;
}

#[tokio::test]
async fn a_released_lease_is_taken_over_at_once() {
    let server = FakeApiServer::start().await.unwrap();
    let (a, b) = (elector(&server, "a"), elector(&server, "b"));
    let timeline = Timeline::default();
    let seen = Arc::default();
    let (stop, samples) = sampler(vec![a.clone(), b.clone()]);

    // a's work checks, once cancelled, that the lease is still held for it while it winds down.
    let holder_while_winding_down = Arc::new(Mutex::new(None));
    let (h, api, t) = (
        holder_while_winding_down.clone(),
        Api::<Lease>::namespaced(client(&server), "default"),
        timeline.clone(),
    );
    let t2 = timeline.clone();
    let a2 = a.clone();
    let task_a = tokio::spawn(async move {
        let callbacks = LeaderCallbacks::new(move |leadership: Leadership| {
            t.lock().push((Instant::now(), "a", Mark::Started));
            async move {
                leadership.cancelled().await;
                assert!(!leadership.is_leading());
                tokio::time::sleep(Duration::from_millis(300)).await;
                let lease = api.get("lock").await.expect("lease readable");
                *h.lock() = lease.spec.and_then(|s| s.holder_identity);
            }
        })
        .on_stopped_leading(move || t2.lock().push((Instant::now(), "a", Mark::Stopped)));
        a2.run(callbacks).await
    });
    until("a to lead", || a.is_leader()).await;
    let task_b = campaign(&b, "b", &timeline, &seen, false);
    until("b to observe a as leader", || {
        b.leader().as_deref() == Some("a")
    })
    .await;

    let asked = Instant::now();
    a.shutdown();
    let outcome = within(10, "a to release and return", task_a)
        .await
        .expect("a's task");
    assert_eq!(outcome, Ok(RunOutcome::Shutdown));
    let released = Instant::now();
    assert_eq!(holder_while_winding_down.lock().as_deref(), Some("a"));
    let took_over = until("b to take over", || b.is_leader()).await;
    let takeover = took_over - released;
    eprintln!(
        "takeover after release: {takeover:?} (shutdown to release {:?}, 300 ms of it a's work winding down)",
        released - asked
    );
    assert!(
        takeover <= RETRY + GRACE,
        "took {takeover:?} after the release"
    );
    let release_put = server.requests().into_iter().any(|r| {
        r.verb == "update"
            && r.path == LEASE_PATH
            && r.body.contains(r#""holderIdentity":"""#)
            && r.body.contains(r#""leaseDurationSeconds":1"#)
    });
    assert!(
        release_put,
        "the release clears the holder and sets leaseDurationSeconds 1"
    );
    let spec = lease(&server).await;
    assert_eq!(spec.holder_identity.as_deref(), Some("b"));
    assert_eq!(spec.lease_transitions, Some(1));

    let s = stop_sampler(stop, samples).await;
    assert!(s.overlaps.is_empty(), "both led at {:?}", s.overlaps);
    assert_no_overlap(&timeline);
    shutdown(&[&b], vec![task_b]).await;
}

#[tokio::test]
async fn failing_and_slow_lease_requests_never_make_two_leaders() {
    let server = FakeApiServer::start().await.unwrap();
    let faults = server.faults();
    let (a, b) = (elector(&server, "a"), elector(&server, "b"));
    let timeline = Timeline::default();
    let seen = Arc::default();
    let (stop, samples) = sampler(vec![a.clone(), b.clone()]);
    let tasks = vec![
        campaign(&a, "a", &timeline, &seen, true),
        campaign(&b, "b", &timeline, &seen, true),
    ];
    let nobody = || !a.is_leader() && !b.is_leader();
    until("a leader", || !nobody()).await;

    // Every Lease request fails with 503: the leader cannot renew and steps down.
    let failing = Instant::now();
    faults.fail_next_matching(1_000_000, 503, "/apis/coordination.k8s.io/");
    let down = until("the leader to step down under 503s", nobody).await - failing;
    eprintln!("stepped down {down:?} after Lease requests began to fail");
    assert!(down <= RENEW + GRACE, "took {down:?}");
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert!(nobody(), "nobody can lead while every Lease request fails");
    faults.clear_failures();
    let cleared = Instant::now();
    let back = until("a leader after the failures end", || !nobody()).await - cleared;
    eprintln!("a leader again {back:?} after the failures ended");
    assert!(back <= LEASE + RETRY + GRACE, "took {back:?}");

    // Latency below the renew deadline: the leader keeps leading.
    let leader = if a.is_leader() { a.clone() } else { b.clone() };
    faults.set_latency(Duration::from_millis(300));
    let slow = Instant::now();
    while slow.elapsed() < Duration::from_millis(1500) {
        assert!(leader.is_leader(), "leader lost under 300 ms latency");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }

    // Latency above it: nobody can keep or take the lease.
    faults.set_latency(Duration::from_millis(1500));
    let slower = Instant::now();
    let down = until("the leader to step down under 1.5 s latency", nobody).await - slower;
    eprintln!("stepped down {down:?} after latency rose to 1.5 s");
    assert!(down <= RENEW + GRACE, "took {down:?}");
    let hold = Instant::now();
    while hold.elapsed() < Duration::from_secs(2) {
        assert!(nobody(), "nobody can lead with 1.5 s round trips");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    faults.set_latency(Duration::ZERO);
    let fast = Instant::now();
    let back = until("a leader after latency ends", || !nobody()).await - fast;
    eprintln!("a leader again {back:?} after latency ended");

    let s = stop_sampler(stop, samples).await;
    eprintln!(
        "{} samples, leading a {} b {}",
        s.total, s.leading[0], s.leading[1]
    );
    assert!(s.overlaps.is_empty(), "both led at {:?}", s.overlaps);
    assert_no_overlap(&timeline);
    let stops = timeline
        .lock()
        .iter()
        .filter(|e| e.2 == Mark::Stopped)
        .count();
    assert!(
        stops >= 2,
        "on_stopped_leading ran for both step-downs: {stops}"
    );
    shutdown(&[&a, &b], tasks).await;
}

#[tokio::test]
async fn an_expired_lease_is_timed_on_the_local_clock_not_the_servers_timestamps() {
    let server = FakeApiServer::start().await.unwrap();
    let api: Api<Lease> = Api::namespaced(client(&server), "default");
    let long_ago: MicroTime = serde_json::from_str(r#""2000-01-01T00:00:00.000000Z""#).unwrap();
    let mut ghost = Lease::default();
    ghost.metadata.name = Some("lock".into());
    ghost.spec = Some(LeaseSpec {
        holder_identity: Some("ghost".into()),
        lease_duration_seconds: Some(1),
        acquire_time: Some(long_ago.clone()),
        renew_time: Some(long_ago),
        lease_transitions: Some(5),
        ..LeaseSpec::default()
    });
    api.create(&PostParams::default(), &ghost).await.unwrap();

    let a = elector(&server, "a");
    let timeline = Timeline::default();
    let seen = Arc::default();
    let started = Instant::now();
    let task = campaign(&a, "a", &timeline, &seen, false);
    let waited = until("a to take the ghost's lease", || a.is_leader()).await - started;
    eprintln!("took the expired lease after {waited:?}");
    // A 1 s lease renewed in 2000: still a full second from when a first saw it.
    assert!(waited >= Duration::from_secs(1), "took it after {waited:?}");
    assert!(
        waited <= Duration::from_secs(1) + RETRY + GRACE,
        "took {waited:?}"
    );
    let spec = lease(&server).await;
    assert_eq!(spec.holder_identity.as_deref(), Some("a"));
    assert_eq!(spec.lease_transitions, Some(6));
    assert_eq!(spec.lease_duration_seconds, Some(2));
    assert_eq!(*seen.lock(), ["ghost".to_owned(), "a".to_owned()]);
    shutdown(&[&a], vec![task]).await;
}

#[tokio::test]
async fn a_conflicting_write_makes_the_leader_reread_and_keep_leading() {
    let server = FakeApiServer::start().await.unwrap();
    let a = elector(&server, "a");
    let timeline = Timeline::default();
    let seen = Arc::default();
    let task = campaign(&a, "a", &timeline, &seen, false);
    until("a to lead", || a.is_leader()).await;
    tokio::time::sleep(RETRY * 2).await;
    server.faults().clear_requests();
    let gets = || {
        server
            .requests()
            .iter()
            .filter(|r| r.verb == "get" && r.path == LEASE_PATH)
            .count()
    };
    assert_eq!(gets(), 0, "a renews on the fast path without reading");

    // Someone else labels the Lease every 50 ms: a's cached resourceVersion goes stale.
    let api: Api<Lease> = Api::namespaced(client(&server), "default");
    let start = Instant::now();
    let mut n = 0;
    while start.elapsed() < Duration::from_millis(1500) {
        n += 1;
        let patch = serde_json::json!({"metadata": {"labels": {"touched": n.to_string()}}});
        api.patch("lock", &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
        assert!(a.is_leader(), "a lost leadership to a conflict");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(gets() > 0, "a re-read the lease after a 409");
    let spec = lease(&server).await;
    assert_eq!(spec.holder_identity.as_deref(), Some("a"));
    assert_eq!(spec.lease_transitions, Some(0));
    shutdown(&[&a], vec![task]).await;
}

#[tokio::test]
async fn run_twice_at_once_is_refused_and_shutdown_before_run_returns_at_once() {
    let server = FakeApiServer::start().await.unwrap();
    let a = elector(&server, "a");
    let timeline = Timeline::default();
    let seen = Arc::default();
    let task = campaign(&a, "a", &timeline, &seen, false);
    until("a to lead", || a.is_leader()).await;
    let again = within(
        5,
        "a second run to be refused",
        a.run(LeaderCallbacks::new(|_| async {})),
    )
    .await;
    assert_eq!(again, Err(LeaderElectionError::AlreadyRunning));
    shutdown(&[&a], vec![task]).await;
    assert!(!a.is_leader());
    let after = within(
        5,
        "run after shutdown",
        a.run(LeaderCallbacks::new(|_| async {})),
    )
    .await;
    assert_eq!(after, Ok(RunOutcome::Shutdown));
}

/// A small deterministic generator for the fault schedule (splitmix64).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_candidates_under_random_faults_never_overlap() {
    let server = FakeApiServer::start().await.unwrap();
    let faults = server.faults();
    let ids = ["a", "b", "c"];
    let electors: Vec<LeaderElector> = ids.iter().map(|id| elector(&server, id)).collect();
    let timeline = Timeline::default();
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let (stop, samples) = sampler(electors.clone());
    // Each candidate campaigns again a random while after losing, as a restarted pod would,
    // so leadership moves between candidates instead of returning to the same one.
    let done = Arc::new(AtomicBool::new(false));
    let tasks: Vec<JoinHandle<()>> = electors
        .iter()
        .zip(ids)
        .enumerate()
        .map(|(i, (e, id))| {
            let (e, timeline, seen, done) =
                (e.clone(), timeline.clone(), seen.clone(), done.clone());
            tokio::spawn(async move {
                let mut rng = Rng(i as u64 + 1);
                while !done.load(Ordering::Relaxed) {
                    let outcomes = campaign(&e, id, &timeline, &seen, false)
                        .await
                        .expect("candidate task");
                    if outcomes == [RunOutcome::Shutdown] {
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(1000 + rng.below(2000))).await;
                }
            })
        })
        .collect();
    until("a first leader", || {
        electors.iter().any(LeaderElector::is_leader)
    })
    .await;

    // 12 s of random 5xx bursts on the Lease and latency from none to above the renew deadline
    // (it is read when a request arrives, so it outlasts each setting a little).
    let mut rng = Rng(42);
    let chaos = Instant::now();
    while chaos.elapsed() < Duration::from_secs(12) {
        match rng.below(6) {
            0 => faults.fail_next_matching(rng.below(10) as usize + 1, 500, LEASE_PATH),
            1 => faults.fail_next_matching(rng.below(10) as usize + 1, 503, LEASE_PATH),
            2 => faults.set_latency(Duration::from_millis(rng.below(1200))),
            _ => faults.set_latency(Duration::ZERO),
        }
        tokio::time::sleep(Duration::from_millis(200 + rng.below(500))).await;
    }
    faults.clear_failures();
    faults.set_latency(Duration::ZERO);
    until("a leader once the faults end", || {
        electors.iter().any(LeaderElector::is_leader)
    })
    .await;

    let s = stop_sampler(stop, samples).await;
    let terms = timeline
        .lock()
        .iter()
        .filter(|e| e.2 == Mark::Started)
        .map(|e| e.1)
        .collect::<Vec<_>>();
    eprintln!(
        "{} samples, leading a {} b {} c {}; terms in order: {terms:?}",
        s.total, s.leading[0], s.leading[1], s.leading[2]
    );
    assert!(s.overlaps.is_empty(), "two led at {:?}", s.overlaps);
    assert_no_overlap(&timeline);
    let handovers = terms.windows(2).filter(|w| w[0] != w[1]).count();
    eprintln!("{handovers} handovers between candidates");
    assert!(
        terms.len() >= 2,
        "leadership was lost and retaken under the faults"
    );

    done.store(true, Ordering::Relaxed);
    for e in &electors {
        e.shutdown();
    }
    for t in tasks {
        within(10, "a candidate to shut down", t)
            .await
            .expect("candidate task");
    }
}
