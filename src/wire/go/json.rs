//! JSON text as Go's `encoding/json` writes it, the one writer every
//! surface uses: compact, HTML-safe (`<`, `>`, `&`, U+2028 and U+2029
//! escaped, so no client splits a line on them: ollama-python uses
//! `str.splitlines`), and, where Ollama's values went through Go's `any`,
//! numbers as the `float64` they became and object keys sorted as Go
//! writes a `map[string]any`.
//!
//! One `serde_json` formatter does the escaping and the numbers; the
//! sorting wraps the value, so no text is written twice.

use std::io;

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{
    Map, Number, Value,
    ser::{CompactFormatter, Formatter},
};

/// Compact JSON with Go's HTML-safe escaping; numbers as they are in `value`.
pub(crate) fn to_go_json(value: &Value) -> String {
    text(write(value, Numbers::AsWritten, false))
}

/// [`to_go_json`] as one NDJSON line (a newline after it).
pub(crate) fn ndjson_line(value: &Value) -> bytes::Bytes {
    let mut out = write(value, Numbers::AsWritten, false);
    out.push(b'\n');
    bytes::Bytes::from(out)
}

/// `json.Marshal` of `v` where objects are structs or ordered maps (keys in
/// the order given): compact, HTML-safe, numbers as Go writes a `float64`.
pub(crate) fn marshal(v: &Value) -> String {
    text(write(v, Numbers::Float64, false))
}

/// `json.Marshal` of `v` decoded into Go's `any` (objects became
/// `map[string]any`, whose keys Go writes sorted).
pub(crate) fn marshal_sorted(v: &Value) -> String {
    text(write(v, Numbers::Float64, true))
}

/// Go's name for the kind of a JSON value in `encoding/json` type errors
/// (`json: cannot unmarshal string into Go struct field …`).
pub(crate) fn json_kind(v: &Value) -> &'static str {
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
pub(crate) fn sorted(pairs: Vec<(&str, Value)>) -> Value {
    let mut m: Map<String, Value> = pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
    m.sort_keys();
    Value::Object(m)
}

/// `v` with every object's keys sorted, at every depth: a client's JSON
/// decoded into `map[string]any` and written again. Depth is bounded by
/// the parser that produced `v`.
pub(crate) fn sorted_deep(v: &Value) -> Value {
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

/// A `float64` as Go's `encoding/json` writes it: integral values without
/// a fraction.
pub(crate) fn float(f: f64) -> Value {
    if f.is_finite() && f.fract() == 0.0 && f.abs() < 1e15 {
        // Exact: |f| < 1e15 fits an i64 without rounding.
        return Value::from(f as i64);
    }
    Number::from_f64(f).map_or(Value::Null, Value::Number)
}

/// A `float64` as Go writes it: shortest round-trip digits, plain below
/// 1e21 and from 1e-6, else `1e+21`, `1.5e-7`.
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

#[derive(Clone, Copy)]
enum Numbers {
    /// As `serde_json` writes the value's number.
    AsWritten,
    /// As Go writes the `float64` the number decodes to.
    Float64,
}

fn write(v: &Value, numbers: Numbers, sorted: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    let mut ser = serde_json::Serializer::with_formatter(&mut out, Go(numbers));
    // Writing a `Value` into a `Vec` cannot fail: no I/O, string keys.
    let _ = if sorted {
        Sorted(v).serialize(&mut ser)
    } else {
        v.serialize(&mut ser)
    };
    out
}

/// The writer's bytes as text: always UTF-8 (whole strings and ASCII
/// escapes), checked rather than assumed.
fn text(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// `serde_json`'s compact formatter with Go's escapes and numbers.
struct Go(Numbers);

impl Go {
    fn float<W: ?Sized + io::Write>(w: &mut W, f: f64) -> io::Result<()> {
        w.write_all(float64(f).as_bytes())
    }
}

impl Formatter for Go {
    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let bytes = fragment.as_bytes();
        let mut start = 0;
        for (i, &b) in bytes.iter().enumerate() {
            let escaped: &[u8] = match (b, bytes.get(i + 1), bytes.get(i + 2)) {
                (b'<', ..) => b"\\u003c",
                (b'>', ..) => b"\\u003e",
                (b'&', ..) => b"\\u0026",
                (0xE2, Some(0x80), Some(0xA8)) => b"\\u2028",
                (0xE2, Some(0x80), Some(0xA9)) => b"\\u2029",
                _ => continue,
            };
            w.write_all(&bytes[start..i])?;
            w.write_all(escaped)?;
            start = i + if b == 0xE2 { 3 } else { 1 };
        }
        w.write_all(&bytes[start..])
    }

    fn write_f64<W: ?Sized + io::Write>(&mut self, w: &mut W, value: f64) -> io::Result<()> {
        match self.0 {
            Numbers::Float64 => Self::float(w, value),
            Numbers::AsWritten => CompactFormatter.write_f64(w, value),
        }
    }

    fn write_u64<W: ?Sized + io::Write>(&mut self, w: &mut W, value: u64) -> io::Result<()> {
        match self.0 {
            Numbers::Float64 => Self::float(w, value as f64),
            Numbers::AsWritten => CompactFormatter.write_u64(w, value),
        }
    }

    fn write_i64<W: ?Sized + io::Write>(&mut self, w: &mut W, value: i64) -> io::Result<()> {
        match self.0 {
            Numbers::Float64 => Self::float(w, value as f64),
            Numbers::AsWritten => CompactFormatter.write_i64(w, value),
        }
    }
}

/// A value written with every object's keys sorted.
struct Sorted<'a>(&'a Value);

impl Serialize for Sorted<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Object(map) => {
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                entries.sort_by(|a, b| a.0.cmp(b.0));
                let mut m = s.serialize_map(Some(entries.len()))?;
                for (k, v) in entries {
                    m.serialize_entry(k, &Sorted(v))?;
                }
                m.end()
            }
            Value::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(&Sorted(item))?;
                }
                seq.end()
            }
            other => other.serialize(s),
        }
    }
}

#[cfg(test)]
#[path = "json_tests.rs"]
mod tests;
