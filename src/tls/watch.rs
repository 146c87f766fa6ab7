//! The TLS files' reload task (see `reload` for how it wakes: events on
//! the directories holding the certificate and key, debounced by
//! [`DEBOUNCE`], a poll every [`POLL_INTERVAL`], SIGHUP), each wake-up
//! leading to [`CertStore::reload`], which reads the two files (a few KiB)
//! and parses them only if their content changed.

use std::{path::PathBuf, sync::Arc, time::Duration};

use tokio::sync::watch;

use super::certs::CertStore;
use crate::reload::{self, Files};

/// Quiet time after the last event before re-reading: a tool writing the
/// certificate and then the key is read once, after both.
const DEBOUNCE: Duration = Duration::from_millis(250);
/// Poll interval for missed events.
pub(crate) const POLL_INTERVAL: Duration = Duration::from_secs(5);

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

pub(super) async fn run(store: Arc<CertStore>, shutdown: watch::Receiver<bool>) {
    let files = Files {
        what: "TLS files",
        debounce: DEBOUNCE,
        poll: POLL_INTERVAL,
    };
    let watched = store.clone();
    let dirs = move || directories(&watched);
    // Logged and counted by the store.
    let reload = move |_| {
        let _ = store.reload();
    };
    reload::run(files, dirs, reload, shutdown).await;
}
