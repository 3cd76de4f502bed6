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
        arg.and_then(|n| n.parse().ok())
            .filter(|&n| n > 0)
            .unwrap_or_else(|| {
                eprintln!("--runs needs a positive integer");
                std::process::exit(2)
            })
    }

    /// The median (the upper one of an even count).
    pub fn median(mut xs: Vec<f64>) -> f64 {
        xs.sort_by(f64::total_cmp);
        xs[xs.len() / 2]
    }

    fn rusage() -> libc::rusage {
        // SAFETY: getrusage only writes into the struct we pass; all-zero is a valid rusage.
        unsafe {
            let mut u: libc::rusage = std::mem::zeroed();
            libc::getrusage(libc::RUSAGE_SELF, &mut u);
            u
        }
    }
}

pub mod objects;
pub mod runs;
pub mod wire;
