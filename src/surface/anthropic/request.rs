//! Anthropic `MessagesRequest` → Ollama `/api/chat` body, the way Ollama's
//! own layer converts it (`anthropic.FromMessagesRequest`, `convertMessage`,
//! `convertTool`, after the checks of `middleware.AnthropicMessagesMiddleware`),
//! plus what augur's tool emulation reads and Ollama ignores: `tool_choice`,
//! `parallel_tool_calls` and the `tool_name` of tool results; and the
//! structured output schema (`output_config.format`) as `format`.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use crate::error::ProxyError;

use super::{
    decode, estimate,
    fields::{bad, str_of},
    format,
    messages::convert_message,
};

/// The translated request and what the answer needs to be rendered.
#[derive(Debug, Clone)]
pub(crate) struct Translated {
    /// The Ollama `/api/chat` body.
    pub body: Map<String, Value>,
    /// The model as the client named it.
    pub model: String,
    /// The client turned thinking off (`thinking: {"type": "disabled"}`):
    /// Ollama's model then produces none, so none is rendered.
    pub thinking_off: bool,
    /// Ollama's estimate of the input tokens, which `message_start` reports
    /// when the first chunk has no `prompt_eval_count`.
    pub estimated_input_tokens: u64,
    /// A server-side `web_search_*` tool was declared. Ollama runs that
    /// search loop itself (`WebSearchAnthropicWriter`) for a model with
    /// native tools; augur does not, so the tool is not in `body` and the
    /// pipeline decides whether the request goes to Ollama's
    /// `/v1/messages` as it came.
    pub web_search: bool,
    /// The types of the server tools left out of `body` (each once).
    pub server_tools: Vec<String>,
}

/// Translate an Anthropic Messages request. Errors are 400s with the texts
/// Ollama answers.
pub(crate) fn translate(req: &Map<String, Value>) -> Result<Translated, ProxyError> {
    decode::request(req).map_err(|e| bad(e.to_string()))?;
    let model = str_of(req, "model").to_string();
    if model.is_empty() {
        return Err(bad("model is required"));
    }
    let max_tokens = req
        .get("max_tokens")
        .and_then(Value::as_i64)
        .unwrap_or_default();
    if max_tokens <= 0 {
        return Err(bad("max_tokens is required and must be positive"));
    }
    let messages = req
        .get("messages")
        .and_then(Value::as_array)
        .filter(|m| !m.is_empty())
        .ok_or_else(|| bad("messages is required"))?;

    let mut out = Vec::with_capacity(messages.len() + 1);
    if let Some(system) = system_text(req.get("system")) {
        out.push(json!({"role": "system", "content": system}));
    }
    let mut call_names = HashMap::new();
    for m in messages {
        convert_message(m, &mut call_names, &mut out)?;
    }

    let mut options = Map::new();
    options.insert("num_predict".into(), json!(max_tokens));
    for key in ["temperature", "top_p", "top_k"] {
        if let Some(v) = req.get(key).filter(|v| !v.is_null()) {
            options.insert(key.into(), v.clone());
        }
    }
    if let Some(stops) = req
        .get("stop_sequences")
        .and_then(Value::as_array)
        .filter(|s| !s.is_empty())
    {
        let stops: Vec<Value> = stops
            .iter()
            .map(|s| json!(s.as_str().unwrap_or_default()))
            .collect();
        options.insert("stop".into(), Value::Array(stops));
    }

    let declared = req
        .get("tools")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let (tools, server_tools) = convert_tools(declared)?;
    let think = think(req);
    let schema = format::schema(req)?;
    let stream = req.get("stream").and_then(Value::as_bool).unwrap_or(false);

    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("messages".into(), Value::Array(out));
    body.insert("stream".into(), json!(stream));
    if !tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools));
    }
    body.insert("options".into(), Value::Object(options));
    if let Some(schema) = schema {
        body.insert("format".into(), schema);
    }
    if let Some(think) = &think {
        body.insert("think".into(), think.clone());
    }
    if let Some(Value::Object(choice)) = req.get("tool_choice") {
        if let Some(choice) = tool_choice(choice) {
            body.insert("tool_choice".into(), choice);
        }
        if choice.get("disable_parallel_tool_use") == Some(&Value::Bool(true)) {
            body.insert("parallel_tool_calls".into(), json!(false));
        }
    }

    Ok(Translated {
        body,
        model,
        thinking_off: think == Some(Value::Bool(false)),
        estimated_input_tokens: estimate::input_tokens(req),
        web_search: !server_tools.is_empty(),
        server_tools,
    })
}

/// `system` as one string: itself, or its text blocks joined; empty ⇒ none.
fn system_text(system: Option<&Value>) -> Option<String> {
    let text = match system? {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect(),
        _ => return None,
    };
    (!text.is_empty()).then_some(text)
}

/// `thinking` → `think`: enabled ⇒ true, disabled ⇒ false, otherwise
/// `output_config.effort` (`xhigh` read as `high`) when it is a level.
fn think(req: &Map<String, Value>) -> Option<Value> {
    let kind = req
        .get("thinking")
        .and_then(|t| t.get("type"))
        .and_then(Value::as_str);
    match kind {
        Some("enabled") => return Some(json!(true)),
        Some("disabled") => return Some(json!(false)),
        _ => {}
    }
    let effort = req
        .get("output_config")
        .and_then(|c| c.get("effort"))
        .and_then(Value::as_str)?
        .trim()
        .to_lowercase();
    match effort.as_str() {
        "xhigh" => Some(json!("high")),
        "high" | "medium" | "low" | "max" => Some(json!(effort)),
        _ => None,
    }
}

/// `tool_choice` in the form augur's tool emulation reads (Ollama itself
/// ignores it). An unknown `type` is left out, as Ollama accepts it; a
/// `tool` without a name is kept so emulation refuses it.
fn tool_choice(choice: &Map<String, Value>) -> Option<Value> {
    Some(match str_of(choice, "type") {
        "auto" => json!("auto"),
        "any" => json!("required"),
        "none" => json!("none"),
        "tool" => match str_of(choice, "name") {
            "" => json!({"type": "tool"}),
            name => json!({"type": "function", "function": {"name": name}}),
        },
        _ => return None,
    })
}

/// `convertTool` for each declared tool that is loaded (not
/// `defer_loading`), and the types of the server-side web search tools
/// among them, which are left out (with them, a client tool named
/// `web_search` is dropped, as Ollama drops it).
fn convert_tools(tools: &[Value]) -> Result<(Vec<Value>, Vec<String>), ProxyError> {
    let empty = Map::new();
    fn kind(t: &Value) -> &str {
        t.get("type").and_then(Value::as_str).unwrap_or_default()
    }
    let mut server = Vec::new();
    for t in tools {
        if is_server_tool(kind(t)) && !server.iter().any(|s| s == kind(t)) {
            server.push(kind(t).to_string());
        }
    }
    let mut out = Vec::with_capacity(tools.len());
    for t in tools {
        let tool = t.as_object().unwrap_or(&empty);
        let name = str_of(tool, "name");
        if is_server_tool(kind(t)) || (!server.is_empty() && name == "web_search") {
            continue;
        }
        // A deferred tool is not in the model's context until a tool search
        // loads it (Claude Code declares a placeholder this way, "never call
        // this tool"); a model that cannot search is never offered it.
        if tool.get("defer_loading") == Some(&Value::Bool(true)) {
            continue;
        }
        let mut function = Map::new();
        function.insert("name".into(), json!(name));
        let description = str_of(tool, "description");
        if !description.is_empty() {
            function.insert("description".into(), json!(description));
        }
        // The schema goes upstream as the client wrote it (Ollama keeps only
        // what `ToolFunctionParameters` has; augur validates against it all),
        // after the check Ollama's decoding of it makes.
        if let Some(schema) = tool.get("input_schema").filter(|s| !s.is_null()) {
            decode::tool_schema(schema)
                .map_err(|e| bad(format!("invalid input_schema for tool {name:?}: {e}")))?;
            function.insert("parameters".into(), schema.clone());
        }
        out.push(json!({"type": "function", "function": function}));
    }
    Ok((out, server))
}

/// Whether a tool `type` is Anthropic's server-side web search
/// (`web_search_20250305`, …), which Ollama runs itself.
pub(crate) fn is_server_tool(kind: &str) -> bool {
    kind.starts_with("web_search")
}
