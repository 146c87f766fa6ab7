//! Parsing the model's complete output ([`parse_output`]) into tool calls or
//! an answer, and the per-call parsing shared with the stream extractor.
//!
//! Parsing is lenient about shape (either envelope key in either mode, a
//! bare call object, arguments as an object or a JSON string, ```` ``` ````
//! fences, trailing text) but strict about names: a call to a tool the
//! client did not declare is always an error.

use serde_json::{Value, json};

use super::call::ToolCall;
use super::envelope::{KEY_CALL, KEY_CALLS, KEY_RESPONSE};
use super::spec::ToolSet;

/// Why the model's output could not be turned into calls or an answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// The output ended before the JSON was complete (typically
    /// `done_reason: "length"`).
    #[error("model output was cut off before the JSON was complete")]
    Truncated,
    /// The output is not JSON.
    #[error("model output is not valid JSON: {0}")]
    InvalidJson(String),
    /// Valid JSON but neither tool calls nor an answer.
    #[error("model output is not a tool call or an answer: {0}")]
    NotAnEnvelope(String),
    /// A call to a tool the client did not declare.
    #[error("model called undeclared tool {0:?}")]
    UndeclaredTool(String),
    /// A call without a usable name or with arguments that are not an object.
    #[error("malformed tool call: {0}")]
    InvalidCall(String),
    /// An empty `tool_calls` array.
    #[error("model returned an empty tool_calls array")]
    NoCalls,
}

/// What the model produced.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelOutput {
    /// One or more calls, in order, to declared tools.
    Calls(Vec<ToolCall>),
    /// The `response` value: a string for a text answer, any JSON value
    /// when the client asked for a structured answer.
    Answer(Value),
}

/// Parse a complete model output produced under [`super::envelope::build_format`].
pub fn parse_output(text: &str, set: &ToolSet) -> Result<ModelOutput, ParseError> {
    let value = first_json_value(strip_fences(text))?;
    output_from_value(&value, set)
}

/// The answer as message content: a string answer as it is when
/// `structured` is false, otherwise compact JSON text.
pub(crate) fn answer_content(answer: &Value, structured: bool) -> String {
    match answer {
        Value::String(s) if !structured => s.clone(),
        other => other.to_string(),
    }
}

fn strip_fences(text: &str) -> &str {
    let t = text.trim();
    let Some(rest) = t.strip_prefix("```") else {
        return t;
    };
    let rest = rest.strip_prefix("json").unwrap_or(rest);
    rest.strip_suffix("```").unwrap_or(rest).trim()
}

/// The first JSON value in `text`; anything after it is ignored.
fn first_json_value(text: &str) -> Result<Value, ParseError> {
    let mut values = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    match values.next() {
        Some(Ok(v)) => Ok(v),
        Some(Err(e)) if e.is_eof() => Err(ParseError::Truncated),
        Some(Err(e)) => Err(ParseError::InvalidJson(e.to_string())),
        None => Err(ParseError::Truncated),
    }
}

/// Interpret an already-parsed output value.
pub(crate) fn output_from_value(value: &Value, set: &ToolSet) -> Result<ModelOutput, ParseError> {
    match value {
        Value::Object(m) => {
            let key = m
                .keys()
                .find(|k| [KEY_CALL, KEY_CALLS, KEY_RESPONSE].contains(&k.as_str()));
            match (key.map(String::as_str), key.and_then(|k| m.get(k))) {
                (Some(KEY_RESPONSE), Some(v)) => Ok(ModelOutput::Answer(v.clone())),
                (Some(_), Some(v)) => calls_from_value(v, set).map(ModelOutput::Calls),
                _ if m.contains_key("name") || m.contains_key("function") => {
                    Ok(ModelOutput::Calls(vec![call_from_value(value, set)?]))
                }
                _ => Err(ParseError::NotAnEnvelope(shorten(value))),
            }
        }
        Value::Array(_) => calls_from_value(value, set).map(ModelOutput::Calls),
        _ => Err(ParseError::NotAnEnvelope(shorten(value))),
    }
}

/// Calls from a `tool_call`/`tool_calls` value: one object or an array.
fn calls_from_value(value: &Value, set: &ToolSet) -> Result<Vec<ToolCall>, ParseError> {
    match value {
        Value::Array(items) if items.is_empty() => Err(ParseError::NoCalls),
        Value::Array(items) => items.iter().map(|c| call_from_value(c, set)).collect(),
        other => Ok(vec![call_from_value(other, set)?]),
    }
}

/// One call: `{"name","arguments"}` (or `parameters`), optionally wrapped as
/// `{"function":{…}}`. Arguments may be an object or a JSON string holding
/// one; missing or null arguments are `{}`.
pub(crate) fn call_from_value(value: &Value, set: &ToolSet) -> Result<ToolCall, ParseError> {
    let func = match value.get("function") {
        Some(f @ Value::Object(_)) => f,
        _ => value,
    };
    let name = func
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| ParseError::InvalidCall(format!("no name in {}", shorten(value))))?;
    if set.get(name).is_none() {
        return Err(ParseError::UndeclaredTool(name.to_owned()));
    }
    let arguments = match func.get("arguments").or_else(|| func.get("parameters")) {
        None | Some(Value::Null) => json!({}),
        Some(v @ Value::Object(_)) => v.clone(),
        Some(Value::String(s)) if s.trim().is_empty() => json!({}),
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(v @ Value::Object(_)) => v,
            _ => {
                return Err(ParseError::InvalidCall(format!(
                    "arguments of {name} are not a JSON object"
                )));
            }
        },
        Some(_) => {
            return Err(ParseError::InvalidCall(format!(
                "arguments of {name} are not a JSON object"
            )));
        }
    };
    Ok(ToolCall {
        name: name.to_owned(),
        arguments,
    })
}

/// `value` as JSON text, cut to 200 characters for error messages.
fn shorten(value: &Value) -> String {
    let s = value.to_string();
    if s.chars().count() > 200 {
        let mut cut: String = s.chars().take(200).collect();
        cut.push('…');
        cut
    } else {
        s
    }
}

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;
