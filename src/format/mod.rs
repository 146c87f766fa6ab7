//! `format` normalization: every value a client may send becomes absent,
//! `"json"`, or a JSON Schema object, before any model loads.
//!
//! Also OpenAI's `response_format` ([`normalize_response_format`]) and the
//! thinking emulation helpers ([`think`]).

pub(crate) mod think;
pub(crate) mod think_stream;

#[cfg(test)]
mod tests;

use serde_json::Value;

/// A normalized `format`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Format {
    /// JSON mode: any JSON object.
    Json,
    /// A JSON Schema (the client's, before sanitizing).
    Schema(Value),
}

/// Result of [`normalize`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Normalized {
    /// `None` = no constraint.
    pub format: Option<Format>,
    /// Whether the value differs from what the client sent.
    pub changed: bool,
}

/// A format that cannot be fixed (answered 400 before any model loads).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct FormatError(pub String);

const EXPECTED: &str = "expected \"json\", a JSON Schema object, or an OpenAI json_schema wrapper";

fn unset(changed: bool) -> Normalized {
    Normalized {
        format: None,
        changed,
    }
}

fn json(changed: bool) -> Normalized {
    Normalized {
        format: Some(Format::Json),
        changed,
    }
}

/// Short rendering of a bad value for error messages.
fn show(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 80 {
        let cut: String = s.chars().take(77).collect();
        format!("{cut}...")
    } else {
        s
    }
}

/// Normalize an Ollama `format` field (`None` = field absent).
///
/// - absent, `null` → unset (unchanged); `""` → unset (changed)
/// - `"json"` → Json; `"JSON"`, `" json "`, `"json_object"` → Json (changed)
/// - a string holding a JSON object (or a JSON-encoded string) → that value,
///   normalized again (changed)
/// - `{}`, `{"type":"json"}`, `{"type":"json_object"}` → Json
/// - `{"type":"json_schema","json_schema":{"schema":S}}` → S (a wrapper
///   without a schema → Json); `{"type":"text"}` → unset
/// - any other object → a schema, unless some `type` in it is a name with no
///   JSON Schema meaning
/// - numbers, booleans, arrays, other strings → [`FormatError`]
pub(crate) fn normalize(raw: Option<&Value>) -> Result<Normalized, FormatError> {
    normalize_at(raw, 0)
}

fn normalize_at(raw: Option<&Value>, depth: usize) -> Result<Normalized, FormatError> {
    let Some(v) = raw else {
        return Ok(unset(false));
    };
    match v {
        Value::Null => Ok(unset(false)),
        Value::String(s) => string_format(s, depth),
        Value::Object(m) => {
            if m.is_empty() {
                return Ok(json(true));
            }
            let ty = m.get("type").and_then(Value::as_str).map(str::trim);
            match ty.map(str::to_ascii_lowercase).as_deref() {
                Some("json" | "json_object") if is_bare_type(m) => Ok(json(true)),
                Some("text") if is_bare_type(m) => Ok(unset(true)),
                Some("json_schema") => Ok(match wrapped_schema(m) {
                    Some(s) => schema(s, true)?,
                    None => json(true),
                }),
                _ => schema(v, false),
            }
        }
        Value::Number(_) | Value::Bool(_) | Value::Array(_) => Err(FormatError(format!(
            "invalid format {}: {EXPECTED}",
            show(v)
        ))),
    }
}

/// Only `type` (plus annotations): a JSON-mode spelling, not a schema.
fn is_bare_type(m: &serde_json::Map<String, Value>) -> bool {
    m.keys().all(|k| {
        matches!(
            k.as_str(),
            "type" | "description" | "title" | "$schema" | "strict"
        )
    })
}

/// The schema inside `{"type":"json_schema","json_schema":{"schema":…}}`;
/// also accepts `schema` directly next to `type`.
fn wrapped_schema(m: &serde_json::Map<String, Value>) -> Option<&Value> {
    m.get("json_schema")
        .and_then(|w| w.get("schema"))
        .or_else(|| m.get("schema"))
        .filter(|s| !s.is_null())
}

fn string_format(s: &str, depth: usize) -> Result<Normalized, FormatError> {
    let t = s.trim();
    if t.is_empty() {
        return Ok(unset(true));
    }
    match t.to_ascii_lowercase().as_str() {
        "json" | "json_object" => return Ok(json(s != "json" || depth > 0)),
        "text" => return Ok(unset(true)),
        _ => {}
    }
    if depth == 0
        && (t.starts_with('{') || t.starts_with('"'))
        && let Ok(inner) = serde_json::from_str::<Value>(t)
        && matches!(inner, Value::Object(_) | Value::String(_))
    {
        let mut n = normalize_at(Some(&inner), depth + 1)?;
        n.changed = true;
        return Ok(n);
    }
    Err(FormatError(format!(
        "invalid format {}: {EXPECTED}",
        show(&Value::String(s.to_string()))
    )))
}

/// Accept `v` as a schema unless it uses an unknown type name.
fn schema(v: &Value, changed: bool) -> Result<Normalized, FormatError> {
    if !v.is_object() {
        return Err(FormatError(format!(
            "invalid format: the json_schema wrapper holds {} instead of a JSON Schema object",
            show(v)
        )));
    }
    // Before anything walks or copies it: a schema far over the budget is
    // refused for its size alone.
    crate::schema::budget::check_size([v], &crate::schema::budget::Limits::default())
        .map_err(|e| FormatError(format!("format schema {e}")))?;
    if let Some((at, ty)) = crate::schema::find_unknown_type(v) {
        let at = if at.is_empty() {
            "the root".to_string()
        } else {
            at
        };
        return Err(FormatError(format!(
            "invalid format: unknown JSON Schema type {ty:?} at {at}; expected one of \
             string, number, integer, boolean, null, array, object"
        )));
    }
    Ok(Normalized {
        format: Some(Format::Schema(v.clone())),
        changed,
    })
}

/// Normalize an OpenAI `response_format` field.
///
/// `{"type":"text"}` → unset; `{"type":"json_object"}` → Json;
/// `{"type":"json_schema","json_schema":{"schema":S}}` → S, or unset when the
/// schema is missing (as Ollama does). Other values go through [`normalize`].
pub(crate) fn normalize_response_format(raw: Option<&Value>) -> Result<Normalized, FormatError> {
    let Some(Value::Object(m)) = raw else {
        return normalize(raw);
    };
    let ty = m.get("type").and_then(Value::as_str).map(str::trim);
    match ty.map(str::to_ascii_lowercase).as_deref() {
        Some("text") => Ok(unset(true)),
        Some("json_object" | "json") => Ok(json(true)),
        Some("json_schema") => match wrapped_schema(m) {
            Some(s) => schema(s, true),
            None => Ok(unset(true)),
        },
        Some(other) => Err(FormatError(format!(
            "invalid response_format type {other:?}: expected \"text\", \"json_object\" or \"json_schema\""
        ))),
        None => normalize(raw),
    }
}
