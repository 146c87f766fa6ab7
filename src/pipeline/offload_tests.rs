//! Unit tests of `offload`.

use super::cpu;

#[tokio::test]
async fn runs_off_a_current_thread_loop_and_returns_the_result() {
    let caller = std::thread::current().id();
    let (other, n) = cpu(move || (std::thread::current().id() != caller, 6 * 7))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(other, "the work runs on a blocking thread");
    assert_eq!(n, 42);
}

#[tokio::test]
async fn a_panic_is_resumed_in_the_caller() {
    let task = tokio::spawn(cpu(|| -> u8 { panic!("boom") }));
    let e = task.await.err().map(|e| e.is_panic());
    assert_eq!(e, Some(true));
}

#[tokio::test]
async fn no_more_work_runs_at_once_than_there_are_turns() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NOW: AtomicUsize = AtomicUsize::new(0);
    static MOST: AtomicUsize = AtomicUsize::new(0);
    let work = (0..32).map(|_| {
        tokio::spawn(cpu(|| {
            let n = NOW.fetch_add(1, Ordering::SeqCst) + 1;
            MOST.fetch_max(n, Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(5));
            NOW.fetch_sub(1, Ordering::SeqCst);
        }))
    });
    for w in futures_util::future::join_all(work).await {
        assert!(matches!(w, Ok(Ok(()))));
    }
    let most = MOST.load(Ordering::SeqCst);
    assert!(
        most >= 1 && most <= super::turns().available_permits(),
        "{most}"
    );
}

#[test]
fn runs_inline_outside_a_runtime() {
    let caller = std::thread::current().id();
    let same =
        futures_util::FutureExt::now_or_never(cpu(move || std::thread::current().id() == caller));
    assert!(matches!(same, Some(Ok(true))));
}
