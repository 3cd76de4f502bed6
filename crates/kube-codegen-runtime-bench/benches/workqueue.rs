//! Workqueue benchmarks W1, W2a, W2b and W2-default, as defined in `shared/BENCHMARKS.md`.
//!
//! Usage: `cargo bench -p kube-codegen-runtime-bench --bench workqueue -- [w1|w1tasks|w1split|
//! w1lock|w2a|w2b|w2default|micro]... [--runs N]` (no name: all but `w1split`, `w1lock` and
//! `micro`; `w1tasks`, `w1split`, `w1lock` and `micro` are extra views, not BENCHMARKS.md
//! workloads). Each selected workload runs N times (default 5; W1 10, because its runs can
//! fall into different regimes; W2-default, 20 s per run, 1) and one line per figure,
//! `name median unit  # min .. max over N runs`, gives the median with the minimum and maximum
//! over the runs; lines starting with `#` say which shape ran, and for W1 each run's adds/s,
//! processed/s, CPU and context switches.
//!
//! Shapes (client-go ran goroutines on GOMAXPROCS=2): the workers are Tokio tasks on a
//! multi-threaded runtime with 2 worker threads. W1's two producers are OS threads
//! (`spawn_blocking`), preempted by the kernel as goroutines are by Go's scheduler; a Tokio
//! task that adds in a loop without yielding would starve the workers on its thread (the
//! `w1tasks` view shows producers as tasks yielding through Tokio's budget instead). W2's
//! producer is a task calling `tokio::task::coop::consume_budget()` after each add (an OS
//! thread there gave worse delays: it takes CPU from the two workers). With the real clock the
//! queue's delays run on its own timer thread (see `WorkQueue`). Same keys, counts and drain
//! as BENCHMARKS.md in every shape. CPU figures come from getrusage (user + sys of the whole
//! process over the timed phase); peak RSS is the process's `ru_maxrss` after the workload.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use kube_codegen_runtime::workqueue::{
    BucketRateLimiter, ItemExponentialFailureRateLimiter, MaxOfRateLimiter, RateLimiter, WorkQueue,
    default_controller_rate_limiter,
};
use kube_codegen_runtime_bench::measure::{Usage, cpu_seconds, peak_rss_mb, thread_cpu_seconds};
use kube_codegen_runtime_bench::runs::{Gathered, fmt};

fn main() {
    let mut filters: Vec<String> = Vec::new();
    let mut runs: Option<usize> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--bench" => {} // passed by `cargo bench`
            "--runs" => match args.next().and_then(|n| n.parse().ok()) {
                Some(n) if n > 0 => runs = Some(n),
                _ => {
                    eprintln!("--runs needs a positive integer");
                    std::process::exit(2);
                }
            },
            "w1" | "w1tasks" | "w1split" | "w1lock" | "w2a" | "w2b" | "w2default" | "micro" => {
                filters.push(a)
            }
            other if other.starts_with('-') => {} // other harness flags are ignored
            other => {
                eprintln!(
                    "unknown workload {other:?}: expected w1, w1tasks, w1split, w1lock, w2a, \
                     w2b, w2default or micro"
                );
                std::process::exit(2);
            }
        }
    }
    let selected = |name: &str| filters.is_empty() || filters.iter().any(|f| f == name);
    let n = runs.unwrap_or(5);
    if selected("w1") {
        // W1 is bimodal on a loaded 2-vCPU machine unless the queue avoids it: at least 10 runs
        // by default, each printed, so min and max show a second regime.
        let n = runs.unwrap_or(10);
        println!("# w1: 2 producer OS threads (add_ref), 2 worker tasks on a 2-thread runtime");
        report(n, w1_run, W1_PER_RUN);
    }
    if selected("w1tasks") {
        println!("# w1tasks: 2 producer tasks yielding via consume_budget, 2 worker tasks");
        report(n, w1tasks_run, &[]);
    }
    if selected("w2a") {
        println!("# w2a: producer task (consume_budget per add), 2 worker tasks, timer thread");
        report(n, w2a_run, &[]);
    }
    if selected("w2b") {
        println!("# w2b: producer task, 2 worker tasks, timer thread");
        report(n, w2b_run, &[]);
    }
    if filters.iter().any(|f| f == "w1split") {
        println!("# w1split: W1's 1,000,000 adds with no workers, on one thread and on two");
        report(n, w1split_run, &[]);
    }
    if filters.iter().any(|f| f == "w1lock") {
        println!("# w1lock: W1's adds as a bare dedupe set under parking_lot's Mutex and std's");
        report(n, w1lock_run, &[]);
    }
    if filters.iter().any(|f| f == "micro") {
        report(n, micro_run, &[]);
    }
    if selected("w2default") {
        let n = runs.unwrap_or(1);
        println!("# w2default: {n} run(s) of ~20 s (use --runs N for more)");
        report(n, w2default_run, &[]);
    }
}

type Figures = Vec<(&'static str, f64, &'static str)>;

/// Runs `f` `n` times and prints every figure's median, minimum and maximum ([`Gathered`]).
/// With `per_run`, each run's figures named there are also printed as a `#` line as it
/// finishes.
fn report(n: usize, f: fn() -> Figures, per_run: &[&str]) {
    let mut all = Gathered::default();
    for i in 0..n {
        let r = f();
        if !per_run.is_empty() {
            let line: Vec<String> = r
                .iter()
                .filter(|(name, ..)| per_run.contains(name))
                .map(|(name, v, _)| format!("{name}={}", fmt(*v)))
                .collect();
            println!("# run {}: {}", i + 1, line.join(" "));
        }
        for (name, v, unit) in r {
            all.push(name, v, unit);
        }
    }
    all.print();
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

fn key(i: usize) -> String {
    format!("ns-{}/name-{}", i % 100, i)
}

/// The index `i` of a key built by [`key`].
fn index_of(key: &str) -> usize {
    let digits = key.bytes().rev().take_while(u8::is_ascii_digit).count();
    key[key.len() - digits..]
        .parse()
        .expect("benchmark key index")
}

/// The W1 figures printed for every run.
const W1_PER_RUN: &[&str] = &[
    "w1_adds_per_sec",
    "w1_processed_per_sec",
    "w1_cpu_s",
    "w1_sys_s",
    "w1_involuntary_switches",
    "w1_voluntary_switches",
    "w1_worker_parks",
];

/// W1's key space and adds per producer.
const W1_KEYS: usize = 10_000;
const W1_PER_PRODUCER: usize = 500_000;

fn w1_run() -> Figures {
    w1(false)
}

/// W1 with the producers as Tokio tasks on the 2-thread runtime that yield through Tokio's
/// cooperative budget (`consume_budget` after each add, i.e. a yield every 128 adds). Not in
/// BENCHMARKS.md; it shows the other end of the scheduling trade-off: workers interleave with
/// producers closely, so nearly every add is processed (few duplicates collapse).
fn w1tasks_run() -> Figures {
    w1(true)
}

fn w1(task_producers: bool) -> Figures {
    let keys: Arc<Vec<String>> = Arc::new((0..W1_KEYS).map(key).collect());
    let indices = w1_indices();
    let rt = runtime();
    let r = rt.block_on(async move {
        let queue: WorkQueue<String> = WorkQueue::new();
        let barrier = Arc::new(tokio::sync::Barrier::new(5));
        let mut producers = Vec::new();
        for idx in indices {
            let (q, b, keys) = (queue.clone(), barrier.clone(), keys.clone());
            if task_producers {
                producers.push(tokio::spawn(async move {
                    b.wait().await;
                    for i in idx {
                        q.add_ref(keys[i as usize].as_str());
                        tokio::task::coop::consume_budget().await;
                    }
                    0.0 // a task's CPU is not its own thread's
                }));
                continue;
            }
            let rt = tokio::runtime::Handle::current();
            // Producers are OS threads, preempted by the kernel as goroutines are by Go's
            // scheduler: a Tokio task adding in a loop would either never let the workers on
            // its thread run or need a yield interval (see `w1tasks_run`).
            producers.push(tokio::task::spawn_blocking(move || {
                rt.block_on(b.wait());
                let c0 = thread_cpu_seconds();
                for i in idx {
                    // `add_ref` is the zero-copy add (a Go string is passed by reference);
                    // the key is cloned only when it is actually queued.
                    q.add_ref(keys[i as usize].as_str());
                }
                thread_cpu_seconds() - c0
            }));
        }
        let mut workers = Vec::new();
        for _ in 0..2 {
            let (q, b) = (queue.clone(), barrier.clone());
            workers.push(tokio::spawn(async move {
                b.wait().await;
                let mut count = 0u64;
                while let Some(item) = q.get().await {
                    count += 1;
                    q.done(&item);
                }
                count
            }));
        }
        let metrics = tokio::runtime::Handle::current().metrics();
        barrier.wait().await;
        let (t0, u0, m0) = (Instant::now(), Usage::process(), WorkerStats::of(&metrics));
        let mut producers_cpu = 0.0;
        for p in producers {
            producers_cpu += p.await.expect("producer");
        }
        queue.shutdown_with_drain().await;
        let mut processed = 0;
        for w in workers {
            processed += w.await.expect("worker");
        }
        let wall = t0.elapsed().as_secs_f64();
        W1Run {
            wall,
            usage: Usage::process().since(&u0),
            workers: WorkerStats::of(&metrics).since(&m0),
            producers_cpu,
            processed,
        }
    });
    let (wall, cpu, processed) = (r.wall, r.usage.cpu(), r.processed);
    let adds = (2 * W1_PER_PRODUCER) as f64;
    let name = |w1: &'static str, tasks: &'static str| if task_producers { tasks } else { w1 };
    let mut figures = vec![
        (
            name("w1_adds_per_sec", "w1tasks_adds_per_sec"),
            adds / wall,
            "adds/s",
        ),
        (
            name("w1_processed", "w1tasks_processed"),
            processed as f64,
            "items",
        ),
        (
            name("w1_processed_per_sec", "w1tasks_processed_per_sec"),
            processed as f64 / wall,
            "items/s",
        ),
        (
            name("w1_adds_per_cpu_sec", "w1tasks_adds_per_cpu_sec"),
            adds / cpu,
            "adds/cpu-s",
        ),
        (
            name("w1_processed_per_cpu_sec", "w1tasks_processed_per_cpu_sec"),
            processed as f64 / cpu,
            "items/cpu-s",
        ),
        (name("w1_wall_s", "w1tasks_wall_s"), wall, "s"),
        (name("w1_cpu_s", "w1tasks_cpu_s"), cpu, "s"),
        // Where the CPU went (see the README's W1 section): the kernel's user/system split
        // (tick-sampled), context switches, the Tokio workers' busy time and parks.
        (name("w1_user_s", "w1tasks_user_s"), r.usage.user_s, "s"),
        (name("w1_sys_s", "w1tasks_sys_s"), r.usage.sys_s, "s"),
        (
            name("w1_voluntary_switches", "w1tasks_voluntary_switches"),
            r.usage.voluntary as f64,
            "switches",
        ),
        (
            name("w1_involuntary_switches", "w1tasks_involuntary_switches"),
            r.usage.involuntary as f64,
            "switches",
        ),
        (
            name("w1_worker_busy_s", "w1tasks_worker_busy_s"),
            r.workers.busy_s,
            "s",
        ),
        (
            name("w1_worker_parks", "w1tasks_worker_parks"),
            r.workers.parks as f64,
            "parks",
        ),
    ];
    if !task_producers {
        // The producer threads' own CPU (RUSAGE_THREAD over their add loops); the rest is the
        // two worker threads and the main thread.
        figures.push(("w1_producers_cpu_s", r.producers_cpu, "s"));
        figures.push(("w1_others_cpu_s", cpu - r.producers_cpu, "s"));
    }
    figures.push((
        name("w1_peak_rss_mb", "w1tasks_peak_rss_mb"),
        peak_rss_mb(),
        "MiB",
    ));
    figures
}

struct W1Run {
    wall: f64,
    usage: Usage,
    workers: WorkerStats,
    producers_cpu: f64,
    processed: u64,
}

/// The Tokio workers' total busy time and park count (stable runtime metrics).
#[derive(Clone, Copy)]
struct WorkerStats {
    busy_s: f64,
    parks: u64,
}

impl WorkerStats {
    fn of(m: &tokio::runtime::RuntimeMetrics) -> WorkerStats {
        (0..m.num_workers()).fold(
            WorkerStats {
                busy_s: 0.0,
                parks: 0,
            },
            |acc, w| WorkerStats {
                busy_s: acc.busy_s + m.worker_total_busy_duration(w).as_secs_f64(),
                parks: acc.parks + m.worker_park_count(w),
            },
        )
    }

    fn since(&self, earlier: &WorkerStats) -> WorkerStats {
        WorkerStats {
            busy_s: self.busy_s - earlier.busy_s,
            parks: self.parks - earlier.parks,
        }
    }
}

/// W1's index streams: producer p's 500,000 key indices.
fn w1_indices() -> Vec<Vec<u32>> {
    (0..2u64)
        .map(|p| {
            // BENCHMARKS.md defines the sequence: splitmix64 seeded with p + 1, index = next %
            // 10,000 (a library RNG would give other keys in another order).
            let mut rng = Splitmix64(p + 1);
            (0..W1_PER_PRODUCER)
                .map(|_| (rng.next() % W1_KEYS as u64) as u32)
                .collect()
        })
        .collect()
}

/// BENCHMARKS.md's splitmix64, step for step.
struct Splitmix64(u64);

impl Splitmix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Not part of BENCHMARKS.md (run only when named): W1's producers with no workers, to
/// separate what the adds cost from what handing items to workers costs. The queue fills
/// with the 10,000 keys and every later add is a duplicate. `one_thread`: both streams in
/// turn on this thread; `two_threads`: W1's two producer threads, concurrently (their
/// summed thread CPU, so contention on the queue's lock is included).
fn w1split_run() -> Figures {
    let keys: Vec<String> = (0..W1_KEYS).map(key).collect();
    let indices = w1_indices();
    let q: WorkQueue<String> = WorkQueue::new();
    let c0 = thread_cpu_seconds();
    for idx in &indices {
        for &i in idx {
            q.add_ref(keys[i as usize].as_str());
        }
    }
    let one = thread_cpu_seconds() - c0;
    assert_eq!(q.len(), W1_KEYS);
    let q: WorkQueue<String> = WorkQueue::new();
    let barrier = std::sync::Barrier::new(2);
    let t0 = Instant::now();
    let two: f64 = std::thread::scope(|s| {
        let threads: Vec<_> = indices
            .iter()
            .map(|idx| {
                let (q, keys, barrier) = (&q, &keys, &barrier);
                s.spawn(move || {
                    barrier.wait();
                    let c0 = thread_cpu_seconds();
                    for &i in idx {
                        q.add_ref(keys[i as usize].as_str());
                    }
                    thread_cpu_seconds() - c0
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|t| t.join().expect("producer"))
            .sum()
    });
    let two_wall = t0.elapsed().as_secs_f64();
    assert_eq!(q.len(), W1_KEYS);
    vec![
        ("w1split_one_thread_cpu_s", one, "s"),
        ("w1split_two_threads_cpu_s", two, "s"),
        ("w1split_two_threads_wall_s", two_wall, "s"),
    ]
}

/// Not part of BENCHMARKS.md (run only when named): a prototype for the queue's lock, not the
/// queue. W1's two producer streams run at once against a bare dedupe set (`HashSet<String>`,
/// insert unless present) behind parking_lot's `Mutex` (the queue's lock: 3 spins, then up to 7
/// `sched_yield`s before parking) and behind the standard library's (futex; spins without
/// yielding), alternately in each run. Process CPU, its system share and involuntary switches
/// over each phase show what the lock's waiting costs when both threads want it.
fn w1lock_run() -> Figures {
    let keys: Vec<String> = (0..W1_KEYS).map(key).collect();
    let indices = w1_indices();
    let parking = contended_adds(&keys, &indices, parking_lot::Mutex::new(HashSet::new()));
    let std = contended_adds(&keys, &indices, std::sync::Mutex::new(HashSet::new()));
    let mut figures = Vec::new();
    for (names, (wall, u)) in [
        (
            [
                "w1lock_parking_lot_wall_s",
                "w1lock_parking_lot_cpu_s",
                "w1lock_parking_lot_sys_s",
                "w1lock_parking_lot_involuntary_switches",
                "w1lock_parking_lot_voluntary_switches",
            ],
            parking,
        ),
        (
            [
                "w1lock_std_wall_s",
                "w1lock_std_cpu_s",
                "w1lock_std_sys_s",
                "w1lock_std_involuntary_switches",
                "w1lock_std_voluntary_switches",
            ],
            std,
        ),
    ] {
        figures.push((names[0], wall, "s"));
        figures.push((names[1], u.cpu(), "s"));
        figures.push((names[2], u.sys_s, "s"));
        figures.push((names[3], u.involuntary as f64, "switches"));
        figures.push((names[4], u.voluntary as f64, "switches"));
    }
    figures
}

/// A dedupe set behind a lock, for [`w1lock_run`].
trait SetLock: Sync {
    fn with(&self, f: impl FnOnce(&mut HashSet<String>));
}

impl SetLock for parking_lot::Mutex<HashSet<String>> {
    fn with(&self, f: impl FnOnce(&mut HashSet<String>)) {
        f(&mut self.lock())
    }
}

impl SetLock for std::sync::Mutex<HashSet<String>> {
    fn with(&self, f: impl FnOnce(&mut HashSet<String>)) {
        f(&mut self.lock().expect("no panics under the lock"))
    }
}

/// Wall seconds and process usage of W1's two producer streams inserting into one set behind
/// `lock`, the threads started together.
fn contended_adds(keys: &[String], indices: &[Vec<u32>], lock: impl SetLock) -> (f64, Usage) {
    let barrier = std::sync::Barrier::new(indices.len() + 1);
    std::thread::scope(|s| {
        let producers: Vec<_> = indices
            .iter()
            .map(|idx| {
                let (lock, barrier) = (&lock, &barrier);
                s.spawn(move || {
                    barrier.wait();
                    for &i in idx {
                        let k = keys[i as usize].as_str();
                        lock.with(|set| {
                            if !set.contains(k) {
                                set.insert(k.to_owned());
                            }
                        });
                    }
                })
            })
            .collect();
        barrier.wait();
        let (t0, u0) = (Instant::now(), Usage::process());
        for p in producers {
            p.join().expect("producer");
        }
        (t0.elapsed().as_secs_f64(), Usage::process().since(&u0))
    })
}

/// W2's limiter: the default controller composition with the bucket unthrottled.
fn w2_limiter() -> MaxOfRateLimiter<String> {
    MaxOfRateLimiter::new(vec![
        Box::new(ItemExponentialFailureRateLimiter::new(
            Duration::from_millis(5),
            Duration::from_secs(1000),
        )),
        Box::new(BucketRateLimiter::new(f64::INFINITY, 100)),
    ])
}

struct DelayRun {
    wall: f64,
    cpu: f64,
    /// From the first to the last add.
    producer_s: f64,
    delays_ms: Vec<f64>,
}

/// W2a / W2-default: one producer adds `n` distinct keys rate-limited, two workers record the
/// delay from add to get, forget and done. Clock: first add to the n-th done.
fn delay_run(n: usize, limiter: impl RateLimiter<String> + 'static) -> DelayRun {
    let keys: Vec<String> = (0..n).map(key).collect();
    let rt = runtime();
    rt.block_on(async move {
        let queue: WorkQueue<String> = WorkQueue::builder().rate_limiter(limiter).build();
        let origin = Instant::now();
        let add_at: Arc<Vec<AtomicU64>> = Arc::new((0..n).map(|_| AtomicU64::new(0)).collect());
        let delay: Arc<Vec<AtomicU64>> = Arc::new((0..n).map(|_| AtomicU64::new(0)).collect());
        let finished = Arc::new(AtomicUsize::new(0));
        let end = Arc::new(AtomicU64::new(0));
        let barrier = Arc::new(tokio::sync::Barrier::new(4));
        let mut workers = Vec::new();
        for _ in 0..2 {
            let (q, b, add_at, delay, finished, end) = (
                queue.clone(),
                barrier.clone(),
                add_at.clone(),
                delay.clone(),
                finished.clone(),
                end.clone(),
            );
            workers.push(tokio::spawn(async move {
                b.wait().await;
                while let Some(k) = q.get().await {
                    let now = origin.elapsed().as_nanos() as u64;
                    let i = index_of(&k);
                    delay[i].store(now - add_at[i].load(Ordering::Acquire), Ordering::Relaxed);
                    q.forget(&k);
                    q.done(&k);
                    if finished.fetch_add(1, Ordering::AcqRel) + 1 == n {
                        end.store(origin.elapsed().as_nanos() as u64, Ordering::Release);
                        q.shutdown();
                    }
                }
            }));
        }
        let producer = {
            let (q, b, add_at) = (queue.clone(), barrier.clone(), add_at.clone());
            tokio::spawn(async move {
                b.wait().await;
                let start = origin.elapsed().as_nanos() as u64;
                for (i, k) in keys.into_iter().enumerate() {
                    add_at[i].store(origin.elapsed().as_nanos() as u64, Ordering::Release);
                    q.add_rate_limited(k);
                    tokio::task::coop::consume_budget().await;
                }
                (start, origin.elapsed().as_nanos() as u64)
            })
        };
        barrier.wait().await;
        let c0 = cpu_seconds();
        let (start, produced) = producer.await.expect("producer");
        for w in workers {
            w.await.expect("worker");
        }
        let cpu = cpu_seconds() - c0;
        let wall = (end.load(Ordering::Acquire) - start) as f64 / 1e9;
        let delays_ms = delay
            .iter()
            .map(|d| d.load(Ordering::Relaxed) as f64 / 1e6)
            .collect();
        DelayRun {
            wall,
            cpu,
            producer_s: (produced - start) as f64 / 1e9,
            delays_ms,
        }
    })
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn w2a_run() -> Figures {
    const N: usize = 100_000;
    let mut r = delay_run(N, w2_limiter());
    r.delays_ms.sort_by(f64::total_cmp);
    vec![
        ("w2a_items_per_sec", N as f64 / r.wall, "items/s"),
        ("w2a_items_per_cpu_sec", N as f64 / r.cpu, "items/cpu-s"),
        ("w2a_delay_p50_ms", percentile(&r.delays_ms, 50.0), "ms"),
        ("w2a_delay_p99_ms", percentile(&r.delays_ms, 99.0), "ms"),
        (
            "w2a_max_delay_ms",
            *r.delays_ms.last().expect("delays"),
            "ms",
        ),
        ("w2a_wall_s", r.wall, "s"),
        ("w2a_producer_s", r.producer_s, "s"),
        ("w2a_cpu_s", r.cpu, "s"),
        ("w2a_peak_rss_mb", peak_rss_mb(), "MiB"),
    ]
}

fn w2default_run() -> Figures {
    const N: usize = 300;
    let r = delay_run(N, default_controller_rate_limiter());
    let last_wait = r.delays_ms[N - 1] / 1e3;
    vec![
        ("w2default_wall_s", r.wall, "s"),
        ("w2default_last_item_wait_s", last_wait, "s"),
        ("w2default_cpu_s", r.cpu, "s"),
    ]
}

fn w2b_run() -> Figures {
    const N: usize = 1000;
    const ATTEMPTS: u32 = 10;
    let keys: Vec<String> = (0..N).map(key).collect();
    let rt = runtime();
    let (wall, cpu) = rt.block_on(async move {
        let queue: WorkQueue<String> = WorkQueue::builder().rate_limiter(w2_limiter()).build();
        let attempts: Arc<Vec<AtomicU32>> = Arc::new((0..N).map(|_| AtomicU32::new(0)).collect());
        let forgotten = Arc::new(AtomicUsize::new(0));
        let end = Arc::new(std::sync::Mutex::new(None::<Instant>));
        let barrier = Arc::new(tokio::sync::Barrier::new(4));
        let mut workers = Vec::new();
        for _ in 0..2 {
            let (q, b, attempts, forgotten, end) = (
                queue.clone(),
                barrier.clone(),
                attempts.clone(),
                forgotten.clone(),
                end.clone(),
            );
            workers.push(tokio::spawn(async move {
                b.wait().await;
                while let Some(k) = q.get().await {
                    let i = index_of(&k);
                    if attempts[i].fetch_add(1, Ordering::AcqRel) + 1 < ATTEMPTS {
                        q.add_rate_limited(k.clone());
                        q.done(&k);
                    } else {
                        q.forget(&k);
                        q.done(&k);
                        if forgotten.fetch_add(1, Ordering::AcqRel) + 1 == N {
                            *end.lock().expect("end") = Some(Instant::now());
                            q.shutdown();
                        }
                    }
                }
            }));
        }
        let producer = {
            let (q, b) = (queue.clone(), barrier.clone());
            tokio::spawn(async move {
                b.wait().await;
                let t0 = Instant::now();
                for k in keys {
                    q.add_rate_limited(k);
                }
                t0
            })
        };
        barrier.wait().await;
        let c0 = cpu_seconds();
        let t0 = producer.await.expect("producer");
        for w in workers {
            w.await.expect("worker");
        }
        let t1 = end.lock().expect("end").expect("all items forgotten");
        ((t1 - t0).as_secs_f64(), cpu_seconds() - c0)
    });
    let ideal = 0.005 * f64::from((1u32 << ATTEMPTS) - 1);
    vec![
        ("w2b_wall_s", wall, "s"),
        ("w2b_overhead_ms", (wall - ideal) * 1e3, "ms"),
        ("w2b_cpu_s", cpu, "s"),
    ]
}

/// Not part of BENCHMARKS.md (run only when named): uncontended single-thread costs of the
/// primitive operations, to separate the queue's own cost from scheduling and contention.
/// Measured in process CPU time (nothing else runs), so it is robust to a busy machine.
fn micro_run() -> Figures {
    use futures::FutureExt;
    const KEYS: usize = 10_000;
    const OPS: usize = 1_000_000;
    let keys: Vec<String> = (0..KEYS).map(key).collect();
    let q: WorkQueue<String> = WorkQueue::new();
    for k in &keys {
        q.add_ref(k.as_str());
    }
    let t0 = cpu_seconds();
    for i in 0..OPS {
        q.add_ref(keys[i % KEYS].as_str());
    }
    let dup_add = (cpu_seconds() - t0) * 1e9 / OPS as f64;
    while let Some(k) = q.get().now_or_never().flatten() {
        q.done(&k);
        if q.is_empty() {
            break;
        }
    }
    let t0 = cpu_seconds();
    for i in 0..OPS {
        q.add_ref(keys[i % KEYS].as_str());
        let k = q.get().now_or_never().flatten().expect("queued");
        q.done(&k);
    }
    let cycle = (cpu_seconds() - t0) * 1e9 / OPS as f64;
    let limiter = w2_limiter();
    let t0 = cpu_seconds();
    for i in 0..OPS {
        let k = &keys[i % KEYS];
        std::hint::black_box(limiter.when(k));
        limiter.forget(k);
    }
    let when_forget = (cpu_seconds() - t0) * 1e9 / OPS as f64;
    // The W2a producer's call alone: 100,000 distinct keys, no workers (the timer thread still
    // moves due items into the queue meanwhile, as in W2a).
    let rate_limited = {
        let rt = runtime();
        let keys: Vec<String> = (0..100_000).map(key).collect();
        rt.block_on(async move {
            let q: WorkQueue<String> = WorkQueue::builder().rate_limiter(w2_limiter()).build();
            let t0 = Instant::now();
            let n = keys.len();
            for k in keys {
                q.add_rate_limited(k);
            }
            let ns = t0.elapsed().as_nanos() as f64 / n as f64;
            q.shutdown();
            ns
        })
    };
    vec![
        ("micro_add_rate_limited_wall_ns", rate_limited, "ns/op"),
        ("micro_duplicate_add_ns", dup_add, "ns/op"),
        ("micro_add_get_done_ns", cycle, "ns/op"),
        ("micro_w2_limiter_when_forget_ns", when_forget, "ns/op"),
        ("micro_line_handoff_ns", line_handoff_ns(), "ns/op"),
    ]
}

/// One-way cost of handing a cache line from one thread to another: two threads take turns
/// incrementing one atomic (each waits for the other's write), so every turn moves the line
/// between cores. The floor under any queue operation whose state another core wrote last.
/// With more runnable threads than cores the turns also include preemption; run it on an
/// otherwise idle machine.
fn line_handoff_ns() -> f64 {
    const TURNS: u64 = 200_000;
    let turn = AtomicU64::new(0);
    let t0 = Instant::now();
    std::thread::scope(|s| {
        for me in 0..2u64 {
            let turn = &turn;
            s.spawn(move || {
                let mut next = me;
                while next < TURNS {
                    let mut spins = 0u32;
                    while turn.load(Ordering::Acquire) != next {
                        spins += 1;
                        if spins.is_multiple_of(1024) {
                            std::thread::yield_now(); // the other thread may be descheduled
                        } else {
                            std::hint::spin_loop();
                        }
                    }
                    turn.store(next + 1, Ordering::Release);
                    next += 2;
                }
            });
        }
    });
    t0.elapsed().as_nanos() as f64 / TURNS as f64
}
