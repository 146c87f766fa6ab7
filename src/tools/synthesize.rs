//! Client-facing tool-call JSON: Ollama's `message.tool_calls`, OpenAI's
//! `tool_calls`, and the `/api/chat` stream chunk that carries calls.
//!
//! Ollama shape (v0.12.10+): `{"id":"call_xxxxxxxx","function":{"index":n,
//! "name":…,"arguments":{…}}}` — arguments an object, `index` inside
//! `function`, no `type`. OpenAI shape: `{"id","index","type":"function",
//! "function":{"name","arguments":"<JSON text>"}}`. Ids are `call_` plus 8
//! random `[a-z0-9]`, as Ollama generates them. Argument key order is kept.

use serde_json::{Value, json};

use super::call::ToolCall;

const ID_ALPHABET: &[u8; 36] = b"abcdefghijklmnopqrstuvwxyz0123456789";

/// A fresh call id: `call_` + 8 random `[a-z0-9]`.
pub(crate) fn new_call_id() -> String {
    let mut id = String::from("call_");
    while id.len() < 13 {
        for b in uuid::Uuid::new_v4().into_bytes() {
            // 252 = 7 * 36: reject the tail so every character is equally likely.
            if b < 252 && id.len() < 13 {
                id.push(char::from(ID_ALPHABET[usize::from(b % 36)]));
            }
        }
    }
    id
}

/// Ollama `message.tool_calls` for `calls`; `function.index` counts from
/// `start_index` (the number of calls already sent in this response).
pub fn ollama_tool_calls(calls: &[ToolCall], start_index: usize) -> Value {
    Value::Array(
        calls
            .iter()
            .enumerate()
            .map(|(i, c)| {
                json!({
                    "id": new_call_id(),
                    "function": {
                        "index": start_index + i,
                        "name": c.name,
                        "arguments": c.arguments,
                    }
                })
            })
            .collect(),
    )
}

#[cfg(test)]
#[path = "synthesize_tests.rs"]
mod tests;
