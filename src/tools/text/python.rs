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

use serde_json::{Map, Value};
use winnow::{
    ascii::multispace0,
    error::ContextError,
    prelude::*,
    token::{any, take_while},
};

use super::event::{MAX_CALLS, TextError};

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
pub(super) struct Cur<'s> {
    pub(super) src: &'s str,
    pub(super) rest: &'s str,
}

pub(super) fn is_ident_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

fn is_ident(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

impl<'s> Cur<'s> {
    pub(super) fn at(&self) -> usize {
        self.src.len() - self.rest.len()
    }

    pub(super) fn syntax(&self, what: &str) -> TextError {
        TextError::Syntax {
            at: self.at(),
            what: what.to_string(),
        }
    }

    pub(super) fn ws(&mut self) {
        let _ = multispace0::<_, ContextError>(&mut self.rest);
    }

    pub(super) fn peek(&self) -> Option<char> {
        self.rest.chars().next()
    }

    /// Skip one character.
    pub(super) fn bump(&mut self) -> Option<char> {
        any::<_, ContextError>.parse_next(&mut self.rest).ok()
    }

    pub(super) fn eat(&mut self, token: &str) -> bool {
        match self.rest.strip_prefix(token) {
            Some(r) => {
                self.rest = r;
                true
            }
            None => false,
        }
    }

    pub(super) fn expect(&mut self, token: &str) -> Result<(), TextError> {
        if self.eat(token) {
            Ok(())
        } else {
            Err(self.syntax(&format!("expected `{token}`")))
        }
    }

    pub(super) fn ident(&mut self) -> Option<&'s str> {
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
}
