//! What an error Ollama answered means. The upstream says it only with a
//! status and a text, so the texts are read here, once, where its answer
//! arrives; everything after matches on the kind.

use http::StatusCode;

/// The kind of an error the upstream answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpstreamKind {
    /// The grammar converter rejected a `format` schema (Ollama < 0.30
    /// answers 500 `invalid JSON schema in format`; ≥ 0.30 relays
    /// llama-server's 400 `JSON schema conversion failed …`).
    SchemaRejected,
    /// Anything else: the status says the rest (404 model not found, 503
    /// busy, …).
    Other,
}

/// Texts of the grammar converters' refusals, in every generation in use.
const SCHEMA_REJECTED: [&str; 7] = [
    "invalid JSON schema in format",
    "JSON schema conversion failed",
    "Unrecognized schema",
    "Pattern must start with",
    "Unable to generate parser",
    "failed to parse grammar",
    "JSON schema error",
];

/// Classify an error answer by its status and text.
pub(crate) fn classify(status: StatusCode, message: &str) -> UpstreamKind {
    match status.as_u16() {
        400 | 500 if SCHEMA_REJECTED.iter().any(|t| message.contains(t)) => {
            UpstreamKind::SchemaRejected
        }
        _ => UpstreamKind::Other,
    }
}

#[cfg(test)]
#[path = "upstream_error_tests.rs"]
mod tests;
