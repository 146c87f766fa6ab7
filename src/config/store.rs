//! Where rate limits and token budgets are kept (`limits.store`), and the
//! prefix of the shared store's keys (`limits.key_prefix`).

use super::error::ConfigError;
use crate::wire::redact::{redact_urls, without_userinfo};

/// Where request rate limits and token budgets are kept.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum LimitStore {
    /// In this process: each replica counts on its own.
    #[default]
    Memory,
    /// In Redis or Valkey, shared by every replica using the same server,
    /// database and key prefix (`redis://host:port/db`, `rediss://` over TLS).
    Redis { url: String },
}

/// `memory`, or a Redis/Valkey URL the client can use (checked here, not
/// connected to: the store may come up after augur).
pub(super) fn parse_limit_store(value: &str) -> Result<LimitStore, ConfigError> {
    if value == "memory" {
        return Ok(LimitStore::Memory);
    }
    let err = |message: String| ConfigError::LimitStore {
        value: without_userinfo(value),
        message: redact_urls(&message).into_owned(),
    };
    let scheme = value.split("://").next().unwrap_or_default();
    let schemes = [
        "redis",
        "rediss",
        "valkey",
        "valkeys",
        "redis+unix",
        "valkey+unix",
        "unix",
    ];
    if !schemes.contains(&scheme) {
        return Err(err(
            "expected \"memory\" or redis://host:port/db (rediss:// for TLS; valkey://, valkeys:// and redis+unix:// too)".into(),
        ));
    }
    // The client would read `#insecure` on a TLS URL as "skip certificate
    // checks"; the store's certificate is always verified.
    if value.contains('#') {
        return Err(err(
            "a URL fragment (such as #insecure) is not accepted: the store's TLS certificate is always verified".into(),
        ));
    }
    redis::Client::open(value).map_err(|e| err(e.to_string()))?;
    Ok(LimitStore::Redis {
        url: value.to_string(),
    })
}

pub(super) fn parse_key_prefix(prefix: &str) -> Result<String, ConfigError> {
    let ok = !prefix.is_empty()
        && prefix.len() <= 64
        && prefix
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.:-".contains(&b));
    if ok {
        Ok(prefix.to_string())
    } else {
        Err(ConfigError::LimitStore {
            value: prefix.to_string(),
            message: "limits.key_prefix must be 1-64 of A-Z a-z 0-9 _ . : -".into(),
        })
    }
}
