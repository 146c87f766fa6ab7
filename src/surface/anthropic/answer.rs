//! What a whole answer and a streamed one share: the answer's fixed
//! values ([`Meta`]), Ollama's `mapStopReason`, a tool call as a
//! `tool_use` block, and the fields read off an Ollama chunk.

use serde_json::{Map, Value, json};

use super::request::Translated;

/// Fixed values of one answer.
#[derive(Debug, Clone)]
pub(crate) struct Meta {
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
    pub(crate) fn new(t: &Translated) -> Self {
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

/// The string at `key` of `v`, or `""`.
pub(super) fn text_of<'a>(v: Option<&'a Value>, key: &str) -> &'a str {
    v.and_then(|v| v.get(key))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The count at `key` of `v` (a token count), or 0.
pub(super) fn count_of(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or_default()
}
