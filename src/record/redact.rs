//! Field values redacted everywhere in a line: in the line's own object
//! and inside every JSON text it holds (bodies, stream lines).

use serde_json::Value;

/// What a redacted field's value becomes.
pub(crate) const REDACTED: &str = "[redacted]";

/// `value` with every field named in `fields` redacted, at any depth and
/// inside strings that hold JSON.
pub(crate) fn redact(value: &mut Value, fields: &[String]) {
    if fields.is_empty() {
        return;
    }
    match value {
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                if fields.iter().any(|f| f == k) {
                    *v = Value::String(REDACTED.into());
                } else {
                    redact(v, fields);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| redact(v, fields)),
        Value::String(s) => {
            if let Some(text) = redact_text(s, fields) {
                *s = text;
            }
        }
        _ => {}
    }
}

/// A JSON text (or an SSE `data:` line of one) with `fields` redacted;
/// `None` when it holds none of them or is not JSON.
fn redact_text(text: &str, fields: &[String]) -> Option<String> {
    let body = text.trim_end();
    let (prefix, json) = match body.strip_prefix("data: ") {
        Some(rest) => ("data: ", rest),
        None => ("", body),
    };
    if !(json.starts_with('{') || json.starts_with('[')) {
        return None;
    }
    if !fields.iter().any(|f| json.contains(f.as_str())) {
        return None;
    }
    let mut value: Value = serde_json::from_str(json).ok()?;
    let before = value.clone();
    redact(&mut value, fields);
    if value == before {
        return None;
    }
    let tail = &text[body.len()..];
    Some(format!("{prefix}{value}{tail}"))
}

#[cfg(test)]
#[path = "redact_tests.rs"]
mod tests;
