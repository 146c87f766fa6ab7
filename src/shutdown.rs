//! SIGTERM / SIGINT: turn unready, stop accepting, drain, exit 0.

use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::watch;

/// Set once a shutdown signal has been taken; never cleared.
static DRAINING: AtomicBool = AtomicBool::new(false);

/// Whether this process took SIGTERM or SIGINT: `/-/ready` answers 503
/// from then on, while the admin listener keeps serving through the drain.
pub(crate) fn draining() -> bool {
    DRAINING.load(Ordering::SeqCst)
}

/// A channel that turns true on the first SIGTERM or SIGINT, after
/// [`draining`] does: readiness turns false before any listener stops.
pub(crate) fn on_signal() -> watch::Receiver<bool> {
    let (tx, rx) = watch::channel(false);
    tokio::spawn(async move {
        wait_for_signal().await;
        DRAINING.store(true, Ordering::SeqCst);
        tracing::info!("shutdown signal received; not ready, draining");
        let _ = tx.send(true);
    });
    rx
}

async fn wait_for_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let term = signal(SignalKind::terminate());
    let int = signal(SignalKind::interrupt());
    match (term, int) {
        (Ok(mut term), Ok(mut int)) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        }
        _ => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
