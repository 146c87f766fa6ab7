//! The reload task: filesystem events on the directories holding the
//! certificate and key (debounced by [`DEBOUNCE`]) and a poll every
//! [`POLL_INTERVAL`] both lead to [`CertStore::reload`], which reads the
//! two files (a few KiB) and parses them only if their content changed.
//!
//! The directories are watched, not the files: certificate managers
//! replace files by renaming a new one over the old, and Kubernetes
//! updates a mounted secret by swapping its `..data` symlink; both show up
//! as events on the directory, and the files are read through their
//! symlinks each time. The poll catches what events miss (network
//! filesystems, a directory re-pointed by a symlink, a watch that could
//! not be set up). Events that only report a file being opened or read
//! (augur's own reads among them) are ignored.

use std::{path::PathBuf, sync::Arc, time::Duration};

use notify::{
    EventKind, RecursiveMode,
    event::{AccessKind, AccessMode},
};
use notify_debouncer_full::{DebounceEventResult, Debouncer, RecommendedCache, new_debouncer};
use tokio::sync::{mpsc, watch};

use super::certs::CertStore;

/// Quiet time after the last event before re-reading: a tool writing the
/// certificate and then the key is read once, after both.
const DEBOUNCE: Duration = Duration::from_millis(250);
/// Poll interval for missed events.
pub const POLL_INTERVAL: Duration = Duration::from_secs(5);

type Watcher = Debouncer<notify::RecommendedWatcher, RecommendedCache>;

struct DirWatch {
    resolved: Vec<PathBuf>,
    _watcher: Watcher,
}

/// The directories holding the two files, resolved (so that a re-pointed
/// directory symlink is noticed and watched anew).
fn directories(store: &CertStore) -> Vec<PathBuf> {
    let files = store.files();
    let mut dirs: Vec<PathBuf> = [&files.cert, &files.key]
        .into_iter()
        .filter_map(|f| {
            let parent = f.parent().filter(|p| !p.as_os_str().is_empty());
            std::fs::canonicalize(parent.unwrap_or_else(|| std::path::Path::new("."))).ok()
        })
        .collect();
    dirs.sort();
    dirs.dedup();
    dirs
}

/// (Re)watch the directories if their resolved paths changed or no watch
/// exists.
fn ensure_watch(store: &CertStore, current: &mut Option<DirWatch>, tx: &mpsc::Sender<()>) {
    let resolved = directories(store);
    if resolved.is_empty() {
        *current = None; // gone for now; the poll notices when they return
        return;
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
    let watcher = new_debouncer(DEBOUNCE, Some(DEBOUNCE / 2), handler).and_then(|mut w| {
        for dir in &resolved {
            w.watch(dir, RecursiveMode::NonRecursive)?;
        }
        Ok(w)
    });
    match watcher {
        Ok(w) => {
            tracing::debug!(dirs = ?resolved, "watching TLS files");
            *current = Some(DirWatch {
                resolved,
                _watcher: w,
            });
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot watch the TLS files; polling only");
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

pub(super) async fn run(store: Arc<CertStore>, mut shutdown: watch::Receiver<bool>) {
    let (tx, mut rx) = mpsc::channel::<()>(1);
    let mut dir_watch: Option<DirWatch> = None;
    ensure_watch(&store, &mut dir_watch, &tx);
    let start = tokio::time::Instant::now() + POLL_INTERVAL;
    let mut poll = tokio::time::interval_at(start, POLL_INTERVAL);
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            changed = shutdown.changed() => {
                if changed.is_err() || *shutdown.borrow() {
                    break;
                }
                continue;
            }
            Some(()) = rx.recv() => {}
            _ = poll.tick() => {}
        }
        let s = store.clone();
        // Logged and counted by the store.
        let _ = tokio::task::spawn_blocking(move || s.reload()).await;
        ensure_watch(&store, &mut dir_watch, &tx);
    }
    tracing::debug!("TLS reload task stopped");
}
