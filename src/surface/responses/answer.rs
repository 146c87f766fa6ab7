//! What a whole answer and a streamed one share: the answer's fixed
//! values ([`Meta`]), Ollama's random ids, the clock, an Ollama message's
//! function calls, and the fields read off an Ollama chunk.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;

use super::{echo::Echo, request::Translated};

/// Fixed values of one answer.
#[derive(Debug, Clone)]
pub(crate) struct Meta {
    /// `resp_…`.
    pub response_id: String,
    /// `msg_…`: the id of the answer's message item.
    pub item_id: String,
    /// The model as the client named it.
    pub model: String,
    /// The request fields the response object echoes.
    pub echo: Arc<Echo>,
}

/// A number below 999999, as Ollama's ids use (`rand.Intn(999999)`).
pub(super) fn random_id_number() -> u128 {
    uuid::Uuid::new_v4().as_u128() % 999_999
}

/// Seconds since the Unix epoch.
pub(super) fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

impl Meta {
    /// New ids for an answer to `translated`.
    pub(crate) fn new(translated: &Translated) -> Self {
        Self {
            response_id: format!("resp_{}", random_id_number()),
            item_id: format!("msg_{}", random_id_number()),
            model: translated.model.clone(),
            echo: Arc::clone(&translated.echo),
        }
    }
}

/// A function call of an Ollama message, as `ToToolCalls` gives it.
pub(super) struct Call {
    pub call_id: String,
    pub name: String,
    /// The arguments as a JSON string.
    pub arguments: String,
}

/// The `tool_calls` of an Ollama message.
pub(super) fn calls(message: &Value) -> Vec<Call> {
    let Some(raw) = message.get("tool_calls").and_then(Value::as_array) else {
        return Vec::new();
    };
    raw.iter()
        .map(|c| {
            let f = c.get("function");
            let arguments = match f.and_then(|f| f.get("arguments")) {
                None | Some(Value::Null) => "{}".to_owned(),
                Some(a) => crate::wire::to_go_json(a),
            };
            let call_id = match c.get("id").and_then(Value::as_str) {
                Some(id) => id.to_owned(),
                None => format!("call_{}", &uuid::Uuid::new_v4().simple().to_string()[..8]),
            };
            Call {
                call_id,
                name: text(f, "name").to_owned(),
                arguments,
            }
        })
        .collect()
}

/// A string field of `v`, or `""`.
pub(super) fn text<'a>(v: Option<&'a Value>, key: &str) -> &'a str {
    v.and_then(|v| v.get(key))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// A token count of an Ollama answer.
pub(super) fn count(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}
