//! Ollama chat chunks → Responses SSE events, as Ollama's
//! `ResponsesStreamConverter` produces them: `response.created` and
//! `response.in_progress` first; a reasoning item while thinking streams
//! (`response.reasoning_summary_text.delta`); each tool call as one
//! `function_call` item (added, arguments delta and done, done), after
//! which text is no longer sent; a message item for text; then the
//! closing events and `response.completed`. Every event carries the
//! next `sequence_number`. An error mid-stream ends it with
//! `response.failed`, as Ollama's Responses layer reports a failed
//! stream.

use bytes::Bytes;
use serde_json::{Value, json};

use crate::{error::ProxyError, surface::frames};

use super::{
    answer::{self, Meta, count, random_id_number, text},
    echo::{self, State},
};
use crate::wire::go;

/// The state of one stream's events.
pub(super) struct Converter {
    meta: Meta,
    clock: fn() -> i64,
    first_write: bool,
    done: bool,
    sequence: u64,
    output_index: usize,
    content_started: bool,
    tool_calls_sent: bool,
    text: String,
    reasoning_started: bool,
    reasoning_id: String,
    thinking: String,
    /// Items closed so far, in output order.
    completed: Vec<Value>,
}

fn output_text(text: &str) -> Value {
    go::sorted(vec![
        ("type", json!("output_text")),
        ("text", json!(text)),
        ("annotations", json!([])),
        ("logprobs", json!([])),
    ])
}

impl Converter {
    /// A converter for the answer `meta` describes; `clock` gives the
    /// Unix seconds response objects carry.
    pub(super) fn new(meta: Meta, clock: fn() -> i64) -> Self {
        Converter {
            meta,
            clock,
            first_write: true,
            done: false,
            sequence: 0,
            output_index: 0,
            content_started: false,
            tool_calls_sent: false,
            text: String::new(),
            reasoning_started: false,
            reasoning_id: String::new(),
            thinking: String::new(),
            completed: Vec::new(),
        }
    }

    /// Whether the `done` chunk has been converted.
    #[cfg(test)]
    pub(super) fn is_done(&self) -> bool {
        self.done
    }

    /// One SSE event: `event: <type>` and the data with its `type` and
    /// `sequence_number`, keys sorted as Go writes a map.
    fn event(&mut self, kind: &str, mut pairs: Vec<(&str, Value)>) -> Bytes {
        pairs.push(("type", json!(kind)));
        pairs.push(("sequence_number", json!(self.sequence)));
        self.sequence += 1;
        let data = crate::wire::to_go_json(&go::sorted(pairs));
        Bytes::from(format!("event: {kind}\ndata: {data}\n\n"))
    }

    fn response_object(&self, status: &str, output: Vec<Value>, usage: Option<Value>) -> Value {
        self.meta.echo.streamed(State {
            id: &self.meta.response_id,
            model: &self.meta.model,
            status,
            created_at: (self.clock)(),
            completed_at: None,
            output,
            usage,
        })
    }

    /// The events for one Ollama chunk (`Process`).
    pub(super) fn process(&mut self, chunk: &Value) -> Vec<Bytes> {
        let mut out = Vec::new();
        let message = chunk.get("message");
        let calls = message.map(answer::calls).unwrap_or_default();
        let thinking = text(message, "thinking");
        if self.first_write {
            self.first_write = false;
            for kind in ["response.created", "response.in_progress"] {
                let response = self.response_object("in_progress", Vec::new(), None);
                out.push(self.event(kind, vec![("response", response)]));
            }
        }
        if !thinking.is_empty() {
            self.thinking_delta(thinking, &mut out);
        }
        if !calls.is_empty() {
            self.finish_reasoning(&mut out);
            self.function_calls(calls, &mut out);
            self.tool_calls_sent = true;
        } else if !self.tool_calls_sent {
            let content = text(message, "content");
            if !content.is_empty() {
                self.text_delta(content, &mut out);
            }
        }
        if chunk.get("done").and_then(Value::as_bool) == Some(true) {
            self.complete(chunk, &mut out);
        }
        out
    }

    fn thinking_delta(&mut self, thinking: &str, out: &mut Vec<Bytes>) {
        if !self.reasoning_started {
            self.reasoning_started = true;
            self.reasoning_id = format!("rs_{}", random_id_number());
            let item = go::sorted(vec![
                ("id", json!(self.reasoning_id)),
                ("type", json!("reasoning")),
                ("summary", json!([])),
            ]);
            let index = self.output_index;
            out.push(self.event(
                "response.output_item.added",
                vec![("output_index", json!(index)), ("item", item)],
            ));
        }
        self.thinking.push_str(thinking);
        let pairs = vec![
            ("item_id", json!(self.reasoning_id)),
            ("output_index", json!(self.output_index)),
            ("summary_index", json!(0)),
            ("delta", json!(thinking)),
        ];
        out.push(self.event("response.reasoning_summary_text.delta", pairs));
    }

    fn finish_reasoning(&mut self, out: &mut Vec<Bytes>) {
        if !self.reasoning_started {
            return;
        }
        self.reasoning_started = false;
        let id = std::mem::take(&mut self.reasoning_id);
        let thinking = std::mem::take(&mut self.thinking);
        let index = self.output_index;
        self.output_index += 1;
        let summary = go::sorted(vec![
            ("type", json!("summary_text")),
            ("text", json!(thinking)),
        ]);
        let item = go::sorted(vec![
            ("id", json!(id)),
            ("type", json!("reasoning")),
            ("summary", json!([summary])),
            ("encrypted_content", json!(thinking)),
        ]);
        self.completed.push(item.clone());
        let pairs = vec![
            ("item_id", json!(id)),
            ("output_index", json!(index)),
            ("summary_index", json!(0)),
            ("text", json!(thinking)),
        ];
        out.push(self.event("response.reasoning_summary_text.done", pairs));
        out.push(self.event(
            "response.output_item.done",
            vec![("output_index", json!(index)), ("item", item)],
        ));
    }

    fn function_calls(&mut self, calls: Vec<answer::Call>, out: &mut Vec<Bytes>) {
        let count = calls.len();
        for (i, c) in calls.into_iter().enumerate() {
            let index = self.output_index + i;
            let id = format!("fc_{}_{i}", random_id_number());
            let item = |status: &str, arguments: &str| {
                go::sorted(vec![
                    ("id", json!(id)),
                    ("type", json!("function_call")),
                    ("status", json!(status)),
                    ("call_id", json!(c.call_id)),
                    ("name", json!(c.name)),
                    ("arguments", json!(arguments)),
                ])
            };
            let (added, done) = (item("in_progress", ""), item("completed", &c.arguments));
            self.completed.push(done.clone());
            let at = ("output_index", json!(index));
            let item_id = ("item_id", json!(id));
            out.push(self.event(
                "response.output_item.added",
                vec![at.clone(), ("item", added)],
            ));
            out.push(self.event(
                "response.function_call_arguments.delta",
                vec![item_id.clone(), at.clone(), ("delta", json!(c.arguments))],
            ));
            out.push(self.event(
                "response.function_call_arguments.done",
                vec![item_id, at.clone(), ("arguments", json!(c.arguments))],
            ));
            out.push(self.event("response.output_item.done", vec![at, ("item", done)]));
        }
        self.output_index += count;
    }

    fn message_item(&self, status: &str, content: Value) -> Value {
        go::sorted(vec![
            ("id", json!(self.meta.item_id)),
            ("type", json!("message")),
            ("status", json!(status)),
            ("role", json!("assistant")),
            ("content", content),
        ])
    }

    fn text_delta(&mut self, content: &str, out: &mut Vec<Bytes>) {
        self.finish_reasoning(out);
        let at = ("output_index", json!(self.output_index));
        let item_id = ("item_id", json!(self.meta.item_id));
        if !self.content_started {
            self.content_started = true;
            let item = self.message_item("in_progress", json!([]));
            out.push(self.event(
                "response.output_item.added",
                vec![at.clone(), ("item", item)],
            ));
            out.push(self.event(
                "response.content_part.added",
                vec![
                    item_id.clone(),
                    at.clone(),
                    ("content_index", json!(0)),
                    ("part", output_text("")),
                ],
            ));
        }
        self.text.push_str(content);
        out.push(self.event(
            "response.output_text.delta",
            vec![
                item_id,
                at,
                ("content_index", json!(0)),
                ("delta", json!(content)),
                ("logprobs", json!([])),
            ],
        ));
    }

    /// The closing events (`processCompletion`).
    fn complete(&mut self, chunk: &Value, out: &mut Vec<Bytes>) {
        self.done = true;
        self.finish_reasoning(out);
        let message = self
            .content_started
            .then(|| self.message_item("completed", json!([output_text(&self.text)])));
        if let (false, Some(item)) = (self.tool_calls_sent, &message) {
            let at = ("output_index", json!(self.output_index));
            let item_id = ("item_id", json!(self.meta.item_id));
            let content_index = ("content_index", json!(0));
            let text = json!(self.text);
            out.push(self.event(
                "response.output_text.done",
                vec![
                    item_id.clone(),
                    at.clone(),
                    content_index.clone(),
                    ("text", text),
                    ("logprobs", json!([])),
                ],
            ));
            let part = output_text(&self.text);
            out.push(self.event(
                "response.content_part.done",
                vec![item_id, at.clone(), content_index, ("part", part)],
            ));
            out.push(self.event(
                "response.output_item.done",
                vec![at, ("item", item.clone())],
            ));
        }
        let mut output = self.completed.clone();
        output.extend(message);
        let usage = echo::usage(
            count(chunk, "prompt_eval_count"),
            count(chunk, "eval_count"),
            true,
        );
        let mut response = self.response_object("completed", output, Some(usage));
        if let Value::Object(r) = &mut response {
            r.insert("completed_at".into(), json!((self.clock)()));
        }
        let mut pairs = vec![("response", response)];
        pairs.extend(frames::augur_fields(chunk).map(|(k, x)| (k.as_str(), x.clone())));
        out.push(self.event("response.completed", pairs));
    }

    /// The events that end a stream cut by `err`: the opening events if
    /// none went out yet, then `response.failed` with the error (see
    /// [`super::failed`]).
    pub(super) fn fail(&mut self, err: &ProxyError) -> Vec<Bytes> {
        let mut out = self.process(&json!({}));
        self.done = true;
        out.push(crate::wire::responses_end::failed_event(
            &self.meta.response_id,
            &self.meta.model,
            self.sequence,
            err.status().as_u16(),
            &err.client_message(),
        ));
        self.sequence += 1;
        out
    }
}

impl crate::surface::frames::Frames for Converter {
    fn chunk(&mut self, chunk: &serde_json::Value) -> Vec<bytes::Bytes> {
        self.process(chunk)
    }

    fn error(&mut self, e: &crate::error::ProxyError) -> Vec<bytes::Bytes> {
        self.fail(e)
    }
}

#[cfg(test)]
mod tests;
