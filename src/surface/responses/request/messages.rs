//! `input` items → Ollama chat messages, as Ollama's `FromResponsesRequest`
//! builds them: function calls join the assistant turn before them, a
//! replayed assistant message between a call and its output joins that
//! call's turn, reasoning rides on the next assistant turn, and function
//! call outputs become `tool` messages. augur adds `tool_name` to a tool
//! message when an earlier call in the request names it.

use serde_json::{Map, Value, json};

use crate::error::ProxyError;

use super::items::{Content, Item};

/// One Ollama message being built.
#[derive(Default)]
struct Message {
    role: String,
    content: String,
    thinking: String,
    images: Vec<String>,
    tool_calls: Vec<Value>,
    tool_name: String,
    tool_call_id: String,
}

impl Message {
    /// The message as `api.Message` encodes it (empty fields omitted).
    fn into_value(self) -> Value {
        let mut m = Map::new();
        m.insert("role".into(), json!(self.role));
        m.insert("content".into(), json!(self.content));
        if !self.thinking.is_empty() {
            m.insert("thinking".into(), json!(self.thinking));
        }
        if !self.images.is_empty() {
            m.insert("images".into(), json!(self.images));
        }
        if !self.tool_calls.is_empty() {
            m.insert("tool_calls".into(), Value::Array(self.tool_calls));
        }
        if !self.tool_name.is_empty() {
            m.insert("tool_name".into(), json!(self.tool_name));
        }
        if !self.tool_call_id.is_empty() {
            m.insert("tool_call_id".into(), json!(self.tool_call_id));
        }
        Value::Object(m)
    }

    fn call_ids(&self) -> impl Iterator<Item = &str> {
        self.tool_calls
            .iter()
            .filter_map(|c| c.get("id").and_then(Value::as_str))
    }
}

/// The messages for `instructions`, a string `input` and `input` items.
pub(super) fn build(
    instructions: &str,
    text: &str,
    items: &[Item<'_>],
) -> Result<Vec<Value>, ProxyError> {
    let mut messages: Vec<Message> = Vec::with_capacity(items.len() + 2);
    if !instructions.is_empty() {
        messages.push(Message {
            role: "system".into(),
            content: instructions.into(),
            ..Message::default()
        });
    }
    if !text.is_empty() {
        messages.push(Message {
            role: "user".into(),
            content: text.into(),
            ..Message::default()
        });
    }
    // Function names by call id, for `tool_name` on their outputs.
    let mut names: Vec<(&str, &str)> = Vec::new();
    let mut pending_thinking = String::new();
    for (i, item) in items.iter().enumerate() {
        match item {
            Item::Reasoning { encrypted_content } => {
                pending_thinking = (*encrypted_content).to_owned();
            }
            Item::Message { role, content } => {
                let (text, images) = convert_content(content)?;
                let mut msg = Message {
                    role: (*role).to_owned(),
                    content: text,
                    images,
                    ..Message::default()
                };
                if msg.role == "assistant" && !pending_thinking.is_empty() {
                    msg.thinking = std::mem::take(&mut pending_thinking);
                }
                // A replayed assistant message between a function call and
                // its output joins the call's turn, so the result follows
                // the call it answers.
                let output_call_id = match items.get(i + 1) {
                    Some(Item::FunctionCallOutput { call_id, .. }) => *call_id,
                    _ => "",
                };
                if msg.role == "assistant"
                    && !output_call_id.is_empty()
                    && let Some(last) = messages.last_mut().filter(|l| {
                        l.role == "assistant" && l.call_ids().any(|id| id == output_call_id)
                    })
                {
                    if !last.content.is_empty() && !msg.content.is_empty() {
                        last.content.push('\n');
                    }
                    last.content.push_str(&msg.content);
                    last.images.append(&mut msg.images);
                    if !msg.thinking.is_empty() {
                        last.thinking = msg.thinking;
                    }
                    continue;
                }
                messages.push(msg);
            }
            Item::FunctionCall {
                call_id,
                name,
                arguments,
            } => {
                let args = parse_arguments(arguments)?;
                let mut call = Map::new();
                if !call_id.is_empty() {
                    call.insert("id".into(), json!(call_id));
                    names.push((call_id, name));
                }
                call.insert(
                    "function".into(),
                    json!({"index": 0, "name": name, "arguments": args}),
                );
                let call = Value::Object(call);
                match messages.last_mut().filter(|l| l.role == "assistant") {
                    Some(last) => {
                        last.tool_calls.push(call);
                        if !pending_thinking.is_empty() {
                            last.thinking = std::mem::take(&mut pending_thinking);
                        }
                    }
                    None => messages.push(Message {
                        role: "assistant".into(),
                        tool_calls: vec![call],
                        thinking: std::mem::take(&mut pending_thinking),
                        ..Message::default()
                    }),
                }
            }
            Item::FunctionCallOutput {
                call_id,
                output,
                items,
            } => {
                let (content, images) = if items.is_empty() {
                    (output.clone(), Vec::new())
                } else {
                    convert_content(items)?
                };
                let tool_name = names
                    .iter()
                    .rev()
                    .find(|(id, _)| id == call_id)
                    .map(|(_, n)| (*n).to_owned())
                    .unwrap_or_default();
                messages.push(Message {
                    role: "tool".into(),
                    content,
                    images,
                    tool_name,
                    tool_call_id: (*call_id).to_owned(),
                    ..Message::default()
                });
            }
            Item::WebSearchCall => {}
        }
    }
    if !pending_thinking.is_empty() {
        messages.push(Message {
            role: "assistant".into(),
            thinking: pending_thinking,
            ..Message::default()
        });
    }
    Ok(messages.into_iter().map(Message::into_value).collect())
}

/// A function call's `arguments` string as Ollama's ordered arguments
/// object (`""` and `null` are empty arguments).
fn parse_arguments(arguments: &str) -> Result<Value, ProxyError> {
    let fail = |why: String| {
        ProxyError::BadRequest(format!("failed to parse function call arguments: {why}"))
    };
    if arguments.is_empty() {
        return Ok(json!({}));
    }
    match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(m)) => Ok(Value::Object(m)),
        Ok(Value::Null) => Ok(json!({})),
        Ok(_) => Err(fail("arguments must be a JSON object".into())),
        Err(e) if e.is_eof() => Err(fail("unexpected end of JSON input".into())),
        Err(e) => Err(fail(e.to_string())),
    }
}

/// `convertResponsesContent`: the text of the parts, the images' base64.
fn convert_content(parts: &[Content<'_>]) -> Result<(String, Vec<String>), ProxyError> {
    let mut text = String::new();
    let mut images = Vec::new();
    for part in parts {
        match part {
            Content::Text(t) => text.push_str(t),
            Content::Image { image_url } => {
                if image_url.is_empty() {
                    continue;
                }
                images.push(decode_image_url(image_url)?);
            }
            Content::File => {
                return Err(ProxyError::BadRequest(
                    "file inputs are not currently supported".into(),
                ));
            }
        }
    }
    Ok((text, images))
}

/// `decodeImageURL`: a base64 data URI's data, as the canonical base64
/// Ollama writes back for the image bytes.
fn decode_image_url(url: &str) -> Result<String, ProxyError> {
    if url.starts_with("http://") || url.starts_with("https://") {
        return Err(ProxyError::BadRequest(
            "image URLs are not currently supported, please use base64 encoded data instead".into(),
        ));
    }
    let invalid = || ProxyError::BadRequest("invalid image input".into());
    let data = url
        .strip_prefix("data:;base64,")
        .or_else(|| {
            ["jpeg", "jpg", "png", "webp"].iter().find_map(|t| {
                url.strip_prefix("data:image/")
                    .and_then(|rest| rest.strip_prefix(t))
                    .and_then(|rest| rest.strip_prefix(";base64,"))
            })
        })
        .ok_or_else(invalid)?;
    canonical_base64(data).ok_or_else(invalid)
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard padded base64 as Go's `base64.StdEncoding` reads it (line
/// breaks ignored, unused trailing bits allowed), re-encoded the way Go
/// writes the decoded bytes; `None` when Go would refuse it.
fn canonical_base64(data: &str) -> Option<String> {
    let value = |c: u8| ALPHABET.iter().position(|&a| a == c);
    let mut clean: Vec<u8> = data
        .bytes()
        .filter(|b| !matches!(b, b'\r' | b'\n'))
        .collect();
    if !clean.len().is_multiple_of(4) {
        return None;
    }
    let pad = clean.iter().rev().take_while(|&&b| b == b'=').count();
    if pad > 2 || (pad > 0 && clean.len() < 4) {
        return None;
    }
    let body = clean.len() - pad;
    if !clean[..body].iter().all(|&b| value(b).is_some()) {
        return None;
    }
    if pad > 0 {
        let last = body - 1;
        let v = value(clean[last])?;
        let mask = if pad == 2 { 0b11_0000 } else { 0b11_1100 };
        clean[last] = ALPHABET[v & mask];
    }
    String::from_utf8(clean).ok()
}

#[cfg(test)]
#[path = "messages_tests.rs"]
mod tests;
