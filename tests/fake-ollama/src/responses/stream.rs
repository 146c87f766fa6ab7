//! `ResponsesStreamConverter`: the events of a streamed Responses answer. Their payloads are
//! Go maps, so keys come sorted (the text format's raw schema keeps its own order), and each
//! carries its `type` and a `sequence_number` counting from 0. The stream opens with
//! `response.created` and `response.in_progress`, streams a reasoning item (summary text
//! deltas), function calls (one arguments delta each) or a message (output text deltas), and
//! ends with `response.completed` holding the whole output and the usage.

use std::sync::Arc;

use serde_json::{Value, json};

use super::render::{Echo, Ids, arguments, n, opt, text_format, text_part, tool, usage};
use crate::plan::Plan;
use crate::surface::{Converter, Step, event, go_float, go_map, unix_now};

/// `ResponsesStreamConverter`: the events of each chat chunk.
pub struct Stream {
    echo: Arc<Echo>,
    ids: Ids,
    seq: u64,
    started: bool,
    output_index: u64,
    content_started: bool,
    tool_calls_sent: bool,
    text: String,
    thinking: String,
    reasoning_id: Option<String>,
    completed: Vec<Value>,
}

impl Stream {
    pub fn new(echo: Arc<Echo>, ids: Ids) -> Self {
        Stream {
            echo,
            ids,
            seq: 0,
            started: false,
            output_index: 0,
            content_started: false,
            tool_calls_sent: false,
            text: String::new(),
            thinking: String::new(),
            reasoning_id: None,
            completed: Vec::new(),
        }
    }

    fn emit(&mut self, out: &mut Vec<u8>, kind: &str, mut data: Value) {
        data["type"] = json!(kind);
        data["sequence_number"] = json!(self.seq);
        self.seq += 1;
        // The text format's schema is raw JSON: it keeps its keys' order.
        let schema = data.pointer("/response/text/format/schema").cloned();
        let mut data = go_map(data);
        if let (Some(schema), Some(slot)) =
            (schema, data.pointer_mut("/response/text/format/schema"))
        {
            *slot = schema;
        }
        event(out, kind, &data);
    }

    /// `buildResponseObject`.
    fn object(&self, status: &str, output: Vec<Value>, usage: Value) -> Value {
        let e = &self.echo;
        let reasoning = if e.effort.is_empty() && e.summary.is_empty() {
            Value::Null
        } else {
            let s = |v: &String| Some(v.clone()).filter(|v| !v.is_empty());
            json!({ "effort": opt(s(&e.effort)), "summary": opt(s(&e.summary)) })
        };
        let instructions = Some(e.instructions.clone()).filter(|s| !s.is_empty());
        json!({
            "id": self.ids.response, "object": "response", "created_at": unix_now(),
            "completed_at": null, "status": status, "incomplete_details": null,
            "model": e.model, "previous_response_id": null, "instructions": opt(instructions),
            "output": output, "error": null,
            "tools": e.tools.iter().map(|t| tool(t, false)).collect::<Vec<_>>(),
            "tool_choice": "auto", "truncation": e.truncation.as_deref().unwrap_or("disabled"),
            "parallel_tool_calls": true, "text": { "format": text_format(e) },
            "top_p": go_float(e.top_p.unwrap_or(1.0)), "presence_penalty": 0,
            "frequency_penalty": 0, "top_logprobs": 0,
            "temperature": go_float(e.temperature.unwrap_or(1.0)), "reasoning": reasoning,
            "usage": usage, "max_output_tokens": opt(e.max_output_tokens),
            "max_tool_calls": null, "store": false, "background": e.background,
            "service_tier": "default", "metadata": {}, "safety_identifier": null,
            "prompt_cache_key": null,
        })
    }

    fn thinking(&mut self, out: &mut Vec<u8>, piece: &str) {
        let index = self.output_index;
        let id = match &self.reasoning_id {
            Some(id) => id.clone(),
            None => {
                let id = format!("rs_{}", n());
                self.reasoning_id = Some(id.clone());
                let item = json!({ "id": id, "type": "reasoning", "summary": [] });
                self.emit(
                    out,
                    "response.output_item.added",
                    json!({ "output_index": index, "item": item }),
                );
                id
            }
        };
        self.thinking.push_str(piece);
        self.emit(
            out,
            "response.reasoning_summary_text.delta",
            json!({ "item_id": id,
            "output_index": index, "summary_index": 0, "delta": piece }),
        );
    }

    fn finish_reasoning(&mut self, out: &mut Vec<u8>) {
        let Some(id) = self.reasoning_id.take() else {
            return;
        };
        let text = std::mem::take(&mut self.thinking);
        let index = self.output_index;
        let item = json!({ "id": id, "type": "reasoning",
            "summary": [{ "type": "summary_text", "text": text }], "encrypted_content": text });
        self.completed.push(item.clone());
        self.output_index += 1;
        self.emit(
            out,
            "response.reasoning_summary_text.done",
            json!({ "item_id": id,
            "output_index": index, "summary_index": 0, "text": text }),
        );
        self.emit(
            out,
            "response.output_item.done",
            json!({ "output_index": index, "item": item }),
        );
    }

    fn calls(&mut self, out: &mut Vec<u8>, calls: &[Value]) {
        self.finish_reasoning(out);
        for (i, call) in calls.iter().enumerate() {
            let index = self.output_index + i as u64;
            let id = format!("fc_{}_{i}", n());
            let args = arguments(call);
            let item = |status: &str, args: &str| {
                json!({ "id": id, "type": "function_call",
                "status": status, "call_id": call["id"], "name": call["function"]["name"],
                "arguments": args })
            };
            let done = item("completed", &args);
            self.completed.push(done.clone());
            let added = item("in_progress", "");
            self.emit(
                out,
                "response.output_item.added",
                json!({ "output_index": index, "item": added }),
            );
            self.emit(
                out,
                "response.function_call_arguments.delta",
                json!({ "item_id": id,
                "output_index": index, "delta": args }),
            );
            self.emit(
                out,
                "response.function_call_arguments.done",
                json!({ "item_id": id,
                "output_index": index, "arguments": args }),
            );
            self.emit(
                out,
                "response.output_item.done",
                json!({ "output_index": index, "item": done }),
            );
        }
        self.output_index += calls.len() as u64;
        self.tool_calls_sent = true;
    }

    fn message(&self, status: &str) -> Value {
        let content = if status == "completed" {
            json!([text_part(&self.text)])
        } else {
            json!([])
        };
        json!({ "id": self.ids.item, "type": "message", "status": status, "role": "assistant",
            "content": content })
    }

    fn text(&mut self, out: &mut Vec<u8>, piece: &str) {
        self.finish_reasoning(out);
        let (id, index) = (self.ids.item.clone(), self.output_index);
        if !self.content_started {
            self.content_started = true;
            let item = self.message("in_progress");
            self.emit(
                out,
                "response.output_item.added",
                json!({ "output_index": index, "item": item }),
            );
            self.emit(
                out,
                "response.content_part.added",
                json!({ "item_id": id,
                "output_index": index, "content_index": 0, "part": text_part("") }),
            );
        }
        self.text.push_str(piece);
        self.emit(
            out,
            "response.output_text.delta",
            json!({ "item_id": id, "output_index": index,
            "content_index": 0, "delta": piece, "logprobs": [] }),
        );
    }

    fn completion(&mut self, out: &mut Vec<u8>, p: &Plan) {
        self.finish_reasoning(out);
        let (id, index, text) = (self.ids.item.clone(), self.output_index, self.text.clone());
        if !self.tool_calls_sent && self.content_started {
            self.emit(
                out,
                "response.output_text.done",
                json!({ "item_id": id,
                "output_index": index, "content_index": 0, "text": text, "logprobs": [] }),
            );
            self.emit(
                out,
                "response.content_part.done",
                json!({ "item_id": id,
                "output_index": index, "content_index": 0, "part": text_part(&text) }),
            );
            let item = self.message("completed");
            self.emit(
                out,
                "response.output_item.done",
                json!({ "output_index": index, "item": item }),
            );
        }
        let mut output = self.completed.clone();
        if self.content_started {
            output.push(self.message("completed"));
        }
        let mut response = self.object("completed", output, usage(p));
        response["completed_at"] = json!(unix_now());
        self.emit(out, "response.completed", json!({ "response": response }));
    }
}

impl Converter for Stream {
    fn process(&mut self, p: &Plan, step: Step<'_>) -> Vec<u8> {
        let mut out = Vec::new();
        if !self.started {
            self.started = true;
            let created = self.object("in_progress", Vec::new(), Value::Null);
            self.emit(&mut out, "response.created", json!({ "response": created }));
            let progress = self.object("in_progress", Vec::new(), Value::Null);
            self.emit(
                &mut out,
                "response.in_progress",
                json!({ "response": progress }),
            );
        }
        match step {
            Step::Thinking(t) => self.thinking(&mut out, t),
            Step::Calls(calls) => self.calls(&mut out, calls),
            Step::Text(t) if !self.tool_calls_sent && !t.is_empty() => self.text(&mut out, t),
            Step::Text(_) => {}
            Step::Done => self.completion(&mut out, p),
        }
        out
    }
}
