//! qwen3-coder's XML calls:
//!
//! ```text
//! <function=get_weather>
//! <parameter=city>
//! Paris
//! </parameter>
//! </function>
//! ```
//!
//! Values are text: one line break is taken off each end, and each value
//! becomes the type the tool's schema declares for its parameter
//! (`null`, `boolean`, `integer`, `number`, `object`, `array`, tried in
//! that order when several are declared, JSON or Python literals for
//! containers); a value that reads as none of them stays a string. The
//! calls come out as the Python form's do ([`PyCall`]), for the block's
//! reader to turn into tool calls.

use serde_json::{Number, Value};

use super::event::{MAX_CALLS, TextError};
use super::python::{Arg, Cur, PyCall};
use crate::tools::spec::{Tool, ToolSet};

pub(super) const FUNCTION: &str = "<function=";
const FUNCTION_END: &str = "</function>";
const PARAMETER: &str = "<parameter=";
const PARAMETER_END: &str = "</parameter>";

/// The calls in `body`: `<function=…>` blocks one after another, the
/// last one's `</function>` optional.
pub(super) fn calls(body: &str, set: &ToolSet) -> Result<Vec<PyCall>, TextError> {
    let mut rest = body.trim_start();
    let mut out = Vec::new();
    while !rest.is_empty() {
        if out.len() >= MAX_CALLS {
            return Err(TextError::TooManyCalls);
        }
        let at = body.len() - rest.len();
        let (name, after) = tag(rest, FUNCTION, at)?;
        let (inner, after) = match after.find(FUNCTION_END) {
            Some(i) => (&after[..i], &after[i + FUNCTION_END.len()..]),
            None => (after, ""),
        };
        let tool = set
            .get(name)
            .ok_or_else(|| TextError::UndeclaredTool(name.to_owned()))?;
        let args = parameters(inner, tool, body.len() - after.len())?;
        out.push(PyCall {
            name: name.to_owned(),
            args,
        });
        rest = after.trim_start();
    }
    Ok(out)
}

/// `<open…>` (e.g. `<function=get_weather>`) at the start of `s`: the
/// name and the text after the tag.
fn tag<'s>(s: &'s str, open: &str, at: usize) -> Result<(&'s str, &'s str), TextError> {
    let syntax = |what: &str| TextError::Syntax {
        at,
        what: what.into(),
    };
    let rest = s
        .strip_prefix(open)
        .ok_or_else(|| syntax(&format!("expected `{open}`")))?;
    let end = rest
        .find(['>', '\n'])
        .filter(|&i| rest[i..].starts_with('>'))
        .ok_or_else(|| syntax("expected `>`"))?;
    let name = rest[..end].trim();
    if name.is_empty() {
        return Err(syntax("a tag without a name"));
    }
    Ok((name, &rest[end + 1..]))
}

/// The `<parameter=…>` blocks of one function; a value ends at
/// `</parameter>`, or at the next `<parameter=` or the function's end.
fn parameters(inner: &str, tool: &Tool, at: usize) -> Result<Vec<Arg>, TextError> {
    let mut rest = inner.trim_start();
    let mut args = Vec::new();
    while !rest.is_empty() {
        let (key, after) = tag(rest, PARAMETER, at)?;
        // One pass to whichever comes first.
        let stop = after
            .match_indices('<')
            .map(|(i, _)| i)
            .find(|&i| after[i..].starts_with(PARAMETER_END) || after[i..].starts_with(PARAMETER));
        let (value, after) = match stop {
            Some(i) if after[i..].starts_with(PARAMETER_END) => {
                (&after[..i], &after[i + PARAMETER_END.len()..])
            }
            Some(i) => (&after[..i], &after[i..]),
            None => (after, ""),
        };
        let value = value.strip_prefix('\n').unwrap_or(value);
        let value = value.strip_suffix('\n').unwrap_or(value);
        args.push(Arg::Keyword(key.to_owned(), typed(tool, key, value)));
        rest = after.trim_start();
    }
    Ok(args)
}

/// `text` as the type `tool` declares for parameter `key`.
fn typed(tool: &Tool, key: &str, text: &str) -> Value {
    let schema = tool
        .parameters
        .get("properties")
        .and_then(|p| p.get(key))
        .unwrap_or(&Value::Null);
    let types = declared_types(schema);
    for ty in ["null", "boolean", "integer", "number", "object", "array"] {
        if !types.contains(&ty) {
            continue;
        }
        if let Some(v) = as_type(ty, text.trim()) {
            return v;
        }
    }
    Value::String(text.to_owned())
}

/// The schema's `type`s, its `anyOf` / `oneOf` branches' included.
fn declared_types(schema: &Value) -> Vec<&str> {
    let branches = ["anyOf", "oneOf"]
        .iter()
        .filter_map(|k| schema.get(k).and_then(Value::as_array))
        .flatten();
    let mut out = Vec::new();
    for s in std::iter::once(schema).chain(branches) {
        match s.get("type") {
            Some(Value::String(t)) => out.push(t.as_str()),
            Some(Value::Array(ts)) => out.extend(ts.iter().filter_map(Value::as_str)),
            _ => {}
        }
    }
    out
}

fn as_type(ty: &str, t: &str) -> Option<Value> {
    match ty {
        "null" => matches!(t, "null" | "None").then_some(Value::Null),
        "boolean" => match t.to_ascii_lowercase().as_str() {
            "true" => Some(Value::Bool(true)),
            "false" => Some(Value::Bool(false)),
            _ => None,
        },
        "integer" => t
            .parse::<i64>()
            .map(Value::from)
            .or_else(|_| t.parse::<u64>().map(Value::from))
            .ok(),
        "number" => as_type("integer", t).or_else(|| {
            let f = t.parse::<f64>().ok()?;
            Number::from_f64(f).map(Value::Number)
        }),
        "object" => literal(t).filter(Value::is_object),
        "array" => literal(t).filter(Value::is_array),
        _ => None,
    }
}

/// A JSON value, or else a Python literal (`{'a': True}`).
fn literal(t: &str) -> Option<Value> {
    if let Ok(v) = serde_json::from_str(t) {
        return Some(v);
    }
    let mut c = Cur { src: t, rest: t };
    let v = c.value(0).ok()?;
    c.ws();
    c.rest.is_empty().then_some(v)
}
