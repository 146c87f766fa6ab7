//! OpenAI `/v1/chat/completions` request → Ollama `/api/chat` body, the
//! way Ollama's own OpenAI layer translates it (so an emulated request
//! behaves like a native one).

use serde_json::{Map, Value, json};

use crate::error::ProxyError;

/// The translated request and what the answer needs to be shaped back.
pub(crate) struct Translated {
    pub body: Map<String, Value>,
    pub include_usage: bool,
    pub model: String,
}

/// Translate an OpenAI chat request.
pub(crate) fn translate(req: &Map<String, Value>) -> Result<Translated, ProxyError> {
    let bad = |m: &str| ProxyError::BadRequest(m.to_string());
    let model = req
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let messages = req
        .get("messages")
        .and_then(Value::as_array)
        .filter(|m| !m.is_empty())
        .ok_or_else(|| bad("[] is too short - 'messages'"))?;
    let mut out_messages = Vec::with_capacity(messages.len());
    let mut call_names: Vec<(String, String)> = Vec::new();
    for m in messages {
        out_messages.push(message(m, &mut call_names)?);
    }

    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("messages".into(), Value::Array(out_messages));
    let stream = req.get("stream").and_then(Value::as_bool).unwrap_or(false);
    body.insert("stream".into(), json!(stream));

    let mut options = Map::new();
    let num_predict = req
        .get("max_completion_tokens")
        .or_else(|| req.get("max_tokens"))
        .filter(|v| !v.is_null());
    if let Some(n) = num_predict {
        options.insert("num_predict".into(), n.clone());
    }
    for (from, to) in [
        ("seed", "seed"),
        ("frequency_penalty", "frequency_penalty"),
        ("presence_penalty", "presence_penalty"),
    ] {
        if let Some(v) = req.get(from).filter(|v| !v.is_null()) {
            options.insert(to.into(), v.clone());
        }
    }
    match req.get("stop") {
        Some(Value::String(s)) => {
            options.insert("stop".into(), json!([s]));
        }
        Some(Value::Array(a)) => {
            options.insert("stop".into(), Value::Array(a.clone()));
        }
        _ => {}
    }
    // Ollama's OpenAI layer defaults these to 1.0 rather than the Modelfile's.
    options.insert(
        "temperature".into(),
        req.get("temperature")
            .filter(|v| !v.is_null())
            .cloned()
            .unwrap_or(json!(1.0)),
    );
    options.insert(
        "top_p".into(),
        req.get("top_p")
            .filter(|v| !v.is_null())
            .cloned()
            .unwrap_or(json!(1.0)),
    );
    body.insert("options".into(), Value::Object(options));

    if let Some(tools) = req.get("tools").filter(|t| !t.is_null()) {
        body.insert("tools".into(), tools.clone());
    }
    for key in ["tool_choice", "parallel_tool_calls", "keep_alive"] {
        if let Some(v) = req.get(key).filter(|v| !v.is_null()) {
            body.insert(key.into(), v.clone());
        }
    }
    // As Ollama's layer does: token probabilities when asked for.
    if req.get("logprobs") == Some(&Value::Bool(true)) {
        body.insert("logprobs".into(), json!(true));
        if let Some(n) = req.get("top_logprobs").filter(|v| !v.is_null()) {
            body.insert("top_logprobs".into(), n.clone());
        }
    }
    let format = crate::format::normalize_response_format(req.get("response_format"))
        .map_err(|e| ProxyError::BadRequest(e.to_string()))?;
    match format.format {
        Some(crate::format::Format::Json) => {
            body.insert("format".into(), json!("json"));
        }
        Some(crate::format::Format::Schema(s)) => {
            body.insert("format".into(), s);
        }
        None => {}
    }
    let effort = req
        .get("reasoning_effort")
        .or_else(|| req.get("reasoning").and_then(|r| r.get("effort")))
        .and_then(Value::as_str);
    if let Some(effort) = effort {
        let think = match effort {
            "none" => json!(false),
            "minimal" | "low" => json!("low"),
            "medium" => json!("medium"),
            "high" => json!("high"),
            "xhigh" | "ultra" | "max" => json!("max"),
            other => return Err(bad(&format!("invalid reasoning value: '{other}'"))),
        };
        body.insert("think".into(), think);
    }
    let include_usage = req
        .get("stream_options")
        .and_then(|o| o.get("include_usage"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    Ok(Translated {
        body,
        include_usage,
        model,
    })
}

fn message(m: &Value, call_names: &mut Vec<(String, String)>) -> Result<Value, ProxyError> {
    let role = m.get("role").and_then(Value::as_str).unwrap_or("user");
    let mut out = Map::new();
    out.insert("role".into(), json!(role));
    let mut images = Vec::new();
    let content = match m.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => {
            let mut text = String::new();
            for part in parts {
                match part.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        text.push_str(part.get("text").and_then(Value::as_str).unwrap_or_default())
                    }
                    Some("image_url") => {
                        let url = part
                            .get("image_url")
                            .and_then(|u| u.get("url").or(Some(u)))
                            .and_then(Value::as_str)
                            .unwrap_or_default();
                        match url.split_once(";base64,") {
                            Some((prefix, data)) if prefix.starts_with("data:") => {
                                images.push(json!(data))
                            }
                            _ => {
                                return Err(ProxyError::BadRequest(
                                    "image URLs are not currently supported, please use base64 encoded data instead".into(),
                                ));
                            }
                        }
                    }
                    _ => {}
                }
            }
            text
        }
        _ => String::new(),
    };
    out.insert("content".into(), json!(content));
    if !images.is_empty() {
        out.insert("images".into(), Value::Array(images));
    }
    if let Some(Value::Array(calls)) = m.get("tool_calls") {
        let mut converted = Vec::new();
        for (i, c) in calls.iter().enumerate() {
            let f = c.get("function").cloned().unwrap_or(Value::Null);
            let name = f
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let arguments = match f.get("arguments") {
                Some(Value::String(s)) if s.trim().is_empty() => json!({}),
                Some(Value::String(s)) => serde_json::from_str::<Value>(s)
                    .map_err(|_| ProxyError::BadRequest("invalid tool call arguments".into()))?,
                Some(v) => v.clone(),
                None => json!({}),
            };
            if let Some(id) = c.get("id").and_then(Value::as_str) {
                call_names.push((id.to_string(), name.clone()));
            }
            let mut call = Map::new();
            if let Some(id) = c.get("id") {
                call.insert("id".into(), id.clone());
            }
            call.insert(
                "function".into(),
                json!({"index": i, "name": name, "arguments": arguments}),
            );
            converted.push(Value::Object(call));
        }
        out.insert("tool_calls".into(), Value::Array(converted));
    }
    if role == "tool" {
        let by_name = m.get("name").and_then(Value::as_str).map(str::to_string);
        let id = m.get("tool_call_id").and_then(Value::as_str);
        let by_id = id.and_then(|id| {
            call_names
                .iter()
                .find(|(cid, _)| cid == id)
                .map(|(_, n)| n.clone())
        });
        if let Some(name) = by_name.or(by_id) {
            out.insert("tool_name".into(), json!(name));
        }
        if let Some(id) = id {
            out.insert("tool_call_id".into(), json!(id));
        }
    }
    Ok(Value::Object(out))
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
