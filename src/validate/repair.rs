//! Deterministic repair of model output: parse, fix the text if needed,
//! coerce towards the schema, validate. A repair is kept only when it makes
//! the text parse or reduces the violations, so repairing valid output
//! changes nothing.

use serde_json::Value;

use super::cache::Validators;
use super::coerce::coerce_to_schema;
use super::text::{close_truncated, extract_json, remove_trailing_commas, strip_fence};
use super::violation::Violation;

/// What [`parse_and_repair`] made of a model's text.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct RepairOutcome {
    /// The best parse, if any.
    pub value: Option<Value>,
    /// Repairs applied, in order: "code_fence", "surrounding_text",
    /// "trailing_comma", "closed_truncated", "coerced_types", "dropped_keys".
    pub repairs: Vec<&'static str>,
    /// Violations after repair; empty = valid. Unparseable text yields one
    /// violation at the root.
    pub violations: Vec<Violation>,
    /// Why the value could not be checked against the schema, if it could
    /// not (then it is not valid either).
    pub unchecked: Option<String>,
    /// Whether the text was cut off (a truncated structure had to be closed,
    /// or it could not be parsed at all and ends inside a structure).
    pub truncated: bool,
}

/// Parse `text` as JSON, repairing it (when `repair`) and checking it
/// against `schema` (when given).
pub(crate) fn parse_and_repair(
    text: &str,
    schema: Option<&Value>,
    validators: &Validators,
    repair: bool,
) -> RepairOutcome {
    let mut out = RepairOutcome::default();
    let parsed = match serde_json::from_str::<Value>(text.trim()) {
        Ok(v) => Some(v),
        Err(e) if !repair => {
            out.violations.push(not_json(&e.to_string()));
            out.truncated = e.is_eof();
            return out;
        }
        Err(_) => repair_text(text, &mut out),
    };
    let Some(mut value) = parsed else {
        return out;
    };
    if let Some(schema) = schema {
        let mut checked = validators.validate(schema, &value);
        if repair && !checked.violations.is_empty() {
            let mut candidate = value.clone();
            let steps = coerce_to_schema(&mut candidate, schema);
            if !steps.is_empty() {
                let after = validators.validate(schema, &candidate);
                if after.unchecked.is_none() && after.violations.len() < checked.violations.len() {
                    value = candidate;
                    checked = after;
                    out.repairs.extend(steps);
                }
            }
        }
        out.violations = checked.violations;
        out.unchecked = checked.unchecked;
    }
    out.value = Some(value);
    out
}

/// Text repairs in order; records the ones that led to a parse.
fn repair_text(text: &str, out: &mut RepairOutcome) -> Option<Value> {
    let mut steps: Vec<&'static str> = Vec::new();
    let mut cur = text.trim().to_string();
    let attempt = |s: &str| serde_json::from_str::<Value>(s).ok();
    if cur.contains("```")
        && let Some(inner) = strip_fence(&cur)
    {
        cur = inner;
        steps.push("code_fence");
        if let Some(v) = attempt(&cur) {
            out.repairs = steps;
            return Some(v);
        }
    }
    if let Some(inner) = extract_json(&cur)
        && inner != cur
    {
        cur = inner;
        steps.push("surrounding_text");
        if let Some(v) = attempt(&cur) {
            out.repairs = steps;
            return Some(v);
        }
    }
    if let Some(fixed) = remove_trailing_commas(&cur) {
        cur = fixed;
        steps.push("trailing_comma");
        if let Some(v) = attempt(&cur) {
            out.repairs = steps;
            return Some(v);
        }
    }
    if let Some(v) = close_truncated(&cur) {
        steps.push("closed_truncated");
        out.repairs = steps;
        out.truncated = true;
        return Some(v);
    }
    let err = serde_json::from_str::<Value>(&cur).err();
    out.truncated = err.as_ref().is_some_and(serde_json::Error::is_eof);
    let msg = err.map_or_else(|| "no JSON value found".to_string(), |e| e.to_string());
    out.violations.push(not_json(&msg));
    None
}

fn not_json(detail: &str) -> Violation {
    Violation {
        pointer: String::new(),
        message: format!("not valid JSON ({detail})"),
    }
}
