//! Ollama's estimate of a request's input tokens (`EstimateInputTokens`),
//! which `message_start` reports when the first chunk carries no
//! `prompt_eval_count`: the bytes of the system prompt, of each message's
//! role and content (text, thinking, and whole `tool_use` / `tool_result`
//! blocks as JSON), and of each tool's name, description and schema, over 4.

use serde_json::{Map, Value};

use super::decode;
use crate::wire::go;

/// The estimate for a request that decoded without error.
pub(super) fn input_tokens(req: &Map<String, Value>) -> u64 {
    let system = req.get("system").filter(|s| !s.is_null());
    let messages = req
        .get("messages")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut total = system.map_or(0, any_content);
    for m in messages {
        let role = m.get("role").and_then(Value::as_str).unwrap_or_default();
        total += role.len();
        total += match m.get("content") {
            Some(Value::String(s)) => s.len(),
            Some(Value::Array(blocks)) => blocks.iter().map(block).sum(),
            _ => 0,
        };
    }
    for tool in req
        .get("tools")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
    {
        let text = |k: &str| tool.get(k).and_then(Value::as_str).map_or(0, str::len);
        // The raw schema bytes as the client sent them; compact here.
        let schema = tool.get("input_schema").map_or(0, crate::wire::json_len);
        total += text("name") + text("description") + schema;
    }
    let tokens = (total / 4) as u64;
    if tokens == 0 && (!messages.is_empty() || system.is_some()) {
        1
    } else {
        tokens
    }
}

/// `countAnyContent` of the `system` value (Go's `any`).
fn any_content(v: &Value) -> usize {
    match v {
        Value::String(s) => s.len(),
        Value::Array(items) => items
            .iter()
            .filter(|item| decode::is_content_block(item))
            .map(block)
            .sum(),
        other => go::marshal_sorted(other).len(),
    }
}

/// `countContentBlock`.
fn block(b: &Value) -> usize {
    let Some(b) = b.as_object() else { return 0 };
    let text = |k: &str| b.get(k).and_then(Value::as_str).map_or(0, str::len);
    let mut total = text("text") + text("thinking");
    if matches!(
        b.get("type").and_then(Value::as_str),
        Some("tool_use" | "tool_result")
    ) {
        total += block_json(b).len();
    }
    total
}

/// `json.Marshal(ContentBlock)`: the struct's fields in order, empty ones
/// left out, unknown ones gone.
fn block_json(b: &Map<String, Value>) -> String {
    let string = |k: &str| b.get(k).and_then(Value::as_str);
    let mut out = Map::new();
    out.insert("type".into(), string("type").unwrap_or_default().into());
    if let Some(t) = string("text") {
        out.insert("text".into(), t.into());
    }
    if let Some(Value::Array(cs)) = b.get("citations")
        && !cs.is_empty()
    {
        let cs: Vec<Value> = cs.iter().map(citation).collect();
        out.insert("citations".into(), Value::Array(cs));
    }
    if let Some(Value::Object(src)) = b.get("source") {
        let mut s = Map::new();
        let field = |k: &str| src.get(k).and_then(Value::as_str).unwrap_or_default();
        s.insert("type".into(), field("type").into());
        for k in ["media_type", "data", "url"] {
            if !field(k).is_empty() {
                s.insert(k.into(), field(k).into());
            }
        }
        out.insert("source".into(), Value::Object(s));
    }
    for k in ["id", "name"] {
        if let Some(v) = string(k).filter(|v| !v.is_empty()) {
            out.insert(k.into(), v.into());
        }
    }
    if let Some(input) = b.get("input") {
        out.insert("input".into(), input.clone());
    }
    if let Some(id) = string("tool_use_id").filter(|v| !v.is_empty()) {
        out.insert("tool_use_id".into(), id.into());
    }
    let mut text = go::marshal(&Value::Object(out));
    // `content` is Go's `any`: its maps are written with sorted keys.
    let content = b.get("content").filter(|c| !c.is_null());
    let tail = [
        content.map(|c| ("content", go::marshal_sorted(c))),
        (b.get("is_error") == Some(&Value::Bool(true))).then(|| ("is_error", "true".into())),
        string("thinking").map(|t| ("thinking", go::marshal(&t.into()))),
        string("signature")
            .filter(|s| !s.is_empty())
            .map(|s| ("signature", go::marshal(&s.into()))),
    ];
    text.pop();
    for (k, v) in tail.into_iter().flatten() {
        text.push_str(&format!(",\"{k}\":{v}"));
    }
    text.push('}');
    text
}

fn citation(c: &Value) -> Value {
    let field = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or_default();
    let mut out = Map::new();
    for k in ["type", "url", "title"] {
        out.insert(k.into(), field(k).into());
    }
    for k in ["encrypted_index", "cited_text"] {
        if !field(k).is_empty() {
            out.insert(k.into(), field(k).into());
        }
    }
    Value::Object(out)
}

#[cfg(test)]
#[path = "estimate_tests.rs"]
mod tests;
