//! Python call syntax, read without evaluating anything: a call
//! `get_weather(city="Paris", days=2)`, a list of calls
//! `[get_weather(city="Paris"), get_time(timezone="CET")]` (Gemma 3's
//! function-calling format), calls one per line, and a `print(…)` around
//! either (Gemini-style `tool_code`). Names may carry the `default_api.`
//! prefix Gemini's tool code uses.
//!
//! Arguments are literals only: strings (every quote style, implicit
//! concatenation, escapes, raw strings), integers (`1_000`, `0x1f`),
//! floats, `True` / `False` / `None` (and JSON's `true` / `false` /
//! `null`), lists, tuples, dicts and `**{…}`. Anything else (a name, a
//! call, an operator, an f-string, bytes) is refused as not a literal.
//!
//! Tokens are read with [`winnow`]'s parsers; the structure (calls,
//! containers) is a recursive descent over them bounded by [`MAX_DEPTH`].

use serde_json::{Map, Number, Value};
use winnow::{
    ascii::multispace0,
    error::ContextError,
    prelude::*,
    token::{any, take_till, take_while},
};

use super::{MAX_CALLS, MAX_DEPTH, TextError};

/// One argument as written.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Arg {
    Positional(Value),
    Keyword(String, Value),
    /// `**{…}`.
    Spread(Map<String, Value>),
}

/// One call as written: the tool's name (without `default_api.`) and
/// its arguments in order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PyCall {
    pub name: String,
    pub args: Vec<Arg>,
}

/// The calls of `src`: one call, several (separated by newlines, `;` or
/// `,`), or one list of calls, each maybe inside `print(…)`; nothing
/// else but whitespace around them.
pub(crate) fn calls(src: &str) -> Result<Vec<PyCall>, TextError> {
    let mut c = Cur { src, rest: src };
    let mut out = Vec::new();
    c.ws();
    // A block that follows another one on its line: `a(x=1); b(y=2)`.
    if c.eat(",") || c.eat(";") {
        c.ws();
    }
    loop {
        c.item(&mut out)?;
        if out.len() > MAX_CALLS {
            return Err(TextError::TooManyCalls);
        }
        c.ws();
        if c.rest.is_empty() {
            return Ok(out);
        }
        if c.eat(",") || c.eat(";") {
            c.ws();
            if c.rest.is_empty() {
                return Ok(out);
            }
        }
    }
}

/// The rest of the input and where it started, for error positions.
struct Cur<'s> {
    src: &'s str,
    rest: &'s str,
}

fn is_ident_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

fn is_ident(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

impl<'s> Cur<'s> {
    fn at(&self) -> usize {
        self.src.len() - self.rest.len()
    }

    fn syntax(&self, what: &str) -> TextError {
        TextError::Syntax {
            at: self.at(),
            what: what.to_string(),
        }
    }

    fn ws(&mut self) {
        let _ = multispace0::<_, ContextError>(&mut self.rest);
    }

    fn peek(&self) -> Option<char> {
        self.rest.chars().next()
    }

    /// Skip one character.
    fn bump(&mut self) -> Option<char> {
        any::<_, ContextError>.parse_next(&mut self.rest).ok()
    }

    fn eat(&mut self, token: &str) -> bool {
        match self.rest.strip_prefix(token) {
            Some(r) => {
                self.rest = r;
                true
            }
            None => false,
        }
    }

    fn expect(&mut self, token: &str) -> Result<(), TextError> {
        if self.eat(token) {
            Ok(())
        } else {
            Err(self.syntax(&format!("expected `{token}`")))
        }
    }

    fn ident(&mut self) -> Option<&'s str> {
        if !self.peek().is_some_and(is_ident_start) {
            return None;
        }
        take_while::<_, _, ContextError>(1.., is_ident)
            .parse_next(&mut self.rest)
            .ok()
    }

    // === calls ===

    /// A list of calls, a call, or either inside `print(…)`.
    fn item(&mut self, out: &mut Vec<PyCall>) -> Result<(), TextError> {
        let start = self.rest;
        if self.eat("print") {
            self.ws();
            if self.eat("(") {
                self.ws();
                let inner = self.rest;
                let wraps = self.peek() == Some('[') || {
                    let named = self.dotted_name().is_ok();
                    self.ws();
                    let call = named && self.peek() == Some('(');
                    self.rest = inner;
                    call
                };
                if wraps {
                    self.bare_item(out)?;
                    self.ws();
                    return self.expect(")");
                }
            }
            // A tool named `print`, or no wrapper after all.
            self.rest = start;
        }
        self.bare_item(out)
    }

    fn bare_item(&mut self, out: &mut Vec<PyCall>) -> Result<(), TextError> {
        if !self.eat("[") {
            out.push(self.call()?);
            return Ok(());
        }
        self.ws();
        while !self.eat("]") {
            out.push(self.call()?);
            if out.len() > MAX_CALLS {
                return Err(TextError::TooManyCalls);
            }
            self.ws();
            if self.eat(",") {
                self.ws();
            } else if !self.rest.starts_with(']') {
                return Err(self.syntax("expected `,` or `]` after a call"));
            }
        }
        Ok(())
    }

    /// `name` or `default_api.name`.
    fn dotted_name(&mut self) -> Result<&'s str, TextError> {
        let first = self.ident().ok_or_else(|| self.syntax("expected a call"))?;
        if !self.eat(".") {
            return Ok(first);
        }
        if first != "default_api" {
            return Err(TextError::NotLiteral(format!("{first}.…")));
        }
        self.ident()
            .ok_or_else(|| self.syntax("expected a name after `.`"))
    }

    fn call(&mut self) -> Result<PyCall, TextError> {
        let name = self.dotted_name()?.to_string();
        self.ws();
        self.expect("(")?;
        let mut args = Vec::new();
        self.ws();
        while !self.eat(")") {
            args.push(self.arg()?);
            self.ws();
            if self.eat(",") {
                self.ws();
            } else if !self.rest.starts_with(')') {
                return Err(self.syntax("expected `,` or `)` after an argument"));
            }
        }
        Ok(PyCall { name, args })
    }

    fn arg(&mut self) -> Result<Arg, TextError> {
        if self.eat("**") {
            self.ws();
            return match self.value(1)? {
                Value::Object(m) => Ok(Arg::Spread(m)),
                _ => Err(self.syntax("`**` takes a dict")),
            };
        }
        let start = self.rest;
        if let Some(name) = self.ident() {
            self.ws();
            if self.rest.starts_with('=') && !self.rest.starts_with("==") {
                self.eat("=");
                self.ws();
                return Ok(Arg::Keyword(name.to_string(), self.value(1)?));
            }
            self.rest = start;
        }
        Ok(Arg::Positional(self.value(1)?))
    }

    // === literals ===

    fn value(&mut self, depth: usize) -> Result<Value, TextError> {
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
