//! Ollama chat answers → Anthropic `message` objects, as Ollama's
//! Anthropic layer writes them (`ToMessagesResponse`, `mapStopReason`).
//!
//! Field presence follows Ollama's Go structs: `stop_reason` is left out
//! when empty and `stop_sequence` always (Ollama never sets it); an answer
//! with no block at all has `"content": null`.

use serde_json::{Map, Value, json};

use super::answer::{Meta, count_of, stop_reason, text_of, tool_use_block};

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
