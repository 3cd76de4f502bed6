//! `run_workers`: outcomes, panics, shutdown.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use kube_codegen_runtime::workqueue::{Action, WorkQueue, run_workers};
use parking_lot::Mutex;
use tokio::time::Instant;

use crate::support;
use support::within;

#[tokio::test(start_paused = true)]
async fn ok_forgets_err_retries_with_backoff_and_requeue_after_readds() {
    let q: WorkQueue<&'static str> = WorkQueue::new();
    let t0 = Instant::now();
    let log: Arc<Mutex<Vec<(&'static str, Duration)>>> = Arc::default();
    let fails = Arc::new(AtomicU32::new(0));
    let (log2, fails2, q2) = (log.clone(), fails.clone(), q.clone());
    let pool = tokio::spawn(run_workers(q.clone(), 2, move |item: &'static str| {
        let (log, fails, q) = (log2.clone(), fails2.clone(), q2.clone());
        async move {
            log.lock().push((item, t0.elapsed()));
            match item {
                // Fails twice, then succeeds: retried after 5 ms and 10 ms.
                "flaky" if fails.fetch_add(1, Ordering::SeqCst) < 2 => Err("boom"),
                "flaky" => {
                    assert_eq!(q.num_requeues(&"flaky"), 2);
                    Ok(Action::Done)
                }
                "resync" if t0.elapsed() < Duration::from_secs(1) => {
                    Ok(Action::RequeueAfter(Duration::from_secs(30)))
                }
                _ => Ok(Action::Done),
            }
        }
    }));
    q.add("flaky");
    q.add("resync");
    q.add("plain");
    tokio::time::sleep(Duration::from_secs(60)).await;
    q.shutdown();
    within("the worker pool to stop after the shutdown", pool)
        .await
        .unwrap();
    let mut log = log.lock().clone();
    log.sort_by_key(|&(item, at)| (at, item));
    let ms = Duration::from_millis;
    assert_eq!(
        log,
        vec![
            ("flaky", ms(0)),
            ("plain", ms(0)),
            ("resync", ms(0)),
            ("flaky", ms(5)),
            ("flaky", ms(15)),
            ("resync", Duration::from_secs(30)),
        ]
    );
    assert_eq!(q.num_requeues(&"flaky"), 0, "success forgets");
    assert_eq!(q.len_in_flight(), 0);
}

#[tokio::test(start_paused = true)]
async fn panicking_handler_keeps_pool_and_item() {
    let q: WorkQueue<u32> = WorkQueue::new();
    let calls = Arc::new(AtomicU32::new(0));
    let calls2 = calls.clone();
    let done = Arc::new(Mutex::new(Vec::new()));
    let done2 = done.clone();
    // One worker only: if the panic killed it, nothing else would run.
    let pool = tokio::spawn(run_workers(q.clone(), 1, move |item: u32| {
        let (calls, done) = (calls2.clone(), done2.clone());
        async move {
            if item == 1 && calls.fetch_add(1, Ordering::SeqCst) == 0 {
                panic!("handler bug");
            }
            done.lock().push(item);
            Ok::<_, std::convert::Infallible>(Action::Done)
        }
    }));
    q.add(1);
    q.add(2);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(*done.lock(), vec![2, 1], "item 1 retried after the panic");
    within(
        "shutdown_with_drain to return (every item done)",
        q.shutdown_with_drain(),
    )
    .await;
    within("the worker pool to stop after the shutdown", pool)
        .await
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn panic_while_building_the_future_is_caught_too() {
    let q: WorkQueue<u32> = WorkQueue::new();
    let seen = Arc::new(AtomicU32::new(0));
    let seen2 = seen.clone();
    let pool = tokio::spawn(run_workers(q.clone(), 1, move |_item: u32| {
        if seen2.fetch_add(1, Ordering::SeqCst) == 0 {
            panic!("sync panic before the future exists");
        }
        async move { Ok::<_, String>(Action::Done) }
    }));
    q.add(0);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(seen.load(Ordering::SeqCst), 2, "retried after 5 ms");
    q.shutdown();
    within("the worker pool to stop after the shutdown", pool)
        .await
        .unwrap();
}

#[tokio::test]
async fn workers_drain_and_stop_on_shutdown() {
    let q: WorkQueue<u32> = WorkQueue::new();
    for i in 0..100 {
        q.add(i);
    }
    let count = Arc::new(AtomicU32::new(0));
    let count2 = count.clone();
    let pool = tokio::spawn(run_workers(q.clone(), 4, move |_item: u32| {
        let count = count2.clone();
        async move {
            tokio::task::yield_now().await;
            count.fetch_add(1, Ordering::SeqCst);
            Ok::<_, String>(Action::Done)
        }
    }));
    within(
        "shutdown_with_drain to return (every item done)",
        q.shutdown_with_drain(),
    )
    .await;
    assert_eq!(count.load(Ordering::SeqCst), 100);
    within("the worker pool to stop after the shutdown", pool)
        .await
        .unwrap();
}
