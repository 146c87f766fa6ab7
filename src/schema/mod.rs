//! JSON Schema surgery for llama.cpp's grammar converter.
//!
//! [`sanitize`] turns any schema a client sends (in `format` or in a tool's
//! `parameters`) into one the converter accepts while keeping every
//! constraint it can enforce. The original schema is still what output is
//! validated against. [`degrade`] gives a simpler schema for a retry after the
//! upstream rejected a sanitized one.
//!
//! The output obeys the strictest of the converter generations in use
//! (Ollama's vendored copy, llama-server's current `json-schema-to-grammar`
//! and its `json-schema.cpp` front end): every sub-schema is an object, no
//! `$ref`, `oneOf`, `allOf`, `not`, `if`, type lists or keyword-less schemas;
//! patterns are anchored and escape-safe; counts are small non-negative
//! integers; integer bounds are integers; enums are non-empty and bounded.

pub mod budget;
mod degrade;
mod formats;
mod formats_common;
mod keywords;
mod merge;
mod pattern;
mod types;
mod walk;

#[cfg(test)]
mod tests;

use serde_json::Value;

pub use degrade::degrade;
pub use pattern::to_grammar_pattern;
pub use types::{PRIMITIVES, TypeName, any_value, map_type_name, with_type_names_mapped};

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
pub const MAX_VISITS: usize = 20_000;

/// Which patterns stand, in the grammar copy, for the string formats the
/// converter drops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FormatForms {
    /// Patterns admitting every valid value of the format's test suite
    /// (see `formats`); `email` and `hostname` are left free.
    #[default]
    Exact,
    /// The common forms (`tools.small_model`): `email`, `hostname` and
    /// `uri` narrowed as `formats_common` says, the rest as [`Self::Exact`].
    Common,
}

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
pub fn sanitize_within(schema: &Value, max_visits: usize) -> Result<Sanitized, SchemaError> {
    sanitize_with(schema, max_visits, FormatForms::Exact)
}

/// [`sanitize_within`] with the string formats narrowed to `forms`.
pub fn sanitize_with(
    schema: &Value,
    max_visits: usize,
    forms: FormatForms,
) -> Result<Sanitized, SchemaError> {
    if !matches!(schema, Value::Object(_) | Value::Bool(_)) {
        return Err(SchemaError(format!(
            "a JSON Schema must be an object or a boolean, not {}",
            types::type_of(schema)
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

/// The first `type` string anywhere in `schema` that maps to no JSON type,
/// as (JSON pointer of the schema node, type name). `None` when every type
/// is known or mappable (see [`map_type_name`]). Linear in the schema's
/// size: the pointer is only spelled out for the node found.
pub fn find_unknown_type(schema: &Value) -> Option<(String, String)> {
    enum Seg<'a> {
        Key(&'a str),
        Index(usize),
    }
    fn bad(t: &Value) -> Option<String> {
        t.as_str()
            .filter(|s| map_type_name(s) == TypeName::Unknown)
            .map(str::to_string)
    }
    fn visit<'a>(v: &'a Value, path: &mut Vec<Seg<'a>>) -> Option<String> {
        if path.len() > 64 {
            return None;
        }
        match v {
            Value::Object(m) => {
                match m.get("type") {
                    Some(t @ Value::String(_)) => {
                        if let Some(s) = bad(t) {
                            return Some(s);
                        }
                    }
                    Some(Value::Array(ts)) => {
                        if let Some(s) = ts.iter().find_map(bad) {
                            return Some(s);
                        }
                    }
                    _ => {}
                }
                for (k, x) in m {
                    if matches!(k.as_str(), "enum" | "const" | "default" | "examples") {
                        continue;
                    }
                    path.push(Seg::Key(k));
                    if let Some(found) = visit(x, path) {
                        return Some(found);
                    }
                    path.pop();
                }
                None
            }
            Value::Array(xs) => {
                for (i, x) in xs.iter().enumerate() {
                    path.push(Seg::Index(i));
                    if let Some(found) = visit(x, path) {
                        return Some(found);
                    }
                    path.pop();
                }
                None
            }
            _ => None,
        }
    }
    let mut path = Vec::new();
    let found = visit(schema, &mut path)?;
    let pointer: String = path
        .iter()
        .map(|s| match s {
            Seg::Key(k) => format!("/{}", keywords::escape_pointer(k)),
            Seg::Index(i) => format!("/{i}"),
        })
        .collect();
    Some((pointer, found))
}
