//! Reading a Responses request the way Ollama's Go structs decode it
//! (`ResponsesRequest` and its input item types): the same fields, `null`
//! read as absent, and the same error texts (`json: cannot unmarshal …`,
//! `input[i]: content[j]: …`). A type error in a plain field is kept and
//! decoding goes on, as Go's decoder does; an error inside `input` stops
//! at once, as a custom `UnmarshalJSON` does.

use serde_json::{Map, Value};

use crate::error::ProxyError;

use super::{
    fields::{Fields, bad, value_error_text},
    items::{self, Item},
};

/// A decoded request (the fields Ollama reads, and the two augur adds:
/// `tool_choice` and `parallel_tool_calls`).
#[derive(Default)]
pub(super) struct Request<'a> {
    pub model: &'a str,
    pub background: bool,
    pub input: Vec<Item<'a>>,
    pub input_text: &'a str,
    pub instructions: &'a str,
    pub max_output_tokens: Option<i64>,
    pub effort: &'a str,
    pub summary: &'a str,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub truncation: Option<&'a str>,
    /// `text.format`, when given as an object.
    pub text_format: Option<&'a Map<String, Value>>,
    pub tools: Vec<&'a Map<String, Value>>,
    pub stream: Option<bool>,
    pub tool_choice: Option<&'a Value>,
    pub parallel_tool_calls: Option<bool>,
}

/// Decode `req` as Ollama's `ResponsesMiddleware` binds it.
pub(super) fn request(req: &Map<String, Value>) -> Result<Request<'_>, ProxyError> {
    let mut f = Fields::new(req, "ResponsesRequest", "");
    let mut out = Request {
        tool_choice: req.get("tool_choice").filter(|v| !v.is_null()),
        ..Request::default()
    };
    // Go decodes fields in the order they come; an error in `input`
    // ends decoding, one in another field is reported if none follows.
    for key in req.keys() {
        match key.as_str() {
            "model" => out.model = f.str("model"),
            "background" => out.background = f.opt_bool("background").unwrap_or(false),
            "include" => {
                if let Some(v) = f.get("include") {
                    match v {
                        Value::Array(a) => {
                            if let Some(e) = a.iter().find(|e| !e.is_string() && !e.is_null()) {
                                f.fail("include", e, "string");
                            }
                        }
                        other => f.fail("include", other, "[]string"),
                    }
                }
            }
            "input" => match req.get("input") {
                None | Some(Value::Null) => {}
                Some(Value::String(s)) => out.input_text = s,
                Some(Value::Array(items)) => {
                    let mut decoded = Vec::with_capacity(items.len());
                    for (i, raw) in items.iter().enumerate() {
                        decoded
                            .push(items::item(raw).map_err(|e| bad(format!("input[{i}]: {e}")))?);
                    }
                    out.input = decoded;
                }
                Some(v) => {
                    return Err(bad(format!(
                        "input must be a string or array: {}",
                        value_error_text(v, "[]json.RawMessage")
                    )));
                }
            },
            "instructions" => out.instructions = f.str("instructions"),
            "max_output_tokens" => out.max_output_tokens = f.opt_int("max_output_tokens"),
            "reasoning" => {
                if let Some(r) = f.opt_object("reasoning", "openai.ResponsesReasoning") {
                    let mut rf = Fields::new(r, "ResponsesReasoning", "reasoning.");
                    out.effort = rf.str("effort");
                    rf.str("generate_summary");
                    out.summary = rf.str("summary");
                    f.saved = f.saved.take().or(rf.saved);
                }
            }
            "temperature" => out.temperature = f.opt_f64("temperature"),
            "text" => {
                if let Some(t) = f.opt_object("text", "openai.ResponsesText") {
                    let mut tf = Fields::new(t, "ResponsesText", "text.");
                    if let Some(format) = tf.opt_object("format", "openai.ResponsesTextFormat") {
                        let mut ff = Fields::new(format, "ResponsesTextFormat", "text.format.");
                        ff.str("type");
                        ff.str("name");
                        ff.opt_bool("strict");
                        tf.saved = tf.saved.take().or(ff.saved);
                        out.text_format = Some(format);
                    }
                    f.saved = f.saved.take().or(tf.saved);
                }
            }
            "top_p" => out.top_p = f.opt_f64("top_p"),
            "truncation" => out.truncation = f.opt_str("truncation"),
            "tools" => match f.get("tools") {
                None => {}
                Some(Value::Array(tools)) => {
                    for t in tools {
                        match t {
                            Value::Object(m) => {
                                if let Some(e) = tool_error(m, "tools.") {
                                    f.saved = f.saved.take().or(Some(e));
                                }
                                out.tools.push(m);
                            }
                            Value::Null => {}
                            other => f.fail("tools", other, "openai.ResponsesTool"),
                        }
                    }
                }
                Some(v) => f.fail("tools", v, "[]openai.ResponsesTool"),
            },
            "stream" => out.stream = f.opt_bool("stream"),
            "parallel_tool_calls" => {
                out.parallel_tool_calls = req.get("parallel_tool_calls").and_then(Value::as_bool)
            }
            _ => {}
        }
    }
    match f.saved {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// The first type error in one `ResponsesTool` (and its namespace
/// members, one level per nesting, bounded by the parser's depth limit).
fn tool_error(m: &Map<String, Value>, prefix: &'static str) -> Option<ProxyError> {
    let mut f = Fields::new(m, "ResponsesTool", prefix);
    f.str("type");
    f.str("name");
    f.opt_str("description");
    f.opt_bool("strict");
    f.opt_object("parameters", "map[string]interface {}");
    if let Some(members) = f.get("tools") {
        match members {
            Value::Array(a) => {
                for member in a {
                    match member {
                        Value::Object(mm) => {
                            if let Some(e) = tool_error(mm, "tools.tools.") {
                                return f.saved.or(Some(e));
                            }
                        }
                        Value::Null => {}
                        other => f.fail("tools", other, "openai.ResponsesTool"),
                    }
                }
            }
            other => f.fail("tools", other, "[]openai.ResponsesTool"),
        }
    }
    f.saved
}

#[cfg(test)]
mod tests;
