//! S1 of issue 30: one controller's work shared by three replicas in ring mode, beside one
//! unsharded replica, on the in-memory API server.
//!
//! Usage: `cargo bench -p kube-codegen-runtime-bench --bench shard -- [--runs N]
//! [--namespaces N] [--per-ns N] [--touch N] [--client-filter] [--quick]`
//! (default: 5 rounds, 3,000 namespaces of 10 Foos each, every Foo owning a Deployment, 3,000
//! touched, server-side `shardSelector` on). Run as a test
//! (no `--bench`) it is a smoke run at `--quick` sizes that fails unless every replica finished.
//!
//! Every process is this binary: the server (`--server`), and per round first one unsharded
//! replica, then three sharded ones at once, each a process of its own, so CPU (getrusage) and
//! bytes received (`rchar` of `/proc/self/io`: every byte read from the server's sockets) are
//! each replica's alone. The replicas are R1's controller (benches/controller.rs): a
//! `Controller<Foo>` owning Deployments, two workers, a reconcile that looks the Foo's
//! Deployment up in the cache and checks its owner and replicas, writing nothing (R1's
//! `CheckChild`, src/reconcile.rs). Sharded, the
//! factory is `.sharded(ring.scope())` and the controller `.shard_ring(ring)`, by namespace
//! (a Foo and its Deployment share it, so the lookup stays in the replica's cache); namespace
//! names as clusters name them, `ns-1` .. `ns-N` (issue 34: FNV-1a hardly spreads them, so the
//! ring's table is cut at their hashes). The ring's three Leases and its table (computed from
//! the namespaces and their Foos, as the ring's coordinator computes it from the members'
//! loads) are created with the objects (holders `replica-0..2`), so every replica sees the
//! whole ring at once, as a running deployment does, rather than the first one taking
//! everything for a moment.
//!
//! Phases: from start until each replica reconciled every Foo of its share (`first`: the list,
//! the cache, one reconcile per Foo; its share computed from the same ring), then, once the
//! driver marked every replica, the server labels `--touch` Foos spread over all of them and
//! each replica runs until it reconciled its touched ones (`touch`). Figures per replica and
//! phase: reconciles, CPU seconds, MB received, Foos and Deployments cached. Totals: reconciles
//! per CPU-second over all replicas, and sharded over unsharded; the largest replica's bytes
//! over the unsharded replica's; the largest share's deviation from a third.

// The kind is called Foo, so `foo` is the natural name, not a placeholder.
#![allow(clippy::disallowed_names)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::Api;
use kube::api::PostParams;
use kube_codegen_runtime::SharedInformerFactory;
use kube_codegen_runtime::controller::Controller;
use kube_codegen_runtime::shard::table::rebalance;
use kube_codegen_runtime::shard::{
    Load, MembershipConfig, RING_LABEL, RING_TABLE_ANNOTATION, ShardKey, ShardRing, Table,
};
use kube_codegen_runtime_bench::cluster::{self, answer_driver, seed, start_with_foo_crd};
use kube_codegen_runtime_bench::measure::{count_value, cpu_seconds, runs_value};
use kube_codegen_runtime_bench::process::{self, Proc};
use kube_codegen_runtime_bench::reconcile::{CheckChild, Tally};
use kube_codegen_runtime_bench::runs::Gathered;
use kube_codegen_runtime_bench::samplecontroller::v1alpha1::Foo;
use kube_fake_apiserver::FakeApiServer;

const TOUCHED: &str = "s1.bench.example.com/touched";
const RING: &str = "s1";
const LEASE_NS: &str = "default";
const REPLICAS: usize = 3;
/// Any phase longer than this is a failure, not a figure.
const DEADLINE: Duration = Duration::from_secs(900);

#[derive(Clone, Copy, Debug)]
struct Scale {
    namespaces: usize,
    per_ns: usize,
    touch: usize,
    server_filter: bool,
}

impl Scale {
    fn foos(&self) -> usize {
        self.namespaces * self.per_ns
    }
    fn args(&self) -> Vec<String> {
        let mut a = vec![
            "--namespaces".into(),
            self.namespaces.to_string(),
            "--per-ns".into(),
            self.per_ns.to_string(),
            "--touch".into(),
            self.touch.to_string(),
        ];
        if !self.server_filter {
            a.push("--client-filter".into());
        }
        a
    }
}

fn namespace(i: usize) -> String {
    format!("ns-{}", i + 1)
}

/// The ring's table for these namespaces and their Foos (what the coordinator publishes from
/// the members' loads).
fn seeded_table(scale: &Scale) -> Table {
    let ids: Vec<String> = (0..REPLICAS).map(identity).collect();
    let load = Load::new((0..scale.namespaces).map(|i| {
        (
            ShardKey::Namespace.hash("", &namespace(i)),
            scale.per_ns as u64,
        )
    }));
    rebalance(None, &ids, &load, 1)
}

fn ns_of(scale: &Scale, foo: usize) -> String {
    namespace(foo / scale.per_ns)
}

fn identity(r: usize) -> String {
    format!("replica-{r}")
}

fn touched(scale: &Scale) -> impl Iterator<Item = usize> {
    cluster::touched(scale.foos(), scale.touch)
}

fn fail(message: impl std::fmt::Display) -> ! {
    eprintln!("s1: {message}");
    std::process::exit(1)
}

fn main() {
    let mut scale = Scale {
        namespaces: 3_000,
        per_ns: 10,
        touch: 3_000,
        server_filter: true,
    };
    let (mut server, mut quick, mut benching) = (false, false, false);
    let (mut runs, mut url, mut replica) = (None, None, None::<String>);
    let mut sizes: BTreeMap<&str, usize> = BTreeMap::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--runs" => runs = Some(runs_value(args.next())),
            f @ ("--namespaces" | "--per-ns" | "--touch") => {
                let key = match f {
                    "--namespaces" => "namespaces",
                    "--per-ns" => "per_ns",
                    _ => "touch",
                };
                sizes.insert(key, count_value(args.next(), f));
            }
            "--client-filter" => scale.server_filter = false,
            "--url" => url = args.next(),
            "--replica" => replica = args.next(),
            "--server" => server = true,
            "--quick" => quick = true,
            "--bench" => benching = true,
            _ => {} // the test harness's flags
        }
    }
    let smoke = !benching && !server && replica.is_none();
    if quick || smoke {
        scale.namespaces = 60;
        scale.per_ns = 5;
        scale.touch = 60;
    }
    scale.namespaces = sizes.get("namespaces").copied().unwrap_or(scale.namespaces);
    scale.per_ns = sizes.get("per_ns").copied().unwrap_or(scale.per_ns);
    scale.touch = sizes
        .get("touch")
        .copied()
        .unwrap_or(scale.touch)
        .min(scale.foos());
    if server {
        let rt = process::runtime().unwrap_or_else(|e| fail(e));
        return rt.block_on(async {
            if let Err(e) = serve(scale).await {
                fail(format!("server: {e}"));
            }
        });
    }
    if let Some(who) = replica {
        let Some(url) = url else {
            fail("--replica needs --url")
        };
        let rt = process::runtime().unwrap_or_else(|e| fail(e));
        return rt.block_on(async {
            if let Err(e) = run_replica(&who, &url, scale).await {
                fail(format!("{who}: {e}"));
            }
        });
    }
    let runs = runs.unwrap_or(if quick || smoke { 1 } else { 5 });
    println!(
        "# s1: {} Foos each owning a Deployment in {} namespaces (ns-1..), {} touched, \
         shardSelector {}; server, the unsharded replica and each of the three sharded ones in a \
         process of its own (2-thread Tokio runtime); median of {runs} rounds, min and max after #",
        scale.foos(),
        scale.namespaces,
        scale.touch,
        if scale.server_filter {
            "applied by the server"
        } else {
            "ignored by the server (client-side filtering)"
        }
    );
    let mut all = Gathered::default();
    // One server for every round: seeding it is slow (the in-memory server took 19 minutes for
    // 63,000 objects), and the rounds change only labels and the Leases.
    let mut args = vec!["--server".to_owned()];
    args.extend(scale.args());
    let (mut server, url) = Proc::spawn_server(&args).unwrap_or_else(|e| fail(e));
    for round in 0..runs {
        eprintln!("# round {}/{runs}", round + 1);
        if let Err(e) = drive(&mut all, scale, round, &mut server, &url) {
            fail(e);
        }
    }
    if let Err(e) = server.finish() {
        fail(e);
    }
    all.print();
    if smoke {
        for f in [
            "s1_sharded_first_reconciles_per_cpu_over_unsharded",
            "s1_share_worst_dev",
        ] {
            if all.values(f).is_none() {
                fail(format!("no figure {f}"));
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The driver.

fn get(figures: &[(String, f64)], name: &str) -> Result<f64, String> {
    figures
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| *v)
        .ok_or_else(|| format!("no figure {name}"))
}

/// The replicas of one variant: start, first pass, mark, touch, stop. Figures per replica.
fn phase(
    server: &mut Proc,
    url: &str,
    scale: Scale,
    who: &[String],
    token: &str,
) -> Result<Vec<Vec<(String, f64)>>, String> {
    let mut procs = Vec::new();
    for w in who {
        let mut args = vec![
            "--replica".into(),
            w.clone(),
            "--url".into(),
            url.to_owned(),
        ];
        args.extend(scale.args());
        procs.push(Proc::spawn(&args, w.clone())?);
    }
    let mut figures: Vec<Vec<(String, f64)>> = Vec::new();
    for p in &mut procs {
        figures.push(p.until("first-done")?);
    }
    for p in &mut procs {
        p.send(&format!("mark {token}"))?;
    }
    for p in &mut procs {
        p.until("marked")?;
    }
    server.send(&format!("touch {token}"))?;
    server.until("done")?;
    for (p, f) in procs.iter_mut().zip(&mut figures) {
        f.extend(p.until("touch-done")?);
    }
    for p in &mut procs {
        p.send("stop")?;
    }
    for p in procs {
        p.finish()?;
    }
    Ok(figures)
}

fn drive(
    all: &mut Gathered,
    scale: Scale,
    round: usize,
    server: &mut Proc,
    url: &str,
) -> Result<(), String> {
    let unsharded = phase(
        server,
        url,
        scale,
        &["unsharded".into()],
        &format!("r{round}-unsharded"),
    )?;
    // The Leases again, fresh: the three replicas start as one running ring.
    server.send("leases")?;
    server.until("done")?;
    let ids: Vec<String> = (0..REPLICAS).map(identity).collect();
    let sharded = phase(server, url, scale, &ids, &format!("r{round}-sharded"))?;

    let u = &unsharded[0];
    let foos = scale.foos() as f64;
    for f in ["first", "touch"] {
        let rec = get(u, &format!("{f}_reconciles"))?;
        let cpu = get(u, &format!("{f}_cpu_s"))?;
        all.push(
            &format!("s1_unsharded_{f}_reconciles_per_cpu"),
            rec / cpu,
            "/s",
        );
        let (mut r, mut c) = (0.0, 0.0);
        for s in &sharded {
            r += get(s, &format!("{f}_reconciles"))?;
            c += get(s, &format!("{f}_cpu_s"))?;
        }
        all.push(&format!("s1_sharded_{f}_reconciles_per_cpu"), r / c, "/s");
        all.push(
            &format!("s1_sharded_{f}_reconciles_per_cpu_over_unsharded"),
            (r / c) / (rec / cpu),
            "x",
        );
    }
    let u_bytes = get(u, "first_mb_received")?;
    all.push("s1_unsharded_first_mb_received", u_bytes, "MB");
    all.push("s1_unsharded_cached_foos", get(u, "cached_foos")?, "");
    let (mut worst_dev, mut worst_bytes, mut worst_cached_dev) = (0f64, 0f64, 0f64);
    for (i, s) in sharded.iter().enumerate() {
        let reconciled = get(s, "first_reconciled_foos")?;
        let cached = get(s, "cached_foos")?;
        let cached_deps = get(s, "cached_deployments")?;
        let third = foos / REPLICAS as f64;
        worst_dev = worst_dev.max((reconciled / third - 1.0).abs());
        worst_cached_dev = worst_cached_dev
            .max((cached / third - 1.0).abs())
            .max((cached_deps / third - 1.0).abs());
        let b = get(s, "first_mb_received")?;
        worst_bytes = worst_bytes.max(b / u_bytes);
        all.push(&format!("s1_replica{i}_cached_foos"), cached, "");
        all.push(
            &format!("s1_replica{i}_cached_deployments"),
            cached_deps,
            "",
        );
        all.push(&format!("s1_replica{i}_first_mb_received"), b, "MB");
        all.push(
            &format!("s1_replica{i}_selector_coverage"),
            get(s, "selector_coverage")?,
            "",
        );
    }
    all.push("s1_share_worst_dev", worst_dev, "");
    all.push("s1_cached_worst_dev", worst_cached_dev, "");
    all.push("s1_bytes_worst_replica_over_unsharded", worst_bytes, "x");
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The server process.

/// The ring's Leases as their replicas renew them (fresh `renewTime`), and its table.
async fn leases(client: &kube::Client, scale: &Scale) -> Result<(), String> {
    let api: Api<Lease> = Api::namespaced(client.clone(), LEASE_NS);
    for r in 0..REPLICAS {
        let config = MembershipConfig::new(RING, identity(r), LEASE_NS);
        let name = config.lease_name();
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                labels: Some([(RING_LABEL.to_owned(), RING.to_owned())].into()),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(identity(r)),
                lease_duration_seconds: Some(15),
                renew_time: Some(MicroTime(k8s_openapi::jiff::Timestamp::now())),
                ..LeaseSpec::default()
            }),
        };
        let _ = api.delete(&name, &Default::default()).await;
        api.create(&PostParams::default(), &lease)
            .await
            .map_err(|e| format!("creating lease {name}: {e}"))?;
    }
    let name = MembershipConfig::new(RING, identity(0), LEASE_NS).table_lease_name();
    let table = Lease {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            labels: Some([(RING_LABEL.to_owned(), RING.to_owned())].into()),
            annotations: Some(
                [(
                    RING_TABLE_ANNOTATION.to_owned(),
                    seeded_table(scale).encode(),
                )]
                .into(),
            ),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec::default()),
    };
    let _ = api.delete(&name, &Default::default()).await;
    api.create(&PostParams::default(), &table)
        .await
        .map_err(|e| format!("creating lease {name}: {e}"))?;
    Ok(())
}

async fn serve(scale: Scale) -> Result<(), String> {
    let builder = FakeApiServer::builder()
        .history_limit(100_000)
        .shard_selectors(scale.server_filter);
    let server = start_with_foo_crd(builder).await?;
    let client = server.in_process_client();
    let t0 = Instant::now();
    cluster::create_namespaces(&client, scale.namespaces, namespace).await?;
    seed(&client, scale.foos(), |i| ns_of(&scale, i)).await?;
    println!(
        "# server: {} namespaces, {} Foos and Deployments created in {:.1} s",
        scale.namespaces,
        scale.foos(),
        t0.elapsed().as_secs_f64()
    );
    answer_driver(server, async |_: &FakeApiServer, line: &str| {
        let mut words = line.split_whitespace();
        match (words.next(), words.next()) {
            (Some("touch"), Some(token)) => {
                let ns = |i| ns_of(&scale, i);
                cluster::touch(&client, touched(&scale), ns, TOUCHED, token).await
            }
            (Some("leases"), None) => leases(&client, &scale).await,
            _ => Err(format!("unknown command {line:?}")),
        }
    })
    .await
}

// ---------------------------------------------------------------------------------------------
// A replica process.

/// A TCP proxy on a thread of its own between the replica's client and the server, counting
/// the bytes the server sends (HTTP headers and bodies, as on the wire; `/proc/self/io` does
/// not count `recv`). Its thread's CPU time is known, so it is left out of the replica's.
struct Proxy {
    addr: std::net::SocketAddr,
    received: Arc<AtomicU64>,
    clock: libc::clockid_t,
}

impl Proxy {
    fn start(upstream: std::net::SocketAddr) -> Result<Proxy, String> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
        listener.set_nonblocking(true).map_err(|e| e.to_string())?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        let received = Arc::new(AtomicU64::new(0));
        let (tx, rx) = std::sync::mpsc::channel();
        let counter = received.clone();
        std::thread::spawn(move || {
            let mut clock: libc::clockid_t = 0;
            // SAFETY: the calling thread's own id and a valid out pointer.
            unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut clock) };
            let _ = tx.send(clock);
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap_or_else(|e| fail(format!("proxy runtime: {e}")));
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener)
                    .unwrap_or_else(|e| fail(format!("proxy listener: {e}")));
                while let Ok((client, _)) = listener.accept().await {
                    let counter = counter.clone();
                    tokio::spawn(async move {
                        use tokio::io::{AsyncReadExt, AsyncWriteExt};
                        let Ok(server) = tokio::net::TcpStream::connect(upstream).await else {
                            return;
                        };
                        let _ = (client.set_nodelay(true), server.set_nodelay(true));
                        let (mut cr, mut cw) = client.into_split();
                        let (mut sr, mut sw) = server.into_split();
                        let up = tokio::spawn(async move {
                            let _ = tokio::io::copy(&mut cr, &mut sw).await;
                            let _ = sw.shutdown().await;
                        });
                        let mut buf = vec![0u8; 64 * 1024];
                        while let Ok(n) = sr.read(&mut buf).await {
                            if n == 0 || cw.write_all(&buf[..n]).await.is_err() {
                                break;
                            }
                            counter.fetch_add(n as u64, Ordering::Relaxed);
                        }
                        up.abort();
                    });
                }
            });
        });
        let clock = rx.recv().map_err(|e| e.to_string())?;
        Ok(Proxy {
            addr,
            received,
            clock,
        })
    }

    fn bytes(&self) -> u64 {
        self.received.load(Ordering::Relaxed)
    }

    /// The proxy thread's CPU seconds so far.
    fn cpu(&self) -> f64 {
        let mut t = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a clock id from pthread_getcpuclockid and a valid out pointer.
        unsafe { libc::clock_gettime(self.clock, &mut t) };
        t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
    }
}

async fn run_replica(who: &str, url: &str, scale: Scale) -> Result<(), String> {
    use tokio::io::AsyncBufReadExt;
    let upstream: std::net::SocketAddr =
        url.strip_prefix("http://")
            .and_then(|a| a.parse().ok())
            .ok_or_else(|| format!("expected http://ADDR, got {url}"))?;
    let proxy = Proxy::start(upstream)?;
    // CPU of the replica: the process's less the proxy's.
    let cpu = || cpu_seconds() - proxy.cpu();
    let (cpu0, bytes0, t0) = (cpu(), proxy.bytes(), Instant::now());
    let sharded = who != "unsharded";
    // This replica's share, from the same table the ring was seeded with.
    let share = sharded.then(|| seeded_table(&scale).ranges_of(who));
    let in_share = |ns: &str| {
        share
            .as_ref()
            .is_none_or(|s| s.contains(ShardKey::Namespace.hash("", ns)))
    };
    let mine: Vec<bool> = (0..scale.foos())
        .map(|i| in_share(&ns_of(&scale, i)))
        .collect();
    let tally = Tally::new(TOUCHED, mine);
    let expected = tally.expected();
    let url = format!("http://{}", proxy.addr);
    let config = kube::Config::new(url.parse().map_err(|e| format!("url {url}: {e}"))?);
    let client = kube::Client::try_from(config).map_err(|e| e.to_string())?;
    let mut builder = SharedInformerFactory::builder(client.clone());
    let ring = sharded.then(|| {
        let config = MembershipConfig::new(RING, who, LEASE_NS);
        ShardRing::new(client.clone(), config).key(ShardKey::Namespace)
    });
    if let Some(ring) = &ring {
        builder = builder.sharded(ring.scope());
    }
    let factory = builder.build();
    let mut controller = Controller::<Foo>::for_kind(&factory)
        .owns::<Deployment>()
        .workers(2);
    if let Some(ring) = &ring {
        controller = controller.shard_ring(ring.clone());
    }
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let run = tokio::spawn(controller.run(CheckChild(tally.clone()), async {
        let _ = stop_rx.await;
    }));
    if expected > 0 {
        tokio::time::timeout(DEADLINE, tally.first_done.notified())
            .await
            .map_err(|_| "first pass not done in time")?;
    }
    let (cpu1, bytes1) = (cpu(), proxy.bytes());
    let foos = factory.informer_for::<Foo>().store().len();
    let deps = factory.informer_for::<Deployment>().store().len();
    let coverage = share.as_ref().map_or(1.0, |s| {
        let sent = kube_codegen_runtime::shard::range::coarsen(
            s,
            kube_codegen_runtime::shard::range::MAX_SELECTOR_TERMS,
        );
        sent.size() as f64 / 18446744073709551616.0
    });
    let reconciles = tally.reconciles.load(Ordering::Relaxed);
    println!(
        "# {who}: {expected} Foos reconciled in {:.1} s; {} ranges",
        t0.elapsed().as_secs_f64(),
        share.as_ref().map_or(0, |s| s.ranges().len())
    );
    println!("first_reconciles {reconciles} reconciles");
    println!("first_reconciled_foos {expected} Foos");
    println!("first_cpu_s {:.4} s", cpu1 - cpu0);
    println!("first_mb_received {:.3} MB", (bytes1 - bytes0) as f64 / 1e6);
    println!("cached_foos {foos} Foos");
    println!("cached_deployments {deps} Deployments");
    println!("selector_coverage {coverage:.4} of the space");
    println!(
        "first_stale {} reconciles",
        tally.stale.load(Ordering::Relaxed)
    );
    println!("first-done");
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    let next = |l: Result<Option<String>, std::io::Error>| -> Result<String, String> {
        l.map_err(|e| e.to_string())?
            .ok_or_else(|| "stdin closed".to_owned())
    };
    let mark = next(lines.next_line().await)?;
    let token = mark
        .strip_prefix("mark ")
        .ok_or_else(|| format!("expected mark, got {mark:?}"))?;
    let want = touched(&scale).filter(|&i| tally.is_mine(i)).count();
    tally.expect_touch(token.to_owned(), want)?;
    let (cpu2, bytes2, rec2) = (
        cpu(),
        proxy.bytes(),
        tally.reconciles.load(Ordering::Relaxed),
    );
    let touch_started = Instant::now();
    println!("marked");
    if want > 0 {
        tokio::time::timeout(DEADLINE, tally.touched_done.notified())
            .await
            .map_err(|_| "touch not done in time")?;
    }
    let (cpu3, bytes3) = (cpu(), proxy.bytes());
    println!(
        "touch_reconciles {} reconciles",
        tally.reconciles.load(Ordering::Relaxed) - rec2
    );
    println!("touch_cpu_s {:.4} s", cpu3 - cpu2);
    println!(
        "touch_wall_s {:.4} s",
        touch_started.elapsed().as_secs_f64()
    );
    println!("touch_mb_received {:.3} MB", (bytes3 - bytes2) as f64 / 1e6);
    println!("touch-done");
    let stop = next(lines.next_line().await)?;
    if stop != "stop" {
        return Err(format!("expected stop, got {stop:?}"));
    }
    let _ = stop_tx.send(());
    run.await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    Ok(())
}
