//! The reflector's retry delays: client-go's `wait.Backoff{Duration: 800ms, Factor: 2,
//! Jitter: 1.0, Cap: 30s}` behind `DelayWithReset(2 min)`; the reflector also resets it once
//! a watch held, as kube-runtime does (see `Reflector::run`).

use std::time::Duration;

use tokio::time::Instant;

/// After this long without a reset, the next delay starts again from the initial one.
const RESET_AFTER: Duration = Duration::from_secs(120);

/// Exponential delays with full jitter: the n-th delay is `d_n` plus a random share of `d_n`
/// (so in `[d_n, 2 d_n)`), `d_n = min(initial * 2^n, cap)`.
#[derive(Debug)]
pub(crate) struct Backoff {
    initial: Duration,
    cap: Duration,
    current: Duration,
    last_reset: Instant,
    rng: u64,
}

impl Backoff {
    pub(crate) fn new(initial: Duration, cap: Duration) -> Self {
        // Seeded from the clock: reflectors started together should not retry in step.
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        Backoff {
            initial,
            cap,
            current: initial,
            last_reset: Instant::now(),
            rng: seed ^ 0x9E37_79B9_7F4A_7C15,
        }
    }

    /// The next delay.
    pub(crate) fn next_delay(&mut self) -> Duration {
        let now = Instant::now();
        if now.duration_since(self.last_reset) > RESET_AFTER {
            self.current = self.initial;
            self.last_reset = now;
        }
        let d = self.current;
        self.current = self.current.saturating_mul(2).min(self.cap);
        d + d.mul_f64(self.unit())
    }

    /// Starts again from the initial delay: the server answered, so it is back.
    pub(crate) fn reset(&mut self) {
        self.current = self.initial;
        self.last_reset = Instant::now();
    }

    /// A uniform number in [0, 1) (splitmix64).
    fn unit(&mut self) -> f64 {
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A uniform duration in `[min, 2 min)` (the watch timeout client-go picks).
    pub(crate) fn spread(&mut self, min: Duration) -> Duration {
        min + min.mul_f64(self.unit())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn delays_double_to_the_cap_with_jitter_and_reset_after_two_quiet_minutes() {
        let ms = Duration::from_millis;
        let mut b = Backoff::new(ms(800), Duration::from_secs(30));
        let base = [800u64, 1600, 3200, 6400, 12_800, 25_600, 30_000, 30_000];
        for want in base {
            let got = b.next_delay();
            assert!(
                got >= ms(want) && got < ms(2 * want),
                "{got:?} not in [{want}, {}) ms",
                2 * want
            );
        }
        tokio::time::advance(Duration::from_secs(121)).await;
        let got = b.next_delay();
        assert!(got >= ms(800) && got < ms(1600), "reset: {got:?}");
    }

    #[test]
    fn watch_timeouts_spread_over_min_to_twice_min() {
        let mut b = Backoff::new(Duration::from_millis(1), Duration::from_millis(1));
        let min = Duration::from_secs(300);
        let picks: Vec<Duration> = (0..1000).map(|_| b.spread(min)).collect();
        assert!(picks.iter().all(|t| *t >= min && *t < 2 * min));
        assert!(picks.iter().any(|t| *t > Duration::from_secs(550)));
        assert!(picks.iter().any(|t| *t < Duration::from_secs(350)));
    }
}
