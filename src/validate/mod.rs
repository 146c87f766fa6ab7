//! Output validation: compiled-once validators and JSON Schema violations.
//!
//! [`Validators`] compiles each distinct schema once (keyed by the SHA-256 of
//! its canonical JSON, weighed by the memory it holds compiled, see
//! [`weight()`], against one memory budget, see [`set_cache_budget`]) after
//! checking it against the schema budget ([`crate::schema::budget`]), and
//! reports [`Violation`]s with JSON pointers into the instance, with bounded
//! work ([`Compiled::check`]). A schema that cannot be compiled is refused
//! ([`SchemaRejected`]), never taken as constraining nothing. Repair of
//! model output lives in [`repair`] and [`coerce`].

mod cache;
pub(crate) mod coerce;
mod compiled;
pub(crate) mod repair;
mod text;
mod weight;

#[cfg(test)]
mod tests;

use serde_json::Value;

pub(crate) use cache::settle;
pub use cache::{Validators, cache_budget, schema_key, set_cache_budget, values_key};
pub use coerce::coerce_to_schema;
pub use compiled::{Compiled, MAX_VIOLATIONS, MAX_WORK, SchemaRejected, compile, options};
pub use repair::{RepairOutcome, parse_and_repair, retry_feedback};
pub use weight::{value_bytes, weight};

/// One violation, with a JSON pointer into the instance.
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    pub pointer: String,
    pub message: String,
}

/// What validating one value found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Checked {
    /// Violations found (empty with `unchecked: None` = valid).
    pub violations: Vec<Violation>,
    /// Why the value could not be checked, when it could not: never to be
    /// taken as valid.
    pub unchecked: Option<String>,
}

impl Checked {
    /// Could not be checked, for `why`.
    pub fn unchecked(why: String) -> Checked {
        Checked {
            violations: Vec::new(),
            unchecked: Some(why),
        }
    }

    /// Checked and valid.
    pub fn is_valid(&self) -> bool {
        self.violations.is_empty() && self.unchecked.is_none()
    }
}

/// [`Validators::compile`] on the process-wide cache, for every schema a
/// client or a policy names: the budget check, then the compilation.
pub fn admit(schema: &Value) -> Result<std::sync::Arc<Compiled>, SchemaRejected> {
    Validators::shared().compile(schema)
}

/// The first `max` violations as one line, e.g.
/// `/age: "five" is not of type "integer"; /name: "name" is a required property`.
pub fn format_violations(violations: &[Violation], max: usize) -> String {
    let mut parts: Vec<String> = violations
        .iter()
        .take(max)
        .map(|v| {
            let at = if v.pointer.is_empty() {
                "/"
            } else {
                &v.pointer
            };
            format!("{at}: {}", shorten(&v.message, 200))
        })
        .collect();
    if violations.len() > max {
        parts.push(format!("and {} more", violations.len() - max));
    }
    parts.join("; ")
}

fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let cut: String = s.chars().take(max.saturating_sub(3)).collect();
    format!("{cut}...")
}
