//! S1 from convergence (issue 34, item 5): three ring-mode replicas of one controller start on
//! an unformed ring (no Leases, no table) and are measured until it converged, through a
//! failover, and through 3 -> 4 -> 2, with every reconcile's span logged so that no object is
//! ever reconciled by two replicas at once and none is left unreconciled.
//!
//! Usage: `cargo bench -p kube-codegen-runtime-bench --bench shard_converge -- [--runs N]
//! [--namespaces N] [--per-ns K] [--reconcile-ms MS] [--lease-s S] [--quick]` (default: 5 runs, 3,000
//! namespaces `ns-1` .. `ns-3000` of 10 Foos each, every Foo owning a Deployment, 1 ms a
//! reconcile, a 15 s lease, renew deadline and retry period 3/5 and 1/20 of it). Run as a test (no `--bench`) it is one smoke run at `--quick` sizes.
//!
//! One in-memory server (with `shardSelector`) in this process, seeded once for every run;
//! each run is a ring of its own name, so it starts unformed. Each replica is R1's controller
//! (`Controller<Foo>` owning Deployments, sharded by namespace, two workers, the reconcile
//! checking the Foo's Deployment in the cache as `reconcile::CheckChild` does) in a Tokio
//! runtime of its own: killing one shuts its runtime down without any cleanup, a crash.
//!
//! Per run: `a`, `b`, `c` start at once; converged = every live replica acknowledged the same
//! table, their allowed ranges partition the space, and that held for a lease duration plus a
//! second (longer than a member takes to report its load and the coordinator to rebalance).
//! Then `c` is killed (failover: until every object it owned was reconciled by `a` or `b`),
//! `d` starts (3), `e` joins (4), `a` and `b` stop gracefully (2). At each settled step: the
//! worst share off even in objects and the objects whose owner changed. Last, every Foo is
//! labelled with the run's token and each must be reconciled, label seen, by its owner.
//! Exit status 1 on an overlapping reconcile, an unreconciled object or a step that never
//! settled.

// The kind is called Foo, so `foo` is the natural name, not a placeholder.
#![allow(clippy::disallowed_names)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use kube_codegen_runtime::SharedInformerFactory;
use kube_codegen_runtime::controller::{Action, Context, Controller, Reconciler};
use kube_codegen_runtime::shard::{MembershipConfig, RangeSet, ShardKey, ShardRing};
use kube_codegen_runtime_bench::cluster::{self, seed, start_with_foo_crd};
use kube_codegen_runtime_bench::measure::{count_value, runs_value};
use kube_codegen_runtime_bench::reconcile::{RETRY, child_of, up_to_date};
use kube_codegen_runtime_bench::runs::Gathered;
use kube_codegen_runtime_bench::samplecontroller::v1alpha1::Foo;
use kube_fake_apiserver::FakeApiServer;
use parking_lot::{Mutex, RwLock};

const TOUCHED: &str = "s1c.bench.example.com/touched";
const LEASE_NS: &str = "default";

#[derive(Clone, Copy, Debug)]
struct Scale {
    namespaces: usize,
    per_ns: usize,
    /// How long each reconcile holds its object (so that handoffs meet running reconciles).
    reconcile: Duration,
    /// The ring's lease duration; the renew deadline and retry period follow from it.
    lease: Duration,
    /// Any wait longer than this is a failure, not a figure.
    deadline: Duration,
}

impl Scale {
    fn foos(&self) -> usize {
        self.namespaces * self.per_ns
    }
}

fn namespace(i: usize) -> String {
    format!("ns-{}", i + 1)
}

/// One reconcile: which replica (index into the run's identities), which Foo, when; `end` is
/// set when it returns or is dropped (abandoned by a handoff).
#[derive(Debug, Clone)]
struct Span {
    replica: u8,
    foo: u32,
    start: Instant,
    end: Option<Instant>,
    /// Returned (not abandoned) and found the Foo's Deployment up to date.
    done: bool,
    /// The Foo carried the run's touch label.
    touched: bool,
}

type Log = Arc<Mutex<Vec<Span>>>;

/// Ends a span however the reconcile ends.
struct End {
    log: Log,
    i: usize,
    done: bool,
}

impl Drop for End {
    fn drop(&mut self) {
        let mut log = self.log.lock();
        log[self.i].end = Some(Instant::now());
        log[self.i].done = self.done;
    }
}

/// R1's reconcile (the child looked up in the cache and checked, nothing written), logged.
struct Recorder {
    me: u8,
    log: Log,
    token: Arc<RwLock<String>>,
    hold: Duration,
}

impl Reconciler<Foo> for Recorder {
    type Error = String;

    async fn reconcile(&self, foo: Arc<Foo>, ctx: &Context) -> Result<Action, String> {
        let index = foo
            .metadata
            .name
            .as_deref()
            .and_then(|n| n.strip_prefix("foo-")?.parse::<u32>().ok())
            .ok_or("a Foo not named foo-N")?;
        let touched = foo
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(TOUCHED))
            .is_some_and(|v| *v == *self.token.read());
        let i = {
            let mut log = self.log.lock();
            log.push(Span {
                replica: self.me,
                foo: index,
                start: Instant::now(),
                end: None,
                done: false,
                touched,
            });
            log.len() - 1
        };
        let mut end = End {
            log: self.log.clone(),
            i,
            done: false,
        };
        let deployments = ctx
            .lister::<Deployment>()
            .ok_or("the controller does not watch Deployments")?;
        let (ns, name) = child_of(&foo);
        let child = deployments
            .namespace(ns)
            .get(name)
            .map_err(|e| e.to_string())?;
        let ok = up_to_date(&foo, child.as_deref());
        tokio::time::sleep(self.hold).await;
        end.done = ok;
        drop(end);
        Ok(if ok {
            Action::done()
        } else {
            Action::requeue_after(RETRY)
        })
    }
}

/// A replica: its own runtime (a process), its ring handle and caches, a graceful stop.
struct Replica {
    index: u8,
    id: String,
    rt: Option<tokio::runtime::Runtime>,
    ring: ShardRing,
    factory: SharedInformerFactory,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    done: Option<tokio::task::JoinHandle<Result<(), String>>>,
}

struct RunCtx<'a> {
    server: &'a FakeApiServer,
    scale: Scale,
    ring: String,
    log: Log,
    token: Arc<RwLock<String>>,
    ids: Vec<String>,
}

impl RunCtx<'_> {
    fn start(&mut self, id: &str) -> Result<Replica, String> {
        let index = u8::try_from(self.ids.len()).map_err(|_| "too many replicas")?;
        self.ids.push(id.to_owned());
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name(format!("replica-{id}"))
            .enable_all()
            .build()
            .map_err(|e| format!("replica {id}'s runtime: {e}"))?;
        let lease = self.scale.lease;
        let (ring, factory) = {
            let _in = rt.enter();
            let client = kube::Client::try_from(self.server.client_config())
                .map_err(|e| format!("replica {id}'s client: {e}"))?;
            let config = MembershipConfig::new(self.ring.clone(), id, LEASE_NS).timing(
                lease,
                lease * 3 / 5,
                lease / 20,
            );
            let ring = ShardRing::new(client.clone(), config)
                .key(ShardKey::Namespace)
                .handoff_timeout(Duration::from_secs(2));
            let factory = SharedInformerFactory::builder(client)
                .sharded(ring.scope())
                .build();
            (ring, factory)
        };
        let reconciler = Recorder {
            me: index,
            log: self.log.clone(),
            token: self.token.clone(),
            hold: self.scale.reconcile,
        };
        let controller = Controller::<Foo>::for_kind(&factory)
            .owns::<Deployment>()
            .workers(2)
            .shard_ring(ring.clone());
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let done = rt.spawn(async move {
            controller
                .run(reconciler, async {
                    let _ = rx.await;
                })
                .await
                .map_err(|e| e.to_string())
        });
        Ok(Replica {
            index,
            id: id.to_owned(),
            rt: Some(rt),
            ring,
            factory,
            stop: Some(tx),
            done: Some(done),
        })
    }
}

impl Replica {
    /// A crash: every task of the replica stops where it is; its Lease stays until it expires.
    fn kill(&mut self) -> Instant {
        let at = Instant::now();
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
        at
    }

    /// A graceful stop (SIGTERM): the queue drains, the ring is left.
    async fn stop(&mut self) -> Result<(), String> {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        let result = match self.done.take() {
            Some(done) => match tokio::time::timeout(Duration::from_secs(60), done).await {
                Ok(Ok(r)) => r.map_err(|e| format!("{} stopped with {e}", self.id)),
                Ok(Err(e)) => Err(format!("{}'s task: {e}", self.id)),
                Err(_) => Err(format!("{} did not stop within 60 s", self.id)),
            },
            None => Ok(()),
        };
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
        result
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

/// Who owns each namespace at a settled step (an index into the live replicas' identities).
type Owners = Vec<u8>;

/// The live replicas' allowed ranges, if they partition the space and every one of them
/// acknowledged the same table and sees exactly the live set: `(table id, table generation,
/// ranges)`.
fn agreed(live: &[&Replica]) -> Option<(u64, u64, Vec<RangeSet>)> {
    let mut ids: Vec<&str> = live.iter().map(|r| r.id.as_str()).collect();
    ids.sort_unstable();
    let mut table = None;
    for r in live {
        let view = r.ring.membership().view().borrow().clone();
        let t = view.table.as_ref()?;
        let id = t.id();
        if !view.member || view.members != ids || view.acked != Some(id) {
            return None;
        }
        if view.peers.values().any(|p| *p != Some(id)) {
            return None;
        }
        match table {
            None => table = Some((id, t.generation())),
            Some((other, _)) if other != id => return None,
            Some(_) => {}
        }
    }
    let sets: Vec<RangeSet> = live.iter().map(|r| r.ring.allowed()).collect();
    let total: u128 = sets.iter().map(RangeSet::size).sum();
    if total != 1 << 64 || sets.iter().any(RangeSet::is_empty) {
        return None;
    }
    table.map(|(id, generation)| (id, generation, sets))
}

/// A settled step: when the final state was first seen, the table's generation, and each
/// namespace's owner.
struct Settled {
    at: Instant,
    generation: u64,
    owners: Owners,
}

/// Waits until the live replicas agree on one table and it held for a lease duration and a
/// second; returns when that state was first seen.
async fn settle(
    live: &[&Replica],
    scale: &Scale,
    hashes: &[u64],
    what: &str,
) -> Result<Settled, String> {
    let hold = scale.lease + Duration::from_secs(1);
    let deadline = Instant::now() + scale.deadline;
    let mut since: Option<(u64, Instant)> = None;
    let mut next_status = Instant::now() + Duration::from_secs(15);
    loop {
        let now = Instant::now();
        match agreed(live) {
            Some((id, generation, sets)) => {
                let first = match since {
                    Some((seen, at)) if seen == id => at,
                    _ => {
                        since = Some((id, now));
                        now
                    }
                };
                if now - first >= hold {
                    let owners = hashes
                        .iter()
                        .map(|h| {
                            sets.iter()
                                .position(|s| s.contains(*h))
                                .map_or(u8::MAX, |p| live[p].index)
                        })
                        .collect();
                    return Ok(Settled {
                        at: first,
                        generation,
                        owners,
                    });
                }
            }
            None => since = None,
        }
        if now > deadline {
            return Err(format!(
                "{what}: not settled within {:?}: {}",
                scale.deadline,
                status(live)
            ));
        }
        // A slow step says what it waits on.
        if now >= next_status {
            eprintln!(
                "#   {what}: waiting {:.0} s: {}",
                (now + scale.deadline - deadline).as_secs_f64(),
                status(live)
            );
            next_status = now + Duration::from_secs(15);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Each live replica's view: member, table generation, acknowledged or not, the share of the
/// space it may reconcile, and the Foos it caches.
fn status(live: &[&Replica]) -> String {
    live.iter()
        .map(|r| {
            let view = r.ring.membership().view().borrow().clone();
            let table = view.table.as_ref();
            format!(
                "{}: member {} table {} acked {} peers acked {} allowed {:.3} cached {}",
                r.id,
                view.member,
                table.map_or(0, |t| t.generation()),
                table.is_some_and(|t| view.acked == Some(t.id())),
                view.peers
                    .values()
                    .filter(|p| table.is_some_and(|t| **p == Some(t.id())))
                    .count(),
                r.ring.allowed().size() as f64 / 18_446_744_073_709_551_616.0,
                r.factory.informer_for::<Foo>().store().len()
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The worst share off even, in objects, of the live replicas (each namespace weighs its Foos).
fn worst_dev(owners: &Owners, live: &[&Replica]) -> f64 {
    let n = owners.len() as f64;
    let even = n / live.len() as f64;
    live.iter()
        .map(|r| {
            let mine = owners.iter().filter(|o| **o == r.index).count() as f64;
            (mine / even - 1.0).abs()
        })
        .fold(0.0, f64::max)
}

/// The share of the objects whose owner changed between two settled steps.
fn moved(before: &Owners, after: &Owners) -> f64 {
    let changed = before.iter().zip(after).filter(|(a, b)| a != b).count();
    changed as f64 / before.len().max(1) as f64
}

/// Overlapping reconciles of one object by two replicas (a killed replica's spans end at its
/// kill), with the first few described.
fn overlaps(log: &[Span], killed: &BTreeMap<u8, Instant>, ids: &[String]) -> (usize, Vec<String>) {
    let now = Instant::now();
    let mut by_foo: BTreeMap<u32, Vec<(Instant, Instant, u8)>> = BTreeMap::new();
    for s in log {
        let mut end = s.end.unwrap_or(now);
        if let Some(k) = killed.get(&s.replica) {
            end = end.min(*k);
        }
        by_foo
            .entry(s.foo)
            .or_default()
            .push((s.start, end, s.replica));
    }
    let (mut count, mut examples) = (0, Vec::new());
    for (foo, mut spans) in by_foo {
        spans.sort();
        for (i, a) in spans.iter().enumerate() {
            for b in spans[i + 1..].iter().take_while(|b| b.0 < a.1) {
                if a.2 != b.2 {
                    count += 1;
                    if examples.len() < 5 {
                        examples.push(format!(
                            "foo-{foo} by {} and {} at once ({:?} apart)",
                            ids[a.2 as usize],
                            ids[b.2 as usize],
                            b.0 - a.0
                        ));
                    }
                }
            }
        }
    }
    (count, examples)
}

/// The overlap check on made-up spans (run by `cargo test`): a check that finds nothing
/// would pass every run.
fn overlaps_self_check() -> Result<(), String> {
    // In the past, so that a span that never ended (it ends "now") covers the later ones.
    let t = Instant::now()
        .checked_sub(Duration::from_secs(1))
        .ok_or("the clock is too young")?;
    let ms = |n| t + Duration::from_millis(n);
    let span = |replica: u8, start: u64, end: Option<u64>| Span {
        replica,
        foo: 7,
        start: ms(start),
        end: end.map(ms),
        done: true,
        touched: false,
    };
    let ids: Vec<String> = ["a", "b"].map(String::from).into();
    let none = BTreeMap::new();
    let cases = [
        // Two replicas at once.
        (vec![span(0, 0, Some(10)), span(1, 5, Some(20))], &none, 1),
        // One after the other, and one replica twice at once (its own workers never do that,
        // but it is not two replicas).
        (
            vec![
                span(0, 0, Some(10)),
                span(1, 10, Some(20)),
                span(1, 12, Some(15)),
            ],
            &none,
            0,
        ),
        // A killed replica's span never ended: it ends at the kill.
        (
            vec![span(0, 0, None), span(1, 30, Some(40))],
            &[(0u8, ms(20))].into(),
            0,
        ),
        (vec![span(0, 0, None), span(1, 30, Some(40))], &none, 1),
    ];
    for (i, (log, killed, want)) in cases.iter().enumerate() {
        let (got, _) = overlaps(log, killed, &ids);
        if got != *want {
            return Err(format!(
                "overlap self-check {i}: {got} overlaps found, {want} expected"
            ));
        }
    }
    Ok(())
}

/// Waits until every Foo `want` marks has a span from `from` on that `ok` accepts (given the
/// Foo); returns when the last of them ended, or the Foos still missing at the deadline.
async fn reconciled(
    log: &Log,
    from: usize,
    want: &[bool],
    deadline: Duration,
    ok: impl Fn(&Span) -> bool,
) -> Result<Instant, Vec<usize>> {
    let limit = Instant::now() + deadline;
    let mut seen = vec![false; want.len()];
    let mut missing = want.iter().filter(|w| **w).count();
    let mut last = Instant::now();
    // Spans are scanned once each, from a cursor past the ones already ended.
    let mut cursor = from;
    loop {
        {
            let log = log.lock();
            let mut pending = None;
            for (i, s) in log.iter().enumerate().skip(cursor) {
                let Some(end) = s.end else {
                    pending.get_or_insert(i);
                    continue;
                };
                let f = s.foo as usize;
                if f < want.len() && want[f] && !seen[f] && ok(s) {
                    seen[f] = true;
                    missing -= 1;
                    last = last.max(end);
                }
            }
            cursor = pending.unwrap_or(log.len());
        }
        if missing == 0 {
            return Ok(last);
        }
        if Instant::now() > limit {
            return Err((0..want.len()).filter(|&f| want[f] && !seen[f]).collect());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// What the runs found wrong (overlaps, unreconciled objects): reported after the figures.
#[derive(Default)]
struct Failures(Vec<String>);

/// Records a settled step's figures: seconds since `from`, worst share off even, objects moved.
fn step(
    all: &mut Gathered,
    name: &str,
    from: Instant,
    s: &Settled,
    before: Option<&Settled>,
    live: &[&Replica],
    scale: &Scale,
) {
    let expand = |o: &Owners| -> Owners {
        o.iter()
            .flat_map(|x| std::iter::repeat_n(*x, scale.per_ns))
            .collect()
    };
    let owners = expand(&s.owners);
    all.push(
        &format!("s1c_{name}_settled_s"),
        s.at.saturating_duration_since(from).as_secs_f64(),
        "s",
    );
    all.push(
        &format!("s1c_{name}_worst_share_dev"),
        100.0 * worst_dev(&owners, live),
        "%",
    );
    if let Some(b) = before {
        all.push(
            &format!("s1c_{name}_moved"),
            100.0 * moved(&expand(&b.owners), &owners),
            "%",
        );
    }
    let shares: Vec<usize> = live
        .iter()
        .map(|r| owners.iter().filter(|o| **o == r.index).count())
        .collect();
    eprintln!(
        "#   {name}: settled {:.1} s after the change, table generation {}, objects per replica {shares:?}",
        s.at.saturating_duration_since(from).as_secs_f64(),
        s.generation
    );
}

async fn run(
    server: &FakeApiServer,
    scale: Scale,
    round: usize,
    hashes: &[u64],
    all: &mut Gathered,
    failures: &mut Failures,
) -> Result<(), String> {
    let mut cx = RunCtx {
        server,
        scale,
        ring: format!("s1c-r{round}"),
        log: Arc::default(),
        token: Arc::new(RwLock::new(String::new())),
        ids: Vec::new(),
    };
    let t0 = Instant::now();
    let mut rs: BTreeMap<&str, Replica> = BTreeMap::new();
    for id in ["a", "b", "c"] {
        rs.insert(id, cx.start(id)?);
    }
    // 1. From an unformed ring to converged.
    let three = settle(
        &[&rs["a"], &rs["b"], &rs["c"]],
        &scale,
        hashes,
        "3 from an unformed ring",
    )
    .await?;
    {
        let live = [&rs["a"], &rs["b"], &rs["c"]];
        all.push("s1c_converge_table_generation", three.generation as f64, "");
        step(all, "converged_3", t0, &three, None, &live, &scale);
        // What each replica caches, beside what it owns.
        let third = scale.foos() as f64 / 3.0;
        let cached = live
            .iter()
            .map(|r| {
                let n = r.factory.informer_for::<Foo>().store().len() as f64;
                (n / third - 1.0).abs()
            })
            .fold(0.0, f64::max);
        all.push("s1c_converged_3_worst_cached_dev", 100.0 * cached, "%");
    }

    // 2. Failover: c crashes; its objects are reconciled by a and b.
    let victims: Vec<bool> = three
        .owners
        .iter()
        .flat_map(|o| std::iter::repeat_n(*o == rs["c"].index, scale.per_ns))
        .collect();
    let from = cx.log.lock().len();
    let c_index = rs["c"].index;
    let killed_at = rs.get_mut("c").map(Replica::kill).ok_or("no c")?;
    let killed: BTreeMap<u8, Instant> = [(c_index, killed_at)].into();
    let (a, b) = (rs["a"].index, rs["b"].index);
    match reconciled(&cx.log, from, &victims, scale.deadline, |s| {
        s.done && s.start >= killed_at && (s.replica == a || s.replica == b)
    })
    .await
    {
        Ok(last) => all.push(
            "s1c_failover_s",
            last.saturating_duration_since(killed_at).as_secs_f64(),
            "s",
        ),
        Err(missing) => failures.0.push(format!(
            "run {round}: {} of c's {} objects not reconciled by a survivor within {:?} of the kill",
            missing.len(),
            victims.iter().filter(|v| **v).count(),
            scale.deadline
        )),
    }
    all.push(
        "s1c_failover_objects",
        victims.iter().filter(|v| **v).count() as f64,
        "",
    );
    let two = settle(&[&rs["a"], &rs["b"]], &scale, hashes, "2 after the kill").await?;
    step(
        all,
        "killed_2",
        killed_at,
        &two,
        Some(&three),
        &[&rs["a"], &rs["b"]],
        &scale,
    );

    // 3. Back to 3 (d), then 4 (e).
    let t = Instant::now();
    rs.insert("d", cx.start("d")?);
    let back = settle(
        &[&rs["a"], &rs["b"], &rs["d"]],
        &scale,
        hashes,
        "3 after d joined",
    )
    .await?;
    step(
        all,
        "rejoined_3",
        t,
        &back,
        Some(&two),
        &[&rs["a"], &rs["b"], &rs["d"]],
        &scale,
    );
    let t = Instant::now();
    rs.insert("e", cx.start("e")?);
    let four = settle(
        &[&rs["a"], &rs["b"], &rs["d"], &rs["e"]],
        &scale,
        hashes,
        "4 after e joined",
    )
    .await?;
    step(
        all,
        "joined_4",
        t,
        &four,
        Some(&back),
        &[&rs["a"], &rs["b"], &rs["d"], &rs["e"]],
        &scale,
    );

    // 4. 4 -> 2: a and b stop gracefully, together.
    let t = Instant::now();
    let (mut ra, mut rb) = (rs.remove("a").ok_or("no a")?, rs.remove("b").ok_or("no b")?);
    let (sa, sb) = tokio::join!(ra.stop(), rb.stop());
    sa?;
    sb?;
    let last = settle(
        &[&rs["d"], &rs["e"]],
        &scale,
        hashes,
        "2 after a and b left",
    )
    .await?;
    step(
        all,
        "left_2",
        t,
        &last,
        Some(&four),
        &[&rs["d"], &rs["e"]],
        &scale,
    );

    // 5. Nothing left unreconciled: every Foo labelled, each reconciled by its owner.
    let token = format!("r{round}");
    *cx.token.write() = token.clone();
    let from = cx.log.lock().len();
    let t = Instant::now();
    let client = server.in_process_client();
    let per_ns = scale.per_ns;
    cluster::touch(
        &client,
        0..scale.foos(),
        |i| namespace(i / per_ns),
        TOUCHED,
        &token,
    )
    .await?;
    let owner_of: Vec<u8> = last
        .owners
        .iter()
        .flat_map(|o| std::iter::repeat_n(*o, per_ns))
        .collect();
    let want = vec![true; scale.foos()];
    match reconciled(&cx.log, from, &want, scale.deadline, |s| {
        s.done && s.touched && owner_of.get(s.foo as usize) == Some(&s.replica)
    })
    .await
    {
        Ok(end) => {
            all.push(
                "s1c_touch_all_s",
                end.saturating_duration_since(t).as_secs_f64(),
                "s",
            );
            all.push("s1c_unreconciled", 0.0, "");
        }
        Err(missing) => {
            all.push("s1c_unreconciled", missing.len() as f64, "");
            failures.0.push(format!(
                "run {round}: {} of {} Foos not reconciled by their owner within {:?} of the touch (first: {:?})",
                missing.len(),
                scale.foos(),
                scale.deadline,
                missing.iter().take(5).map(|f| format!("foo-{f}")).collect::<Vec<_>>()
            ));
        }
    }
    // A final settle: the ring did not move under the touch (the owners above still hold).
    let after = settle(&[&rs["d"], &rs["e"]], &scale, hashes, "2 after the touch").await?;
    if after.owners != last.owners {
        failures
            .0
            .push(format!("run {round}: the ring moved during the touch"));
    }
    for r in rs.values_mut() {
        if r.rt.is_some() {
            r.stop().await?;
        }
    }
    let spans = cx.log.lock().clone();
    let (count, examples) = overlaps(&spans, &killed, &cx.ids);
    all.push("s1c_overlapping_reconciles", count as f64, "");
    all.push("s1c_reconciles", spans.len() as f64, "");
    if count > 0 {
        failures.0.push(format!(
            "run {round}: {count} overlapping reconciles, e.g. {examples:?}"
        ));
    }
    eprintln!(
        "# run {}: {} reconciles in {:.1} s",
        round + 1,
        spans.len(),
        t0.elapsed().as_secs_f64()
    );
    Ok(())
}

fn fail(message: impl std::fmt::Display) -> ! {
    eprintln!("s1c: {message}");
    std::process::exit(1)
}

fn main() {
    let mut scale = Scale {
        namespaces: 3_000,
        per_ns: 10,
        reconcile: Duration::from_millis(1),
        // The runtime's default lease: with 5 s (a 3 s renew deadline) at 30,000 Foos the
        // members lapsed under the server's load and the ring never formed (see the README).
        lease: Duration::from_secs(15),
        deadline: Duration::from_secs(300),
    };
    let (mut quick, mut benching) = (false, false);
    let mut runs = None;
    let mut sizes: BTreeMap<&str, usize> = BTreeMap::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--runs" => runs = Some(runs_value(args.next())),
            "--namespaces" => {
                sizes.insert("namespaces", count_value(args.next(), "--namespaces"));
            }
            "--per-ns" => {
                sizes.insert("per_ns", count_value(args.next(), "--per-ns"));
            }
            "--lease-s" => {
                sizes.insert("lease_s", count_value(args.next(), "--lease-s"));
            }
            "--reconcile-ms" => {
                sizes.insert("reconcile_ms", count_value(args.next(), "--reconcile-ms"));
            }
            "--quick" => quick = true,
            "--bench" => benching = true,
            _ => {} // the test harness's flags
        }
    }
    // Run by `cargo test` (no `--bench`): one small run, short leases, so it stays cheap.
    let smoke = !benching;
    if quick || smoke {
        scale.namespaces = 12;
        scale.per_ns = 2;
        scale.lease = Duration::from_millis(1500);
        scale.deadline = Duration::from_secs(30);
    }
    scale.namespaces = sizes.get("namespaces").copied().unwrap_or(scale.namespaces);
    scale.per_ns = sizes.get("per_ns").copied().unwrap_or(scale.per_ns);
    if let Some(s) = sizes.get("lease_s") {
        scale.lease = Duration::from_secs(*s as u64);
    }
    if let Some(ms) = sizes.get("reconcile_ms") {
        scale.reconcile = Duration::from_millis(*ms as u64);
    }
    let runs = runs.unwrap_or(if quick || smoke { 1 } else { 5 });
    if smoke && let Err(e) = overlaps_self_check() {
        fail(e);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| fail(format!("runtime: {e}")));
    let failed = rt.block_on(async {
        match drive(scale, runs).await {
            Ok(failures) => failures,
            Err(e) => fail(e),
        }
    });
    rt.shutdown_background();
    if !failed.0.is_empty() {
        for f in &failed.0 {
            eprintln!("s1c: {f}");
        }
        std::process::exit(1);
    }
}

async fn drive(scale: Scale, runs: usize) -> Result<Failures, String> {
    println!(
        "# s1c: {} Foos each owning a Deployment in {} namespaces (ns-1..), {} ms a reconcile, \
         lease {:?}; three replicas from an unformed ring, kill one, 3 -> 4 -> 2; each replica a \
         Tokio runtime (one worker) of its own in this process beside the in-memory server; \
         median of {runs} runs, min and max after #",
        scale.foos(),
        scale.namespaces,
        scale.reconcile.as_millis(),
        scale.lease
    );
    // One server for every run: seeding is the slow part, and each run's ring has its own name.
    let builder = FakeApiServer::builder()
        .history_limit(4 * scale.foos() + 100_000)
        .shard_selectors(true);
    let server = start_with_foo_crd(builder).await?;
    let client = server.in_process_client();
    let t0 = Instant::now();
    cluster::create_namespaces(&client, scale.namespaces, namespace).await?;
    let per_ns = scale.per_ns;
    seed(&client, scale.foos(), |i| namespace(i / per_ns)).await?;
    eprintln!(
        "# server: {} namespaces, {} Foos and Deployments created in {:.1} s",
        scale.namespaces,
        scale.foos(),
        t0.elapsed().as_secs_f64()
    );
    let hashes: Vec<u64> = (0..scale.namespaces)
        .map(|i| ShardKey::Namespace.hash("", &namespace(i)))
        .collect();
    let mut all = Gathered::default();
    let mut failures = Failures::default();
    for round in 0..runs {
        eprintln!("# run {}/{runs}", round + 1);
        if let Err(e) = run(&server, scale, round, &hashes, &mut all, &mut failures).await {
            failures.0.push(format!("run {round}: {e}"));
            break;
        }
    }
    all.print();
    server.shutdown().await;
    Ok(failures)
}
