//! The `auth` section's keys compiled: each key's SHA-256 (given, or of
//! the environment variable it names), its id and scopes.

use sha2::{Digest, Sha256};

use super::{
    error::PolicyError,
    globs::ModelGlobs,
    model::RateLimit,
    raw::{RawKey, Tri},
    rules::merge_rate_limit,
    snapshot::{ApiKey, Scopes},
};

pub(super) fn compile_key(file: &str, i: usize, key: RawKey) -> Result<ApiKey, PolicyError> {
    let at = format!("auth.keys[{i}] (id {:?})", key.id);
    let sha256: [u8; 32] = match (&key.key_sha256, &key.key_env) {
        (Some(hex_hash), None) => {
            let bytes = hex::decode(hex_hash.trim())
                .map_err(|e| PolicyError::invalid(file, &at, format!("key_sha256: {e}")))?;
            <[u8; 32]>::try_from(bytes.as_slice())
                .map_err(|_| PolicyError::invalid(file, &at, "key_sha256 must be 64 hex digits"))?
        }
        (None, Some(var)) => match std::env::var(var) {
            Ok(plain) if !plain.is_empty() => Sha256::digest(plain.as_bytes()).into(),
            _ => {
                let msg = format!("key_env: environment variable {var} is not set");
                return Err(PolicyError::invalid(file, &at, msg));
            }
        },
        _ => {
            let msg = "exactly one of key_sha256 and key_env is required";
            return Err(PolicyError::invalid(file, &at, msg));
        }
    };
    let allowed = ModelGlobs::new(&key.models)
        .map_err(|m| PolicyError::invalid(file, format!("{at}.models"), m))?;
    let rate_limit = match &key.rate_limit {
        Tri::Absent => None,
        Tri::Null => Some(RateLimit::default()),
        t @ Tri::Set(_) => merge_rate_limit(None, t),
    };
    let scopes = match &key.scopes {
        Some(names) => scopes(file, &format!("{at}.scopes"), names)?,
        None => Scopes::DEFAULT,
    };
    let guard = match &key.guard {
        None => None,
        Some(g) => Some(std::sync::Arc::new(crate::guard::compile(g).map_err(
            |message| PolicyError::invalid(file, format!("auth.keys[{i}].guard"), message),
        )?)),
    };
    Ok(ApiKey {
        id: key.id,
        sha256,
        models: key.models,
        allowed,
        rate_limit,
        weight: key.weight.unwrap_or(1),
        scopes,
        guard,
    })
}

/// A `scopes` list; an unknown name rejects the file.
pub(super) fn scopes(file: &str, at: &str, names: &[String]) -> Result<Scopes, PolicyError> {
    Scopes::parse(names).map_err(|name| {
        let msg = format!("unknown scope {name:?} (generate, read or manage)");
        PolicyError::invalid(file, at, msg)
    })
}
