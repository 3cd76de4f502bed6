//! A tiny order-preserving parallel map over scoped threads (no dependency; the only shared state
//! is the work counter): results come back in input order, so output bytes never depend on scheduling.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Generations in flight in this process (see [`Rendering`]).
static RENDERS: AtomicUsize = AtomicUsize::new(0);

/// Held while a generation runs, so [`map`] knows how many share the machine.
pub struct Rendering(());

impl Rendering {
    pub fn start() -> Self {
        RENDERS.fetch_add(1, Ordering::Relaxed);
        Rendering(())
    }
}

impl Drop for Rendering {
    fn drop(&mut self) {
        RENDERS.fetch_sub(1, Ordering::Relaxed);
    }
}

/// `available_parallelism` reads cgroup files on Linux: asked once.
fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Maps `f` over `items` on up to `available_parallelism` threads (capped at 4), the calling
/// thread included. Items are handed out one at a time from a shared counter, so a few large
/// items (a kind's root type next to many small nested types) don't leave a thread idle;
/// each result is stored at its item's index, so the order never depends on scheduling.
pub fn map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    // Generations running at once (a harness rendering files on several threads) share the cores
    // instead of each spawning a full set of threads.
    let busy = RENDERS.load(Ordering::Relaxed).max(1);
    let threads = (cores() / busy).clamp(1, 4).min(items.len());
    if threads <= 1 {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(i) else {
                return done;
            };
            done.push((i, f(item)));
        }
    };
    let mut slots: Vec<Option<R>> = (0..items.len()).map(|_| None).collect();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (1..threads).map(|_| scope.spawn(work)).collect();
        let mut batches = vec![work()];
        for h in handles {
            match h.join() {
                Ok(results) => batches.push(results),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        for (i, r) in batches.into_iter().flatten() {
            slots[i] = Some(r);
        }
    });
    slots
        .into_iter()
        .map(|r| r.expect("every index is mapped by exactly one thread"))
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn keeps_order() {
        let v: Vec<u32> = (0..100).collect();
        assert_eq!(
            super::map(&v, |x| x * 2),
            (0..100).map(|x| x * 2).collect::<Vec<_>>()
        );
        assert_eq!(super::map(&[] as &[u32], |x| *x), Vec::<u32>::new());
    }
}
