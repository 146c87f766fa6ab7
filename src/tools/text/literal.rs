//! Python literals as JSON values (see [`super::python`] for what is
//! read): strings with Python's escapes, integers in every base, floats,
//! keywords, lists, tuples and dicts, nested at most [`MAX_DEPTH`] deep.

use serde_json::{Map, Number, Value};
use winnow::{
    error::ContextError,
    prelude::*,
    token::{take_till, take_while},
};

use super::event::{MAX_DEPTH, TextError};
use super::python::{Cur, is_ident_start};

impl Cur<'_> {
    pub(super) fn value(&mut self, depth: usize) -> Result<Value, TextError> {
        if depth > MAX_DEPTH {
            return Err(TextError::TooDeep);
        }
        match self.peek() {
            Some('"' | '\'') => self.strings(false),
            Some('[') => {
                self.eat("[");
                self.sequence(']', depth).map(Value::Array)
            }
            Some('(') => self.tuple(depth),
            Some('{') => self.dict(depth),
            Some('-' | '+') => {
                let negative = self.eat("-");
                if !negative {
                    self.eat("+");
                }
                self.ws();
                match self.peek() {
                    Some(c) if c.is_ascii_digit() || c == '.' => self.number(negative),
                    _ => Err(self.syntax("expected a number after a sign")),
                }
            }
            Some(c) if c.is_ascii_digit() || c == '.' => self.number(false),
            Some(c) if is_ident_start(c) => self.word(),
            Some(_) => Err(self.syntax("expected a literal")),
            None => Err(self.syntax("expected a value")),
        }
    }

    /// A keyword literal, a prefixed string, or a refused name.
    fn word(&mut self) -> Result<Value, TextError> {
        let start = self.rest;
        let word = self.ident().unwrap_or_default();
        if matches!(self.peek(), Some('"' | '\'')) {
            match word.to_ascii_lowercase().as_str() {
                "r" => return self.strings(true),
                "u" => return self.strings(false),
                _ => {
                    self.rest = start;
                    return Err(TextError::NotLiteral(format!("{word}\"…\"")));
                }
            }
        }
        match word {
            "True" | "true" => Ok(Value::Bool(true)),
            "False" | "false" => Ok(Value::Bool(false)),
            "None" | "null" => Ok(Value::Null),
            _ => {
                self.rest = start;
                Err(TextError::NotLiteral(word.to_string()))
            }
        }
    }

    /// Adjacent string literals, concatenated as Python does.
    fn strings(&mut self, raw: bool) -> Result<Value, TextError> {
        let mut out = self.string(raw)?;
        loop {
            let before = self.rest;
            self.ws();
            let next_raw = match self.peek() {
                Some('"' | '\'') => false,
                Some('r' | 'R') if matches!(self.rest[1..].chars().next(), Some('"' | '\'')) => {
                    self.bump();
                    true
                }
                _ => {
                    self.rest = before;
                    return Ok(Value::String(out));
                }
            };
            out.push_str(&self.string(next_raw)?);
        }
    }

    fn string(&mut self, raw: bool) -> Result<String, TextError> {
        let quote = self
            .peek()
            .ok_or_else(|| self.syntax("expected a string"))?;
        let triple: String = std::iter::repeat_n(quote, 3).collect();
        let long = self.eat(&triple);
        if !long {
            self.bump();
        }
        let mut out = String::new();
        loop {
            let stops = |c: char| c == '\\' || c == quote || (!long && c == '\n');
            let plain = take_till::<_, _, ContextError>(0.., stops)
                .parse_next(&mut self.rest)
                .unwrap_or_default();
            out.push_str(plain);
            let Some(c) = self.bump() else {
                return Err(self.syntax("unterminated string"));
            };
            match c {
                '\n' => return Err(self.syntax("newline in a string")),
                '\\' if raw => {
                    out.push('\\');
                    out.extend(self.bump());
                }
                '\\' => self.escape(&mut out)?,
                q if !long => {
                    debug_assert_eq!(q, quote);
                    return Ok(out);
                }
                q => {
                    let closing: String = std::iter::repeat_n(q, 2).collect();
                    if self.eat(&closing) {
                        return Ok(out);
                    }
                    out.push(q);
                }
            }
        }
    }

    /// One escape after its backslash, as Python decodes it.
    fn escape(&mut self, out: &mut String) -> Result<(), TextError> {
        let Some(c) = self.bump() else {
            return Err(self.syntax("unterminated string"));
        };
        let simple = match c {
            '\n' => Some(None),
            '\\' | '\'' | '"' => Some(Some(c)),
            'n' => Some(Some('\n')),
            'r' => Some(Some('\r')),
            't' => Some(Some('\t')),
            'a' => Some(Some('\u{7}')),
            'b' => Some(Some('\u{8}')),
            'f' => Some(Some('\u{c}')),
            'v' => Some(Some('\u{b}')),
            _ => None,
        };
        if let Some(decoded) = simple {
            out.extend(decoded);
            return Ok(());
        }
        let (radix, len) = match c {
            'x' => (16, 2),
            'u' => (16, 4),
            'U' => (16, 8),
            '0'..='7' => (8, 3),
            'N' => return Err(TextError::NotLiteral("\\N{…}".into())),
            other => {
                // Python keeps an unknown escape as written.
                out.push('\\');
                out.push(other);
                return Ok(());
            }
        };
        let mut digits = String::new();
        if radix == 8 {
            digits.push(c);
        }
        while digits.len() < len {
            match self.peek() {
                Some(d) if d.is_digit(radix) => {
                    digits.push(d);
                    self.bump();
                }
                _ if radix == 8 => break,
                _ => return Err(self.syntax("truncated escape")),
            }
        }
        let code = u32::from_str_radix(&digits, radix).map_err(|_| self.syntax("bad escape"))?;
        let decoded = char::from_u32(code).ok_or_else(|| self.syntax("escape out of range"))?;
        out.push(decoded);
        Ok(())
    }

    fn number(&mut self, negative: bool) -> Result<Value, TextError> {
        let start = self.at();
        let token = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '.';
        let mut text = take_while::<_, _, ContextError>(1.., token)
            .parse_next(&mut self.rest)
            .map_err(|_| self.syntax("expected a number"))?
            .to_string();
        let hex = text.starts_with("0x") || text.starts_with("0X");
        if !hex && text.ends_with(['e', 'E']) && matches!(self.peek(), Some('+' | '-')) {
            text.extend(self.bump());
            text.push_str(
                take_while::<_, _, ContextError>(0.., token)
                    .parse_next(&mut self.rest)
                    .unwrap_or_default(),
            );
        }
        let bad = || TextError::Syntax {
            at: start,
            what: format!("`{text}` is not a number"),
        };
        let digits = text.replace('_', "").to_ascii_lowercase();
        if digits.ends_with('j') {
            return Err(TextError::NotLiteral(text));
        }
        let radix = match digits.get(..2) {
            Some("0x") => Some(16),
            Some("0o") => Some(8),
            Some("0b") => Some(2),
            _ => None,
        };
        if let Some(radix) = radix {
            let n = u64::from_str_radix(&digits[2..], radix).map_err(|_| bad())?;
            return integer(n, negative).ok_or_else(bad);
        }
        if digits.contains(['.', 'e']) {
            let f: f64 = digits.parse().map_err(|_| bad())?;
            let f = if negative { -f } else { f };
            return Number::from_f64(f).map(Value::Number).ok_or_else(bad);
        }
        let n: u64 = digits.parse().map_err(|_| bad())?;
        integer(n, negative).ok_or_else(bad)
    }

    /// Values up to `close` (the opening bracket is read).
    fn sequence(&mut self, close: char, depth: usize) -> Result<Vec<Value>, TextError> {
        let mut items = Vec::new();
        self.ws();
        while !self.rest.starts_with(close) {
            items.push(self.value(depth + 1)?);
            self.ws();
            if self.eat(",") {
                self.ws();
            } else if !self.rest.starts_with(close) {
                return Err(self.syntax(&format!("expected `,` or `{close}`")));
            }
        }
        self.eat(&close.to_string());
        Ok(items)
    }

    /// `()`, `(x)` (just x), `(x,)`, `(x, y)`.
    fn tuple(&mut self, depth: usize) -> Result<Value, TextError> {
        self.eat("(");
        self.ws();
        if self.eat(")") {
            return Ok(Value::Array(Vec::new()));
        }
        let first = self.value(depth + 1)?;
        self.ws();
        if self.eat(")") {
            return Ok(first);
        }
        self.expect(",")?;
        let mut items = vec![first];
        items.extend(self.sequence(')', depth)?);
        Ok(Value::Array(items))
    }

    fn dict(&mut self, depth: usize) -> Result<Value, TextError> {
        self.eat("{");
        let mut map = Map::new();
        self.ws();
        while !self.eat("}") {
            let key = match self.value(depth + 1)? {
                Value::String(s) => s,
                k @ (Value::Number(_) | Value::Bool(_) | Value::Null) => k.to_string(),
                _ => return Err(self.syntax("a dict key must be a string or a number")),
            };
            self.ws();
            if !self.eat(":") {
                return Err(TextError::NotLiteral("a set".into()));
            }
            self.ws();
            let value = self.value(depth + 1)?;
            map.insert(key, value);
            self.ws();
            if self.eat(",") {
                self.ws();
            } else if !self.rest.starts_with('}') {
                return Err(self.syntax("expected `,` or `}`"));
            }
        }
        Ok(Value::Object(map))
    }
}

/// `n` with its sign as a JSON integer, if it fits.
fn integer(n: u64, negative: bool) -> Option<Value> {
    if !negative {
        return Some(Value::Number(n.into()));
    }
    if n <= i64::MAX as u64 {
        return Some(Value::Number((-(n as i64)).into()));
    }
    (n == i64::MAX as u64 + 1).then(|| Value::Number(i64::MIN.into()))
}
