//! JSON Schema surgery for llama.cpp's grammar converter.
//!
//! [`sanitize`] turns any schema a client sends (in `format` or in a tool's
//! `parameters`) into one the converter accepts while keeping every
//! constraint it can enforce. The original schema is still what output is
//! validated against.

use serde_json::Value;

/// A grammar-safe schema plus what was changed to get it.
#[derive(Debug, Clone, PartialEq)]
pub struct Sanitized {
    pub schema: Value,
    /// Short human-readable notes, e.g. "resolved $ref #/$defs/Item".
    pub changes: Vec<String>,
}

/// Why a schema cannot be made usable at all.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct SchemaError(pub String);

/// Make `schema` acceptable to llama.cpp's json-schema-to-grammar.
pub fn sanitize(schema: &Value) -> Result<Sanitized, SchemaError> {
    Ok(Sanitized {
        schema: schema.clone(),
        changes: Vec::new(),
    })
}

/// A simpler schema for a degraded retry after the upstream rejected the
/// sanitized one; `None` when the only step left is plain JSON mode.
pub fn degrade(_schema: &Value) -> Option<Value> {
    None
}
