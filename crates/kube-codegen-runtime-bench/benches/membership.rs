//! S2 of issue 34: how fast a ring sees a member join and leave, with the Lease watch (the
//! default) and without it (polling every retry period, issue 30's behaviour), at leader
//! election's timings (15 s lease, 10 s renew deadline, 2 s retry).
//!
//! Usage: `cargo bench -p kube-codegen-runtime-bench --bench membership -- [--runs N]`
//! (default 5). Each round, per mode, on the in-memory API server in this process: replica `a`
//! alone owns the space; `b` starts; figures: until `a`'s view lists `b` (`join_seen`), until
//! the two own the space between them with `b` owning some (`join_taken`: table written,
//! acknowledged by both, taken); `b` leaves (its Lease deleted); until `a`'s view no longer
//! lists it (`leave_seen`) and `a` owns the whole space again (`leave_taken`). Run as a test
//! (no `--bench`) it is one round.

use std::time::Duration;

use kube_codegen_runtime::shard::{MembershipConfig, ShardRing};
use kube_codegen_runtime_bench::measure::runs_value;
use kube_codegen_runtime_bench::runs::Gathered;
use kube_fake_apiserver::FakeApiServer;
use tokio::time::Instant;

const SPACE: u128 = 1 << 64;

async fn until(what: &str, mut check: impl FnMut() -> bool) -> f64 {
    let start = Instant::now();
    while !check() {
        if start.elapsed() > Duration::from_secs(60) {
            eprintln!("{what}: not within 60 s");
            std::process::exit(1);
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    start.elapsed().as_secs_f64() * 1000.0
}

async fn round(server: &FakeApiServer, ring: &str, watch: bool, out: &mut Gathered) {
    let client = || {
        let mut config = server.client_config();
        config.default_retry = false;
        kube::Client::try_from(config).expect("client")
    };
    let member = |id: &str| {
        ShardRing::new(
            client(),
            MembershipConfig::new(ring, id, "default").watch(watch),
        )
    };
    let mode = if watch { "watch" } else { "poll" };
    let a = member("a");
    let run_a = tokio::spawn({
        let a = a.clone();
        async move { a.run().await }
    });
    until("a owning the space", || a.allowed().size() == SPACE).await;
    let b = member("b");
    let run_b = tokio::spawn({
        let b = b.clone();
        async move { b.run().await }
    });
    let seen = until("a seeing b", || {
        a.membership().view().borrow().members.len() == 2
    })
    .await;
    let taken = until("b taking its share", || {
        let (sa, sb) = (a.allowed().size(), b.allowed().size());
        sb > 0 && sa + sb == SPACE
    })
    .await;
    run_b.abort();
    b.leave().await;
    let gone = until("a seeing b leave", || {
        a.membership().view().borrow().members.len() == 1
    })
    .await;
    let retaken = until("a owning the space again", || a.allowed().size() == SPACE).await;
    run_a.abort();
    a.leave().await;
    out.push(&format!("{mode}_join_seen"), seen, "ms");
    out.push(&format!("{mode}_join_taken"), seen + taken, "ms");
    out.push(&format!("{mode}_leave_seen"), gone, "ms");
    out.push(&format!("{mode}_leave_taken"), gone + retaken, "ms");
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut runs = None;
    let mut bench = false;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--runs" => runs = Some(runs_value(args.next())),
            "--bench" => bench = true,
            _ => {}
        }
    }
    let runs = runs.unwrap_or(if bench { 5 } else { 1 });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let server = FakeApiServer::start().await.expect("server");
        let mut out = Gathered::default();
        for i in 0..runs {
            for watch in [true, false] {
                round(&server, &format!("r{i}-{watch}"), watch, &mut out).await;
            }
        }
        println!("# S2: ring membership changes, 15/10/2 s timings, {runs} rounds");
        out.print();
    });
}
