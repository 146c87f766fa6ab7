//! The Responses API's response object as Ollama's `ToResponse` writes it for a whole answer
//! (Go struct field order), and the pieces it shares with the stream's objects.
//!
//! Ids: `resp_N`, `msg_N`, `rs_N`, `fc_N_i` with `N` below 999999; a whole answer names its
//! reasoning item `rs_<response id>` and its calls `fc_<response id>_<i>`. The status is always
//! `completed` (Ollama reports no `incomplete_details`, even when `max_output_tokens` cut the
//! answer), and usage's token details are always 0.

use serde_json::{Value, json};

use crate::plan::Plan;
use crate::surface::{encoded, go_any, go_float, go_map, unix_now};
use crate::wire::go_json;

/// What the response object echoes of the request.
#[derive(Debug, Default)]
pub struct Echo {
    pub model: String,
    pub instructions: String,
    pub stream: bool,
    pub truncation: Option<String>,
    /// The declared tools as received.
    pub tools: Vec<Value>,
    /// `text.format` as received.
    pub text_format: Option<Value>,
    pub effort: String,
    pub summary: String,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub max_output_tokens: Option<i64>,
    pub background: bool,
}

/// A response's ids.
#[derive(Clone)]
pub struct Ids {
    pub response: String,
    pub item: String,
}

pub(super) fn n() -> u32 {
    fastrand::u32(0..999_999)
}

impl Ids {
    pub fn new() -> Self {
        Ids {
            response: format!("resp_{}", n()),
            item: format!("msg_{}", n()),
        }
    }
}

/// A tool call's arguments as the string `ToToolCalls` makes of them.
pub(super) fn arguments(call: &Value) -> String {
    String::from_utf8_lossy(&go_json(&call["function"]["arguments"])).into_owned()
}

pub(super) fn text_part(text: &str) -> Value {
    json!({ "type": "output_text", "text": text, "annotations": [], "logprobs": [] })
}

pub(super) fn usage(p: &Plan) -> Value {
    let (input, output) = p.usage();
    json!({ "input_tokens": input, "output_tokens": output, "total_tokens": input + output,
        "input_tokens_details": { "cached_tokens": 0 },
        "output_tokens_details": { "reasoning_tokens": 0 } })
}

pub(super) fn opt<T: Into<Value>>(v: Option<T>) -> Value {
    v.map_or(Value::Null, Into::into)
}

/// A declared tool as the Go struct `ResponsesTool` marshals it (`whole`) or as the stream's
/// response object lists it (a map without the namespace members).
pub(super) fn tool(t: &Value, whole: bool) -> Value {
    let field = |k: &str| t.get(k).cloned().unwrap_or(Value::Null);
    let string = |k: &str| t.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    let parameters = match t.get("parameters") {
        Some(p @ Value::Object(_)) => go_map(go_any(p.clone())),
        _ => Value::Null,
    };
    let description = Some(field("description")).filter(Value::is_string);
    let strict = Some(field("strict")).filter(Value::is_boolean);
    let mut v = json!({ "type": string("type"), "name": string("name"),
        "description": opt(description), "strict": opt(strict), "parameters": parameters });
    let members = t
        .get("tools")
        .and_then(Value::as_array)
        .filter(|m| !m.is_empty());
    if let (true, Some(members)) = (whole, members) {
        v["tools"] = Value::Array(members.iter().map(|m| tool(m, true)).collect());
    }
    if whole { v } else { go_map(v) }
}

/// `text.format` as the Go struct `ResponsesTextFormat` marshals it, or as the stream's map.
pub(super) fn text_format(echo: &Echo) -> Value {
    let Some(f) = &echo.text_format else {
        return json!({ "type": "text" });
    };
    let mut v = json!({ "type": f.get("type").and_then(Value::as_str).unwrap_or("") });
    if let Some(name) = f
        .get("name")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    {
        v["name"] = json!(name);
    }
    if let Some(schema) = f.get("schema") {
        v["schema"] = schema.clone();
    }
    if let Some(strict) = f.get("strict").filter(|s| s.is_boolean()) {
        v["strict"] = strict.clone();
    }
    v
}

/// The response object of a whole (non-streamed) answer.
pub fn whole(echo: &Echo, ids: &Ids, p: &Plan) -> Vec<u8> {
    let mut output = Vec::new();
    let thinking = p.thinking();
    if !thinking.is_empty() {
        output.push(json!({ "id": format!("rs_{}", ids.response), "type": "reasoning",
            "summary": [{ "type": "summary_text", "text": thinking }], "encrypted_content": thinking }));
    }
    for (i, call) in p.tool_calls.iter().enumerate() {
        output.push(
            json!({ "id": format!("fc_{}_{i}", ids.response), "type": "function_call",
            "status": "completed", "call_id": call["id"], "name": call["function"]["name"],
            "arguments": arguments(call) }),
        );
    }
    if p.tool_calls.is_empty() {
        output.push(
            json!({ "id": ids.item, "type": "message", "status": "completed",
            "role": "assistant", "content": [text_part(&p.content())] }),
        );
    }
    let mut reasoning = Value::Null;
    if !echo.effort.is_empty() || !echo.summary.is_empty() {
        reasoning = json!({});
        if !echo.effort.is_empty() {
            reasoning["effort"] = json!(echo.effort);
        }
        if !echo.summary.is_empty() {
            reasoning["summary"] = json!(echo.summary);
        }
    }
    let instructions = Some(&echo.instructions).filter(|s| !s.is_empty());
    let now = unix_now();
    let v = json!({
        "id": ids.response, "object": "response", "created_at": now, "completed_at": now,
        "status": "completed", "incomplete_details": null, "model": echo.model,
        "previous_response_id": null, "instructions": opt(instructions.cloned()),
        "output": output, "error": null,
        "tools": echo.tools.iter().map(|t| tool(t, true)).collect::<Vec<_>>(),
        "tool_choice": "auto", "truncation": echo.truncation.as_deref().unwrap_or("disabled"),
        "parallel_tool_calls": true, "text": { "format": text_format(echo) },
        "top_p": go_float(echo.top_p.unwrap_or(1.0)), "presence_penalty": 0,
        "frequency_penalty": 0, "top_logprobs": 0,
        "temperature": go_float(echo.temperature.unwrap_or(1.0)), "reasoning": reasoning,
        "usage": usage(p), "max_output_tokens": opt(echo.max_output_tokens),
        "max_tool_calls": null, "store": false, "background": echo.background,
        "service_tier": "default", "metadata": {}, "safety_identifier": null,
        "prompt_cache_key": null,
    });
    encoded(&v)
}
