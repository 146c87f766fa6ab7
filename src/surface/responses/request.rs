//! A Responses request → an Ollama `/api/chat` body, the way Ollama's own
//! layer translates it (`FromResponsesRequest`, with the checks and error
//! texts of `ResponsesMiddleware`), so an emulated request behaves like a
//! native one. augur also carries `tool_choice` (in the `/api/chat` form
//! its tool emulation reads) and `parallel_tool_calls`, which Ollama drops.

mod decode;
mod fields;
mod items;
mod messages;

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::{error::ProxyError, wire::json_kind};

use super::echo::Echo;
use crate::wire::go;

/// The translated request and what the answer needs to be shaped back.
#[derive(Debug)]
pub(crate) struct Translated {
    /// The Ollama `/api/chat` body.
    pub body: Map<String, Value>,
    /// The model as the client named it; the response object carries it.
    pub model: String,
    /// The request declares Responses' built-in `web_search` tool, which
    /// Ollama runs itself (searching and calling the model again) for a
    /// model with tools.
    pub web_search: bool,
    /// The types of the declared tools that are not functions (hosted or
    /// built-in tools: `web_search`, `file_search`, `mcp`, `local_shell`,
    /// …), each once, in order: the body leaves them out.
    pub hosted: Vec<String>,
    /// The request fields the response object echoes.
    pub echo: Arc<Echo>,
}

/// Translate a Responses request.
pub(crate) fn translate(req: &Map<String, Value>) -> Result<Translated, ProxyError> {
    let r = decode::request(req)?;
    let messages = messages::build(r.instructions, r.input_text, &r.input)?;

    let mut options = Map::new();
    options.insert(
        "temperature".into(),
        go::float(r.temperature.unwrap_or(1.0)),
    );
    if let Some(top_p) = r.top_p {
        options.insert("top_p".into(), go::float(top_p));
    }
    if let Some(n) = r.max_output_tokens {
        options.insert("num_predict".into(), json!(n));
    }
    let think = think_from_effort(r.effort)?;

    // Tools augur cannot emulate (hosted or built-in ones) are left out of
    // the body; the adapter decides whether the request goes upstream as
    // it came instead (see `super::hosted`).
    let mut hosted: Vec<String> = Vec::new();
    let mut tools = Vec::with_capacity(r.tools.len());
    for t in &r.tools {
        let kind = t.get("type").and_then(Value::as_str).unwrap_or_default();
        if is_hosted(kind) {
            if !hosted.iter().any(|h| h == kind) {
                hosted.push(kind.to_owned());
            }
            continue;
        }
        tools.extend(convert_tools(t)?);
    }
    let web_search = hosted.iter().any(|h| h == "web_search");
    let format = r.text_format.and_then(text_format);

    let stream = r.stream.unwrap_or(false);
    let mut body = Map::new();
    body.insert("model".into(), json!(r.model));
    body.insert("messages".into(), Value::Array(messages));
    body.insert("stream".into(), json!(stream));
    if let Some(format) = format {
        body.insert("format".into(), format);
    }
    if !tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools));
    }
    body.insert("options".into(), Value::Object(options));
    if let Some(think) = think {
        body.insert("think".into(), think);
    }
    if let Some(choice) = r.tool_choice {
        body.insert("tool_choice".into(), chat_tool_choice(choice));
    }
    if let Some(parallel) = r.parallel_tool_calls {
        body.insert("parallel_tool_calls".into(), json!(parallel));
    }

    let echo = Echo {
        instructions: r.instructions.to_owned(),
        truncation: r.truncation.map(str::to_owned),
        tools: r
            .tools
            .iter()
            .map(|t| Value::Object((*t).clone()))
            .collect(),
        tool_choice: r.tool_choice.cloned(),
        parallel_tool_calls: r.parallel_tool_calls,
        text_format: r.text_format.cloned(),
        effort: r.effort.to_owned(),
        summary: r.summary.to_owned(),
        top_p: r.top_p,
        temperature: r.temperature,
        max_output_tokens: r.max_output_tokens,
        background: r.background,
    };
    Ok(Translated {
        body,
        model: r.model.to_owned(),
        web_search,
        hosted,
        echo: Arc::new(echo),
    })
}

/// `thinkFromReasoningEffort`: OpenAI's effort scale clamped to Ollama's.
fn think_from_effort(effort: &str) -> Result<Option<Value>, ProxyError> {
    Ok(Some(match effort {
        "" => return Ok(None),
        "none" => json!(false),
        "minimal" => json!("low"),
        "low" | "medium" | "high" | "max" => json!(effort),
        "xhigh" | "ultra" => json!("max"),
        other => {
            return Err(ProxyError::BadRequest(format!(
                "invalid reasoning value: {} (must be \"minimal\", \"low\", \"medium\", \"high\", \"xhigh\", \"ultra\", \"max\", or \"none\")",
                go::quote(other)
            )));
        }
    }))
}

/// Responses' `tool_choice` in the `/api/chat` form augur's emulation
/// reads: a named function moves under `function`; the keywords and any
/// other form are kept as they are (an unknown form is refused there).
fn chat_tool_choice(choice: &Value) -> Value {
    if let Value::Object(o) = choice {
        let is_function = o.get("type").and_then(Value::as_str) == Some("function");
        if let (true, None, Some(name)) = (is_function, o.get("function"), o.get("name")) {
            return json!({"type": "function", "function": {"name": name}});
        }
    }
    choice.clone()
}

/// `convertTools`: one Responses tool as Ollama function tools; a
/// `namespace` expands to its members, named `namespace.member`. Nesting
/// is bounded by the JSON parser's depth limit.
fn convert_tools(t: &Map<String, Value>) -> Result<Vec<Value>, ProxyError> {
    let kind = t.get("type").and_then(Value::as_str).unwrap_or_default();
    let name = t.get("name").and_then(Value::as_str).unwrap_or_default();
    if kind != "namespace" {
        return Ok(vec![convert_tool(kind, name, t)?]);
    }
    let mut out = Vec::new();
    let members = t.get("tools").and_then(Value::as_array);
    for member in members.into_iter().flatten().filter_map(Value::as_object) {
        for mut tool in convert_tools(member)? {
            let prefix = format!("{name}.");
            if let Some(Value::String(n)) = tool.pointer_mut("/function/name")
                && !name.is_empty()
                && !n.starts_with(&prefix)
            {
                n.insert_str(0, &prefix);
            }
            out.push(tool);
        }
    }
    Ok(out)
}

/// `convertTool`. The parameters schema goes on whole (Ollama keeps the
/// fields its `ToolFunctionParameters` knows); it is refused where Ollama's
/// decoding of it fails.
fn convert_tool(kind: &str, name: &str, t: &Map<String, Value>) -> Result<Value, ProxyError> {
    let mut function = Map::new();
    function.insert("name".into(), json!(name));
    if let Some(d) = t
        .get("description")
        .and_then(Value::as_str)
        .filter(|d| !d.is_empty())
    {
        function.insert("description".into(), json!(d));
    }
    if let Some(p) = t.get("parameters").and_then(Value::as_object) {
        check_parameters(p)?;
        function.insert("parameters".into(), Value::Object(p.clone()));
    }
    Ok(json!({"type": kind, "function": function}))
}

/// The errors Ollama's `ToolFunctionParameters` decoding gives.
fn check_parameters(p: &Map<String, Value>) -> Result<(), ProxyError> {
    let fail = |what: &str, field: &str, go_type: &str| {
        Err(ProxyError::BadRequest(format!(
            "failed to unmarshal tool parameters: json: cannot unmarshal {what} into Go struct field ToolFunctionParameters.{field} of type {go_type}"
        )))
    };
    match p.get("type") {
        None | Some(Value::Null | Value::String(_)) => {}
        Some(v) => return fail(json_kind(v), "type", "string"),
    }
    match p.get("required") {
        None | Some(Value::Null) => {}
        Some(Value::Array(a)) => {
            if let Some(e) = a.iter().find(|e| !e.is_string() && !e.is_null()) {
                return fail(json_kind(e), "required", "string");
            }
        }
        Some(v) => return fail(json_kind(v), "required", "[]string"),
    }
    Ok(())
}

/// Whether a tool `type` is one augur cannot emulate: anything but a
/// function (or a namespace of functions). A tool without a type is left
/// to the tool set's own check.
pub(crate) fn is_hosted(kind: &str) -> bool {
    !matches!(kind, "" | "function" | "namespace")
}

/// `text.format` as Ollama's `format`: a `json_schema`'s schema (as
/// Ollama's layer reads it), and JSON mode for `json_object` (as augur
/// reads `response_format` on `/v1/chat/completions`; Ollama's layer
/// ignores it); anything else, no format.
fn text_format(f: &Map<String, Value>) -> Option<Value> {
    match f.get("type").and_then(Value::as_str) {
        Some("json_schema") => f.get("schema").filter(|s| !s.is_null()).cloned(),
        Some("json_object") => Some(json!("json")),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
