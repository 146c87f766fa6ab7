//! A block's body as calls to declared tools: a JSON call object (or a
//! list of them) in any of the shapes models write, qwen3-coder's XML
//! ([`super::xml`]), or Python calls.

use serde_json::{Map, Value};

use super::event::{MAX_CALLS, TextError};
use super::python::{self, Arg, PyCall};
use super::xml;
use crate::tools::call::ToolCall;
use crate::tools::parse::{ParseError, call_from_value};
use crate::tools::spec::{Tool, ToolSet};

/// The calls in a block's `body`: JSON when it opens with `{` or `[{`,
/// XML when it opens with `<function=`, else Python. At least one call.
pub(super) fn body_calls(body: &str, set: &ToolSet) -> Result<Vec<ToolCall>, TextError> {
    let body = strip_fence(body.trim());
    let json =
        body.starts_with('{') || (body.starts_with('[') && body[1..].trim_start().starts_with('{'));
    let calls = if json {
        json_calls(body, set)?
    } else if body.starts_with(xml::FUNCTION) {
        python_calls(xml::calls(body, set)?, set)?
    } else {
        python_calls(python::calls(body)?, set)?
    };
    if calls.is_empty() {
        return Err(TextError::NotACall("no call in the block".into()));
    }
    Ok(calls)
}

/// Python calls converted, every name declared.
pub(super) fn python_calls(calls: Vec<PyCall>, set: &ToolSet) -> Result<Vec<ToolCall>, TextError> {
    calls.into_iter().map(|c| from_python(c, set)).collect()
}

/// A ```` ```json ```` fence inside a block, as some models write.
fn strip_fence(body: &str) -> &str {
    let Some(rest) = body.strip_prefix("```") else {
        return body;
    };
    let rest = rest.strip_prefix("json").unwrap_or(rest);
    rest.strip_suffix("```").unwrap_or(rest).trim()
}

fn json_calls(body: &str, set: &ToolSet) -> Result<Vec<ToolCall>, TextError> {
    let mut values = serde_json::Deserializer::from_str(body).into_iter::<Value>();
    let value = match values.next() {
        Some(Ok(v)) => v,
        Some(Err(e)) if e.is_eof() => return Err(TextError::Unterminated),
        Some(Err(e)) => {
            return Err(TextError::Syntax {
                at: 0,
                what: format!("invalid JSON ({e})"),
            });
        }
        None => return Err(TextError::NotACall("an empty block".into())),
    };
    let items = match value {
        Value::Array(items) => items,
        other => vec![other],
    };
    if items.len() > MAX_CALLS {
        return Err(TextError::TooManyCalls);
    }
    items.iter().map(|v| json_call(v, set)).collect()
}

/// `{"name","arguments"}` (or `parameters`, or `args`; arguments may be
/// a JSON string), or `{"function":{…}}` around it, and `<tool_code>`'s
/// `{"tool_name","parameters"}`.
pub(super) fn json_call(value: &Value, set: &ToolSet) -> Result<ToolCall, TextError> {
    let mut value = normalized(value);
    if let Some(f) = value.get("function").filter(|f| f.is_object()) {
        let f = normalized(f);
        value["function"] = f;
    }
    call_from_value(&value, set).map_err(|e| match e {
        ParseError::UndeclaredTool(n) => TextError::UndeclaredTool(n),
        other => TextError::NotACall(other.to_string()),
    })
}

/// `tool_name` as `name` and `args` as `arguments`, when those are absent.
fn normalized(value: &Value) -> Value {
    let Value::Object(m) = value else {
        return value.clone();
    };
    let mut m = m.clone();
    if !m.contains_key("name")
        && let Some(name) = m.get("tool_name").cloned()
    {
        m.insert("name".into(), name);
    }
    if !m.contains_key("arguments")
        && !m.contains_key("parameters")
        && let Some(args) = m.get("args").cloned()
    {
        m.insert("arguments".into(), args);
    }
    Value::Object(m)
}

fn from_python(call: PyCall, set: &ToolSet) -> Result<ToolCall, TextError> {
    let tool = set
        .get(&call.name)
        .ok_or_else(|| TextError::UndeclaredTool(call.name.clone()))?;
    let arguments = arguments(tool, call.args)?;
    Ok(ToolCall {
        name: call.name,
        arguments: Value::Object(arguments),
    })
}

/// Keyword arguments by name, `**{…}` merged, positional ones by the
/// order of the tool's declared `properties`.
fn arguments(tool: &Tool, args: Vec<Arg>) -> Result<Map<String, Value>, TextError> {
    let declared: Vec<&String> = tool
        .parameters
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().collect())
        .unwrap_or_default();
    let mut out = Map::new();
    let mut positional = 0;
    let mut named = false;
    let put = |out: &mut Map<String, Value>, key: String, value: Value| {
        if out.contains_key(&key) {
            return Err(TextError::Arguments(format!(
                "argument {key:?} of {} given twice",
                tool.name
            )));
        }
        out.insert(key, value);
        Ok(())
    };
    for arg in args {
        match arg {
            Arg::Positional(value) => {
                if named {
                    return Err(TextError::Arguments(
                        "a positional argument after a keyword argument".into(),
                    ));
                }
                let Some(key) = declared.get(positional) else {
                    return Err(TextError::Arguments(format!(
                        "{} takes at most {} positional argument{}",
                        tool.name,
                        declared.len(),
                        if declared.len() == 1 { "" } else { "s" }
                    )));
                };
                positional += 1;
                put(&mut out, (*key).clone(), value)?;
            }
            Arg::Keyword(key, value) => {
                named = true;
                put(&mut out, key, value)?;
            }
            Arg::Spread(map) => {
                named = true;
                for (key, value) in map {
                    put(&mut out, key, value)?;
                }
            }
        }
    }
    Ok(out)
}
