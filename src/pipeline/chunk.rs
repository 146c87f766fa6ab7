//! Every Ollama chunk augur writes: a whole answer shaped from its
//! interpretation, the chunk sequence Ollama streams for a whole answer,
//! and the single text, call and done chunks the streams send.

use serde_json::{Map, Value, json};

use crate::{tools, wire::created_at_now};

use super::{job::Completed, plan::Route};

/// Put the interpreted answer into the upstream's final response object.
pub(crate) fn shape(route: Route, completed: Completed) -> Value {
    let Completed {
        response, interp, ..
    } = completed;
    let mut out = Map::new();
    let Value::Object(fields) = response else {
        return response;
    };
    // Complete calls closed off from a cut-off list answer the request:
    // the model was stopped while repeating itself, not mid-answer.
    let closed = !interp.calls.is_empty() && interp.repairs.iter().any(|r| r == "closed_truncated");
    let interp_done_reason_present = fields.contains_key("done_reason");
    for (key, value) in fields {
        match (route, key.as_str()) {
            (_, "done_reason") if closed => {
                out.insert(key, json!("stop"));
            }
            // Ollama answers `done: false` when it stopped a model that
            // repeated itself; the validated answer is complete.
            (_, "done") => {
                out.insert(key, json!(true));
                if !interp_done_reason_present {
                    out.insert("done_reason".into(), json!("stop"));
                }
            }
            (Route::Chat, "message") if interp.native_calls => {
                out.insert(key, value);
            }
            (Route::Chat, "message") => {
                let mut message = Map::new();
                message.insert("role".into(), json!("assistant"));
                // Beside calls, only text mode's text around them.
                message.insert("content".into(), Value::String(interp.content.clone()));
                if let Some(t) = &interp.thinking {
                    message.insert("thinking".into(), Value::String(t.clone()));
                }
                if !interp.calls.is_empty() {
                    message.insert(
                        "tool_calls".into(),
                        tools::ollama_tool_calls(&interp.calls, 0),
                    );
                }
                out.insert(key, Value::Object(message));
            }
            (Route::Generate, "response") => {
                out.insert(key, Value::String(interp.content.clone()));
                if let Some(t) = &interp.thinking {
                    out.insert("thinking".into(), Value::String(t.clone()));
                }
            }
            (Route::Generate, "thinking") if interp.thinking.is_some() => {}
            _ => {
                out.insert(key, value);
            }
        }
    }
    Value::Object(out)
}

/// A whole response as the chunk sequence Ollama streams: thinking, then
/// content, then one chunk per tool call, then the done chunk.
pub(crate) fn chunks_of(route: Route, whole: &Value) -> Vec<Value> {
    let model = whole.get("model").cloned().unwrap_or(Value::Null);
    let mut chunks = Vec::new();
    let message = whole.get("message");
    let text_of = |k: &str| -> String {
        let v = match route {
            Route::Chat => message.and_then(|m| m.get(k)),
            Route::Generate => whole.get(if k == "content" { "response" } else { k }),
        };
        v.and_then(Value::as_str).unwrap_or_default().to_string()
    };
    let thinking = text_of("thinking");
    let content = text_of("content");
    if !thinking.is_empty() {
        chunks.push(delta_chunk(route, &model, "", Some(&thinking)));
    }
    if !content.is_empty() {
        chunks.push(delta_chunk(route, &model, &content, None));
    }
    if let Some(Value::Array(calls)) = message.and_then(|m| m.get("tool_calls")) {
        for call in calls {
            chunks.push(call_chunk(&model, json!([call])));
        }
    }
    chunks.push(done_chunk(route, whole.clone()));
    chunks
}

/// One `done: false` chat chunk carrying `calls` (Ollama's `tool_calls`
/// array), as Ollama sends a call once it is complete.
pub(crate) fn call_chunk(model: &Value, calls: Value) -> Value {
    json!({
        "model": model,
        "created_at": created_at_now(),
        "message": {"role": "assistant", "content": "", "tool_calls": calls},
        "done": false,
    })
}

/// The done chunk of an answer: `last` (a whole response or the
/// upstream's own done chunk) with its text emptied, `done: true` and a
/// `done_reason`.
pub(crate) fn done_chunk(route: Route, mut last: Value) -> Value {
    if let Value::Object(fields) = &mut last {
        fields.insert("created_at".into(), json!(created_at_now()));
        fields.insert("done".into(), json!(true));
        if !fields.contains_key("done_reason") {
            fields.insert("done_reason".into(), json!("stop"));
        }
        match route {
            Route::Chat => {
                fields.insert(
                    "message".into(),
                    json!({"role": "assistant", "content": ""}),
                );
            }
            Route::Generate => {
                fields.insert("response".into(), json!(""));
                fields.remove("thinking");
            }
        }
    }
    last
}

/// Whether `chunk` is a `done: false` chunk carrying only thinking.
pub(crate) fn is_thinking_only(chunk: &Value) -> bool {
    chunk.get("done") == Some(&json!(false))
        && (chunk.pointer("/message/thinking").is_some() || chunk.get("thinking").is_some())
        && chunk.pointer("/message/tool_calls").is_none()
}

/// One `done: false` chunk carrying text.
pub(crate) fn delta_chunk(
    route: Route,
    model: &Value,
    content: &str,
    thinking: Option<&str>,
) -> Value {
    let mut chunk = Map::new();
    chunk.insert("model".into(), model.clone());
    chunk.insert("created_at".into(), json!(created_at_now()));
    match route {
        Route::Chat => {
            let mut message = Map::new();
            message.insert("role".into(), json!("assistant"));
            message.insert("content".into(), json!(content));
            if let Some(t) = thinking {
                message.insert("thinking".into(), json!(t));
            }
            chunk.insert("message".into(), Value::Object(message));
        }
        Route::Generate => {
            chunk.insert("response".into(), json!(content));
            if let Some(t) = thinking {
                chunk.insert("thinking".into(), json!(t));
            }
        }
    }
    chunk.insert("done".into(), json!(false));
    Value::Object(chunk)
}

#[cfg(test)]
#[path = "chunk_tests.rs"]
mod tests;
