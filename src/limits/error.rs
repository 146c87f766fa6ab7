//! [`LimitError`]: every way auth and limits refuse a request, with its
//! status, client-facing message and headers in one table.
//!
//! | variant        | status | headers                                   |
//! |----------------|--------|-------------------------------------------|
//! | `Unauthorized` | 401    | `WWW-Authenticate: Bearer`                |
//! | `Forbidden`    | 403    |                                           |
//! | `MissingScope` | 403    |                                           |
//! | `RateLimited`  | 429    | `Retry-After`, `RateLimit-Limit/Remaining/Reset` |
//! | `Busy`         | 503    |                                           |
//! | `StoreUnavailable` | 503 | `Retry-After: 1`                         |
//!
//! The HTTP layer answers `{"error": message()}` with `status()` and
//! `headers()`; messages never contain keys.

use std::time::Duration;

use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};

/// Ollama's own text when its queue is full (two spaces included).
pub(crate) const BUSY_MESSAGE: &str =
    "server busy, please try again.  maximum pending requests exceeded";

/// Which limit refused a request; also the `scope` metric label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// `defaults.rate_limit` or the key's own, per principal.
    Principal,
    /// `models.<glob>.rate_limit`, per (principal, model).
    Model,
    /// `tokens_per_minute` (either level).
    Tokens,
}

impl Scope {
    /// Metric label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Principal => "principal",
            Self::Model => "model",
            Self::Tokens => "tokens",
        }
    }
}

/// Why a request was refused before reaching the upstream.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LimitError {
    /// No key, or a key that matches none, where auth is required.
    #[error("unauthorized: {reason}")]
    Unauthorized { reason: &'static str },
    /// The key may not use this model.
    #[error("API key {key:?} may not use model {model:?}")]
    Forbidden { key: String, model: String },
    /// The caller lacks the scope the route needs.
    #[error("{} may not use this route: it needs the {scope:?} scope", who.as_deref().map_or_else(|| "a request without an API key".to_string(), |k| format!("API key {k:?}")))]
    MissingScope {
        /// The key id; `None` for an anonymous caller.
        who: Option<String>,
        scope: &'static str,
    },
    /// A rate limit or token budget is spent.
    #[error("rate limit exceeded ({}); retry in {}s", scope.as_str(), retry_after_secs(*retry_after))]
    RateLimited {
        scope: Scope,
        /// Requests (burst) or tokens per minute of the limit that refused.
        limit: u64,
        retry_after: Duration,
    },
    /// No concurrency slot within the queue timeout.
    #[error("{}", BUSY_MESSAGE)]
    Busy { model: String },
    /// The shared limit store did not answer and the policy says
    /// `limits.on_store_error: deny`.
    #[error("rate limits are unavailable; retry shortly")]
    StoreUnavailable,
}

/// Whole seconds, rounded up, at least 1.
pub(crate) fn retry_after_secs(d: Duration) -> u64 {
    let secs = d.as_secs() + u64::from(d.subsec_nanos() > 0);
    secs.max(1)
}

fn put(headers: &mut HeaderMap, name: &'static str, value: impl ToString) {
    if let Ok(v) = HeaderValue::from_str(&value.to_string()) {
        headers.insert(HeaderName::from_static(name), v);
    }
}

impl LimitError {
    /// The HTTP status to answer with.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::Unauthorized { .. } => StatusCode::UNAUTHORIZED,
            Self::Forbidden { .. } | Self::MissingScope { .. } => StatusCode::FORBIDDEN,
            Self::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::Busy { .. } | Self::StoreUnavailable => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    /// The text for Ollama's `{"error": "..."}` body.
    pub fn message(&self) -> String {
        self.to_string()
    }

    /// Headers to add to the error response.
    pub fn headers(&self) -> HeaderMap {
        let mut h = HeaderMap::new();
        match self {
            Self::Unauthorized { .. } => put(&mut h, "www-authenticate", "Bearer"),
            Self::RateLimited {
                limit, retry_after, ..
            } => {
                let secs = retry_after_secs(*retry_after);
                put(&mut h, "retry-after", secs);
                put(&mut h, "ratelimit-limit", limit);
                put(&mut h, "ratelimit-remaining", 0);
                put(&mut h, "ratelimit-reset", secs);
            }
            Self::StoreUnavailable => put(&mut h, "retry-after", 1),
            Self::Forbidden { .. } | Self::MissingScope { .. } | Self::Busy { .. } => {}
        }
        h
    }
}
