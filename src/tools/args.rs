//! Checking and fixing call arguments against each tool's *original*
//! parameters schema: [`validate_calls`] (jsonschema, compiled once per
//! [`ToolSet`]), [`validate_calls_with`] (any validator, e.g. a shared
//! cache) and [`repair_arguments`] (type coercion the schema implies).

use serde_json::{Map, Number, Value};

use super::call::ToolCall;
use super::spec::ToolSet;

/// One violation: a JSON pointer into the arguments and a message.
pub(crate) type Violation = (String, String);

/// Most violations reported per call.
const MAX_VIOLATIONS: usize = 20;

/// Per call (same order as `calls`), the violations of its arguments
/// against its tool's original parameters schema (or, when that does not
/// compile, the grammar schema: see [`super::spec::Tool::exact`]); empty = valid.
/// An undeclared tool, or arguments too large to check, is a violation at
/// pointer `""`.
pub fn validate_calls(calls: &[ToolCall], set: &ToolSet) -> Vec<Vec<Violation>> {
    calls
        .iter()
        .map(|call| match set.get(&call.name) {
            None => vec![undeclared(&call.name)],
            Some(tool) => {
                let checked = tool.checker().check(&call.arguments);
                let mut out: Vec<Violation> = checked
                    .violations
                    .into_iter()
                    .take(MAX_VIOLATIONS)
                    .map(|v| (v.pointer, v.message))
                    .collect();
                // Arguments that could not be checked are not valid.
                if let Some(why) = checked.unchecked {
                    out.push((String::new(), why));
                }
                out
            }
        })
        .collect()
}

fn undeclared(name: &str) -> Violation {
    (String::new(), format!("{name:?} is not a declared tool"))
}

/// [`repair_arguments`] for every call against its tool's original schema;
/// returns what was done (deduplicated).
pub fn repair_calls(calls: &mut [ToolCall], set: &ToolSet) -> Vec<&'static str> {
    let mut notes = Vec::new();
    for call in calls.iter_mut() {
        if let Some(tool) = set.get(&call.name) {
            for n in repair_arguments(&mut call.arguments, &tool.parameters) {
                if !notes.contains(&n) {
                    notes.push(n);
                }
            }
        }
    }
    notes
}

/// Fix `args` in place where `schema` says what it should be: strings to
/// numbers/booleans (`"5"`→`5`, `"true"`→`true`), numbers and booleans to
/// strings, JSON text to the array/object it holds, a single value to a
/// one-element array, enum values matched ignoring case, and properties
/// dropped where `additionalProperties` is `false`. Python-style type names
/// (`int`, `str`, …) are understood. Returns what was done (deduplicated).
pub(crate) fn repair_arguments(args: &mut Value, schema: &Value) -> Vec<&'static str> {
    let mut notes = Vec::new();
    repair(args, schema, 0, &mut notes);
    notes
}

fn note(notes: &mut Vec<&'static str>, n: &'static str) {
    if !notes.contains(&n) {
        notes.push(n);
    }
}

fn repair(v: &mut Value, schema: &Value, depth: usize, notes: &mut Vec<&'static str>) {
    let Value::Object(s) = schema else { return };
    if depth > 32 {
        return;
    }
    let types = declared_types(s);
    if !types.is_empty() && !types.iter().any(|t| has_type(v, t)) {
        for t in &types {
            if let Some((fixed, n)) = coerce(v, t) {
                *v = fixed;
                note(notes, n);
                break;
            }
        }
    }
    if let (Some(Value::Array(options)), Value::String(text)) = (s.get("enum"), &*v)
        && !options.contains(v)
        && let Some(m) = options
            .iter()
            .find(|o| o.as_str().is_some_and(|o| o.eq_ignore_ascii_case(text)))
    {
        *v = m.clone();
        note(notes, "matched an enum value ignoring case");
    }
    match v {
        Value::Object(m) => repair_object(m, s, depth, notes),
        Value::Array(items) => {
            if let Some(item_schema @ Value::Object(_)) = s.get("items") {
                for item in items {
                    repair(item, item_schema, depth + 1, notes);
                }
            }
        }
        _ => {}
    }
}

fn repair_object(
    m: &mut Map<String, Value>,
    s: &Map<String, Value>,
    depth: usize,
    notes: &mut Vec<&'static str>,
) {
    let props = s.get("properties").and_then(Value::as_object);
    if s.get("additionalProperties") == Some(&Value::Bool(false)) {
        let before = m.len();
        m.retain(|k, _| props.is_some_and(|p| p.contains_key(k)));
        if m.len() != before {
            note(notes, "dropped properties the schema does not allow");
        }
    }
    let extra = s.get("additionalProperties").filter(|a| a.is_object());
    for (k, val) in m.iter_mut() {
        if let Some(sub) = props.and_then(|p| p.get(k)).or(extra) {
            repair(val, sub, depth + 1, notes);
        }
    }
}

/// The schema's `type` names, normalised; inferred from `properties` or
/// `items` when absent.
fn declared_types(s: &Map<String, Value>) -> Vec<&'static str> {
    let raw: Vec<&str> = match s.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ if s.contains_key("properties") => vec!["object"],
        _ if s.contains_key("items") => vec!["array"],
        _ => Vec::new(),
    };
    raw.into_iter()
        .filter_map(|t| match t.to_ascii_lowercase().as_str() {
            "integer" | "int" | "long" => Some("integer"),
            "number" | "float" | "double" | "decimal" => Some("number"),
            "string" | "str" | "text" => Some("string"),
            "boolean" | "bool" => Some("boolean"),
            "object" | "dict" | "map" => Some("object"),
            "array" | "list" | "tuple" => Some("array"),
            "null" | "none" => Some("null"),
            _ => None,
        })
        .collect()
}

fn has_type(v: &Value, t: &str) -> bool {
    match t {
        "integer" => v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|f| f.fract() == 0.0),
        "number" => v.is_number(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "object" => v.is_object(),
        "array" => v.is_array(),
        "null" => v.is_null(),
        _ => true,
    }
}

fn coerce(v: &Value, t: &str) -> Option<(Value, &'static str)> {
    match (t, v) {
        ("integer", Value::String(s)) => {
            let s = s.trim();
            let n = s.parse::<i64>().ok().map(Number::from).or_else(|| {
                s.parse::<f64>()
                    .ok()
                    .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
                    .map(|f| Number::from(f as i64))
            })?;
            Some((Value::Number(n), "converted a string to an integer"))
        }
        ("number", Value::String(s)) => {
            let s = s.trim();
            let n = match s.parse::<i64>() {
                Ok(i) => Number::from(i),
                Err(_) => s.parse::<f64>().ok().and_then(Number::from_f64)?,
            };
            Some((Value::Number(n), "converted a string to a number"))
        }
        ("boolean", Value::String(s)) => match s.trim().to_ascii_lowercase().as_str() {
            "true" => Some((Value::Bool(true), "converted a string to a boolean")),
            "false" => Some((Value::Bool(false), "converted a string to a boolean")),
            _ => None,
        },
        ("string", Value::Number(_) | Value::Bool(_)) => Some((
            Value::String(v.to_string()),
            "converted a value to a string",
        )),
        ("array" | "object", Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(parsed) if has_type(&parsed, t) => Some((parsed, "parsed JSON text into a value")),
            _ if t == "array" => {
                Some((Value::Array(vec![v.clone()]), "wrapped a value in an array"))
            }
            _ => None,
        },
        ("array", Value::Null) => None,
        ("array", _) => Some((Value::Array(vec![v.clone()]), "wrapped a value in an array")),
        ("null", Value::String(s)) if s.trim() == "null" => {
            Some((Value::Null, "converted a string to null"))
        }
        _ => None,
    }
}

#[cfg(test)]
#[path = "args_tests.rs"]
mod tests;
