//! One schema compiled for validation: the budget check every schema must
//! pass first, the validator built with bounded regular expressions (what
//! it weighs in memory is estimated in `weight/`), and validation whose
//! work and output are bounded.

use std::fmt::Write as _;

use serde_json::Value;

use crate::schema::budget::{self, BudgetError, Limits, Report};

use super::violation::{Checked, Violation};

/// A compiled pattern may take this many bytes (the regex crate's own
/// default is 10 MiB); the budget's pattern cost keeps real ones far below.
const REGEX_SIZE_LIMIT: usize = 2 * 1024 * 1024;
/// Cache of one pattern's lazy DFA (the default is 2 MiB per thread).
const REGEX_DFA_LIMIT: usize = 64 * 1024;
/// Backtracking steps one match of a pattern with look-around may take.
const REGEX_BACKTRACK_LIMIT: usize = 100_000;
/// Validation work allowed for one answer, in (sub-schema × value)
/// visits: beyond it an answer is reported unchecked.
pub(crate) const MAX_WORK: usize = 20_000_000;
/// Below this much work every violation is collected; above it only the
/// first (collecting errors costs memory for each one).
const DETAIL_WORK: usize = 50_000;
/// Violations kept per answer.
pub const MAX_VIOLATIONS: usize = 20;
/// Longest message and pointer kept per violation.
const MAX_MESSAGE: usize = 300;

/// Why a schema is refused. The text follows "`<what>` schema", e.g.
/// "format schema too large: …".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaRejected {
    /// It exceeds a limit of the budget (or cannot be measured).
    #[error("{0}")]
    Budget(#[from] BudgetError),
    /// The validator cannot be built from it.
    #[error("invalid: {0}")]
    Invalid(String),
}

/// A compiled schema and what it costs.
pub struct Compiled {
    validator: jsonschema::Validator,
    /// What the budget check measured.
    pub report: Report,
    /// Estimated bytes held, validation caches included (the cache weighs
    /// entries by it, see [`super::weight()`]).
    pub weight: u32,
    /// Type names had to be mapped (`"int"` → `"integer"`) to compile it.
    pub mapped_types: bool,
}

impl std::fmt::Debug for Compiled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compiled")
            .field("report", &self.report)
            .field("weight", &self.weight)
            .field("mapped_types", &self.mapped_types)
            .finish()
    }
}

/// The options every validator is built with: formats checked, regular
/// expressions bounded in size, cache and backtracking.
pub(crate) fn options<'i>() -> jsonschema::ValidationOptions<'i> {
    jsonschema::options()
        .should_validate_formats(true)
        .with_pattern_options(
            jsonschema::PatternOptions::fancy_regex()
                .size_limit(REGEX_SIZE_LIMIT)
                .dfa_size_limit(REGEX_DFA_LIMIT)
                .backtrack_limit(REGEX_BACKTRACK_LIMIT),
        )
}

/// Check `schema` against the default budget and compile it (no cache).
/// A schema whose only fault is a mapped type name (`"int"`) compiles
/// with those names spelled out.
pub fn compile(schema: &Value) -> Result<Compiled, SchemaRejected> {
    let report = budget::check(schema, &Limits::default())?;
    let (validator, mapped_types) = match options().build(schema) {
        Ok(v) => (v, false),
        Err(e) => {
            let first = compile_error(&e);
            let mapped = crate::schema::with_type_names_mapped(schema)
                .and_then(|m| options().build(&m).ok());
            match mapped {
                Some(v) => (v, true),
                None => return Err(SchemaRejected::Invalid(first)),
            }
        }
    };
    Ok(Compiled {
        validator,
        weight: super::weight::weight(schema),
        report,
        mapped_types,
    })
}

fn compile_error(e: &jsonschema::ValidationError<'_>) -> String {
    let at = e.instance_path().as_str();
    let mut out = bounded(e, MAX_MESSAGE);
    if !at.is_empty() {
        out.push_str(" at ");
        out.push_str(&shorten(at, MAX_MESSAGE));
    }
    out
}

impl Compiled {
    /// The validator itself.
    pub fn validator(&self) -> &jsonschema::Validator {
        &self.validator
    }

    /// Validate `instance` with bounded work: unchecked when the answer is
    /// too large for this schema, at most [`MAX_VIOLATIONS`] violations
    /// (all of them only when cheap to collect), messages shortened.
    pub fn check(&self, instance: &Value) -> Checked {
        let per_value = self.report.expanded.max(1);
        let values = count_values(instance, MAX_WORK / per_value + 1);
        let work = per_value.saturating_mul(values);
        if work > MAX_WORK {
            return Checked::unchecked(format!(
                "the answer is too large to validate against this schema \
                 ({values} values × {per_value} sub-schemas)"
            ));
        }
        if self.validator.is_valid(instance) {
            return Checked::default();
        }
        let violations: Vec<Violation> = if work <= DETAIL_WORK {
            self.validator
                .iter_errors(instance)
                .take(MAX_VIOLATIONS)
                .map(|e| violation(&e))
                .collect()
        } else {
            self.validator
                .validate(instance)
                .err()
                .map(|e| violation(&e))
                .into_iter()
                .collect()
        };
        if violations.is_empty() {
            // is_valid and the error walk disagree: say so rather than
            // calling the answer valid.
            return Checked::unchecked("the validator found no violation to report".into());
        }
        Checked {
            violations,
            unchecked: None,
        }
    }
}

fn violation(e: &jsonschema::ValidationError<'_>) -> Violation {
    let mut pointer = shorten(e.instance_path().as_str(), MAX_MESSAGE);
    if let jsonschema::error::ValidationErrorKind::Required { property } = e.kind()
        && let Some(name) = property.as_str()
    {
        pointer.push('/');
        pointer.push_str(&shorten(
            &name.replace('~', "~0").replace('/', "~1"),
            MAX_MESSAGE,
        ));
    }
    Violation {
        pointer,
        message: bounded(e, MAX_MESSAGE),
    }
}

/// `v` displayed, stopping after `max` characters (errors about large
/// values would otherwise print all of the value).
fn bounded(v: &impl std::fmt::Display, max: usize) -> String {
    struct Capped {
        out: String,
        left: usize,
    }
    impl std::fmt::Write for Capped {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            for c in s.chars() {
                if self.left == 0 {
                    return Err(std::fmt::Error);
                }
                self.out.push(c);
                self.left -= 1;
            }
            Ok(())
        }
    }
    let mut w = Capped {
        out: String::new(),
        left: max,
    };
    if write!(w, "{v}").is_err() {
        w.out.push_str("...");
    }
    w.out
}

fn shorten(s: &str, max: usize) -> String {
    bounded(&s, max)
}

/// Values in `v`, counting no further than `cap`.
fn count_values(v: &Value, cap: usize) -> usize {
    let mut n = 0;
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        n += 1;
        if n >= cap {
            return n;
        }
        match v {
            Value::Object(m) => stack.extend(m.values()),
            Value::Array(xs) => stack.extend(xs.iter()),
            _ => {}
        }
    }
    n
}
