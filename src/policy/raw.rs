//! Raw policy files: a serde mirror of `schemas/policy.schema.json`, no logic.
//!
//! Every field is optional so a file can override one key and leave the
//! rest to earlier files. Blocks that may be *removed* by a later file
//! (`format`, `rate_limit`, `concurrency`, `fallback`) use [`Tri`]: absent (inherit),
//! `null` (remove) or a value (override key by key). The compile step
//! turns these into the compiled [`super::Policy`].

use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

/// A field that can be absent, explicitly `null`, or set.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Tri<T> {
    /// Not in the file: keep what earlier files said.
    #[default]
    Absent,
    /// `null`: remove what earlier files said.
    Null,
    /// A value, merged over what earlier files said.
    Set(T),
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Tri<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Only reached when the key is present; `#[serde(default)]` covers absence.
        Ok(match Option::<T>::deserialize(d)? {
            Some(v) => Tri::Set(v),
            None => Tri::Null,
        })
    }
}

/// One policy file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFile {
    #[serde(default)]
    pub defaults: Option<RawSettings>,
    /// Kept as a JSON map so the file's entry order survives (serde_json
    /// is built with `preserve_order`).
    #[serde(default)]
    pub models: Option<Map<String, Value>>,
    #[serde(default)]
    pub auth: Option<RawAuth>,
    #[serde(default)]
    pub audit: Option<RawAudit>,
    #[serde(default)]
    pub limits: Option<RawLimits>,
}

/// `limits:` block: how limits behave when the shared store fails.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLimits {
    pub on_store_error: Option<String>,
}

/// The settings shared by `defaults:` and each `models.<glob>:` entry.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSettings {
    #[serde(default)]
    pub emulate_tools: Option<String>,
    #[serde(default)]
    pub validate: Option<RawValidate>,
    #[serde(default)]
    pub think_emulation: Option<bool>,
    #[serde(default)]
    pub format: Tri<RawFormat>,
    #[serde(default)]
    pub tools: Option<RawTools>,
    #[serde(default)]
    pub advertise_capabilities: Option<bool>,
    #[serde(default)]
    pub rate_limit: Tri<RawRateLimit>,
    #[serde(default)]
    pub concurrency: Tri<RawConcurrency>,
    #[serde(default)]
    pub fallback: Tri<RawFallback>,
    /// `null` = no confidence asked for.
    #[serde(default)]
    pub confidence: Tri<RawConfidence>,
    /// `affinity` or `least_loaded`.
    #[serde(default)]
    pub routing: Option<String>,
    #[serde(default)]
    pub affinity: Option<RawAffinity>,
    /// `null` = no cache.
    #[serde(default)]
    pub cache: Tri<RawCache>,
    /// `null` = no recording.
    #[serde(default)]
    pub record: Tri<RawRecord>,
}

/// `record:` block: every exchange appended to a JSON-lines file.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRecord {
    pub path: String,
    pub max_bytes: Option<u64>,
    pub keep: Option<u32>,
    #[serde(default)]
    pub redact: Vec<String>,
}

/// `cache:` block: an exact response cache for deterministic requests.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCache {
    pub ttl: String,
    pub max_bytes: u64,
    pub share: Option<String>,
    pub charge_hits: Option<bool>,
    pub store: Option<String>,
}

/// `affinity:` block: the load bound and what keys a conversation.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawAffinity {
    pub epsilon: Option<f64>,
    pub session: Option<String>,
}

#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawConfidence {
    pub threshold: Option<f64>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawValidate {
    pub enabled: Option<bool>,
    pub repair: Option<bool>,
    pub max_retries: Option<u32>,
    pub degrade: Option<bool>,
    /// `null` = back to the default (buffer for schemas, pass for "json").
    #[serde(default)]
    pub stream: Tri<String>,
    pub on_failure: Option<String>,
    pub on_low_confidence: Option<String>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFormat {
    pub schema: Option<String>,
    pub apply: Option<String>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTools {
    pub parallel: Option<bool>,
    pub loop_breaker: Option<bool>,
    pub small_model: Option<RawSmallModel>,
    pub drop_ungrounded: Option<bool>,
    pub answer_unrelated: Option<bool>,
    pub rescue_text_calls: Option<bool>,
    pub mode: Option<String>,
    pub text_format: Option<String>,
    pub native: Option<RawNative>,
    /// `tools.guard`: replaced whole by a later block; `null` clears it.
    #[serde(default)]
    pub guard: Tri<crate::guard::RawGuard>,
}

/// `tools.small_model`: `true`, `false` or `auto`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub(crate) enum RawSmallModel {
    Flag(bool),
    Word(String),
}

/// `tools.native`: checks of a native-tools model's own calls.
#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawNative {
    pub validate: Option<bool>,
    pub recover: Option<bool>,
}

#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRateLimit {
    pub requests_per_minute: Option<u32>,
    pub burst: Option<u32>,
    pub tokens_per_minute: Option<u64>,
}

#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConcurrency {
    pub max_in_flight: Option<u32>,
    pub queue_timeout_ms: Option<u64>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFallback {
    pub models: Vec<String>,
    pub on: Option<Vec<String>>,
    pub when: Option<RawFallbackWhen>,
}

#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFallbackWhen {
    pub confidence_below: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawAuth {
    pub required: Option<bool>,
    pub anonymous_scopes: Option<Vec<String>>,
    #[serde(default)]
    pub keys: Option<Vec<RawKey>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawKey {
    pub id: String,
    pub key_sha256: Option<String>,
    pub key_env: Option<String>,
    #[serde(default)]
    pub models: Vec<String>,
    #[serde(default)]
    pub rate_limit: Tri<RawRateLimit>,
    pub weight: Option<u32>,
    pub scopes: Option<Vec<String>>,
    /// A `tools.guard` for this key's calls, applied on top of the model's.
    pub guard: Option<crate::guard::RawGuard>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawAudit {
    #[serde(default)]
    pub path: Tri<String>,
    pub include_arguments: Option<bool>,
}
