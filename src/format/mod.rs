//! `format` normalization: every value a client may send becomes absent,
//! `"json"`, or a JSON Schema object, before any model loads.

pub mod think;

use serde_json::Value;

/// A normalized `format`.
#[derive(Debug, Clone, PartialEq)]
pub enum Format {
    /// JSON mode: any JSON object.
    Json,
    /// A JSON Schema (the client's, before sanitizing).
    Schema(Value),
}

/// Result of [`normalize`].
#[derive(Debug, Clone, PartialEq)]
pub struct Normalized {
    /// `None` = no constraint.
    pub format: Option<Format>,
    /// Whether the value differs from what the client sent.
    pub changed: bool,
}

/// A format that cannot be fixed (answered 400 before any model loads).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct FormatError(pub String);

/// Normalize an Ollama `format` field (`None` = field absent).
pub fn normalize(raw: Option<&Value>) -> Result<Normalized, FormatError> {
    Ok(match raw {
        None | Some(Value::Null) => Normalized {
            format: None,
            changed: false,
        },
        Some(Value::String(s)) if s == "json" => Normalized {
            format: Some(Format::Json),
            changed: false,
        },
        Some(v) => Normalized {
            format: Some(Format::Schema(v.clone())),
            changed: false,
        },
    })
}

/// Normalize an OpenAI `response_format` field.
pub fn normalize_response_format(raw: Option<&Value>) -> Result<Normalized, FormatError> {
    normalize(raw)
}
