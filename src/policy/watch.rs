//! The policies' reload task (see `reload` for how it wakes), each wake-up
//! leading to [`PolicyStore::reload`] with more or less work:
//!
//! * the poll only lists the directory (names and metadata, see
//!   `listing`) and reads nothing unless the listing changed;
//! * a filesystem event (debounced by [`DEBOUNCE`]) reads and hashes the
//!   files, in case a write kept the size and the timestamp;
//! * SIGHUP reads and compiles even if nothing changed.
//!
//! Either way a set is parsed only if its content hash differs from the
//! last one seen, accepted or rejected, so an unchanged set, however large
//! or broken, costs nothing while augur is idle. The policies directory
//! is watched, and the schemas directory too so edited `format` schemas
//! apply quickly; a directory path that is itself a re-pointed symlink is
//! watched anew on its new target after the next pass.

use std::{path::PathBuf, sync::Arc, time::Duration};

use tokio::sync::watch;

use super::store::{PolicyStore, Trigger};
use crate::reload::{self, Files, Wake};

/// Quiet time after the last event before re-reading.
pub const DEBOUNCE: Duration = Duration::from_millis(300);
/// Poll interval for missed events.
pub const POLL_INTERVAL: Duration = Duration::from_secs(1);

impl PolicyStore {
    /// The reload task. It ends when `shutdown` becomes `true` or its
    /// sender is dropped. Reloads run on the blocking pool, never on the
    /// request path. On Unix, SIGHUP triggers a forced reload.
    pub fn reloading(
        self: Arc<Self>,
        shutdown: watch::Receiver<bool>,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        let files = Files {
            what: "policies",
            debounce: DEBOUNCE,
            poll: POLL_INTERVAL,
        };
        let store = self.clone();
        let dirs = move || directories(&store);
        let reload = move |wake| {
            let trigger = match wake {
                Wake::Event => Trigger::Event,
                Wake::Poll => Trigger::Poll,
                Wake::Hangup => Trigger::Force,
            };
            // Errors are logged and counted by the store.
            let _ = self.reload(trigger);
        };
        reload::run(files, dirs, reload, shutdown)
    }
}

/// The policies directory and the schemas directory, resolved; none while
/// the policies directory is missing.
fn directories(store: &PolicyStore) -> Vec<PathBuf> {
    let Ok(policies) = std::fs::canonicalize(store.policies_dir()) else {
        return Vec::new();
    };
    let mut resolved = vec![policies];
    if let Ok(schemas) = std::fs::canonicalize(store.schemas_dir())
        && schemas != resolved[0]
    {
        resolved.push(schemas);
    }
    resolved
}
