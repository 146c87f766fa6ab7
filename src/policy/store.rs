//! [`PolicyStore`]: the active policy, swapped whole on reload.
//!
//! A reload prepares (reads and compiles, fallible) and then swaps (one
//! infallible `ArcSwap::store`). A rejected set leaves the active policy in
//! place and is reported by [`PolicyStore::status`], the
//! `augur_policy_reloads_total{outcome="rejected"}` counter and a log line.
//! Requests take one [`PolicyStore::snapshot`] at entry and keep it to the
//! end, so no request sees two policies.

use std::{
    path::{Path, PathBuf},
    sync::{Arc, Mutex, MutexGuard},
    time::SystemTime,
};

use arc_swap::ArcSwap;
use serde_json::{Value, json};

use super::{
    error::PolicyError,
    load::{Attempt, attempt},
    model::Policy,
};

/// What `GET /-/policies` shows.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyStatus {
    /// Hash of the active set of files ("empty" for no files).
    pub version: String,
    pub loaded_at: SystemTime,
    pub files: Vec<String>,
    /// Why the newest edit was rejected; `None` once a load succeeds.
    pub last_error: Option<String>,
    pub last_error_at: Option<SystemTime>,
}

#[derive(Debug, Default)]
struct ReloadState {
    /// Fingerprint of the last set read from disk, accepted or not, so an
    /// unchanged broken file is not re-reported on every poll.
    last_seen: Option<String>,
    last_error: Option<(String, SystemTime)>,
}

/// Holds the active [`Policy`] and reloads it from disk.
#[derive(Debug)]
pub struct PolicyStore {
    current: Arc<ArcSwap<Policy>>,
    policies_dir: PathBuf,
    schemas_dir: PathBuf,
    /// Serializes reloads (watcher, SIGHUP, explicit) across the file reads.
    reloading: Mutex<()>,
    /// Bookkeeping; held only briefly, so `status()` never waits for disk.
    state: Mutex<ReloadState>,
}

fn rfc3339(t: SystemTime) -> String {
    time::OffsetDateTime::from(t)
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

impl PolicyStore {
    /// Load the directories; fails (augur must not start) if the set is broken.
    pub fn open(policies_dir: &Path, schemas_dir: &Path) -> Result<Self, PolicyError> {
        let Attempt {
            fingerprint,
            result,
        } = attempt(policies_dir, schemas_dir);
        let policy = result?;
        Ok(Self {
            current: Arc::new(ArcSwap::from_pointee(policy)),
            policies_dir: policies_dir.to_path_buf(),
            schemas_dir: schemas_dir.to_path_buf(),
            reloading: Mutex::new(()),
            state: Mutex::new(ReloadState {
                last_seen: Some(fingerprint),
                last_error: None,
            }),
        })
    }

    /// A store around an already compiled policy (tests, embedding). Reloads
    /// read `policies_dir`.
    pub fn with_policy(policy: Policy, policies_dir: &Path, schemas_dir: &Path) -> Self {
        Self {
            current: Arc::new(ArcSwap::from_pointee(policy)),
            policies_dir: policies_dir.to_path_buf(),
            schemas_dir: schemas_dir.to_path_buf(),
            reloading: Mutex::new(()),
            state: Mutex::new(ReloadState::default()),
        }
    }

    /// The policy a request should use from start to finish.
    pub fn snapshot(&self) -> Arc<Policy> {
        self.current.load_full()
    }

    /// The shared cell itself, for state that wants to `load()` cheaply.
    pub fn shared(&self) -> Arc<ArcSwap<Policy>> {
        self.current.clone()
    }

    /// The policies directory.
    pub fn policies_dir(&self) -> &Path {
        &self.policies_dir
    }

    /// The directory `format.schema` names are resolved in.
    pub fn schemas_dir(&self) -> &Path {
        &self.schemas_dir
    }

    fn state(&self) -> MutexGuard<'_, ReloadState> {
        // A panic while holding the lock leaves only bookkeeping behind.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Re-read and apply the directory now (SIGHUP, admin); compiles even if
    /// nothing changed on disk.
    pub fn reload_now(&self) -> Result<(), PolicyError> {
        self.reload(true)
    }

    /// Re-read the directory; compile and apply only if its content changed
    /// since the last read. Returns `Ok` when nothing changed.
    pub fn reload_if_changed(&self) -> Result<(), PolicyError> {
        self.reload(false)
    }

    fn reload(&self, force: bool) -> Result<(), PolicyError> {
        let _one_at_a_time = self.reloading.lock().unwrap_or_else(|p| p.into_inner());
        let Attempt {
            fingerprint,
            result,
        } = attempt(&self.policies_dir, &self.schemas_dir);
        let mut state = self.state();
        let unchanged = state.last_seen.as_deref() == Some(fingerprint.as_str());
        if unchanged && !force {
            return Ok(());
        }
        state.last_seen = Some(fingerprint);
        match result {
            Ok(policy) => {
                let version = policy.meta.version.clone();
                let files = policy.meta.files.len();
                // The only step after preparing: infallible.
                self.current.store(Arc::new(policy));
                state.last_error = None;
                metrics::counter!("augur_policy_reloads_total", "outcome" => "success")
                    .increment(1);
                tracing::info!(%version, files, "policy loaded");
                Ok(())
            }
            Err(e) => {
                state.last_error = Some((e.to_string(), SystemTime::now()));
                metrics::counter!("augur_policy_reloads_total", "outcome" => "rejected")
                    .increment(1);
                let active = self.current.load().meta.version.clone();
                tracing::error!(error = %e, %active, "policy rejected; keeping the active policy");
                Err(e)
            }
        }
    }

    /// Version, load time, files and the last rejection.
    pub fn status(&self) -> PolicyStatus {
        let policy = self.current.load();
        let state = self.state();
        PolicyStatus {
            version: policy.meta.version.clone(),
            loaded_at: policy.meta.loaded_at,
            files: policy.meta.files.clone(),
            last_error: state.last_error.as_ref().map(|(e, _)| e.clone()),
            last_error_at: state.last_error.as_ref().map(|(_, t)| *t),
        }
    }

    /// The body of `GET /-/policies`:
    /// `{"version", "loaded_at" (RFC 3339), "files", "last_error", "last_error_at"}`.
    pub fn status_json(&self) -> Value {
        let s = self.status();
        json!({
            "version": s.version,
            "loaded_at": rfc3339(s.loaded_at),
            "files": s.files,
            "last_error": s.last_error,
            "last_error_at": s.last_error_at.map(rfc3339),
        })
    }
}

/// Axum handler for `GET /-/policies`:
/// `.route("/-/policies", get(policies_handler)).with_state(store)`, or call
/// [`PolicyStore::status_json`] from your own handler.
pub async fn policies_handler(
    axum::extract::State(store): axum::extract::State<Arc<PolicyStore>>,
) -> axum::Json<Value> {
    axum::Json(store.status_json())
}
