//! Core queue rules: dedupe, FIFO, never-concurrent, shutdown, drain, cancel-safety, delays.

use std::hash::Hash;
use std::time::Duration;

use futures::FutureExt;
use kube_codegen_runtime::workqueue::{AddOpts, LOW_PRIORITY, WorkQueue};
use tokio::time::Instant;

use crate::support;
use support::{DEADLINE, within, within_for};

fn queue() -> WorkQueue<&'static str> {
    WorkQueue::new()
}

/// `q.get()`, failing the test if the queue hands out neither an item nor `None` in time.
async fn next<T: Clone + Eq + Hash + Send + Sync + 'static>(q: &WorkQueue<T>) -> Option<T> {
    within("the queue to hand out an item (or None)", q.get()).await
}

#[tokio::test]
async fn dedupes_and_keeps_fifo_by_first_add() {
    let q = queue();
    q.add("a");
    q.add("b");
    q.add("a");
    q.add("c");
    q.add("b");
    assert_eq!(q.len(), 3);
    assert_eq!(next(&q).await, Some("a"));
    assert_eq!(next(&q).await, Some("b"));
    assert_eq!(next(&q).await, Some("c"));
    assert!(q.is_empty());
    assert_eq!(q.len_in_flight(), 3);
}

#[tokio::test]
async fn add_ref_clones_only_new_items() {
    let q: WorkQueue<String> = WorkQueue::new();
    q.add_ref("ns/a");
    q.add_ref("ns/a");
    q.add("ns/b".to_owned());
    assert_eq!(q.len(), 2);
    assert_eq!(next(&q).await.as_deref(), Some("ns/a"));
}

#[tokio::test]
async fn item_added_while_processing_is_requeued_after_done_only() {
    let q = queue();
    q.add("a");
    let a = next(&q).await.unwrap();
    q.add("a");
    q.add("a");
    assert_eq!(q.len(), 0, "not queued while processing");
    assert_eq!(
        q.get().now_or_never(),
        None,
        "not handed to a second worker"
    );
    q.done(&a);
    assert_eq!(q.len(), 1);
    assert_eq!(next(&q).await, Some("a"));
    q.done(&"a");
    assert_eq!(q.len(), 0);
    assert_eq!(q.len_in_flight(), 0);
}

#[tokio::test]
async fn done_of_unknown_or_idle_item_is_ignored() {
    let q = queue();
    q.done(&"nope");
    q.add("a");
    q.done(&"a"); // queued, not processing
    assert_eq!(q.len(), 1);
    assert_eq!(next(&q).await, Some("a"));
}

#[tokio::test]
async fn waiting_getter_is_woken_by_add() {
    let q = queue();
    let q2 = q.clone();
    let getter = tokio::spawn(async move { q2.get().await });
    tokio::task::yield_now().await;
    q.add("x");
    assert_eq!(
        within("the waiting getter to be woken", getter)
            .await
            .unwrap(),
        Some("x")
    );
}

#[tokio::test]
async fn shutdown_hands_out_queued_items_then_none_and_drops_adds() {
    let q = queue();
    q.add("a");
    q.add("b");
    q.shutdown();
    assert!(q.is_shutting_down());
    q.add("c");
    assert_eq!(q.len(), 2);
    assert_eq!(next(&q).await, Some("a"));
    assert_eq!(next(&q).await, Some("b"));
    assert_eq!(next(&q).await, None);
    assert_eq!(next(&q).await, None);
}

#[tokio::test]
async fn shutdown_wakes_waiting_getters() {
    let q = queue();
    let getters: Vec<_> = (0..3)
        .map(|_| {
            let q = q.clone();
            tokio::spawn(async move { next(&q).await })
        })
        .collect();
    tokio::task::yield_now().await;
    q.shutdown();
    for g in getters {
        let got = within("a waiting getter to be woken by the shutdown", g).await;
        assert_eq!(got.unwrap(), None);
    }
}

#[tokio::test]
async fn drain_waits_for_queued_and_in_flight_items() {
    let q = queue();
    q.add("a");
    q.add("b");
    let a = next(&q).await.unwrap();
    q.add("a"); // dirty while processing: must be processed again before the drain ends
    let mut drain = Box::pin(q.shutdown_with_drain());
    assert!(drain.as_mut().now_or_never().is_none());
    q.add("c"); // dropped: shutting down
    q.done(&a);
    assert!(
        drain.as_mut().now_or_never().is_none(),
        "b and a still queued"
    );
    let b = next(&q).await.unwrap();
    let a2 = next(&q).await.unwrap();
    assert_eq!((b, a2), ("b", "a"));
    q.done(&b);
    assert!(drain.as_mut().now_or_never().is_none(), "a still in flight");
    q.done(&a2);
    assert_eq!(drain.as_mut().now_or_never(), Some(()));
    assert_eq!(next(&q).await, None);
}

#[tokio::test]
async fn drain_of_an_idle_queue_returns_at_once() {
    let q = queue();
    assert_eq!(q.shutdown_with_drain().now_or_never(), Some(()));
}

#[tokio::test]
async fn shutdown_ends_a_pending_drain() {
    let q = queue();
    q.add("a");
    let _a = next(&q).await.unwrap();
    let mut drain = Box::pin(q.shutdown_with_drain());
    assert!(drain.as_mut().now_or_never().is_none());
    q.shutdown();
    assert_eq!(drain.as_mut().now_or_never(), Some(()));
}

#[tokio::test]
async fn cancelled_get_loses_nothing() {
    let q = queue();
    {
        let mut g = Box::pin(q.get());
        assert!(g.as_mut().now_or_never().is_none());
        q.add("a"); // notifies the pending getter ...
    } // ... which is dropped before taking it
    let q2 = q.clone();
    let other = tokio::spawn(async move { q2.get().await });
    let got = within("another getter to get the item", other).await;
    assert_eq!(got.unwrap(), Some("a"));
    // A notified-then-dropped getter passes the notification to the next waiting one.
    let q3 = q.clone();
    let waiting = tokio::spawn(async move { q3.get().await });
    tokio::task::yield_now().await;
    {
        let mut g = Box::pin(q.get());
        assert!(g.as_mut().now_or_never().is_none());
        q.add("b");
        q.add("c");
    }
    let got = within("the waiting getter to get b or c", waiting)
        .await
        .unwrap()
        .unwrap();
    assert!(got == "b" || got == "c");
    assert_eq!(q.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn add_after_waits_and_is_visible_while_waiting() {
    let q = queue();
    let t0 = Instant::now();
    q.add_after("a", Duration::from_millis(10));
    assert_eq!(q.len(), 0);
    assert_eq!(q.len_waiting(), 1);
    assert_eq!(next(&q).await, Some("a"));
    assert_eq!(t0.elapsed(), Duration::from_millis(10));
    assert_eq!(q.len_waiting(), 0);
}

#[tokio::test(start_paused = true)]
async fn add_after_earliest_ready_time_wins() {
    let q = queue();
    let t0 = Instant::now();
    q.add_after("a", Duration::from_millis(50));
    q.add_after("a", Duration::from_millis(20)); // earlier: wins
    q.add_after("b", Duration::from_millis(10));
    q.add_after("b", Duration::from_millis(40)); // later: ignored
    assert_eq!(q.len_waiting(), 2);
    assert_eq!(next(&q).await, Some("b"));
    assert_eq!(t0.elapsed(), Duration::from_millis(10));
    assert_eq!(next(&q).await, Some("a"));
    assert_eq!(t0.elapsed(), Duration::from_millis(20));
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(q.len(), 0, "superseded schedules do not fire again");
}

#[tokio::test(start_paused = true)]
async fn add_after_zero_is_add_and_ready_items_dedupe_with_queue() {
    let q = queue();
    q.add_after("a", Duration::ZERO);
    assert_eq!(q.len(), 1);
    assert_eq!(q.len_waiting(), 0);
    q.add_after("a", Duration::from_millis(5));
    tokio::time::sleep(Duration::from_millis(6)).await;
    assert_eq!(
        q.len(),
        1,
        "ready duplicate of a queued item is deduplicated"
    );
}

#[tokio::test(start_paused = true)]
async fn shutdown_drops_waiting_items_and_later_delayed_adds() {
    let q = queue();
    q.add_after("a", Duration::from_millis(5));
    q.shutdown();
    assert_eq!(q.len_waiting(), 0);
    q.add_after("b", Duration::from_millis(5));
    q.add_rate_limited("c");
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(q.len(), 0);
    assert_eq!(next(&q).await, None);
    assert_eq!(
        q.num_requeues(&"c"),
        0,
        "no limiter state recorded after shutdown"
    );
}

#[tokio::test(start_paused = true)]
async fn add_rate_limited_follows_the_backoff_and_forget_resets_it() {
    let q = queue();
    let mut expected = Duration::from_millis(5);
    for n in 0..12u32 {
        let t0 = Instant::now();
        q.add_rate_limited("a");
        assert_eq!(q.num_requeues(&"a"), n + 1);
        // The delay reaches 10 s here: the deadline is on top of it.
        let a = within_for(expected + DEADLINE, "the rate-limited item", q.get())
            .await
            .unwrap();
        assert_eq!(t0.elapsed(), expected, "attempt {n}");
        q.done(&a);
        expected *= 2;
    }
    q.forget(&"a");
    assert_eq!(q.num_requeues(&"a"), 0);
    let t0 = Instant::now();
    q.add_rate_limited("a");
    next(&q).await.unwrap();
    assert_eq!(t0.elapsed(), Duration::from_millis(5));
}

#[test]
fn delayed_add_works_from_outside_a_runtime_with_an_explicit_handle() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let q: WorkQueue<u32> = WorkQueue::builder().runtime(rt.handle().clone()).build();
    q.add_after(7, Duration::from_millis(1));
    let got = rt.block_on(async { within("the delayed item", q.get()).await });
    assert_eq!(got, Some(7));
}

#[tokio::test(start_paused = true)]
async fn timer_task_ends_when_the_queue_is_dropped_or_shut_down() {
    let alive = || {
        tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks()
    };
    let q = queue();
    q.add_after("a", Duration::from_secs(3600));
    tokio::task::yield_now().await;
    assert_eq!(alive(), 1, "one timer task per queue");
    q.add_after("b", Duration::from_secs(60));
    assert_eq!(alive(), 1);
    drop(q);
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert_eq!(alive(), 0, "the timer task exits once the queue is gone");

    let q = queue();
    q.add_after("a", Duration::from_secs(3600));
    tokio::task::yield_now().await;
    assert_eq!(alive(), 1);
    q.shutdown();
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert_eq!(alive(), 0, "the timer task exits on shutdown");
}

/// `q.get_with_priority()` within the test deadline.
async fn next_with_priority(q: &WorkQueue<&'static str>) -> Option<(&'static str, i32)> {
    within("the queue to hand out an item", q.get_with_priority()).await
}

#[tokio::test]
async fn higher_priority_is_handed_out_first_fifo_within_one() {
    let q = queue();
    q.add_with_priority("old-1", LOW_PRIORITY);
    q.add_with_priority("old-2", LOW_PRIORITY);
    q.add("live-1");
    q.add_with_priority("old-3", LOW_PRIORITY);
    q.add("live-2");
    q.add_with_priority("urgent", 10);
    assert_eq!(q.len(), 6);
    let mut order = Vec::new();
    while let Some(got) = next_with_priority(&q).now_or_never().flatten() {
        order.push(got);
    }
    assert_eq!(
        order,
        [
            ("urgent", 10),
            ("live-1", 0),
            ("live-2", 0),
            ("old-1", LOW_PRIORITY),
            ("old-2", LOW_PRIORITY),
            ("old-3", LOW_PRIORITY),
        ]
    );
}

#[tokio::test]
async fn a_live_add_raises_a_queued_backlog_item_and_a_low_add_never_lowers() {
    let q = queue();
    for k in ["a", "b", "c"] {
        q.add_with_priority(k, LOW_PRIORITY);
    }
    q.add("c"); // a live change of a backlog item
    q.add_with_priority("c", LOW_PRIORITY); // a later resync does not take it back down
    assert_eq!(q.len(), 3, "still deduplicated");
    assert_eq!(next_with_priority(&q).await, Some(("c", 0)));
    assert_eq!(next_with_priority(&q).await, Some(("a", LOW_PRIORITY)));
}

#[tokio::test]
async fn an_item_added_while_processing_is_requeued_with_that_add_s_priority() {
    let q = queue();
    q.add_with_priority("a", LOW_PRIORITY);
    q.add_with_priority("b", LOW_PRIORITY);
    let (a, _) = next_with_priority(&q).await.unwrap();
    q.add(a); // changed while its reconcile runs
    q.done(&a);
    assert_eq!(
        next_with_priority(&q).await,
        Some(("a", 0)),
        "before the backlog"
    );
    q.done(&"a");
    q.add_with_priority("a", LOW_PRIORITY);
    assert_eq!(next_with_priority(&q).await, Some(("b", LOW_PRIORITY)));
    assert_eq!(
        next_with_priority(&q).await,
        Some(("a", LOW_PRIORITY)),
        "FIFO in the lane"
    );
}

#[tokio::test(start_paused = true)]
async fn delayed_and_rate_limited_adds_keep_their_priority() {
    let q = queue();
    let t0 = Instant::now();
    q.add_with_priority("backlog", LOW_PRIORITY);
    q.add_with_opts(
        "retry",
        AddOpts {
            after: Duration::from_millis(20),
            priority: 7,
            ..AddOpts::default()
        },
    );
    // The same item scheduled again later with a lower priority: earliest time, highest priority.
    q.add_with_opts(
        "retry",
        AddOpts {
            after: Duration::from_millis(50),
            priority: LOW_PRIORITY,
            ..AddOpts::default()
        },
    );
    assert_eq!(q.len_waiting(), 1);
    let (first, _) = next_with_priority(&q).await.unwrap();
    assert_eq!(first, "backlog", "the only ready item");
    assert_eq!(next_with_priority(&q).await, Some(("retry", 7)));
    assert_eq!(t0.elapsed(), Duration::from_millis(20));
    q.done(&"retry");

    // Rate limited: the limiter's delay (5 ms first) wins over a longer `after`.
    let t1 = Instant::now();
    q.add_with_opts(
        "failing",
        AddOpts {
            after: Duration::from_secs(60),
            rate_limited: true,
            priority: 3,
        },
    );
    assert_eq!(next_with_priority(&q).await, Some(("failing", 3)));
    assert_eq!(t1.elapsed(), Duration::from_millis(5));
    assert_eq!(q.num_requeues(&"failing"), 1);
}
