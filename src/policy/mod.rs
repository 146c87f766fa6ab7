//! Policies: the hot-reloadable rules ops edit in `policies/*.yaml`.
//!
//! # Files
//!
//! Every `*.yaml` / `*.yml` file directly in the policies directory is
//! validated against `schemas/policy.schema.json` (embedded; editors can use
//! the same file) and merged in file-name order. `policies/example.yaml`
//! documents every key, in comments only, so it overrides nothing. An empty
//! directory, or files with no settings, is [`Policy::permissive`]; a
//! missing directory is an error ([`PolicyError::MissingDir`]). The bounds
//! of [`bounds`] are checked before anything is parsed.
//!
//! # Merge rules
//!
//! * `defaults:` blocks merge key by key in file order; `defaults.rate_limit`
//!   becomes [`Policy::default_rate_limit`] (per principal).
//! * `models:` entries apply, key by key over the merged defaults, to every
//!   model their glob matches, in file order and then in the order written;
//!   the last one to set a key wins. `models.<glob>.rate_limit` is per
//!   (principal, model) and is not inherited from `defaults.rate_limit`.
//!   See [`globs`] for glob matching and [`normalize_model_name`].
//! * `null` removes an inherited `format`, `rate_limit` or `concurrency`.
//! * `auth.keys` from all files are concatenated (ids and keys must be
//!   unique); `auth.required` and `audit.*` take the last file that sets them.
//!
//! # API
//!
//! * [`load_dir`]`(policies, schemas) -> Result<Policy, PolicyError>`: startup
//!   and `augur --check-config`. Errors name the file and the problem.
//! * [`PolicyStore::open`]`(policies, schemas)` loads (fails on a broken set);
//!   [`PolicyStore::snapshot`] gives the `Arc<Policy>` a request keeps to the
//!   end; [`PolicyStore::reloading`] reloads on file changes (events,
//!   and a 1 s poll of the directory listing) and on SIGHUP;
//!   [`PolicyStore::reload_now`] reloads on demand; [`PolicyStore::status`] /
//!   [`PolicyStore::status_json`] / [`policies_handler`] serve
//!   `GET /-/policies`, with the merged policy from [`show::effective`].
//! * [`Policy::model`]`(name)` resolves the settings for a model.
//! * [`AuditLog`] writes tool-call audit records.
//!
//! A broken edit (YAML, schema, glob, missing schema file, unset `key_env`,
//! a bound exceeded) is rejected whole: the last good policy stays active.
//! So is losing the policy: the directory vanishing or turning unreadable,
//! or the last file disappearing ([`PolicyError::NoFiles`]). Only regular
//! files (and symlinks to them) are read: a FIFO, socket or device is
//! refused, unopened, with an error naming it (see [`regular`]).

mod api_keys;
pub(crate) mod audit;
pub(crate) mod bounds;
pub(crate) mod cache;
mod compile;
pub(crate) mod error;
mod fallback;
pub(crate) mod globs;
mod listing;
mod load;
pub(crate) mod model;
mod nesting;
pub(crate) mod raw;
pub(crate) mod record;
pub(crate) mod regular;
pub(crate) mod routing;
pub(crate) mod rules;
mod schemas;
mod scopes;
pub(crate) mod show;
pub(crate) mod snapshot;
pub(crate) mod store;
mod watch;
mod yaml;

pub use audit::AuditLog;
pub use bounds::{MAX_DEPTH, MAX_FILE_BYTES, MAX_FILES, MAX_TOTAL_BYTES};
pub use cache::CachePolicy;
pub use compile::POLICY_SCHEMA;
pub use error::PolicyError;
pub use globs::{ModelGlob, ModelGlobs, normalize_model_name};
pub use load::{load_dir, load_texts};
pub use model::*;
pub use record::RecordPolicy;
pub use routing::{Routing, RoutingPolicy, Session};
pub use snapshot::*;
pub use store::{PolicyStatus, PolicyStore, policies_handler};
pub use watch::{DEBOUNCE, POLL_INTERVAL};

#[cfg(test)]
mod tests;
