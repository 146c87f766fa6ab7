//! Authentication: API key → [`Principal`].
//!
//! The key comes from `Authorization: Bearer <key>` or `X-API-Key: <key>`.
//! It is hashed with SHA-256 and compared in constant time against every
//! stored hash (no early exit, so timing reveals neither the key nor which
//! entry matched). Keys never reach logs or metrics; the key's `id` does.
//!
//! With `auth.required: false`, a request without a key, or with a key that
//! matches none (OpenAI clients often send a placeholder such as "ollama"),
//! is anonymous and limited per client IP; a matching key still selects its
//! id, allowed models and rate limit.

use std::net::IpAddr;

use http::{HeaderMap, header::AUTHORIZATION};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::error::LimitError;
use crate::policy::{ApiKey, Policy, RateLimit, Scopes};

/// Who is making a request.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Principal {
    /// The key id when authenticated by a key.
    pub key: Option<String>,
    pub client_ip: IpAddr,
}

impl Principal {
    /// An anonymous principal, limited by client IP.
    pub fn anonymous(client_ip: IpAddr) -> Self {
        Self {
            key: None,
            client_ip,
        }
    }

    /// The principal's entry in `policy.auth.keys`, if any.
    pub fn api_key<'p>(&self, policy: &'p Policy) -> Option<&'p ApiKey> {
        let id = self.key.as_deref()?;
        policy.auth.keys.iter().find(|k| k.id == id)
    }

    /// Label for metrics and logs: the key id, or "anonymous" (client IPs
    /// are unbounded and stay out of metric labels).
    pub fn label(&self) -> &str {
        self.key.as_deref().unwrap_or("anonymous")
    }

    /// The id of the API key it presented; `None` when anonymous.
    pub fn key_id(&self) -> Option<&str> {
        self.key.as_deref()
    }

    /// Limiter key; key ids and IPs live in separate namespaces.
    pub(crate) fn limiter_key(&self) -> String {
        match &self.key {
            Some(id) => format!("key:{id}"),
            None => format!("ip:{}", self.client_ip),
        }
    }
}

/// The headers a client presents a key in.
pub(crate) const CREDENTIAL_HEADERS: [http::HeaderName; 2] =
    [AUTHORIZATION, http::HeaderName::from_static("x-api-key")];

/// Remove the headers augur reads keys from: a key for augur is not a key
/// for the upstream.
pub(crate) fn strip_credentials(headers: &mut HeaderMap) {
    for name in &CREDENTIAL_HEADERS {
        headers.remove(name);
    }
}

/// The presented key, if any.
fn presented_key(headers: &HeaderMap) -> Option<&[u8]> {
    if let Some(v) = headers.get(AUTHORIZATION) {
        let v = v.as_bytes();
        if v.len() > 7 && v[..7].eq_ignore_ascii_case(b"bearer ") {
            let key = v[7..].trim_ascii();
            if !key.is_empty() {
                return Some(key);
            }
        }
    }
    headers
        .get(&CREDENTIAL_HEADERS[1])
        .map(|v| v.as_bytes().trim_ascii())
        .filter(|k| !k.is_empty())
}

/// The key whose hash matches, comparing against every key.
fn find_key<'p>(policy: &'p Policy, key: &[u8]) -> Option<&'p ApiKey> {
    let hash: [u8; 32] = Sha256::digest(key).into();
    let mut found = None;
    for k in &policy.auth.keys {
        if bool::from(k.sha256.ct_eq(&hash)) {
            found = Some(k);
        }
    }
    found
}

fn fail(reason: &'static str, message: &'static str) -> LimitError {
    metrics::counter!("augur_auth_failures_total", "reason" => reason).increment(1);
    LimitError::Unauthorized { reason: message }
}

/// Identify the caller under `policy`. Errors only when `auth.required`.
pub(crate) fn authenticate(
    policy: &Policy,
    headers: &HeaderMap,
    client_ip: IpAddr,
) -> Result<Principal, LimitError> {
    let required = policy.auth.required;
    match presented_key(headers) {
        Some(key) => match find_key(policy, key) {
            Some(k) => Ok(Principal {
                key: Some(k.id.clone()),
                client_ip,
            }),
            None if required => Err(fail("invalid_key", "invalid API key")),
            None => Ok(Principal::anonymous(client_ip)),
        },
        None if required => Err(fail("missing_key", "missing API key")),
        None => Ok(Principal::anonymous(client_ip)),
    }
}

/// What the principal may reach: its key's scopes, or, without a key,
/// `auth.anonymous_scopes`.
pub(crate) fn scopes(policy: &Policy, principal: &Principal) -> Scopes {
    match &principal.key {
        None => policy.auth.anonymous_scopes,
        Some(_) => principal.api_key(policy).map_or(Scopes::NONE, |k| k.scopes),
    }
}

/// 403 unless the principal has the `scope` a route needs (`allowed`
/// says whether its scopes include it).
pub(crate) fn check_scope(
    principal: &Principal,
    allowed: bool,
    scope: &'static str,
) -> Result<(), LimitError> {
    if allowed {
        return Ok(());
    }
    metrics::counter!("augur_auth_failures_total", "reason" => "missing_scope").increment(1);
    Err(LimitError::MissingScope {
        who: principal.key.clone(),
        scope,
    })
}

/// 403 unless the principal's key may use `model` (a normalized name;
/// anonymous may use all).
pub(crate) fn check_model(
    policy: &Policy,
    principal: &Principal,
    model: &str,
) -> Result<(), LimitError> {
    let Some(id) = &principal.key else {
        return Ok(());
    };
    let Some(key) = principal.api_key(policy) else {
        // The key is gone from this snapshot.
        return Err(fail("invalid_key", "invalid API key"));
    };
    if key.allowed.allows_normalized(model) {
        return Ok(());
    }
    metrics::counter!("augur_auth_failures_total", "reason" => "forbidden_model").increment(1);
    Err(LimitError::Forbidden {
        key: id.clone(),
        model: model.to_string(),
    })
}

/// The principal-level quota: the key's own, else the defaults.
pub(crate) fn principal_rate(policy: &Policy, principal: &Principal) -> Option<RateLimit> {
    principal
        .api_key(policy)
        .and_then(|k| k.rate_limit)
        .or(policy.default_rate_limit)
}
