//! The compiled, immutable policy: what every request reads from its snapshot.
//!
//! These types are produced by the policy loader from the YAML files in the
//! policies directory and never change after they are built; a reload builds
//! a new [`Policy`] and swaps it in whole.

use std::{sync::Arc, time::SystemTime};

pub use super::scopes::Scopes;
use super::{
    globs::ModelGlobs,
    model::{ModelPolicy, RateLimit},
    rules::ModelRules,
};

/// One API key, as stored (never the key itself).
#[derive(Debug, Clone, PartialEq)]
pub struct ApiKey {
    pub id: String,
    pub sha256: [u8; 32],
    /// Globs of models this key may use; empty = all.
    pub models: Vec<String>,
    /// `models` compiled.
    pub allowed: ModelGlobs,
    /// Replaces `defaults.rate_limit` for this key. `Some` with every field
    /// `None` (written `rate_limit: null`) = no per-principal limit.
    pub rate_limit: Option<RateLimit>,
    /// Share of a model's concurrency queue against other principals
    /// waiting for it (default 1; anonymous callers have 1).
    pub weight: u32,
    /// The routes it may reach (default generate and read).
    pub scopes: Scopes,
    /// `guard`: a `tools.guard` for this key's calls, on top of the
    /// model's.
    pub guard: Option<std::sync::Arc<crate::guard::Guard>>,
}

/// What admission does when the shared limit store cannot answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnStoreError {
    /// Admit without rate limits or token budgets (a limiter outage does
    /// not take the proxy down).
    #[default]
    Allow,
    /// Refuse with 503 whatever a store would limit.
    Deny,
}

impl OnStoreError {
    /// As written in a policy file.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Deny => "deny",
        }
    }
}

/// `auth:` block.
#[derive(Debug, Clone, PartialEq)]
pub struct AuthPolicy {
    pub required: bool,
    pub keys: Vec<ApiKey>,
    /// What a caller without a key may reach while `required` is false.
    pub anonymous_scopes: Scopes,
}

impl Default for AuthPolicy {
    fn default() -> Self {
        Self {
            required: false,
            keys: Vec::new(),
            anonymous_scopes: Scopes::DEFAULT,
        }
    }
}

/// `audit:` block: optional JSONL log of tool calls.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AuditPolicy {
    pub path: Option<String>,
    pub include_arguments: bool,
}

/// Identity of the loaded policy set, shown at `GET /-/policies`.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyMeta {
    /// Hash of the active set of files.
    pub version: String,
    pub loaded_at: SystemTime,
    pub files: Vec<String>,
    /// Which file set what, so an operator can see which file wins.
    pub sources: Sources,
}

/// The file each setting of the merged policy came from.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Sources {
    /// `defaults.tools.parallel`, `auth.required`, `audit.path`, … → the
    /// last file that set it.
    pub set_by: std::collections::BTreeMap<String, String>,
    /// The file of each `models:` entry, in merge order.
    pub entries: Vec<String>,
    /// The file of each API key, in order.
    pub keys: Vec<String>,
}

/// The whole compiled policy.
#[derive(Debug, Clone)]
pub struct Policy {
    pub meta: PolicyMeta,
    pub auth: AuthPolicy,
    pub audit: AuditPolicy,
    /// `defaults.rate_limit`: per principal.
    pub default_rate_limit: Option<RateLimit>,
    /// Per-model settings: defaults plus `models.<glob>` overrides.
    pub models: ModelRules,
    /// `limits.on_store_error`.
    pub on_store_error: OnStoreError,
}

impl Policy {
    /// The settings for `model` (the name as the client wrote it).
    pub fn model(&self, model: &str) -> Arc<ModelPolicy> {
        self.models.resolve(model)
    }

    /// Whether API keys are in use: clients' `Authorization` and
    /// `X-API-Key` headers are then augur's, not the upstream's.
    pub fn uses_keys(&self) -> bool {
        self.auth.required || !self.auth.keys.is_empty()
    }

    /// The policy of an empty policies directory: no auth, no limits,
    /// tool emulation `auto`, validation on.
    pub fn permissive() -> Self {
        Self {
            meta: PolicyMeta {
                version: "empty".to_string(),
                loaded_at: SystemTime::now(),
                files: Vec::new(),
                sources: Sources::default(),
            },
            // Every scope: what tests and embedders mean by no policy.
            auth: AuthPolicy {
                anonymous_scopes: Scopes::ALL,
                ..AuthPolicy::default()
            },
            audit: AuditPolicy::default(),
            default_rate_limit: None,
            models: ModelRules::default(),
            on_store_error: OnStoreError::Allow,
        }
    }
}
