//! [`sanitize`]: any schema a client sends made one llama.cpp's
//! json-schema-to-grammar accepts, with what was changed to get it.

use serde_json::Value;

use super::formats::FormatForms;
use super::types::{any_value, type_of};
use super::walk;

/// A grammar-safe schema plus what was changed to get it.
#[derive(Debug, Clone, PartialEq)]
pub struct Sanitized {
    pub schema: Value,
    /// Short human-readable notes, e.g. "/items: inlined $ref #/$defs/Item".
    pub changes: Vec<String>,
    /// Sub-schemas rewritten (the work done; at most the cap it was given).
    pub visits: usize,
}

/// Sub-schemas [`sanitize`] rewrites at most; past that, the rest of the
/// schema becomes "any value" for the grammar (validation still applies
/// the whole original schema). Bounds its time and its output.
pub(crate) const MAX_VISITS: usize = 20_000;

/// Why a schema cannot be made usable at all.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct SchemaError(pub String);

/// Make `schema` acceptable to llama.cpp's json-schema-to-grammar.
///
/// Fails only when the root is neither an object nor a boolean. At most
/// [`MAX_VISITS`] sub-schemas are rewritten.
pub fn sanitize(schema: &Value) -> Result<Sanitized, SchemaError> {
    sanitize_within(schema, MAX_VISITS)
}

/// [`sanitize`] rewriting at most `max_visits` sub-schemas (for a set of
/// schemas sharing one budget).
pub(crate) fn sanitize_within(schema: &Value, max_visits: usize) -> Result<Sanitized, SchemaError> {
    sanitize_with(schema, max_visits, FormatForms::Exact)
}

/// [`sanitize_within`] with the string formats narrowed to `forms`.
pub(crate) fn sanitize_with(
    schema: &Value,
    max_visits: usize,
    forms: FormatForms,
) -> Result<Sanitized, SchemaError> {
    if !matches!(schema, Value::Object(_) | Value::Bool(_)) {
        return Err(SchemaError(format!(
            "a JSON Schema must be an object or a boolean, not {}",
            type_of(schema)
        )));
    }
    let mut walker = walk::Walker::new(schema, max_visits);
    walker.forms = forms;
    let schema = match walker.walk(schema, "", 0) {
        walk::Out::Schema(v) => v,
        walk::Out::Never => {
            walker.note("", "schema accepts nothing -> any value");
            any_value()
        }
    };
    Ok(Sanitized {
        schema,
        changes: walker.changes,
        visits: walker.visits.min(max_visits),
    })
}
