//! Anthropic messages → Ollama chat messages (`convertMessage`): content
//! blocks become text, images, thinking, tool calls and tool results.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use crate::error::ProxyError;

use super::fields::{bad, str_of};
use crate::wire::go;

/// `convertMessage`: one Anthropic message → Ollama messages. Tool results
/// become `tool` messages (before the user's own text, for a user turn);
/// tool calls keep their ids; `call_names` remembers each call's name so
/// its result can carry `tool_name`.
pub(super) fn convert_message(
    m: &Value,
    call_names: &mut HashMap<String, String>,
    out: &mut Vec<Value>,
) -> Result<(), ProxyError> {
    let empty = Map::new();
    let obj = m.as_object().unwrap_or(&empty);
    let role = str_of(obj, "role").to_lowercase();
    let blocks = match obj.get("content") {
        Some(Value::String(text)) => {
            if !text.is_empty() {
                out.push(json!({"role": role, "content": text}));
            }
            return Ok(());
        }
        Some(Value::Array(blocks)) => blocks.as_slice(),
        _ => &[],
    };

    let mut text = String::new();
    let mut images = Vec::new();
    let mut calls = Vec::new();
    let mut thinking = String::new();
    let mut results = Vec::new();
    for block in blocks {
        let Some(b) = block.as_object() else { continue };
        match str_of(b, "type") {
            "text" => {
                if let Some(t) = b.get("text").and_then(Value::as_str) {
                    text.push_str(t);
                }
            }
            "image" => {
                let Some(Value::Object(source)) = b.get("source") else {
                    return Err(bad("invalid image source"));
                };
                images.push(image(str_of(source, "type"), str_of(source, "data"))?);
            }
            "tool_use" => {
                let id = str_of(b, "id");
                if id.is_empty() {
                    return Err(bad("tool_use block missing required 'id' field"));
                }
                let name = str_of(b, "name");
                if name.is_empty() {
                    return Err(bad("tool_use block missing required 'name' field"));
                }
                call_names.insert(id.to_string(), name.to_string());
                calls.push(tool_call(id, name, b.get("input")));
            }
            "server_tool_use" => {
                let (id, name) = (str_of(b, "id"), str_of(b, "name"));
                if !id.is_empty() {
                    call_names.insert(id.to_string(), name.to_string());
                }
                calls.push(tool_call(id, name, b.get("input")));
            }
            "tool_result" => {
                let (content, result_images) = tool_result_content(b.get("content"))?;
                results.push(tool_message(
                    content,
                    result_images,
                    str_of(b, "tool_use_id"),
                    call_names,
                ));
            }
            "web_search_tool_result" => {
                let content = web_search_result_text(b.get("content"));
                results.push(tool_message(
                    content,
                    Vec::new(),
                    str_of(b, "tool_use_id"),
                    call_names,
                ));
            }
            "thinking" => {
                if let Some(t) = b.get("thinking").and_then(Value::as_str) {
                    thinking = t.to_string();
                }
            }
            _ => {}
        }
    }

    if role == "user" {
        out.append(&mut results);
    }
    if !text.is_empty() || !images.is_empty() || !calls.is_empty() || !thinking.is_empty() {
        let mut message = Map::new();
        message.insert("role".into(), json!(role));
        message.insert("content".into(), json!(text));
        if !thinking.is_empty() {
            message.insert("thinking".into(), json!(thinking));
        }
        if !images.is_empty() {
            message.insert("images".into(), Value::Array(images));
        }
        if !calls.is_empty() {
            message.insert("tool_calls".into(), Value::Array(calls));
        }
        out.push(Value::Object(message));
    }
    out.append(&mut results);
    Ok(())
}

/// An Ollama tool call; absent or null input ⇒ `{}`.
fn tool_call(id: &str, name: &str, input: Option<&Value>) -> Value {
    let arguments = input
        .filter(|i| i.is_object())
        .cloned()
        .unwrap_or_else(|| json!({}));
    let mut call = Map::new();
    if !id.is_empty() {
        call.insert("id".into(), json!(id));
    }
    call.insert(
        "function".into(),
        json!({"index": 0, "name": name, "arguments": arguments}),
    );
    Value::Object(call)
}

/// A `tool` message answering call `id`, named when the call is known.
fn tool_message(
    content: String,
    images: Vec<Value>,
    id: &str,
    call_names: &HashMap<String, String>,
) -> Value {
    let mut m = Map::new();
    m.insert("role".into(), json!("tool"));
    m.insert("content".into(), json!(content));
    if !images.is_empty() {
        m.insert("images".into(), Value::Array(images));
    }
    if let Some(name) = call_names.get(id).filter(|n| !n.is_empty()) {
        m.insert("tool_name".into(), json!(name));
    }
    if !id.is_empty() {
        m.insert("tool_call_id".into(), json!(id));
    }
    Value::Object(m)
}

/// `resolveImageSource`: base64 data only, checked as Go decodes it (the
/// data goes upstream as sent; Ollama decodes it the same way again).
fn image(kind: &str, data: &str) -> Result<Value, ProxyError> {
    if kind != "base64" {
        return Err(bad(format!(
            "invalid image source type: {kind}. Only base64 images are supported."
        )));
    }
    go::base64_std(data).map_err(|at| {
        bad(format!(
            "invalid base64 image data: illegal base64 data at input byte {at}"
        ))
    })?;
    Ok(json!(data))
}

/// `convertToolResultContent`: a string, or the text and images of a list
/// of blocks.
fn tool_result_content(content: Option<&Value>) -> Result<(String, Vec<Value>), ProxyError> {
    let Some(Value::Array(items)) = content else {
        let text = content.and_then(Value::as_str).unwrap_or_default();
        return Ok((text.to_string(), Vec::new()));
    };
    let mut text = String::new();
    let mut images = Vec::new();
    for item in items.iter().filter_map(Value::as_object) {
        match item.get("type").and_then(Value::as_str) {
            Some("text") => {
                if let Some(t) = item.get("text").and_then(Value::as_str) {
                    text.push_str(t);
                }
            }
            Some("image") => {
                let Some(Value::Object(source)) = item.get("source") else {
                    return Err(bad("invalid tool_result image source"));
                };
                images.push(image(str_of(source, "type"), str_of(source, "data"))?);
            }
            _ => {}
        }
    }
    Ok((text, images))
}

/// `formatWebSearchToolResultContent`.
fn web_search_result_text(content: Option<&Value>) -> String {
    fn error_text(item: &Map<String, Value>) -> String {
        match str_of(item, "error_code") {
            "" => "web_search_tool_result_error".into(),
            code => format!("web_search_tool_result_error: {code}"),
        }
    }
    let is_error = |o: &Map<String, Value>| str_of(o, "type") == "web_search_tool_result_error";
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(items)) => {
            let mut out = String::new();
            for item in items.iter().filter_map(Value::as_object) {
                if is_error(item) {
                    return error_text(item);
                }
                if str_of(item, "type") == "web_search_result" {
                    out.push_str(&format!(
                        "- {}: {}\n",
                        str_of(item, "title"),
                        str_of(item, "url")
                    ));
                }
            }
            out
        }
        Some(Value::Object(o)) if is_error(o) => error_text(o),
        other => go::marshal_sorted(other.unwrap_or(&Value::Null)),
    }
}
