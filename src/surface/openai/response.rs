//! Ollama chat answers → OpenAI `chat.completion` objects and
//! `chat.completion.chunk` SSE events, as Ollama's OpenAI layer writes
//! them (tool calls whole in one delta, a separate finish chunk, an
//! optional usage chunk, then `data: [DONE]`).

use std::time::{SystemTime, UNIX_EPOCH};

use axum::response::Response;
use bytes::Bytes;

use serde_json::{Map, Value, json};

use crate::{
    error::{Flavor, ProxyError, error_body},
    pipeline::output::Output,
    surface::{
        frames::{self, Frames},
        render::{json_answer, sse_answer},
    },
};

/// Fixed values of one answer.
#[derive(Clone)]
pub(crate) struct Meta {
    pub id: String,
    pub created: u64,
    pub model: String,
    pub include_usage: bool,
}

impl Meta {
    /// A new id and timestamp for `model`.
    pub(crate) fn new(model: &str, include_usage: bool) -> Self {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let n = uuid::Uuid::new_v4().as_u128() % 999;
        Self {
            id: format!("chatcmpl-{n}"),
            created: now,
            model: model.to_string(),
            include_usage,
        }
    }
}

fn finish_reason(done_reason: Option<&str>, has_calls: bool) -> &'static str {
    match done_reason {
        Some("length") => "length",
        _ if has_calls => "tool_calls",
        _ => "stop",
    }
}

fn usage(v: &Value) -> Value {
    let p = v
        .get("prompt_eval_count")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let c = v.get("eval_count").and_then(Value::as_u64).unwrap_or(0);
    json!({"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c})
}

/// OpenAI tool calls from Ollama ones (arguments as a JSON string).
fn tool_calls(message: &Value) -> Option<Value> {
    let calls = message.get("tool_calls")?.as_array()?;
    let out: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let f = c.get("function").cloned().unwrap_or(Value::Null);
            let index = f.get("index").and_then(Value::as_u64).unwrap_or(i as u64);
            let arguments = f.get("arguments").map(Value::to_string).unwrap_or_else(|| "{}".into());
            json!({
                "id": c.get("id").cloned().unwrap_or_else(|| json!(format!("call_{index}"))),
                "index": index,
                "type": "function",
                "function": {"name": f.get("name").cloned().unwrap_or(Value::Null), "arguments": arguments}
            })
        })
        .collect();
    Some(Value::Array(out))
}

fn message_of(ollama_message: &Value, delta: bool) -> Value {
    let mut m = Map::new();
    if !delta {
        m.insert("role".into(), json!("assistant"));
    }
    let content = ollama_message
        .get("content")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !delta || !content.is_empty() {
        m.insert("content".into(), json!(content));
    }
    if let Some(t) = ollama_message
        .get("thinking")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
    {
        m.insert("reasoning".into(), json!(t));
    }
    if let Some(calls) = tool_calls(ollama_message) {
        m.insert("tool_calls".into(), calls);
    }
    Value::Object(m)
}

/// A whole Ollama chat response as a `chat.completion`.
pub(crate) fn completion(meta: &Meta, v: &Value) -> Value {
    let message = v.get("message").cloned().unwrap_or(Value::Null);
    let has_calls = message.get("tool_calls").is_some();
    json!({
        "id": meta.id,
        "object": "chat.completion",
        "created": meta.created,
        "model": meta.model,
        "system_fingerprint": "fp_ollama",
        "choices": [with_logprobs(json!({
            "index": 0,
            "message": message_of(&message, false),
            "finish_reason": finish_reason(v.get("done_reason").and_then(Value::as_str), has_calls),
        }), v)],
        "usage": usage(v),
    })
}

/// A choice with the answer's token probabilities, when it carries any
/// (the client asked for them: `logprobs`), as Ollama's layer writes them.
fn with_logprobs(mut choice: Value, v: &Value) -> Value {
    if let (Some(Value::Array(lp)), Value::Object(c)) = (v.get("logprobs"), &mut choice)
        && !lp.is_empty()
    {
        c.insert("logprobs".into(), json!({"content": lp}));
    }
    choice
}

fn chunk(meta: &Meta, delta: Value, finish: Option<&str>) -> Value {
    json!({
        "id": meta.id,
        "object": "chat.completion.chunk",
        "created": meta.created,
        "model": meta.model,
        "system_fingerprint": "fp_ollama",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    })
}

fn event(v: &Value) -> Bytes {
    Bytes::from(format!("data: {}\n\n", crate::wire::to_go_json(v)))
}

impl Frames for StreamState {
    /// One chunk's events, as one frame.
    fn chunk(&mut self, chunk: &Value) -> Vec<Bytes> {
        vec![Bytes::from(self.events(chunk).concat())]
    }

    fn error(&mut self, e: &ProxyError) -> Vec<Bytes> {
        let body = error_body(e.status(), &e.client_message(), Flavor::OpenAi);
        vec![Bytes::from(format!("data: {body}\n\n"))]
    }
}

/// State carried across the chunks of one stream.
struct StreamState {
    meta: Meta,
    first: bool,
    saw_calls: bool,
}

impl StreamState {
    fn events(&mut self, v: &Value) -> Vec<Bytes> {
        let mut out = Vec::new();
        let message = v.get("message").cloned().unwrap_or(Value::Null);
        let done = v.get("done").and_then(Value::as_bool) == Some(true);
        let mut delta = message_of(&message, true);
        if let Value::Object(d) = &mut delta {
            if d.contains_key("tool_calls") {
                self.saw_calls = true;
            }
            if !d.is_empty() || (self.first && !done) {
                if self.first {
                    let mut with_role = Map::new();
                    with_role.insert("role".into(), json!("assistant"));
                    with_role.extend(std::mem::take(d));
                    *d = with_role;
                    self.first = false;
                }
                let mut c = chunk(&self.meta, delta.clone(), None);
                if let Some(Value::Array(choices)) = c.get_mut("choices")
                    && let Some(first) = choices.first_mut()
                {
                    *first = with_logprobs(first.take(), v);
                }
                out.push(event(&c));
            }
        }
        if done {
            let reason =
                finish_reason(v.get("done_reason").and_then(Value::as_str), self.saw_calls);
            let mut finish = chunk(&self.meta, json!({}), Some(reason));
            if let Value::Object(f) = &mut finish {
                f.extend(frames::augur_fields(v).map(|(k, x)| (k.clone(), x.clone())));
            }
            out.push(event(&finish));
            if self.meta.include_usage {
                let mut u = chunk(&self.meta, json!({}), None);
                if let Value::Object(f) = &mut u {
                    f.insert("choices".into(), json!([]));
                    f.insert("usage".into(), usage(v));
                }
                out.push(event(&u));
            }
            out.push(Bytes::from_static(b"data: [DONE]\n\n"));
        }
        out
    }
}

/// Render an Ollama-shaped [`Output`] as OpenAI's answer; a stream that
/// fails reports how it ended to `timing`.
pub(crate) fn render(
    meta: Meta,
    output: Output,
    timing: Option<std::sync::Arc<crate::telemetry::Timing>>,
) -> Response {
    match output {
        Output::Full { value, headers } => {
            let text = crate::wire::to_go_json(&completion(&meta, &value));
            json_answer(text, headers)
        }
        Output::Stream { rx, headers } => {
            let state = StreamState {
                meta,
                first: true,
                saw_calls: false,
            };
            sse_answer(frames::body(rx, state, timing), false, headers)
        }
    }
}

#[cfg(test)]
#[path = "response_tests.rs"]
mod tests;
