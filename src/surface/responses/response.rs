//! Ollama chat answers → Responses API answers, as Ollama's layer writes
//! them: a whole `response` object (`ToResponse`) as JSON, or the SSE
//! events of a stream (see the `stream` module), each sent as it is produced.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::response::Response;

use serde_json::{Value, json};

use crate::{
    pipeline::output::Output,
    surface::{frames, json_answer, sse_answer},
};

use super::{
    echo::{self, Echo, State},
    go,
    request::Translated,
    stream::Converter,
};

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

/// Render an Ollama-shaped [`Output`] as a Responses answer.
pub(crate) fn render(meta: Meta, out: Output) -> Response {
    match out {
        Output::Full { value, headers } => {
            let text = crate::wire::to_go_json(&whole(&meta, &value, now()));
            json_answer(text, headers)
        }
        Output::Stream { rx, headers } => {
            let converter = Converter::new(meta, now);
            sse_answer(frames::body(rx, converter), true, headers)
        }
    }
}

#[cfg(test)]
mod tests;
