//! Files that change while augur runs (policies and schemas, the TLS
//! certificate and key): one reload task per set of files, woken three
//! ways, each leading to the owner's own reload step:
//!
//! * a filesystem event on a watched directory, debounced, so that a tool
//!   writing several files is read once after the last one
//!   ([`Wake::Event`]);
//! * a poll at a fixed interval, the safety net for missed events (network
//!   filesystems, a directory created after start or re-pointed by a
//!   symlink, a watch that could not be set up) ([`Wake::Poll`]);
//! * SIGHUP, on Unix ([`Wake::Hangup`]).
//!
//! Directories are watched, not files, non-recursively: editors save by
//! writing a temporary file and renaming it over the old one, certificate
//! managers do the same, and Kubernetes updates a mounted ConfigMap or
//! Secret by swapping its `..data` symlink; all show up as events on the
//! directory, and the owner reads the visible files through their
//! symlinks each time. The directories are resolved again after every
//! reload, and watched anew when their resolved paths changed. Events
//! that only report a file being opened or read (augur's own reads among
//! them) are ignored. Reloads run on the blocking pool, one at a time,
//! never on the request path; the task ends when `shutdown` turns true or
//! its sender is dropped.

use std::{path::PathBuf, sync::Arc, time::Duration};

use notify::{
    EventKind, RecursiveMode,
    event::{AccessKind, AccessMode},
};
use notify_debouncer_full::{DebounceEventResult, Debouncer, RecommendedCache, new_debouncer};
use tokio::sync::{mpsc, watch};

/// What woke the reload task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wake {
    /// A filesystem event on a watched directory (debounced).
    Event,
    /// The poll interval passed.
    Poll,
    /// SIGHUP.
    Hangup,
}

/// One set of files: what the logs call it, and its timings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Files {
    /// For logs: "policies", "TLS files".
    pub what: &'static str,
    /// Quiet time after the last event before the reload.
    pub debounce: Duration,
    /// Interval of the poll.
    pub poll: Duration,
}

type Watcher = Debouncer<notify::RecommendedWatcher, RecommendedCache>;

struct DirWatch {
    resolved: Vec<PathBuf>,
    _watcher: Watcher,
}

/// Run the reload task of `files` until `shutdown`: `dirs` names the
/// directories to watch now (resolved; empty when none exists yet), and
/// `reload` is the owner's step for each wake-up (it logs its own errors).
pub(crate) async fn run<D, R>(files: Files, dirs: D, reload: R, mut shutdown: watch::Receiver<bool>)
where
    D: Fn() -> Vec<PathBuf>,
    R: Fn(Wake) + Send + Sync + 'static,
{
    let reload = Arc::new(reload);
    let (tx, mut rx) = mpsc::channel::<()>(1);
    let mut dir_watch: Option<DirWatch> = None;
    ensure_watch(files, dirs(), &mut dir_watch, &tx);
    let mut poll = tokio::time::interval_at(tokio::time::Instant::now() + files.poll, files.poll);
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut hup = hangup();
    loop {
        let wake = tokio::select! {
            changed = shutdown.changed() => {
                if changed.is_err() || *shutdown.borrow() {
                    break;
                }
                continue;
            }
            Some(()) = rx.recv() => Wake::Event,
            _ = poll.tick() => Wake::Poll,
            () = next_hangup(&mut hup) => {
                tracing::info!(files = files.what, "SIGHUP: reloading");
                Wake::Hangup
            }
        };
        let step = reload.clone();
        let _ = tokio::task::spawn_blocking(move || step(wake)).await;
        ensure_watch(files, dirs(), &mut dir_watch, &tx);
    }
    tracing::debug!(files = files.what, "reload task stopped");
}

/// (Re)watch `resolved` if it differs from what is watched, or nothing is.
fn ensure_watch(
    files: Files,
    resolved: Vec<PathBuf>,
    current: &mut Option<DirWatch>,
    tx: &mpsc::Sender<()>,
) {
    if resolved.is_empty() {
        *current = None; // missing for now; the poll notices when it appears
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
    // The debouncer checks for settled events every `debounce / 2` (its
    // default, a quarter, wakes a thread 13 times a second for nothing).
    let watcher =
        new_debouncer(files.debounce, Some(files.debounce / 2), handler).and_then(|mut w| {
            for dir in &resolved {
                w.watch(dir, RecursiveMode::NonRecursive)?;
            }
            Ok(w)
        });
    match watcher {
        Ok(w) => {
            tracing::debug!(files = files.what, dirs = ?resolved, "watching");
            *current = Some(DirWatch {
                resolved,
                _watcher: w,
            });
        }
        Err(e) => {
            tracing::warn!(files = files.what, error = %e, "cannot watch; polling only");
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

#[cfg(test)]
#[path = "reload_tests.rs"]
mod tests;
