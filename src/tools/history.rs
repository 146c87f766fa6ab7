//! Chat history rewriting for an emulated request: the instruction goes into
//! the system prompt, past tool calls become envelope JSON, tool results
//! become user text.
//!
//! Ollama's gemma3 template has no system role: it renders the (collated)
//! system text at the top of the *first user turn*, and only when that turn
//! directly follows the system message (`eq $i 1`). It also drops every role
//! other than `user` and `assistant`. So the instruction is always placed in
//! a system message at index 0, a user message is guaranteed right after the
//! system messages, and `tool` messages are turned into `user` text.

use serde_json::{Map, Value, json};

use super::envelope::{KEY_CALL, KEY_CALLS, KEY_RESPONSE};
use super::results::{HistoryCall, ResultMatcher};
use super::text::{TextFormat, render_calls};

/// The messages to send upstream instead of `messages`.
///
/// - The instruction is appended (after a blank line) to the client's
///   leading system message(s), never replacing them; without a leading
///   system message a new one is inserted at index 0.
/// - If the first message after the system messages is not a user message,
///   an empty user message is inserted so system-less templates still show
///   the system text.
/// - Assistant messages with `tool_calls` get, as content, the envelope JSON
///   the model would have produced (`{"tool_call":…}` for one call when not
///   `parallel`, else `{"tool_calls":[…]}`); their text content and the
///   `tool_calls` field are dropped. Arguments may be objects or JSON
///   strings; `id` and `index` are optional.
/// - Other assistant text becomes `{"response":…}` (a JSON object or array
///   content is embedded as a value, anything else as a string).
/// - `tool` (and legacy `function`) messages become `user` messages
///   `Tool result for <name>: <content>`; the name comes from `tool_name`,
///   `name`, the `tool_call_id` of an earlier call, or else the next
///   unanswered call of the preceding assistant turn. When the call it
///   answers shares its tool with another call of its turn, its arguments
///   follow the name (`Tool result for get_weather {"city":"Rome"}: …`),
///   so results returned in any order stay with their calls.
/// - Everything else (other fields, images, user messages) is kept.
pub fn rewrite_messages(messages: &[Value], instruction: &str, parallel: bool) -> Vec<Value> {
    rewrite_messages_as(messages, instruction, CallStyle::Envelope { parallel })
}

/// How past calls are written into a rewritten history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CallStyle {
    /// As envelope JSON ([`rewrite_messages`]).
    Envelope { parallel: bool },
    /// In a text form (text mode): calls as the model writes them, other
    /// assistant text as it is.
    Text(TextFormat),
}

/// [`rewrite_messages`] with past calls written in `style`.
pub(crate) fn rewrite_messages_as(
    messages: &[Value],
    instruction: &str,
    style: CallStyle,
) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::with_capacity(messages.len() + 2);
    let mut matcher = ResultMatcher::default();
    for msg in messages {
        let Some(obj) = msg.as_object() else {
            out.push(msg.clone());
            continue;
        };
        match role(msg).as_str() {
            "assistant" => {
                let calls = obj.get("tool_calls").and_then(Value::as_array);
                match calls {
                    Some(raw_calls) if !raw_calls.is_empty() => {
                        let calls: Vec<&HistoryCall> = matcher
                            .on_calls(raw_calls)
                            .filter_map(|i| matcher.call(i))
                            .collect();
                        let written = match style {
                            CallStyle::Envelope { parallel } => {
                                let calls: Vec<Value> =
                                    calls.iter().map(|c| c.envelope()).collect();
                                let envelope = if calls.len() == 1 && !parallel {
                                    json!({ KEY_CALL: calls[0] })
                                } else {
                                    json!({ KEY_CALLS: calls })
                                };
                                envelope.to_string()
                            }
                            CallStyle::Text(format) => {
                                let calls: Vec<(String, Value)> = calls
                                    .iter()
                                    .map(|c| (c.name.clone(), c.arguments.clone()))
                                    .collect();
                                render_calls(&calls, format)
                            }
                        };
                        let mut m = obj.clone();
                        m.remove("tool_calls");
                        m.insert("content".into(), Value::String(written));
                        out.push(Value::Object(m));
                    }
                    _ if matches!(style, CallStyle::Text(_)) => {
                        let mut m = obj.clone();
                        m.remove("tool_calls");
                        out.push(Value::Object(m));
                    }
                    _ => {
                        let text = content_text(obj.get("content"));
                        let mut m = obj.clone();
                        m.remove("tool_calls");
                        if !text.is_empty() {
                            let answer = match serde_json::from_str::<Value>(&text) {
                                Ok(v @ (Value::Object(_) | Value::Array(_))) => v,
                                _ => Value::String(text),
                            };
                            let envelope = json!({ KEY_RESPONSE: answer });
                            m.insert("content".into(), Value::String(envelope.to_string()));
                        }
                        out.push(Value::Object(m));
                    }
                }
            }
            "tool" | "function" => {
                let result = content_text(obj.get("content"));
                let answer = matcher.on_result(obj);
                // Results of calls to one tool in one turn may come in any
                // order: each says which call it answers.
                let which = answer
                    .call
                    .filter(|i| matcher.shares_its_tool(*i))
                    .and_then(|i| matcher.call(i))
                    .map(|c| format!(" {}", arguments_text(&c.arguments)))
                    .unwrap_or_default();
                let text = match answer.name {
                    Some(n) => format!("Tool result for {n}{which}: {result}"),
                    None => format!("Tool result: {result}"),
                };
                let mut m = Map::new();
                m.insert("role".into(), json!("user"));
                m.insert("content".into(), Value::String(text));
                if let Some(images) = obj.get("images") {
                    m.insert("images".into(), images.clone());
                }
                out.push(Value::Object(m));
            }
            _ => out.push(msg.clone()),
        }
    }
    place_instruction(&mut out, instruction);
    out
}

/// Most bytes of a call's arguments a tool result repeats to say which
/// call it answers.
const MAX_ARGUMENTS_SHOWN: usize = 256;

/// A call's arguments as compact JSON, cut (on a character boundary) past
/// [`MAX_ARGUMENTS_SHOWN`] bytes.
fn arguments_text(arguments: &Value) -> String {
    let mut text = arguments.to_string();
    if text.len() > MAX_ARGUMENTS_SHOWN {
        let mut end = MAX_ARGUMENTS_SHOWN;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}

/// Put `instruction` into the leading system message(s) and make sure a
/// user turn follows them.
fn place_instruction(out: &mut Vec<Value>, instruction: &str) {
    let leading_system = out.iter().take_while(|m| role(m) == "system").count();
    if leading_system == 0 {
        out.insert(0, json!({"role": "system", "content": instruction}));
    } else if let Some(Value::Object(m)) = out.get_mut(leading_system - 1) {
        let mut text = content_text(m.get("content"));
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(instruction);
        m.insert("content".into(), Value::String(text));
    }
    let first_turn = leading_system.max(1);
    if out.get(first_turn).map(role).as_deref() != Some("user") {
        out.insert(first_turn, json!({"role": "user", "content": ""}));
    }
}

/// The role, lower-cased as Ollama does on decode.
fn role(msg: &Value) -> String {
    msg.get("role")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_ascii_lowercase()
}

/// A message's content as text: strings as they are, OpenAI content parts
/// joined, anything else as compact JSON.
pub(crate) fn content_text(content: Option<&Value>) -> String {
    match content {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) if parts.iter().all(|p| p.get("text").is_some()) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        Some(other) => other.to_string(),
    }
}

#[cfg(test)]
#[path = "history_tests.rs"]
mod tests;
