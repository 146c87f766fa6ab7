//! Anthropic's Messages API (`POST /v1/messages`) as Ollama's `AnthropicMessagesMiddleware`
//! serves it: the middleware requires `model`, a positive `max_tokens` and `messages`, converts
//! the request to a chat request (`FromMessagesRequest`: the system prompt becomes a system
//! message, content blocks text, tool calls and tool results; `max_tokens` becomes
//! `num_predict`, `thinking` and `output_config.effort` become `think`), and the chat handler
//! answers with thinking *relaxed*: a model without the thinking capability asked to think
//! answers without thinking instead of refusing. The answer is written as a message
//! ([`render`]) or its stream of events; errors take Anthropic's error shape.
//!
//! A built-in `web_search_*` tool is declared to the model as Ollama declares it, but the fake
//! runs no search: a call of it comes back as an ordinary `tool_use` block.

mod render;
mod tokens;

use std::sync::Arc;

use axum::extract::State;
use axum::response::Response;
use bytes::Bytes;
use serde_json::{Map, Value, json};

use crate::Shared;
use crate::catalog::CAP_THINKING;
use crate::plan::{self, Input};
use crate::surface::{self, Raised, json_kind, string_field};
use crate::wire::{ApiError, go_quote};

const GO_TYPE: &str = "MessagesRequest";

/// `prefix_` and 24 random hex digits (Ollama's Anthropic ids from 12 random bytes).
pub fn hex_id(prefix: &str) -> String {
    let mut s = format!("{prefix}_");
    for _ in 0..12 {
        s.push_str(&format!("{:02x}", fastrand::u8(..)));
    }
    s
}

/// Anthropic's error object for `e` (`NewError`: the error type follows the status).
fn error(e: &ApiError, raised: Raised) -> Response {
    let kind = match e.status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        429 => "rate_limit_error",
        503 | 529 => "overloaded_error",
        _ => "api_error",
    };
    let body = json!({ "type": "error", "error": { "type": kind, "message": e.msg },
        "request_id": hex_id("req") });
    surface::error_response(e.status, &body, raised)
}

pub async fn create(State(st): State<Arc<Shared>>, body: Bytes) -> Response {
    let decoded = surface::parse(&body, "anthropic.MessagesRequest").and_then(|m| decode(&m));
    let (mut input, stream, estimate) = match decoded {
        Ok(x) => x,
        Err(e) => return error(&e, Raised::Middleware),
    };
    // `relax_thinking`: the chat handler drops `think` instead of refusing it.
    let thinks = input
        .think
        .as_ref()
        .is_some_and(|t| t == true || t.is_string());
    if thinks
        && st
            .find_model(&input.model)
            .is_some_and(|m| !m.has(CAP_THINKING))
    {
        input.think = None;
    }
    let plan = match surface::planned(&st, &input) {
        Ok(p) => p,
        Err(e) => return error(&e, Raised::Handler { stream }),
    };
    let id = hex_id("msg");
    let model = input.model.clone();
    let converter = render::Stream::new(id.clone(), model.clone(), estimate);
    let whole = move |p: &plan::Plan| render::whole(&id, &model, p);
    surface::reply(
        &st,
        plan,
        &input.options,
        stream,
        surface::render(converter),
        whole,
    )
    .await
}

/// The chat request, whether to stream, and the estimated input tokens.
fn decode(m: &Map<String, Value>) -> Result<(Input, bool, u64), ApiError> {
    let model = string_field(m, "model", GO_TYPE)?;
    let max_tokens = match m.get("max_tokens") {
        None | Some(Value::Null) => 0,
        Some(Value::Number(n)) => n.as_i64().ok_or_else(|| {
            ApiError::new(400, format!("json: cannot unmarshal number {n} into Go struct field {GO_TYPE}.max_tokens of type int"))
        })?,
        Some(v) => {
            return Err(ApiError::new(400, format!("json: cannot unmarshal {} into Go struct field {GO_TYPE}.max_tokens of type int", json_kind(v))));
        }
    };
    let params = match m.get("messages") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a.iter().map(param).collect::<Result<_, _>>()?,
        Some(v) => {
            return Err(ApiError::new(
                400,
                format!(
                    "json: cannot unmarshal {} into Go struct field {GO_TYPE}.messages of type []anthropic.MessageParam",
                    json_kind(v)
                ),
            ));
        }
    };
    if model.is_empty() {
        return Err(ApiError::new(400, "model is required"));
    }
    if max_tokens <= 0 {
        return Err(ApiError::new(
            400,
            "max_tokens is required and must be positive",
        ));
    }
    if params.is_empty() {
        return Err(ApiError::new(400, "messages is required"));
    }
    let mut messages = Vec::new();
    let system = match m.get("system") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect(),
        _ => String::new(),
    };
    if !system.is_empty() {
        messages.push(json!({ "role": "system", "content": system }));
    }
    for (role, blocks) in &params {
        convert(role, blocks, &mut messages)?;
    }
    let mut options = Map::new();
    options.insert("num_predict".into(), json!(max_tokens));
    for (from, to) in [
        ("temperature", "temperature"),
        ("top_p", "top_p"),
        ("top_k", "top_k"),
    ] {
        if let Some(v) = m.get(from).filter(|v| v.is_number()) {
            options.insert(to.into(), v.clone());
        }
    }
    if let Some(stop) = m
        .get("stop_sequences")
        .and_then(Value::as_array)
        .filter(|s| !s.is_empty())
    {
        options.insert("stop".into(), json!(stop));
    }
    let declared = m
        .get("tools")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let estimate = tokens::estimate(m.get("system"), &params, &declared);
    let think = match m
        .get("thinking")
        .and_then(|t| t.get("type"))
        .and_then(Value::as_str)
    {
        Some("enabled") => Some(json!(true)),
        Some("disabled") => Some(json!(false)),
        _ => {
            let effort = m.get("output_config").and_then(|c| c.get("effort"));
            match effort
                .and_then(Value::as_str)
                .map(|e| e.trim().to_lowercase())
                .as_deref()
            {
                Some("xhigh") => Some(json!("high")),
                Some(e @ ("high" | "medium" | "low" | "max")) => Some(json!(e)),
                _ => None,
            }
        }
    };
    let input = Input {
        model,
        messages: Some(messages),
        tools: tools(&declared)?,
        think,
        options,
        raw: Value::Object(m.clone()),
        ..Input::default()
    };
    let stream = m.get("stream").and_then(Value::as_bool).unwrap_or(false);
    Ok((input, stream, estimate))
}

/// A message as `MessageParam.UnmarshalJSON` decodes it: its role and content blocks (a
/// string is one text block).
fn param(v: &Value) -> Result<(String, Vec<Value>), ApiError> {
    let Value::Object(m) = v else {
        return Err(ApiError::new(
            400,
            format!(
                "json: cannot unmarshal {} into Go value of type struct {{ Role string \"json:\\\"role\\\"\"; Content json.RawMessage \"json:\\\"content\\\"\" }}",
                json_kind(v)
            ),
        ));
    };
    let role = m
        .get("role")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let blocks = match m.get("content") {
        None => return Err(ApiError::new(400, "unexpected end of JSON input")),
        Some(Value::Null) => vec![json!({ "type": "text", "text": "" })],
        Some(Value::String(s)) => vec![json!({ "type": "text", "text": s })],
        Some(Value::Array(blocks)) => blocks.clone(),
        Some(v) => {
            return Err(ApiError::new(
                400,
                format!(
                    "json: cannot unmarshal {} into Go value of type []anthropic.ContentBlock",
                    json_kind(v)
                ),
            ));
        }
    };
    Ok((role, blocks))
}

/// `convertMessage`: a message's blocks as chat messages (tool results first for a user).
fn convert(role: &str, blocks: &[Value], out: &mut Vec<Value>) -> Result<(), ApiError> {
    let role = role.to_lowercase();
    let (mut text, mut images, mut calls, mut thinking, mut results) =
        (String::new(), 0, Vec::new(), String::new(), Vec::new());
    for b in blocks {
        let field = |k: &str| b.get(k).and_then(Value::as_str).unwrap_or("");
        let call = || {
            json!({ "id": field("id"), "function": { "index": 0, "name": field("name"),
            "arguments": b.get("input").filter(|i| i.is_object()).cloned().unwrap_or(json!({})) } })
        };
        match field("type") {
            "text" => text.push_str(field("text")),
            "image" => {
                let source = b.get("source").filter(|s| s.is_object());
                let kind = source.and_then(|s| s.get("type")).and_then(Value::as_str);
                match (source, kind) {
                    (None, _) => return Err(ApiError::new(400, "invalid image source")),
                    (Some(_), Some("base64")) => images += 1,
                    (Some(_), k) => {
                        return Err(ApiError::new(
                            400,
                            format!(
                                "invalid image source type: {}. Only base64 images are supported.",
                                k.unwrap_or("")
                            ),
                        ));
                    }
                }
            }
            "tool_use" if field("id").is_empty() => {
                return Err(ApiError::new(
                    400,
                    "tool_use block missing required 'id' field",
                ));
            }
            "tool_use" if field("name").is_empty() => {
                return Err(ApiError::new(
                    400,
                    "tool_use block missing required 'name' field",
                ));
            }
            "tool_use" | "server_tool_use" => calls.push(call()),
            "tool_result" | "web_search_tool_result" => {
                let content = match b.get("content") {
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Array(parts)) => parts
                        .iter()
                        .filter(|p| p["type"] == "text")
                        .filter_map(|p| p["text"].as_str())
                        .collect(),
                    _ => String::new(),
                };
                results.push(json!({ "role": "tool", "content": content,
                    "tool_call_id": field("tool_use_id") }));
            }
            "thinking" => thinking = field("thinking").to_owned(),
            _ => {}
        }
    }
    let user_results = role == "user" && !results.is_empty();
    if user_results {
        out.append(&mut results);
    }
    if !text.is_empty() || images > 0 || !calls.is_empty() || !thinking.is_empty() {
        let mut msg = json!({ "role": role, "content": text });
        if !thinking.is_empty() {
            msg["thinking"] = json!(thinking);
        }
        if !calls.is_empty() {
            msg["tool_calls"] = json!(calls);
        }
        out.push(msg);
    }
    out.append(&mut results);
    Ok(())
}

/// `convertTool` for every declared tool; a built-in `web_search_*` tool becomes Ollama's
/// search function and hides a declared function of that name.
fn tools(declared: &[Value]) -> Result<Vec<Value>, ApiError> {
    let builtin = |t: &Value| {
        t["type"]
            .as_str()
            .is_some_and(|k| k.starts_with("web_search"))
    };
    let web_search = declared.iter().any(builtin);
    let mut out = Vec::new();
    for t in declared {
        let name = t.get("name").and_then(Value::as_str).unwrap_or("");
        if builtin(t) {
            out.push(json!({ "type": "function", "function": { "name": "web_search",
                "description": "Search the web for current information. Use this to find up-to-date information about any topic.",
                "parameters": { "type": "object", "required": ["query"], "properties": {
                    "query": { "type": "string", "description": "The search query to look up on the web" } } } } }));
            continue;
        }
        if web_search && name == "web_search" {
            continue;
        }
        let description = t.get("description").and_then(Value::as_str).unwrap_or("");
        let mut function = json!({ "name": name, "description": description });
        match t.get("input_schema") {
            None | Some(Value::Null) => {}
            Some(s @ Value::Object(_)) => function["parameters"] = s.clone(),
            Some(s) => {
                return Err(ApiError::new(
                    400,
                    format!(
                        "invalid input_schema for tool {}: json: cannot unmarshal {} into Go value of type api.ToolFunctionParameters",
                        go_quote(name),
                        json_kind(s)
                    ),
                ));
            }
        }
        out.push(json!({ "type": "function", "function": function }));
    }
    Ok(out)
}
