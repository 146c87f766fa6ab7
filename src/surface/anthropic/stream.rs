//! Ollama chat chunks → Anthropic SSE events, as Ollama's
//! `StreamConverter.Process` produces them: `message_start` first; a
//! thinking block, then text blocks, each opened on its first delta and
//! closed when another kind of block begins; each tool call as a whole
//! `tool_use` block (start, one `input_json_delta` with all its input,
//! stop); at the done chunk, the open block closed, `message_delta` (stop
//! reason, usage) and `message_stop`. No `ping` events.
//!
//! A failure mid-stream becomes Anthropic's `error` event (Ollama's
//! `StreamErrorEvent` shape, the type its `NewError` gives the status)
//! and ends the stream; open blocks are not closed first (Ollama itself
//! sends no error event: its stream just stops).

use std::collections::HashSet;

use axum::body::Body;
use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::{
    error::{ProxyError, anthropic_error_type},
    pipeline::output::Item,
    surface::frames::{self, Frames},
};

use super::answer::{Meta, count_of, stop_reason, text_of, tool_use_block};
use crate::wire::go;

/// One SSE event: its name and its data.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Event {
    pub name: &'static str,
    pub data: Value,
}

impl Event {
    fn new(name: &'static str, data: Value) -> Self {
        Self { name, data }
    }

    /// `event: <name>\ndata: <json>\n\n`.
    pub(crate) fn frame(&self) -> Bytes {
        Bytes::from(format!(
            "event: {}\ndata: {}\n\n",
            self.name,
            go::marshal(&self.data)
        ))
    }

    /// Anthropic's stream error event for `e`.
    pub(crate) fn error(e: &ProxyError) -> Self {
        Event::new(
            "error",
            json!({
                "type": "error",
                "error": {"type": anthropic_error_type(e.status()), "message": e.client_message()},
            }),
        )
    }
}

/// The state carried across the chunks of one stream.
pub(crate) struct Converter {
    meta: Meta,
    first: bool,
    index: u64,
    thinking_started: bool,
    thinking_done: bool,
    text_started: bool,
    /// Ids of the tool calls already sent (a repeated id is skipped).
    sent: HashSet<String>,
}

impl Converter {
    pub(crate) fn new(meta: Meta) -> Self {
        Self {
            meta,
            first: true,
            index: 0,
            thinking_started: false,
            thinking_done: false,
            text_started: false,
            sent: HashSet::new(),
        }
    }

    fn stop(&self) -> Event {
        Event::new(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": self.index}),
        )
    }

    fn start(&self, block: Value) -> Event {
        Event::new(
            "content_block_start",
            json!({"type": "content_block_start", "index": self.index, "content_block": block}),
        )
    }

    fn delta(&self, delta: Value) -> Event {
        Event::new(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": self.index, "delta": delta}),
        )
    }

    /// Close an open thinking block, if any.
    fn end_thinking(&mut self, events: &mut Vec<Event>) {
        if self.thinking_started && !self.thinking_done {
            self.thinking_done = true;
            events.push(self.stop());
            self.index += 1;
        }
    }

    /// Close an open text block, if any.
    fn end_text(&mut self, events: &mut Vec<Event>) {
        if self.text_started {
            events.push(self.stop());
            self.index += 1;
            self.text_started = false;
        }
    }

    /// The events for one Ollama chunk.
    pub(crate) fn process(&mut self, chunk: &Value) -> Vec<Event> {
        let mut events = Vec::new();
        if self.first {
            self.first = false;
            let mut input_tokens = count_of(chunk, "prompt_eval_count");
            if input_tokens == 0 {
                input_tokens = self.meta.estimated_input_tokens;
            }
            events.push(Event::new(
                "message_start",
                json!({
                    "type": "message_start",
                    "message": {
                        "id": self.meta.id,
                        "type": "message",
                        "role": "assistant",
                        "model": self.meta.model,
                        "content": [],
                        "usage": {"input_tokens": input_tokens, "output_tokens": 0},
                    },
                }),
            ));
        }

        let message = chunk.get("message");
        let thinking = text_of(message, "thinking");
        if self.meta.show_thinking && !thinking.is_empty() && !self.thinking_done {
            self.end_text(&mut events);
            if !self.thinking_started {
                self.thinking_started = true;
                events.push(self.start(json!({"type": "thinking", "thinking": ""})));
            }
            events.push(self.delta(json!({"type": "thinking_delta", "thinking": thinking})));
        }

        let text = text_of(message, "content");
        if !text.is_empty() {
            self.end_thinking(&mut events);
            if !self.text_started {
                self.text_started = true;
                events.push(self.start(json!({"type": "text", "text": ""})));
            }
            events.push(self.delta(json!({"type": "text_delta", "text": text})));
        }

        let calls = message
            .and_then(|m| m.get("tool_calls"))
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        for call in calls {
            let id = text_of(Some(call), "id");
            if self.sent.contains(id) {
                continue;
            }
            self.end_thinking(&mut events);
            self.end_text(&mut events);
            let arguments = call
                .get("function")
                .and_then(|f| f.get("arguments"))
                .map_or_else(|| "{}".to_string(), go::marshal);
            events.push(self.start(tool_use_block(call, Some(json!({})))));
            events.push(self.delta(json!({"type": "input_json_delta", "partial_json": arguments})));
            events.push(self.stop());
            self.sent.insert(id.to_string());
            self.index += 1;
        }

        if chunk.get("done").and_then(Value::as_bool) == Some(true) {
            if self.text_started || (self.thinking_started && !self.thinking_done) {
                events.push(self.stop());
            }
            let reason = stop_reason(text_of(Some(chunk), "done_reason"), !self.sent.is_empty());
            let mut delta = serde_json::Map::new();
            if !reason.is_empty() {
                delta.insert("stop_reason".into(), json!(reason));
            }
            let mut data = json!({
                "type": "message_delta",
                "delta": delta,
                "usage": {
                    "input_tokens": count_of(chunk, "prompt_eval_count"),
                    "output_tokens": count_of(chunk, "eval_count"),
                },
            });
            if let Value::Object(d) = &mut data {
                d.extend(frames::augur_fields(chunk).map(|(k, x)| (k.clone(), x.clone())));
            }
            events.push(Event::new("message_delta", data));
            events.push(Event::new("message_stop", json!({"type": "message_stop"})));
        }
        events
    }
}

/// The SSE body for a chunk channel: each event is its own frame, handed
/// to the server as soon as its chunk arrives.
pub(crate) fn body(
    meta: Meta,
    rx: mpsc::Receiver<Item>,
    timing: Option<std::sync::Arc<crate::telemetry::Timing>>,
) -> Body {
    frames::body(rx, Converter::new(meta), timing)
}

impl Frames for Converter {
    fn chunk(&mut self, chunk: &Value) -> Vec<Bytes> {
        self.process(chunk).iter().map(Event::frame).collect()
    }

    fn error(&mut self, e: &ProxyError) -> Vec<Bytes> {
        vec![Event::error(e).frame()]
    }
}
