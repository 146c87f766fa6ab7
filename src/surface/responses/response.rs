//! Ollama chat answers → a whole Responses API `response` object, as
//! Ollama's layer writes it (`ToResponse`); the SSE events of a stream are
//! the `stream` module's.

use serde_json::{Value, json};

use super::{
    answer::{Meta, calls, count, text},
    echo::{self, State},
};
use crate::wire::go;

/// A whole Ollama chat answer as a `response` object (`ToResponse`, with
/// `completed_at` set to `now` as Ollama's writer does).
pub(crate) fn whole(meta: &Meta, v: &Value, now: i64) -> Value {
    let message = v.get("message");
    let mut output = Vec::new();
    let thinking = text(message, "thinking");
    if !thinking.is_empty() {
        output.push(json!({
            "id": format!("rs_{}", meta.response_id),
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": thinking}],
            "encrypted_content": thinking,
        }));
    }
    let calls = message.map(calls).unwrap_or_default();
    if calls.is_empty() {
        output.push(json!({
            "id": meta.item_id,
            "type": "message",
            "status": "completed",
            "role": "assistant",
            "content": [{
                "type": "output_text",
                "text": text(message, "content"),
                "annotations": [],
                "logprobs": [],
            }],
        }));
    }
    for (i, c) in calls.into_iter().enumerate() {
        output.push(json!({
            "id": format!("fc_{}_{i}", meta.response_id),
            "type": "function_call",
            "status": "completed",
            "call_id": c.call_id,
            "name": c.name,
            "arguments": c.arguments,
        }));
    }
    let created_at = v
        .get("created_at")
        .and_then(Value::as_str)
        .and_then(go::unix_seconds)
        .unwrap_or(now);
    meta.echo.whole(State {
        id: &meta.response_id,
        model: &meta.model,
        status: "completed",
        created_at,
        completed_at: Some(now),
        output,
        usage: Some(echo::usage(
            count(v, "prompt_eval_count"),
            count(v, "eval_count"),
            false,
        )),
    })
}

#[cfg(test)]
mod tests;
