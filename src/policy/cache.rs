//! The `cache:` block compiled: an exact response cache for a model's
//! deterministic requests (see `docs/policies.md`). `ttl` is a duration
//! (`500ms`, `30s`, `10m`, `2h`, `1d`) from [`MIN_TTL`] to [`MAX_TTL`];
//! `max_bytes` bounds the memory the cache may take, from
//! [`MIN_BYTES`] to [`MAX_BYTES`]; `share` names a group whose members
//! share entries; `charge_hits` (default true) charges a hit's recorded
//! tokens to the caller's token budget; `store` is `memory`, the only
//! store there is.

use std::time::Duration;

use super::{error::PolicyError, raw::RawCache};

/// Shortest `cache.ttl`.
pub(crate) const MIN_TTL: Duration = Duration::from_secs(1);
/// Longest `cache.ttl`: a week.
pub(crate) const MAX_TTL: Duration = Duration::from_secs(7 * 24 * 3600);
/// Smallest `cache.max_bytes`.
pub(crate) const MIN_BYTES: u64 = 1024;
/// Largest `cache.max_bytes` (4 GiB: the cache weighs entries in `u32`).
pub(crate) const MAX_BYTES: u64 = 1 << 32;
/// Longest `cache.share` group name.
const MAX_SHARE: usize = 128;

/// `cache:` block: answers to deterministic requests are kept and replayed.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CachePolicy {
    /// How long an entry lives after it is stored.
    pub ttl: Duration,
    /// The most bytes the cache may hold; also the largest entry kept.
    pub max_bytes: u64,
    /// Callers in this group share entries; `None`: each principal its own.
    pub share: Option<String>,
    /// Whether a hit charges the recorded tokens to the caller's budget.
    pub charge_hits: bool,
}

/// Compile the block at `at` of `file`.
pub(super) fn compile(file: &str, at: &str, c: &RawCache) -> Result<CachePolicy, PolicyError> {
    let at = format!("{at}.cache");
    let bad =
        |key: &str, message: String| PolicyError::invalid(file, format!("{at}.{key}"), message);
    if let Some(store) = &c.store
        && store != "memory"
    {
        return Err(bad(
            "store",
            format!("{store:?} is not a cache store: only \"memory\" is"),
        ));
    }
    let ttl = parse_duration(&c.ttl).ok_or_else(|| {
        bad(
            "ttl",
            format!(
                "{:?} is not a duration like \"10m\" (ms, s, m, h or d)",
                c.ttl
            ),
        )
    })?;
    if !(MIN_TTL..=MAX_TTL).contains(&ttl) {
        return Err(bad("ttl", "from 1s to 7d".into()));
    }
    if !(MIN_BYTES..=MAX_BYTES).contains(&c.max_bytes) {
        return Err(bad(
            "max_bytes",
            format!("from {MIN_BYTES} to {MAX_BYTES} bytes"),
        ));
    }
    let share = match &c.share {
        None => None,
        Some(s) if s.is_empty() || s.len() > MAX_SHARE || s.chars().any(char::is_control) => {
            return Err(bad(
                "share",
                format!("a group name of 1 to {MAX_SHARE} printable characters"),
            ));
        }
        Some(s) => Some(s.clone()),
    };
    Ok(CachePolicy {
        ttl,
        max_bytes: c.max_bytes,
        share,
        charge_hits: c.charge_hits.unwrap_or(true),
    })
}

/// `<digits><unit>`, unit `ms`, `s`, `m`, `h` or `d`; `None` otherwise.
pub(crate) fn parse_duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit())?;
    let (digits, unit) = text.split_at(split);
    if digits.is_empty() || digits.len() > 12 {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    let ms = match unit {
        "ms" => 1,
        "s" => 1000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return None,
    };
    Some(Duration::from_millis(n.checked_mul(ms)?))
}

/// The duration as a policy file writes it (for `GET /-/policies`).
pub(crate) fn show_duration(d: Duration) -> String {
    let ms = d.as_millis();
    for (unit, per) in [
        ("d", 86_400_000),
        ("h", 3_600_000),
        ("m", 60_000),
        ("s", 1000),
    ] {
        if ms.is_multiple_of(per) {
            return format!("{}{unit}", ms / per);
        }
    }
    format!("{ms}ms")
}

#[cfg(test)]
#[path = "cache_tests.rs"]
mod tests;
