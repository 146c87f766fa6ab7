//! A call's arguments as the client will read them.
//!
//! An answer carries a call's arguments as a JSON object, or as JSON text
//! in a string that the client parses itself, with whatever reader it
//! has: Python's `json.loads` also reads `NaN`, `Infinity`, `-Infinity`,
//! numbers past a double's range and lone surrogates in `\u` escapes;
//! JavaScript's `JSON.parse` reads `1e400` as `Infinity` and lone
//! surrogates too. The guard judges what such a reader gets, read here
//! once for all of them:
//!
//! - strict JSON is read as `serde_json` reads it;
//! - `Infinity`, and a number too large for a double, are read as the
//!   largest double (so they break a `maximum`), `-Infinity` and their
//!   negatives as the smallest, `NaN` as `null` (so it breaks `minimum`,
//!   `maximum` and every other check but an `enum` that allows `null`);
//! - a lone surrogate is read as U+FFFD;
//! - an empty string is no arguments (`{}`), as clients read it.
//!
//! Text no such reader reads (anything else that is not JSON), an object
//! with a key twice (readers disagree on which value counts) and nesting
//! deeper than [`MAX_DEPTH`] is [`Arguments::Unreadable`]: the guard
//! refuses the call rather than pass it unjudged.

use serde_json::{Map, Number, Value};

/// Deepest nesting read (`serde_json`'s own limit).
pub(crate) const MAX_DEPTH: usize = 128;

/// A call's arguments as the guard judges them.
#[derive(Debug, Clone, PartialEq)]
pub enum Arguments {
    /// What the client reads.
    Read(Value),
    /// Text no reader reads alike: as written, and why.
    Unreadable { written: Value, why: String },
}

impl Arguments {
    /// The arguments as read, or as written when they cannot be (for the
    /// audit log).
    pub fn shown(&self) -> &Value {
        match self {
            Arguments::Read(v) | Arguments::Unreadable { written: v, .. } => v,
        }
    }
}

/// `arguments` of a call (its `arguments` field, if any) as the client
/// will read them.
pub(crate) fn read(arguments: Option<&Value>) -> Arguments {
    let Some(Value::String(text)) = arguments else {
        return Arguments::Read(arguments.cloned().unwrap_or(Value::Null));
    };
    if text.trim_matches([' ', '\t', '\n', '\r']).is_empty() {
        return Arguments::Read(Value::Object(Map::new()));
    }
    match read_text(text) {
        Ok(v) => Arguments::Read(v),
        Err(why) => Arguments::Unreadable {
            written: Value::String(text.clone()),
            why,
        },
    }
}

/// JSON `text` read as lenient readers read it (see the module doc).
pub(crate) fn read_text(text: &str) -> Result<Value, String> {
    let mut r = Reader { text, at: 0 };
    let v = r.value(0)?;
    r.space();
    if r.at < text.len() {
        return Err(r.unexpected("the end"));
    }
    Ok(v)
}

struct Reader<'a> {
    text: &'a str,
    at: usize,
}

/// The largest double, of `sign`.
fn largest(sign: f64) -> Value {
    Number::from_f64(sign * f64::MAX).map_or(Value::Null, Value::Number)
}

impl Reader<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn rest(&self) -> &str {
        self.text.get(self.at..).unwrap_or_default()
    }

    fn space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn unexpected(&self, wanted: &str) -> String {
        format!("{wanted} expected at byte {}", self.at)
    }

    fn expect(&mut self, byte: u8) -> Result<(), String> {
        self.space();
        if self.peek() != Some(byte) {
            return Err(self.unexpected(&format!("`{}`", byte as char)));
        }
        self.at += 1;
        Ok(())
    }

    fn value(&mut self, depth: usize) -> Result<Value, String> {
        if depth >= MAX_DEPTH {
            return Err(format!("nested deeper than {MAX_DEPTH}"));
        }
        self.space();
        // `-Infinity` before the numbers.
        for (word, sign) in [("Infinity", 1.0), ("-Infinity", -1.0)] {
            if self.rest().starts_with(word) {
                self.at += word.len();
                return Ok(largest(sign));
            }
        }
        for (word, v) in [
            ("true", Value::Bool(true)),
            ("false", Value::Bool(false)),
            ("null", Value::Null),
            ("NaN", Value::Null),
        ] {
            if self.rest().starts_with(word) {
                self.at += word.len();
                return Ok(v);
            }
        }
        match self.peek() {
            Some(b'{') => self.object(depth + 1),
            Some(b'[') => self.array(depth + 1),
            Some(b'"') => self.string().map(Value::String),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => Err(self.unexpected("a value")),
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, String> {
        self.at += 1;
        let mut map = Map::new();
        self.space();
        if self.peek() == Some(b'}') {
            self.at += 1;
            return Ok(Value::Object(map));
        }
        loop {
            self.space();
            if self.peek() != Some(b'"') {
                return Err(self.unexpected("a key"));
            }
            let key = self.string()?;
            self.expect(b':')?;
            let value = self.value(depth)?;
            if map.insert(key, value).is_some() {
                return Err("an object holds a key twice".into());
            }
            self.space();
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b'}') => {
                    self.at += 1;
                    return Ok(Value::Object(map));
                }
                _ => return Err(self.unexpected("`,` or `}`")),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, String> {
        self.at += 1;
        let mut items = Vec::new();
        self.space();
        if self.peek() == Some(b']') {
            self.at += 1;
            return Ok(Value::Array(items));
        }
        loop {
            items.push(self.value(depth)?);
            self.space();
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b']') => {
                    self.at += 1;
                    return Ok(Value::Array(items));
                }
                _ => return Err(self.unexpected("`,` or `]`")),
            }
        }
    }

    /// A string from its opening quote; lone surrogates read as U+FFFD.
    fn string(&mut self) -> Result<String, String> {
        self.at += 1;
        let mut out = String::new();
        loop {
            let rest = self.rest();
            let run = rest
                .find(|c: char| c == '"' || c == '\\' || c < ' ')
                .ok_or_else(|| "a string does not end".to_string())?;
            out.push_str(&rest[..run]);
            self.at += run;
            match self.peek() {
                Some(b'"') => {
                    self.at += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.at += 1;
                    out.push(self.escape()?);
                }
                _ => return Err(self.unexpected("no control character in a string")),
            }
        }
    }

    /// The character of an escape, after its `\`.
    fn escape(&mut self) -> Result<char, String> {
        let c = self.peek().ok_or_else(|| self.unexpected("an escape"))?;
        self.at += 1;
        Ok(match c {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => return self.unicode(),
            _ => return Err(format!("an unknown escape at byte {}", self.at - 1)),
        })
    }

    /// The character of `\uXXXX` (after `\u`), a surrogate pair joined.
    fn unicode(&mut self) -> Result<char, String> {
        let first = self.hex4()?;
        if (0xD800..0xDC00).contains(&first) && self.rest().starts_with("\\u") {
            let mark = self.at;
            self.at += 2;
            let second = self.hex4()?;
            if (0xDC00..0xE000).contains(&second) {
                let c = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
                return Ok(char::from_u32(c).unwrap_or('\u{fffd}'));
            }
            self.at = mark;
        }
        Ok(char::from_u32(first).unwrap_or('\u{fffd}'))
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let digits = self.text.get(self.at..self.at + 4).unwrap_or_default();
        if digits.len() != 4 || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(self.unexpected("four hex digits"));
        }
        self.at += 4;
        u32::from_str_radix(digits, 16).map_err(|e| e.to_string())
    }

    /// A number as JSON writes it; read as `serde_json` reads it, or as
    /// the largest double of its sign when it is past a double's range.
    fn number(&mut self) -> Result<Value, String> {
        let start = self.at;
        let digits = |r: &mut Self| {
            let from = r.at;
            while r.peek().is_some_and(|b| b.is_ascii_digit()) {
                r.at += 1;
            }
            r.at - from
        };
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        let whole = self.at;
        match digits(self) {
            0 => return Err(self.unexpected("a digit")),
            n if n > 1 && self.text.as_bytes()[whole] == b'0' => {
                return Err(format!("a number with a leading zero at byte {whole}"));
            }
            _ => {}
        }
        if self.peek() == Some(b'.') {
            self.at += 1;
            if digits(self) == 0 {
                return Err(self.unexpected("a digit"));
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            if digits(self) == 0 {
                return Err(self.unexpected("a digit"));
            }
        }
        let token = &self.text[start..self.at];
        if let Ok(v) = serde_json::from_str::<Value>(token) {
            return Ok(v);
        }
        match token.parse::<f64>() {
            Ok(x) if x.is_infinite() => Ok(largest(x.signum())),
            _ => Err(format!("an unreadable number at byte {start}")),
        }
    }
}

#[cfg(test)]
#[path = "arguments_tests.rs"]
mod tests;
