//! JSON and timestamps byte-compatible with Go's `encoding/json` and
//! `time.Time` as Ollama emits them.
//!
//! Go escapes `<`, `>`, `&`, U+2028 and U+2029; clients split lines on
//! U+2028/U+2029 (ollama-python uses `str.splitlines`), so anything augur
//! writes itself must escape them too.

use serde_json::{Map, Value};

/// Go's name for the kind of a JSON value in `encoding/json` type errors
/// (`json: cannot unmarshal string into Go struct field …`).
pub fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// An object with its keys in the order Go writes a `map[string]any`.
pub fn go_sorted(pairs: Vec<(&str, Value)>) -> Value {
    let mut m: Map<String, Value> = pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
    m.sort_keys();
    Value::Object(m)
}

/// Compact JSON with Go's HTML-safe escaping.
pub fn to_go_json(value: &Value) -> String {
    let plain = value.to_string();
    if !plain
        .bytes()
        .any(|b| matches!(b, b'<' | b'>' | b'&' | 0xE2))
    {
        return plain;
    }
    let mut out = String::with_capacity(plain.len() + 16);
    for ch in plain.chars() {
        match ch {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// Now, formatted like Go's `time.Time` JSON in UTC: RFC 3339 with
/// nanoseconds, trailing zeros trimmed, `Z`.
pub fn created_at_now() -> String {
    format_go_time(time::OffsetDateTime::now_utc())
}

/// Format a UTC time the way Go's `time.RFC3339Nano` does.
pub(crate) fn format_go_time(t: time::OffsetDateTime) -> String {
    let nanos = t.nanosecond();
    let mut s = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    );
    if nanos != 0 {
        let frac = format!("{nanos:09}");
        s.push('.');
        s.push_str(frac.trim_end_matches('0'));
    }
    s.push('Z');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn escapes_like_go() {
        let v = json!({"content": "<think>a & b</think>\u{2028}é"});
        assert_eq!(
            to_go_json(&v),
            r#"{"content":"\u003cthink\u003ea \u0026 b\u003c/think\u003e\u2028é"}"#
        );
    }

    #[test]
    fn go_time_trims_zeros() {
        let t = time::OffsetDateTime::from_unix_timestamp_nanos(1_761_498_924_097_700_000).unwrap();
        assert_eq!(format_go_time(t), "2025-10-26T17:15:24.0977Z");
        let t = time::OffsetDateTime::from_unix_timestamp(1_761_498_924).unwrap();
        assert_eq!(format_go_time(t), "2025-10-26T17:15:24Z");
    }
}
