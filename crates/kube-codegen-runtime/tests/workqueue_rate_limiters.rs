//! Rate limiter rules, in Tokio's paused (virtual) time where time matters.

use std::time::Duration;

use kube_codegen_runtime::workqueue::{
    BucketRateLimiter, ItemExponentialFailureRateLimiter, ItemFastSlowRateLimiter,
    MaxOfRateLimiter, RateLimiter, WithMaxWaitRateLimiter, default_controller_rate_limiter,
};

const MS: Duration = Duration::from_millis(1);

#[test]
fn exponential_sequence_doubles_from_5ms_and_caps_at_1000s() {
    let l = ItemExponentialFailureRateLimiter::new(5 * MS, Duration::from_secs(1000));
    let mut expected = Vec::new();
    let mut d = 5 * MS;
    for _ in 0..18 {
        expected.push(d);
        d *= 2;
    }
    // 5 ms * 2^18 = 1310.72 s > 1000 s: the 19th failure hits the cap.
    expected.extend([Duration::from_secs(1000); 5]);
    let got: Vec<_> = (0..expected.len()).map(|_| l.when(&"a")).collect();
    assert_eq!(got, expected);
    assert_eq!(l.num_requeues(&"a"), expected.len() as u32);
    assert_eq!(l.when(&"b"), 5 * MS, "items are independent");
}

#[test]
fn exponential_does_not_overflow_at_huge_failure_counts() {
    let l = ItemExponentialFailureRateLimiter::new(Duration::from_secs(1), Duration::MAX);
    let mut last = Duration::ZERO;
    for _ in 0..300 {
        let d = l.when(&1u32);
        assert!(d >= last, "monotonic, no wrap-around");
        last = d;
    }
    assert_eq!(last, Duration::MAX);
    let big_base = ItemExponentialFailureRateLimiter::new(Duration::MAX, Duration::from_secs(9));
    assert_eq!(big_base.when(&1u32), Duration::from_secs(9));
}

#[test]
fn exponential_forget_resets_and_drops_state() {
    let l = ItemExponentialFailureRateLimiter::new(5 * MS, Duration::from_secs(1000));
    l.when(&"a");
    l.when(&"a");
    assert_eq!(l.tracked(), 1);
    l.forget(&"a");
    assert_eq!(l.tracked(), 0);
    assert_eq!(l.num_requeues(&"a"), 0);
    assert_eq!(l.when(&"a"), 5 * MS);
}

#[test]
fn limiter_state_is_bounded_without_forget() {
    let l =
        ItemExponentialFailureRateLimiter::with_max_tracked(5 * MS, Duration::from_secs(1), 100);
    for i in 0..100_000u32 {
        l.when(&i);
        assert!(l.tracked() <= 100);
    }
    // The most recently failing item keeps its history.
    assert_eq!(l.when(&99_999u32), 10 * MS);
}

#[test]
fn fast_slow_switches_after_max_fast_attempts() {
    let l = ItemFastSlowRateLimiter::new(5 * MS, Duration::from_secs(10), 3);
    let got: Vec<_> = (0..5).map(|_| l.when(&"a")).collect();
    assert_eq!(
        got,
        [
            5 * MS,
            5 * MS,
            5 * MS,
            Duration::from_secs(10),
            Duration::from_secs(10)
        ]
    );
    assert_eq!(l.num_requeues(&"a"), 5);
    l.forget(&"a");
    assert_eq!(l.when(&"a"), 5 * MS);
}

#[tokio::test(start_paused = true)]
async fn bucket_gives_burst_then_spaced_reservations() {
    let b = BucketRateLimiter::new(10.0, 100);
    for i in 0..100 {
        assert_eq!(RateLimiter::<()>::when(&b, &()), Duration::ZERO, "call {i}");
    }
    for k in 1..=5u32 {
        assert_eq!(RateLimiter::<()>::when(&b, &()), k * 100 * MS);
    }
    // Debt of 5 tokens; 800 ms refill 8: 3 in hand again.
    tokio::time::advance(800 * MS).await;
    for _ in 0..3 {
        assert_eq!(RateLimiter::<()>::when(&b, &()), Duration::ZERO);
    }
    assert_eq!(RateLimiter::<()>::when(&b, &()), 100 * MS);
    // Refill never exceeds the burst.
    tokio::time::advance(Duration::from_secs(3600)).await;
    for _ in 0..100 {
        assert_eq!(RateLimiter::<()>::when(&b, &()), Duration::ZERO);
    }
    assert_eq!(RateLimiter::<()>::when(&b, &()), 100 * MS);
    assert_eq!(RateLimiter::<()>::num_requeues(&b, &()), 0);
}

#[tokio::test(start_paused = true)]
async fn bucket_edge_rates() {
    let inf = BucketRateLimiter::new(f64::INFINITY, 0);
    for _ in 0..1000 {
        assert_eq!(RateLimiter::<()>::when(&inf, &()), Duration::ZERO);
    }
    let zero_rate = BucketRateLimiter::new(0.0, 2);
    assert_eq!(RateLimiter::<()>::when(&zero_rate, &()), Duration::ZERO);
    assert_eq!(RateLimiter::<()>::when(&zero_rate, &()), Duration::ZERO);
    assert_eq!(RateLimiter::<()>::when(&zero_rate, &()), Duration::MAX);
    let no_burst = BucketRateLimiter::new(10.0, 0);
    assert_eq!(RateLimiter::<()>::when(&no_burst, &()), Duration::MAX);
}

#[tokio::test(start_paused = true)]
async fn max_of_charges_all_and_returns_the_largest() {
    let l: MaxOfRateLimiter<&str> = MaxOfRateLimiter::new(vec![
        Box::new(ItemExponentialFailureRateLimiter::new(
            5 * MS,
            Duration::from_secs(1000),
        )),
        Box::new(BucketRateLimiter::new(10.0, 2)),
    ]);
    assert_eq!(l.when(&"a"), 5 * MS);
    assert_eq!(l.when(&"b"), 5 * MS);
    assert_eq!(l.when(&"c"), 100 * MS, "bucket dominates once empty");
    assert_eq!(l.when(&"a"), 200 * MS);
    assert_eq!(l.num_requeues(&"a"), 2);
    l.forget(&"a");
    assert_eq!(l.num_requeues(&"a"), 0);
    let empty: MaxOfRateLimiter<&str> = MaxOfRateLimiter::new(Vec::new());
    assert_eq!(empty.when(&"a"), Duration::ZERO);
}

#[test]
fn max_wait_caps_the_inner_delay() {
    let l = WithMaxWaitRateLimiter::new(
        ItemExponentialFailureRateLimiter::new(5 * MS, Duration::from_secs(1000)),
        12 * MS,
    );
    let got: Vec<_> = (0..4).map(|_| l.when(&"a")).collect();
    assert_eq!(got, [5 * MS, 10 * MS, 12 * MS, 12 * MS]);
    assert_eq!(l.num_requeues(&"a"), 4);
    l.forget(&"a");
    assert_eq!(l.when(&"a"), 5 * MS);
}

#[tokio::test(start_paused = true)]
async fn default_controller_limiter_is_exponential_and_bucket() {
    let l = default_controller_rate_limiter::<String>();
    // Per-item backoff for one item.
    assert_eq!(l.when(&"x".to_owned()), 5 * MS);
    assert_eq!(l.when(&"x".to_owned()), 10 * MS);
    // 98 more distinct items empty the 100-token bucket; then 100 ms spacing.
    for i in 0..98 {
        assert_eq!(l.when(&format!("i{i}")), 5 * MS);
    }
    assert_eq!(l.when(&"y".to_owned()), 100 * MS);
    assert_eq!(l.when(&"z".to_owned()), 200 * MS);
    // 300 items at once: the last waits (300 - 100) / 10 qps = 20 s, as in client-go.
    let l = default_controller_rate_limiter::<u32>();
    let waits: Vec<Duration> = (0..300u32).map(|i| l.when(&i)).collect();
    assert_eq!(waits[99], 5 * MS);
    assert_eq!(waits[100], 100 * MS);
    assert_eq!(waits[299], Duration::from_secs(20));
}
