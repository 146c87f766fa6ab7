//! The `fallback:` block compiled: 1 to 4 model names (tried in order),
//! each a name Ollama accepts, and `on`, the causes that make the next one
//! answer (default: invalid, truncated, upstream_error; `repaired` is
//! opt-in).

use super::{
    error::PolicyError,
    model::{Fallback, FallbackOn, Threshold},
    raw::RawFallback,
};

/// Most fallback models one entry lists (each is one more model call).
const MAX_FALLBACKS: usize = 4;
/// Longest fallback model name.
const MAX_NAME: usize = 256;

/// Compile the block at `at` of `file`.
pub(super) fn compile(file: &str, at: &str, f: &RawFallback) -> Result<Fallback, PolicyError> {
    let at = format!("{at}.fallback");
    if f.models.is_empty() || f.models.len() > MAX_FALLBACKS {
        return Err(PolicyError::invalid(
            file,
            format!("{at}.models"),
            format!("list 1 to {MAX_FALLBACKS} models"),
        ));
    }
    // A name the upstream would refuse, or one that cannot be sent in
    // `X-Augur-Model` (a control character), is refused here, when the
    // policy loads, rather than on the request that falls back.
    if let Some(bad) = f
        .models
        .iter()
        .find(|m| m.trim().len() > MAX_NAME || !crate::wire::model_name::is_valid_model_name(m))
    {
        return Err(PolicyError::invalid(
            file,
            format!("{at}.models"),
            format!("{bad:?} is not a valid model name"),
        ));
    }
    let on = match &f.on {
        None => FallbackOn::default(),
        Some(list) => {
            let mut on = FallbackOn {
                invalid: false,
                truncated: false,
                upstream_error: false,
                repaired: false,
            };
            for item in list {
                match item.as_str() {
                    "invalid" => on.invalid = true,
                    "truncated" => on.truncated = true,
                    "upstream_error" => on.upstream_error = true,
                    "repaired" => on.repaired = true,
                    other => {
                        return Err(PolicyError::invalid(
                            file,
                            format!("{at}.on"),
                            format!("unknown value {other:?}"),
                        ));
                    }
                }
            }
            on
        }
    };
    let confidence_below = match f.when.and_then(|w| w.confidence_below) {
        None => None,
        Some(p) => Some(Threshold::new(p).ok_or_else(|| {
            PolicyError::invalid(
                file,
                format!("{at}.when.confidence_below"),
                "a probability from 0 to 1",
            )
        })?),
    };
    Ok(Fallback {
        models: f.models.iter().map(|m| m.trim().to_string()).collect(),
        on,
        confidence_below,
    })
}
