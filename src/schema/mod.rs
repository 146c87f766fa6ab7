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
mod logic;
mod merge;
mod pattern;
mod sanitize;
mod types;
mod unknown;
mod walk;

#[cfg(test)]
mod tests;

pub use degrade::degrade;
pub use formats::FormatForms;
pub use sanitize::sanitize;
pub(crate) use sanitize::{MAX_VISITS, sanitize_with};
pub(crate) use types::{TypeName, map_type_name, with_type_names_mapped};
pub(crate) use unknown::find_unknown_type;
