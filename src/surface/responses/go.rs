//! Values the way Ollama's Go code formats them, where a Responses client
//! could see the difference: `float64` numbers (`1`, not `1.0`), `%q`
//! strings in error texts, `time.Time` read back as Unix seconds, and
//! `map[string]any` objects with their keys sorted.

use serde_json::{Map, Number, Value};

/// A `float64` as Go's `encoding/json` writes it: integral values without
/// a fraction.
pub(super) fn float(f: f64) -> Value {
    if f.is_finite() && f.fract() == 0.0 && f.abs() < 1e15 {
        // Exact: |f| < 1e15 fits an i64 without rounding.
        return Value::from(f as i64);
    }
    Number::from_f64(f).map_or(Value::Null, Value::Number)
}

/// `fmt.Sprintf("%q", s)`: a double-quoted Go string literal.
pub(super) fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if (0x80..0xa0).contains(&(c as u32))
                || matches!(c, '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}')
                || c == '\u{feff}' =>
            {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

pub(super) use crate::wire::go_sorted as sorted;

/// `v` with every object's keys sorted, at every depth: a client's JSON
/// decoded into `map[string]any` and written again. Depth is bounded by
/// the parser that produced `v`.
pub(super) fn sorted_deep(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut out: Map<String, Value> =
                m.iter().map(|(k, v)| (k.clone(), sorted_deep(v))).collect();
            out.sort_keys();
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(sorted_deep).collect()),
        other => other.clone(),
    }
}

/// The Unix seconds of an RFC 3339 timestamp as Ollama writes `created_at`
/// (`2025-10-26T17:15:24.0977Z`, or with a `±hh:mm` offset); `None` when
/// it is not one.
pub(super) fn unix_seconds(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() < 20 || b.len() > 64 || b[4] != b'-' || b[7] != b'-' || b[13] != b':' {
        return None;
    }
    if !matches!(b[10], b'T' | b't') || b[16] != b':' {
        return None;
    }
    let num = |from: usize, to: usize| -> Option<i64> {
        let s = text.get(from..to)?;
        if !s.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        s.parse().ok()
    };
    let (year, month, day) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    let (hour, minute, second) = (num(11, 13)?, num(14, 16)?, num(17, 19)?);
    let mut rest = &text[19..];
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        rest = &frac[digits..];
    }
    let offset = match rest.as_bytes() {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let digits = [*h1, *h2, *m1, *m2];
            if !digits.iter().all(u8::is_ascii_digit) {
                return None;
            }
            let d = |c: u8| i64::from(c - b'0');
            let minutes = (d(*h1) * 10 + d(*h2)) * 60 + d(*m1) * 10 + d(*m2);
            if *sign == b'-' { -minutes } else { minutes }
        }
        _ => return None,
    };
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return None;
    }
    if second > 60 {
        return None;
    }
    Some(
        days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second
            - offset * 60,
    )
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn floats_print_like_go() {
        assert_eq!(float(1.0).to_string(), "1");
        assert_eq!(float(0.5).to_string(), "0.5");
        assert_eq!(float(-3.0).to_string(), "-3");
        assert_eq!(float(f64::NAN), Value::Null);
    }

    #[test]
    fn quotes_like_go() {
        assert_eq!(quote("a\"b\\c\n\u{1}"), r#""a\"b\\c\n\x01""#);
        assert_eq!(quote("é\u{2028}"), r#""é\u2028""#);
    }

    #[test]
    fn objects_sort_like_go_maps() {
        let v = sorted(vec![
            ("type", json!("x")),
            ("item", json!({"b": 1, "a": 2})),
        ]);
        assert_eq!(v.to_string(), r#"{"item":{"b":1,"a":2},"type":"x"}"#);
        assert_eq!(
            sorted_deep(&json!({"b": [{"d": 1, "c": 2}], "a": 0})).to_string(),
            r#"{"a":0,"b":[{"c":2,"d":1}]}"#
        );
    }

    #[test]
    fn timestamps_read_back() {
        assert_eq!(
            unix_seconds("2025-10-26T17:15:24.0977Z"),
            Some(1_761_498_924)
        );
        assert_eq!(unix_seconds("2025-10-26T17:15:24Z"), Some(1_761_498_924));
        assert_eq!(
            unix_seconds("2025-10-26T19:15:24+02:00"),
            Some(1_761_498_924)
        );
        assert_eq!(unix_seconds("1970-01-01T00:00:00Z"), Some(0));
        for bad in [
            "",
            "now",
            "2025-13-01T00:00:00Z",
            "2025-10-26T17:15:24",
            "2025-10-26T17:15:24.Z",
        ] {
            assert_eq!(unix_seconds(bad), None, "{bad}");
        }
    }
}
