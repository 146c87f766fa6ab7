//! The buckets a request is checked against, and their keys in the store.
//!
//! `<prefix>:{<principal>}:<kind>[:<model>]`, where `<principal>` is
//! `key:<id>` or `ip:<address>` and `<kind>` is `rate` or `tokens`. The
//! principal is the key's hash tag, so every key one admission touches
//! hashes to one slot (a Redis Cluster or a proxy in front of several
//! servers can run the script). Keys hold no limit numbers: a reload that
//! changes a limit applies the new numbers to the same state.

use sha2::{Digest, Sha256};

use crate::limits::error::Scope;

/// Model names longer than this are hashed into the key (they come from
/// clients).
const MAX_MODEL_IN_KEY: usize = 128;

/// One bucket, as `admit.lua` takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BucketSpec {
    /// A request rate (GCRA): one request per `interval_us`, `burst` at once.
    Rate {
        key: String,
        scope: Scope,
        interval_us: u64,
        burst: u32,
    },
    /// A token budget refilling at `per_minute`.
    Tokens { key: String, per_minute: u64 },
}

impl BucketSpec {
    /// A request rate of `per_minute`, `burst` at once, as governor's
    /// `Quota::per_minute(..).allow_burst(..)` (interval rounded down to
    /// whole microseconds).
    pub(crate) fn rate(key: String, scope: Scope, per_minute: u32, burst: u32) -> Self {
        Self::Rate {
            key,
            scope,
            // At least 1 µs: above 60 million a minute the limit is
            // coarser than governor's nanoseconds, not a division by zero.
            interval_us: (60_000_000 / u64::from(per_minute.max(1))).max(1),
            burst: burst.max(1),
        }
    }

    pub(crate) fn key(&self) -> &str {
        match self {
            Self::Rate { key, .. } | Self::Tokens { key, .. } => key,
        }
    }

    /// Which limit this bucket is (the `scope` of a refusal).
    pub(crate) fn scope(&self) -> Scope {
        match self {
            Self::Rate { scope, .. } => *scope,
            Self::Tokens { .. } => Scope::Tokens,
        }
    }
}

/// The key of `who`'s bucket of `kind`, for `model` when per model.
pub(crate) fn key_for(prefix: &str, who: &str, kind: &str, model: Option<&str>) -> String {
    let mut key = format!("{prefix}:{{{who}}}:{kind}");
    if let Some(m) = model {
        key.push(':');
        if m.len() > MAX_MODEL_IN_KEY {
            key.push('#');
            key.push_str(&hex::encode(Sha256::digest(m.as_bytes())));
        } else {
            key.push_str(m);
        }
    }
    key
}

#[cfg(test)]
#[path = "keys_tests.rs"]
mod tests;
