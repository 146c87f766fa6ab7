//! What every part of a request's translation reads it with: a field's
//! string, and the 400 a refused request gets.

use serde_json::{Map, Value};

use crate::error::ProxyError;

/// A 400 with Ollama's text.
pub(super) fn bad(message: impl Into<String>) -> ProxyError {
    ProxyError::BadRequest(message.into())
}

/// The string at `key`, or `""`.
pub(super) fn str_of<'a>(m: &'a Map<String, Value>, key: &str) -> &'a str {
    m.get(key).and_then(Value::as_str).unwrap_or_default()
}
