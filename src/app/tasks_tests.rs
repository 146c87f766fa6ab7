//! Unit tests of `tasks`.

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use super::*;

#[tokio::test]
async fn every_task_ends_on_the_signal_and_a_stuck_one_is_aborted() {
    let (stop, shutdown) = watch::channel(false);
    let mut tasks = Background::new(shutdown);
    let steps = Arc::new(AtomicUsize::new(0));
    let counted = steps.clone();
    tasks.every(Duration::from_millis(10), move || {
        counted.fetch_add(1, Ordering::Relaxed);
    });
    let mut signal = tasks.shutdown();
    tasks.spawn(async move {
        let _ = signal.wait_for(|stop| *stop).await;
    });
    let stepped = async {
        while steps.load(Ordering::Relaxed) < 2 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), stepped)
        .await
        .unwrap();
    stop.send(true).unwrap();
    // Both end on the signal: the join does not wait for its bound.
    let started = std::time::Instant::now();
    tasks.join(Duration::from_secs(600)).await;
    assert!(started.elapsed() < Duration::from_secs(60));
    let after = steps.load(Ordering::Relaxed);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        steps.load(Ordering::Relaxed),
        after,
        "a step ran after the end"
    );

    // A task that ignores the signal is stopped at the bound.
    let (stop, shutdown) = watch::channel(false);
    let mut tasks = Background::new(shutdown);
    tasks.spawn(std::future::pending());
    stop.send(true).unwrap();
    let started = std::time::Instant::now();
    tasks.join(Duration::from_millis(200)).await;
    assert!(started.elapsed() >= Duration::from_millis(200));
}
