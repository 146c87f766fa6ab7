//! OpenAI's Responses API (`POST /v1/responses`) as Ollama's `ResponsesMiddleware` serves it:
//! the request is decoded and converted to a chat request (`FromResponsesRequest`: the
//! instructions become a system message, the input a user message or a history of messages,
//! function calls and their outputs; `reasoning.effort` becomes `think`, `max_output_tokens`
//! `num_predict`, a `json_schema` text format the `format`), the chat handler answers, and the
//! answer is written as a response object ([`render`]) or as its stream of events. Errors take
//! the OpenAI error shape.
//!
//! A built-in `web_search` tool is declared to the model as Ollama declares it, but the fake
//! runs no search: a call of it comes back as an ordinary function call.

mod render;
mod stream;

use std::sync::Arc;

use axum::extract::State;
use axum::response::Response;
use bytes::Bytes;
use serde_json::{Map, Value, json};

use crate::Shared;
use crate::plan::{self, Input};
use crate::surface::{self, Raised, json_kind, string_field};
use crate::wire::{self, ApiError, go_quote};

use render::{Echo, Ids};

const GO_TYPE: &str = "ResponsesRequest";

/// The OpenAI error object for `e`.
fn error(e: &ApiError, raised: Raised) -> Response {
    let kind = match e.status {
        400 => "invalid_request_error",
        404 => "not_found_error",
        _ => "api_error",
    };
    let body = json!({ "error": { "message": e.msg, "type": kind, "param": null, "code": null } });
    surface::error_response(e.status, &body, raised)
}

pub async fn create(State(st): State<Arc<Shared>>, body: Bytes) -> Response {
    let decoded = surface::parse(&body, "openai.ResponsesRequest").and_then(|m| decode(&m));
    let (input, echo) = match decoded {
        Ok(x) => x,
        Err(e) => return error(&e, Raised::Middleware),
    };
    let stream = echo.stream;
    let plan = match surface::planned(&st, &input) {
        Ok(p) => p,
        Err(e) => return error(&e, Raised::Handler { stream }),
    };
    let echo = Arc::new(echo);
    let ids = Ids::new();
    let render = surface::render(stream::Stream::new(echo.clone(), ids.clone()));
    let whole = move |p: &plan::Plan| render::whole(&echo, &ids, p);
    surface::reply(&st, plan, &input.options, stream, render, whole).await
}

/// The request as `FromResponsesRequest` converts it, and what the response echoes of it.
fn decode(m: &Map<String, Value>) -> Result<(Input, Echo), ApiError> {
    let model = string_field(m, "model", GO_TYPE)?;
    let instructions = string_field(m, "instructions", GO_TYPE)?;
    let mut messages = Vec::new();
    if !instructions.is_empty() {
        messages.push(json!({ "role": "system", "content": instructions }));
    }
    match m.get("input") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if s.is_empty() => {}
        Some(Value::String(s)) => messages.push(json!({ "role": "user", "content": s })),
        Some(Value::Array(items)) => history(items, &mut messages)?,
        Some(v) => {
            return Err(ApiError::new(
                400,
                format!(
                    "input must be a string or array: json: cannot unmarshal {} into Go value of type []json.RawMessage",
                    json_kind(v)
                ),
            ));
        }
    }
    let float = |k: &str| m.get(k).and_then(Value::as_f64);
    let mut options = Map::new();
    options.insert(
        "temperature".into(),
        json!(float("temperature").unwrap_or(1.0)),
    );
    if let Some(p) = float("top_p") {
        options.insert("top_p".into(), json!(p));
    }
    let max_output_tokens = m.get("max_output_tokens").and_then(Value::as_i64);
    if let Some(n) = max_output_tokens {
        options.insert("num_predict".into(), json!(n));
    }
    let reasoning = |k: &str| {
        let v = m.get("reasoning").and_then(|r| r.get(k));
        v.and_then(Value::as_str).unwrap_or("").to_owned()
    };
    let effort = reasoning("effort");
    let think = match effort.as_str() {
        "" => None,
        "none" => Some(json!(false)),
        "minimal" => Some(json!("low")),
        "low" | "medium" | "high" | "max" => Some(json!(effort)),
        "xhigh" | "ultra" => Some(json!("max")),
        other => {
            return Err(ApiError::new(
                400,
                format!(
                    "invalid reasoning value: {} (must be \"minimal\", \"low\", \"medium\", \"high\", \"xhigh\", \"ultra\", \"max\", or \"none\")",
                    go_quote(other)
                ),
            ));
        }
    };
    let declared: Vec<Value> = m
        .get("tools")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let text_format = m
        .get("text")
        .and_then(|t| t.get("format"))
        .filter(|f| f.is_object())
        .cloned();
    let format = text_format
        .as_ref()
        .filter(|f| f.get("type").and_then(Value::as_str) == Some("json_schema"))
        .and_then(|f| f.get("schema").cloned());
    let input = Input {
        model: model.clone(),
        messages: Some(messages),
        tools: tools(&declared),
        format,
        think,
        options,
        raw: Value::Object(m.clone()),
        ..Input::default()
    };
    let echo = Echo {
        model,
        instructions,
        stream: m.get("stream").and_then(Value::as_bool).unwrap_or(false),
        truncation: m
            .get("truncation")
            .and_then(Value::as_str)
            .map(str::to_owned),
        tools: declared,
        text_format,
        effort,
        summary: reasoning("summary"),
        temperature: float("temperature"),
        top_p: float("top_p"),
        max_output_tokens,
        background: m
            .get("background")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    };
    Ok((input, echo))
}

/// What `ResponsesInput.UnmarshalJSON` rejects in an input array (`input[i]: …`).
fn check(items: &[Value]) -> Result<(), ApiError> {
    for (i, item) in items.iter().enumerate() {
        let fail = |msg: String| Err(ApiError::new(400, format!("input[{i}]: {msg}")));
        let Value::Object(item) = item else {
            return fail(format!(
                "json: cannot unmarshal {} into Go value of type struct {{ Type string \"json:\\\"type\\\"\"; Role string \"json:\\\"role\\\"\" }}",
                json_kind(item)
            ));
        };
        let field = |k: &str| item.get(k).and_then(Value::as_str).unwrap_or("");
        let (parts, label) = match (field("type"), field("role")) {
            ("", "") => return fail("input item missing required 'type' field".into()),
            ("" | "message", _) => (item.get("content"), "content"),
            ("function_call_output", _) => (item.get("output"), "output"),
            ("function_call" | "reasoning" | "web_search_call", _) => continue,
            (other, _) => return fail(format!("unknown input item type: {}", go_quote(other))),
        };
        let parts = match parts {
            None | Some(Value::Null | Value::String(_)) => continue,
            Some(Value::Array(parts)) => parts,
            Some(v) => {
                return fail(format!(
                    "{label} must be a string or array: json: cannot unmarshal {} into Go value of type []json.RawMessage",
                    json_kind(v)
                ));
            }
        };
        for (j, part) in parts.iter().enumerate() {
            let kind = part.get("type").and_then(Value::as_str).unwrap_or("");
            if !["input_text", "input_image", "output_text", "input_file"].contains(&kind) {
                return fail(format!("{label}[{j}]: unknown content type: {kind}"));
            }
        }
    }
    Ok(())
}

/// An input array as chat messages (what the chat planning reads of them: roles and text).
fn history(items: &[Value], out: &mut Vec<Value>) -> Result<(), ApiError> {
    check(items)?;
    let mut thinking = String::new();
    for item in items {
        let field = |k: &str| item.get(k).and_then(Value::as_str).unwrap_or("");
        match field("type") {
            "" | "message" => {
                let mut msg =
                    json!({ "role": field("role"), "content": text(item.get("content"))? });
                if field("role") == "assistant" && !thinking.is_empty() {
                    msg["thinking"] = json!(std::mem::take(&mut thinking));
                }
                out.push(msg);
            }
            "function_call" => {
                let call = json!({ "id": field("call_id"), "function": { "index": 0,
                    "name": field("name"), "arguments": arguments(field("arguments"))? } });
                match out.last_mut().and_then(Value::as_object_mut) {
                    Some(last) if last["role"] == "assistant" => {
                        let calls = last.entry("tool_calls").or_insert_with(|| json!([]));
                        if let Some(calls) = calls.as_array_mut() {
                            calls.push(call);
                        }
                    }
                    _ => out
                        .push(json!({ "role": "assistant", "content": "", "tool_calls": [call] })),
                }
            }
            "function_call_output" => out.push(json!({ "role": "tool",
                "content": text(item.get("output"))?, "tool_call_id": field("call_id") })),
            "reasoning" => thinking = field("encrypted_content").to_owned(),
            _ => {}
        }
    }
    if !thinking.is_empty() {
        out.push(json!({ "role": "assistant", "content": "", "thinking": thinking }));
    }
    Ok(())
}

/// A function call's arguments as `FromResponsesRequest` parses them.
fn arguments(args: &str) -> Result<Value, ApiError> {
    if args.is_empty() {
        return Ok(json!({}));
    }
    serde_json::from_str(args).map_err(|e| {
        let why = match wire::parse_json(args.as_bytes(), "") {
            _ if e.is_eof() => "unexpected end of JSON input".to_owned(),
            Err(parsed) => parsed.msg,
            Ok(_) => e.to_string(),
        };
        ApiError::new(
            400,
            format!("failed to parse function call arguments: {why}"),
        )
    })
}

/// The text of a message's content or a call's output (a string, or `input_text` and
/// `output_text` items), with the conversion errors of the other items.
fn text(content: Option<&Value>) -> Result<String, ApiError> {
    let parts = match content {
        Some(Value::String(s)) => return Ok(s.clone()),
        Some(Value::Array(parts)) => parts,
        _ => return Ok(String::new()),
    };
    let mut text = String::new();
    for part in parts {
        let field = |k: &str| part.get(k).and_then(Value::as_str).unwrap_or("");
        match field("type") {
            "input_text" | "output_text" => text.push_str(field("text")),
            "input_image" => image(field("image_url")).map_err(|e| ApiError::new(400, e))?,
            "input_file" => {
                return Err(ApiError::new(
                    400,
                    "file inputs are not currently supported",
                ));
            }
            _ => {}
        }
    }
    Ok(text)
}

/// The checks `decodeImageURL` makes of an image URL (an empty one is skipped).
fn image(url: &str) -> Result<(), String> {
    if url.is_empty() {
        return Ok(());
    }
    if url.starts_with("http://") || url.starts_with("https://") {
        return Err(
            "image URLs are not currently supported, please use base64 encoded data instead".into(),
        );
    }
    let data = [
        "data:;base64,",
        "data:image/jpeg;base64,",
        "data:image/jpg;base64,",
    ]
    .into_iter()
    .chain(["data:image/png;base64,", "data:image/webp;base64,"])
    .find_map(|p| url.strip_prefix(p));
    match data {
        Some(d)
            if d.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"+/=".contains(&b)) =>
        {
            Ok(())
        }
        _ => Err("invalid image input".into()),
    }
}

/// Declared tools as chat tools: `web_search` becomes Ollama's private search function (and
/// hides a declared function of that name), a `namespace` its members with qualified names.
fn tools(declared: &[Value]) -> Vec<Value> {
    let web_search = declared.iter().any(|t| t["type"] == "web_search");
    let mut out = Vec::new();
    for t in declared {
        if t["type"] == "web_search" {
            out.push(json!({ "type": "function", "function": { "name": "web_search",
                "description": "Search the web for current information.",
                "parameters": { "type": "object", "required": ["query"],
                    "properties": { "query": { "type": "string", "description": "The search query." } } } } }));
            continue;
        }
        for tool in expand(t) {
            if !(web_search && tool["function"]["name"] == "web_search") {
                out.push(tool);
            }
        }
    }
    out
}

fn expand(t: &Value) -> Vec<Value> {
    let name = t.get("name").and_then(Value::as_str).unwrap_or("");
    if t["type"] != "namespace" {
        let description = t.get("description").and_then(Value::as_str).unwrap_or("");
        let mut function = json!({ "name": name, "description": description });
        if let Some(p) = t.get("parameters").filter(|p| p.is_object()) {
            function["parameters"] = p.clone();
        }
        let kind = t.get("type").cloned().unwrap_or(json!(""));
        return vec![json!({ "type": kind, "function": function })];
    }
    let members = t.get("tools").and_then(Value::as_array);
    let mut out: Vec<Value> = members.into_iter().flatten().flat_map(expand).collect();
    if !name.is_empty() {
        let prefix = format!("{name}.");
        for tool in &mut out {
            let f = tool["function"]["name"].as_str().unwrap_or("");
            if !f.starts_with(&prefix) {
                tool["function"]["name"] = json!(format!("{prefix}{f}"));
            }
        }
    }
    out
}
