//! Ollama chat answers → Anthropic `message` objects and SSE event streams,
//! as Ollama's Anthropic layer writes them (`ToMessagesResponse`,
//! `mapStopReason`, `StreamConverter.Process`, `writeSSE`).
//!
//! Field presence follows Ollama's Go structs: `stop_reason` is left out
//! when empty and `stop_sequence` always (Ollama never sets it); an answer
//! with no block at all has `"content": null`.

use axum::response::Response;
use serde_json::{Map, Value, json};

use crate::{
    pipeline::output::Output,
    surface::{json_answer, sse_answer},
};

use super::{go, request::Translated, stream};

/// Fixed values of one answer.
#[derive(Debug, Clone)]
pub struct Meta {
    /// `msg_` and 24 hex digits, as Ollama's `GenerateMessageID`.
    pub id: String,
    /// The model as the client named it (`message_start` carries it).
    pub model: String,
    /// Reported by `message_start` when the first chunk has no
    /// `prompt_eval_count`.
    pub estimated_input_tokens: u64,
    /// False when the client turned thinking off: any thinking the
    /// pipeline still produced is dropped (Ollama's model would have
    /// produced none).
    pub show_thinking: bool,
}

impl Meta {
    /// A fresh message id for a translated request.
    pub fn new(t: &Translated) -> Self {
        Self {
            id: message_id(),
            model: t.model.clone(),
            estimated_input_tokens: t.estimated_input_tokens,
            show_thinking: !t.thinking_off,
        }
    }
}

/// `msg_` + 12 random bytes in hex.
pub(crate) fn message_id() -> String {
    let bytes = *uuid::Uuid::new_v4().as_bytes();
    // Bytes 6 and 8 carry the UUID version and variant: leave them out.
    let random = bytes[..6].iter().chain(&bytes[10..]);
    let hex: String = random.map(|b| format!("{b:02x}")).collect();
    format!("msg_{hex}")
}

/// `mapStopReason`: any tool call ⇒ `tool_use`; `stop` ⇒ `end_turn`;
/// `length` ⇒ `max_tokens`; another reason ⇒ `stop_sequence`; none ⇒ "".
pub(crate) fn stop_reason(done_reason: &str, has_tool_calls: bool) -> &'static str {
    if has_tool_calls {
        return "tool_use";
    }
    match done_reason {
        "stop" => "end_turn",
        "length" => "max_tokens",
        "" => "",
        _ => "stop_sequence",
    }
}

/// An Ollama `tool_calls` entry as a `tool_use` block (`id`, `name`
/// omitted when empty, `input` when the call has no `arguments`).
pub(super) fn tool_use_block(call: &Value, input: Option<Value>) -> Value {
    let function = call.get("function");
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_string();
    let id = text(call.get("id"));
    let name = text(function.and_then(|f| f.get("name")));
    let mut block = Map::new();
    block.insert("type".into(), json!("tool_use"));
    if !id.is_empty() {
        block.insert("id".into(), json!(id));
    }
    if !name.is_empty() {
        block.insert("name".into(), json!(name));
    }
    if let Some(input) = input {
        block.insert("input".into(), input);
    }
    Value::Object(block)
}

pub(super) fn text_of<'a>(v: Option<&'a Value>, key: &str) -> &'a str {
    v.and_then(|v| v.get(key))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

pub(super) fn count_of(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or_default()
}

/// A whole Ollama chat response as an Anthropic `message`.
pub(crate) fn message(meta: &Meta, v: &Value) -> Value {
    let msg = v.get("message");
    let mut content = Vec::new();
    let thinking = text_of(msg, "thinking");
    if meta.show_thinking && !thinking.is_empty() {
        content.push(json!({"type": "thinking", "thinking": thinking}));
    }
    let text = text_of(msg, "content");
    if !text.is_empty() {
        content.push(json!({"type": "text", "text": text}));
    }
    let calls = msg
        .and_then(|m| m.get("tool_calls"))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for call in calls {
        let arguments = call.get("function").and_then(|f| f.get("arguments"));
        content.push(tool_use_block(call, arguments.cloned()));
    }
    let mut out = Map::new();
    out.insert("id".into(), json!(meta.id));
    out.insert("type".into(), json!("message"));
    out.insert("role".into(), json!("assistant"));
    out.insert("model".into(), json!(text_of(Some(v), "model")));
    out.insert(
        "content".into(),
        if content.is_empty() {
            Value::Null
        } else {
            Value::Array(content)
        },
    );
    let reason = stop_reason(text_of(Some(v), "done_reason"), !calls.is_empty());
    if !reason.is_empty() {
        out.insert("stop_reason".into(), json!(reason));
    }
    out.insert(
        "usage".into(),
        json!({
            "input_tokens": count_of(v, "prompt_eval_count"),
            "output_tokens": count_of(v, "eval_count"),
        }),
    );
    Value::Object(out)
}

/// Render an Ollama-shaped [`Output`] as Anthropic's answer: one JSON
/// object, or SSE events written as each chunk arrives. The output's
/// headers (`X-Augur-*`) are passed on.
pub fn render(meta: Meta, output: Output) -> Response {
    match output {
        Output::Full { value, headers } => {
            json_answer(go::marshal(&message(&meta, &value)), headers)
        }
        Output::Stream { rx, headers } => sse_answer(stream::body(meta, rx), true, headers),
    }
}
