//! [`PolicyStore`]: the active policy, swapped whole on reload.
//!
//! A reload prepares (reads and compiles, fallible) and then swaps (one
//! infallible `ArcSwap::store`). A rejected set leaves the active policy in
//! place and is reported by [`PolicyStore::status`], the
//! `augur_policy_reloads_total{outcome="rejected"}` counter and a log line.
//! Requests take one [`PolicyStore::snapshot`] at entry and keep it to the
//! end, so no request sees two policies.
//!
//! Losing the policy is rejected like a broken edit: the directory
//! vanishing or becoming unreadable, or the last policy file disappearing
//! while the active policy came from files ([`PolicyError::NoFiles`]). A
//! policy with no settings takes a file that says so (only comments, or
//! `{}`). At start a missing directory is an error; an empty one is the
//! permissive policy.
//!
//! Work is skipped at two gates: a poll whose directory listing is
//! unchanged reads nothing, and a set whose fingerprint equals the last
//! one seen (accepted or rejected) is not compiled again.

use std::{
    path::{Path, PathBuf},
    sync::{
        Arc, Mutex, MutexGuard,
        atomic::{AtomicU64, Ordering},
    },
    time::SystemTime,
};

use arc_swap::ArcSwap;
use serde_json::{Value, json};

use super::{
    error::PolicyError,
    listing,
    load::{self, Compiled},
    schemas, show,
    snapshot::Policy,
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

/// What set off a reload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Trigger {
    /// The poll: nothing is read unless the directory listing changed.
    Poll,
    /// A filesystem event: the files are read and hashed, and compiled
    /// only if their content changed.
    Event,
    /// SIGHUP or an explicit reload: read and compile even if unchanged.
    Force,
}

#[derive(Debug, Default)]
struct ReloadState {
    /// Signature of the last directory listing.
    listing: Option<[u8; 32]>,
    /// Fingerprint of the last set read, accepted or not: a set with the
    /// same fingerprint is not parsed again.
    last_seen: Option<String>,
    /// The `format` schema files the last compile read.
    schema_names: Vec<String>,
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
    /// Sets parsed and compiled since start.
    compiles: AtomicU64,
}

fn rfc3339(t: SystemTime) -> String {
    time::OffsetDateTime::from(t)
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

impl PolicyStore {
    /// Load the directories; fails (augur must not start) if the set is
    /// broken, over a bound, or the policies directory does not exist.
    pub fn open(policies_dir: &Path, schemas_dir: &Path) -> Result<Self, PolicyError> {
        let found = listing::list(policies_dir, schemas_dir, &[]);
        let Compiled {
            fingerprint,
            result,
            schema_names,
        } = load::compile(&load::read(&found.files?)?, schemas_dir);
        let policy = result?;
        Ok(Self {
            current: Arc::new(ArcSwap::from_pointee(policy)),
            policies_dir: policies_dir.to_path_buf(),
            schemas_dir: schemas_dir.to_path_buf(),
            reloading: Mutex::new(()),
            state: Mutex::new(ReloadState {
                listing: Some(found.signature),
                last_seen: Some(fingerprint),
                schema_names,
                last_error: None,
            }),
            compiles: AtomicU64::new(1),
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
            compiles: AtomicU64::new(0),
        }
    }

    /// How many times a policy set was parsed and compiled since start
    /// (diagnostics and tests: an unchanged set is never compiled again).
    pub fn compiles(&self) -> u64 {
        self.compiles.load(Ordering::Relaxed)
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
        self.reload(Trigger::Force)
    }

    /// Re-read the directory; compile and apply only if its content changed
    /// since the last read. Returns `Ok` when nothing changed.
    pub fn reload_if_changed(&self) -> Result<(), PolicyError> {
        self.reload(Trigger::Event)
    }

    /// One reload step: look at the directory, read only if the look (or
    /// the trigger) calls for it, compile only if the content changed.
    pub(crate) fn reload(&self, trigger: Trigger) -> Result<(), PolicyError> {
        let _one_at_a_time = self.reloading.lock().unwrap_or_else(|p| p.into_inner());
        let (names, seen_listing, seen) = {
            let s = self.state();
            (s.schema_names.clone(), s.listing, s.last_seen.clone())
        };
        let found = listing::list(&self.policies_dir, &self.schemas_dir, &names);
        if trigger == Trigger::Poll && seen_listing == Some(found.signature) {
            return Ok(());
        }
        let texts = found.files.and_then(|files| load::read(&files));
        let gate = match &texts {
            Ok(t) => load::fingerprint(t, schemas::rehash(&self.schemas_dir, &names).0),
            Err(e) => load::refused_fingerprint(e),
        };
        if trigger != Trigger::Force {
            if seen.as_deref() == Some(gate.as_str()) {
                self.state().listing = Some(found.signature);
                return Ok(());
            }
            if self.current.load().meta.version == gate {
                // Back to what is active (a broken edit undone): nothing to parse.
                let mut state = self.state();
                state.listing = Some(found.signature);
                state.last_seen = Some(gate);
                if state.last_error.take().is_some() {
                    tracing::info!(version = %self.current.load().meta.version, "policy files match the active policy again");
                }
                return Ok(());
            }
        }
        let compiled = match texts {
            Ok(t) => {
                self.compiles.fetch_add(1, Ordering::Relaxed);
                load::compile(&t, &self.schemas_dir)
            }
            Err(e) => Compiled {
                fingerprint: gate,
                result: Err(e),
                schema_names: names,
            },
        };
        let mut result = compiled.result;
        let active = self.current.load().meta.files.len();
        if let Ok(p) = &result
            && p.meta.files.is_empty()
            && active > 0
        {
            result = Err(PolicyError::NoFiles {
                dir: self.policies_dir.display().to_string(),
                active,
            });
        }
        let mut state = self.state();
        state.listing = Some(found.signature);
        state.last_seen = Some(compiled.fingerprint);
        state.schema_names = compiled.schema_names;
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

    /// The body of `GET /-/policies`: `{"version", "loaded_at" (RFC 3339),
    /// "files", "last_error", "last_error_at", "effective"}`, where
    /// `effective` is the merged policy in force (see [`show::effective`]).
    pub fn status_json(&self) -> Value {
        let s = self.status();
        json!({
            "version": s.version,
            "loaded_at": rfc3339(s.loaded_at),
            "files": s.files,
            "last_error": s.last_error,
            "last_error_at": s.last_error_at.map(rfc3339),
            "effective": show::effective(&self.snapshot()),
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
