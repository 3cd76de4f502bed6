//! Benchmarks only: see `benches/` (run with `cargo xtask bench workqueue|cache|informer`) and
//! the package README for figures and what they show. The library holds the Widget type that
//! kube-codegen generates from `crds/widget.yaml` (BENCHMARKS.md's W3/W4 object) and what the
//! benchmark binaries share.

include!(concat!(env!("OUT_DIR"), "/kube_codegen.rs"));

/// CPU time, memory and medians, as every benchmark reports them.
pub mod measure {
    /// User + system CPU seconds of this process so far.
    pub fn cpu_seconds() -> f64 {
        let u = rusage();
        let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        tv(u.ru_utime) + tv(u.ru_stime)
    }

    /// User + system CPU seconds of the calling thread so far (`RUSAGE_THREAD`).
    pub fn thread_cpu_seconds() -> f64 {
        Usage::of(libc::RUSAGE_THREAD).cpu()
    }

    /// A snapshot of this process's CPU split and context switches, for differences over a
    /// timed phase. The kernel's user/system split is sampled at the scheduler tick and
    /// scaled to the exact total, so over a phase of tens of milliseconds only the total is
    /// exact; the split is indicative.
    #[derive(Clone, Copy, Debug, Default)]
    pub struct Usage {
        pub user_s: f64,
        pub sys_s: f64,
        /// Voluntary context switches (blocked: futex, epoll, sleeps).
        pub voluntary: i64,
        /// Involuntary context switches (pre-empted).
        pub involuntary: i64,
    }

    impl Usage {
        /// The whole process so far.
        pub fn process() -> Usage {
            Usage::of(libc::RUSAGE_SELF)
        }

        fn of(who: libc::c_int) -> Usage {
            let u = rusage_of(who);
            let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
            Usage {
                user_s: tv(u.ru_utime),
                sys_s: tv(u.ru_stime),
                voluntary: u.ru_nvcsw,
                involuntary: u.ru_nivcsw,
            }
        }

        /// User + system seconds.
        pub fn cpu(&self) -> f64 {
            self.user_s + self.sys_s
        }

        /// What happened between `earlier` and `self`.
        pub fn since(&self, earlier: &Usage) -> Usage {
            Usage {
                user_s: self.user_s - earlier.user_s,
                sys_s: self.sys_s - earlier.sys_s,
                voluntary: self.voluntary - earlier.voluntary,
                involuntary: self.involuntary - earlier.involuntary,
            }
        }
    }

    /// The process's peak resident set (`ru_maxrss`), in MiB.
    pub fn peak_rss_mb() -> f64 {
        rusage().ru_maxrss as f64 / 1024.0
    }

    /// The process's resident set now, in bytes (0 if /proc is unreadable).
    pub fn rss_bytes() -> u64 {
        std::fs::read_to_string("/proc/self/statm")
            .ok()
            .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
            .map_or(0, |pages| pages * 4096)
    }

    /// Bytes the allocator has handed out and not had back (glibc's `mallinfo2`: chunks in use
    /// in every arena, their headers and rounding included, plus mmapped ones).
    pub fn malloc_in_use() -> u64 {
        // SAFETY: mallinfo2 only reads the allocator's counters.
        let m = unsafe { libc::mallinfo2() };
        (m.uordblks + m.hblkhd) as u64
    }

    /// Parses the value after `--runs` (a positive count); exits with status 2 otherwise.
    pub fn runs_value(arg: Option<String>) -> usize {
        count_value(arg, "--runs")
    }

    /// Parses the value after `flag` (a positive count); exits with status 2 otherwise.
    pub fn count_value(arg: Option<String>, flag: &str) -> usize {
        arg.and_then(|n| n.parse().ok())
            .filter(|&n| n > 0)
            .unwrap_or_else(|| {
                eprintln!("{flag} needs a positive integer");
                std::process::exit(2)
            })
    }

    /// The median (the upper one of an even count).
    pub fn median(mut xs: Vec<f64>) -> f64 {
        xs.sort_by(f64::total_cmp);
        xs[xs.len() / 2]
    }

    fn rusage() -> libc::rusage {
        rusage_of(libc::RUSAGE_SELF)
    }

    fn rusage_of(who: libc::c_int) -> libc::rusage {
        // SAFETY: getrusage only writes into the struct we pass; all-zero is a valid rusage.
        unsafe {
            let mut u: libc::rusage = std::mem::zeroed();
            libc::getrusage(who, &mut u);
            u
        }
    }
}

pub mod cluster;
pub mod https;
pub mod objects;
pub mod process;
pub mod reconcile;
pub mod runs;
pub mod source;
pub mod wire;
