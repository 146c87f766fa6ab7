//! What Go's `encoding/json` and `encoding/base64` do where this surface
//! must match Ollama's Anthropic layer byte for byte: JSON text as
//! `json.Marshal` writes it, and base64 image data checked the way
//! `base64.StdEncoding.DecodeString` reads it.

use std::fmt::Write as _;

use serde_json::{Number, Value};

/// `json.Marshal` of `v` where objects are structs or ordered maps (keys in
/// the order given): compact, HTML-safe, numbers as Go writes a float64.
pub(super) fn marshal(v: &Value) -> String {
    let mut out = String::new();
    write(&mut out, v, false);
    out
}

/// `json.Marshal` of `v` decoded into Go's `any` (objects became
/// `map[string]any`, whose keys Go writes sorted).
pub(super) fn marshal_sorted(v: &Value) -> String {
    let mut out = String::new();
    write(&mut out, v, true);
    out
}

fn write(out: &mut String, v: &Value, sorted: bool) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&number(n)),
        Value::String(s) => string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(out, item, sorted);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            if sorted {
                entries.sort_by(|a, b| a.0.cmp(b.0));
            }
            out.push('{');
            for (i, (k, val)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                string(out, k);
                out.push(':');
                write(out, val, sorted);
            }
            out.push('}');
        }
    }
}

/// A JSON number as Go writes the float64 it decodes to: shortest
/// round-trip digits, plain below 1e21 and from 1e-6, else `1e+21`,
/// `1.5e-7`.
pub(super) fn number(n: &Number) -> String {
    float64(n.as_f64().unwrap_or(0.0))
}

fn float64(f: f64) -> String {
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let text = format!("{f:e}");
        match text.split_once('e') {
            Some((mantissa, exp)) if exp.starts_with('-') => format!("{mantissa}e{exp}"),
            Some((mantissa, exp)) => format!("{mantissa}e+{exp}"),
            None => text,
        }
    } else {
        format!("{f}")
    }
}

/// A JSON string as Go's encoder writes it (`escapeHTML` on).
fn string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Check `data` the way `base64.StdEncoding.DecodeString` decodes it
/// (padding required, `\r` and `\n` skipped): `Err(offset)` is the byte
/// Go's `CorruptInputError` names.
pub(super) fn base64_std(data: &str) -> Result<(), usize> {
    let src = data.as_bytes();
    let mut si = 0;
    while si < src.len() {
        si = quantum(src, si)?;
    }
    Ok(())
}

fn is_b64(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'+' || c == b'/'
}

fn skip_newlines(src: &[u8], mut si: usize) -> usize {
    while si < src.len() && (src[si] == b'\n' || src[si] == b'\r') {
        si += 1;
    }
    si
}

/// One 4-character quantum from `si` (Go's `decodeQuantum`).
fn quantum(src: &[u8], mut si: usize) -> Result<usize, usize> {
    let mut j = 0;
    while j < 4 {
        if si == src.len() {
            return if j == 0 { Ok(si) } else { Err(si - j) };
        }
        let c = src[si];
        si += 1;
        if is_b64(c) {
            j += 1;
            continue;
        }
        if c == b'\n' || c == b'\r' {
            continue;
        }
        if c != b'=' {
            return Err(si - 1);
        }
        match j {
            0 | 1 => return Err(si - 1),
            2 => {
                si = skip_newlines(src, si);
                if si == src.len() {
                    return Err(src.len());
                }
                if src[si] != b'=' {
                    return Err(si - 1);
                }
                si += 1;
            }
            _ => {}
        }
        si = skip_newlines(src, si);
        return if si < src.len() { Err(si) } else { Ok(si) };
    }
    Ok(si)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn numbers_are_written_as_go_float64s() {
        let cases = [
            (json!(1), "1"),
            (json!(1.0), "1"),
            (json!(-2.5), "-2.5"),
            (json!(0.000001), "0.000001"),
            (json!(1e-7), "1e-7"),
            (json!(1.5e-10), "1.5e-10"),
            (json!(1e20), "100000000000000000000"),
            (json!(1e21), "1e+21"),
            (json!(1.25e300), "1.25e+300"),
            (json!(9007199254740993u64), "9007199254740992"),
            (json!(0), "0"),
        ];
        for (v, want) in cases {
            assert_eq!(marshal(&v), want, "{v}");
        }
    }

    #[test]
    fn strings_are_escaped_like_go() {
        let v = json!("a<b>&\"\\\n\r\t\u{8}\u{c}\u{1}\u{7f}\u{2028}é");
        let want = concat!(
            r#""a\u003cb\u003e\u0026\"\\\n\r\t\b\f\u0001"#,
            "\u{7f}",
            r#"\u2028é""#
        );
        assert_eq!(marshal(&v), want);
    }

    #[test]
    fn maps_are_sorted_only_when_asked() {
        let v = json!({"b": 1, "a": {"d": 2, "c": [true, null]}});
        assert_eq!(marshal(&v), r#"{"b":1,"a":{"d":2,"c":[true,null]}}"#);
        assert_eq!(marshal_sorted(&v), r#"{"a":{"c":[true,null],"d":2},"b":1}"#);
    }

    #[test]
    fn base64_errors_name_the_byte_go_names() {
        assert_eq!(base64_std(""), Ok(()));
        assert_eq!(base64_std("QUJD"), Ok(()));
        assert_eq!(base64_std("QUI="), Ok(()));
        assert_eq!(base64_std("QQ=="), Ok(()));
        assert_eq!(base64_std("QU\r\nJD\n"), Ok(()));
        assert_eq!(base64_std("QQ=\n="), Ok(()));
        // Missing padding, bad characters, bad padding, trailing garbage.
        assert_eq!(base64_std("QQ"), Err(0));
        assert_eq!(base64_std("QUI"), Err(0));
        assert_eq!(base64_std("QUJDQ"), Err(4));
        assert_eq!(base64_std("QU!D"), Err(2));
        assert_eq!(base64_std("Q==="), Err(1));
        assert_eq!(base64_std("QQ="), Err(3));
        assert_eq!(base64_std("QQ=x"), Err(2));
        assert_eq!(base64_std("QUI=QUJD"), Err(4));
        assert_eq!(base64_std("not base64!"), Err(3));
    }
}
