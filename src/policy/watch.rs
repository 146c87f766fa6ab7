//! The reload task: filesystem events, a 1 s poll and SIGHUP all lead to
//! the same step, [`PolicyStore::reload`], with more or less work:
//!
//! * the poll only lists the directory (names and metadata, see
//!   `listing`) and reads nothing unless the listing changed;
//! * a filesystem event (debounced by [`DEBOUNCE`]) reads and hashes the
//!   files, in case a write kept the size and the timestamp;
//! * SIGHUP reads and compiles even if nothing changed.
//!
//! Either way a set is parsed only if its content hash differs from the
//! last one seen, accepted or rejected, so an unchanged set, however large
//! or broken, costs nothing while augur is idle. Events that only report a
//! file being opened or read (augur's own reads among them) are ignored.
//!
//! Why re-read everything instead of acting on event paths: editors save by
//! writing a temporary file and renaming it over the old one, and Kubernetes
//! updates a ConfigMap by swapping the `..data` symlink. Both show up as
//! events on the directory itself, which is watched non-recursively; the
//! visible files are read through their symlinks each time. If the policies
//! directory path is itself a symlink that gets re-pointed, the watch is
//! re-established on the new target after the next pass. The poll is the
//! safety net for missed events (network filesystems, a directory created
//! after start) and costs one listing of the directory per second.

use std::{path::PathBuf, sync::Arc, time::Duration};

use notify::{
    EventKind, RecursiveMode,
    event::{AccessKind, AccessMode},
};
use notify_debouncer_full::{DebounceEventResult, Debouncer, RecommendedCache, new_debouncer};
use tokio::{sync::mpsc, sync::watch, task::JoinHandle};

use super::store::{PolicyStore, Trigger};

/// Quiet time after the last event before re-reading.
pub const DEBOUNCE: Duration = Duration::from_millis(300);
/// Poll interval for missed events.
pub const POLL_INTERVAL: Duration = Duration::from_secs(1);

type Watcher = Debouncer<notify::RecommendedWatcher, RecommendedCache>;

impl PolicyStore {
    /// Start the reload task. It stops when `shutdown` becomes `true` or its
    /// sender is dropped. Reloads run on the blocking pool, never on the
    /// request path. On Unix, SIGHUP triggers a forced reload.
    pub fn spawn_watcher(self: Arc<Self>, shutdown: watch::Receiver<bool>) -> JoinHandle<()> {
        tokio::spawn(run(self, shutdown))
    }
}

struct DirWatch {
    resolved: Vec<PathBuf>,
    _watcher: Watcher,
}

/// (Re)watch the policies directory, and the schemas directory so edited
/// `format` schemas apply quickly too, if their resolved paths changed or
/// no watch exists.
fn ensure_watch(store: &PolicyStore, current: &mut Option<DirWatch>, tx: &mpsc::Sender<()>) {
    let Ok(policies) = std::fs::canonicalize(store.policies_dir()) else {
        *current = None; // missing for now; the poll notices when it appears
        return;
    };
    let mut resolved = vec![policies];
    if let Ok(schemas) = std::fs::canonicalize(store.schemas_dir())
        && schemas != resolved[0]
    {
        resolved.push(schemas);
    }
    if current.as_ref().is_some_and(|w| w.resolved == resolved) {
        return;
    }
    let tx = tx.clone();
    let handler = move |result: DebounceEventResult| {
        // Errors too: re-reading is always safe. A full channel already
        // holds a pending wake-up.
        if result.is_err() || result.is_ok_and(|events| events.iter().any(|e| changes(&e.kind))) {
            let _ = tx.try_send(());
        }
    };
    // The debouncer checks for settled events every `DEBOUNCE / 2` (its
    // default, a quarter, wakes a thread 13 times a second for nothing).
    let watcher = new_debouncer(DEBOUNCE, Some(DEBOUNCE / 2), handler).and_then(|mut w| {
        for dir in &resolved {
            w.watch(dir, RecursiveMode::NonRecursive)?;
        }
        Ok(w)
    });
    match watcher {
        Ok(w) => {
            tracing::debug!(dirs = ?resolved, "watching policies");
            *current = Some(DirWatch {
                resolved,
                _watcher: w,
            });
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot watch policies; polling only");
            *current = None;
        }
    }
}

/// Whether an event can mean changed content: anything but a file being
/// opened, read or closed unwritten.
fn changes(kind: &EventKind) -> bool {
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        _ => true,
    }
}

#[cfg(unix)]
type Hangup = Option<tokio::signal::unix::Signal>;
#[cfg(not(unix))]
type Hangup = Option<()>;

fn hangup() -> Hangup {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        signal(SignalKind::hangup())
            .inspect_err(|e| tracing::warn!(error = %e, "cannot listen for SIGHUP"))
            .ok()
    }
    #[cfg(not(unix))]
    None
}

async fn next_hangup(hup: &mut Hangup) {
    #[cfg(unix)]
    if let Some(s) = hup
        && s.recv().await.is_some()
    {
        return;
    }
    #[cfg(not(unix))]
    let _ = hup;
    std::future::pending::<()>().await
}

async fn run(store: Arc<PolicyStore>, mut shutdown: watch::Receiver<bool>) {
    let (tx, mut rx) = mpsc::channel::<()>(1);
    let mut dir_watch: Option<DirWatch> = None;
    ensure_watch(&store, &mut dir_watch, &tx);
    let mut poll = tokio::time::interval(POLL_INTERVAL);
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut hup = hangup();
    loop {
        let trigger = tokio::select! {
            changed = shutdown.changed() => {
                if changed.is_err() || *shutdown.borrow() {
                    break;
                }
                continue;
            }
            Some(()) = rx.recv() => Trigger::Event,
            _ = poll.tick() => Trigger::Poll,
            () = next_hangup(&mut hup) => {
                tracing::info!("SIGHUP: reloading policies");
                Trigger::Force
            }
        };
        let s = store.clone();
        // Errors are logged and counted by the store.
        let _ = tokio::task::spawn_blocking(move || s.reload(trigger)).await;
        ensure_watch(&store, &mut dir_watch, &tx);
    }
    tracing::debug!("policy watcher stopped");
}
