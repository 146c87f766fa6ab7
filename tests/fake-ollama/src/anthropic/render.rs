//! Anthropic messages as Ollama writes them: `ToMessagesResponse` for a whole answer, and
//! `StreamConverter`'s events (`message_start`, `content_block_start` / `_delta` / `_stop`,
//! `message_delta`, `message_stop`; no `ping`) for a stream. Payloads are Go structs, so
//! fields keep their declared order and empty optional fields are omitted (`message_start`
//! has no `stop_reason`, a `message_delta` without one has `"delta":{}`).
//!
//! A tool call is one `tool_use` block: its start carries `"input":{}`, then one
//! `input_json_delta` holds the whole arguments, then it stops. `message_start` reports the
//! estimated input tokens (the real count is only known at the end, in `message_delta`).

use serde_json::{Value, json};

use crate::plan::Plan;
use crate::surface::{Converter, Step, encoded, event};
use crate::wire::go_json;

/// `mapStopReason`.
fn stop_reason(p: &Plan, calls: bool) -> &'static str {
    match p.done_reason {
        _ if calls => "tool_use",
        "stop" => "end_turn",
        "length" => "max_tokens",
        "" => "",
        _ => "stop_sequence",
    }
}

fn tool_use(call: &Value, input: Value) -> Value {
    json!({ "type": "tool_use", "id": call["id"], "name": call["function"]["name"], "input": input })
}

/// The message of a whole (non-streamed) answer; `content` is `null` when the answer is
/// empty.
pub fn whole(id: &str, model: &str, p: &Plan) -> Vec<u8> {
    let mut content = Vec::new();
    let thinking = p.thinking();
    if !thinking.is_empty() {
        content.push(json!({ "type": "thinking", "thinking": thinking }));
    }
    let text = p.content();
    if !text.is_empty() {
        content.push(json!({ "type": "text", "text": text }));
    }
    for call in &p.tool_calls {
        content.push(tool_use(call, call["function"]["arguments"].clone()));
    }
    let (input, output) = p.usage();
    let mut v = json!({ "id": id, "type": "message", "role": "assistant", "model": model,
        "content": if content.is_empty() { Value::Null } else { Value::Array(content) } });
    let reason = stop_reason(p, !p.tool_calls.is_empty());
    if !reason.is_empty() {
        v["stop_reason"] = json!(reason);
    }
    v["usage"] = json!({ "input_tokens": input, "output_tokens": output });
    encoded(&v)
}

/// `StreamConverter`: the events of each chat chunk.
pub struct Stream {
    id: String,
    model: String,
    estimate: u64,
    started: bool,
    index: u64,
    thinking_started: bool,
    thinking_done: bool,
    text_started: bool,
    calls_sent: bool,
}

impl Stream {
    pub fn new(id: String, model: String, estimate: u64) -> Self {
        Stream {
            id,
            model,
            estimate,
            started: false,
            index: 0,
            thinking_started: false,
            thinking_done: false,
            text_started: false,
            calls_sent: false,
        }
    }

    fn start(&self, out: &mut Vec<u8>, block: Value) {
        let data =
            json!({ "type": "content_block_start", "index": self.index, "content_block": block });
        event(out, "content_block_start", &data);
    }

    fn delta(&self, out: &mut Vec<u8>, delta: Value) {
        let data = json!({ "type": "content_block_delta", "index": self.index, "delta": delta });
        event(out, "content_block_delta", &data);
    }

    /// Stops the open block; the next one gets the next index.
    fn stop(&mut self, out: &mut Vec<u8>) {
        let data = json!({ "type": "content_block_stop", "index": self.index });
        event(out, "content_block_stop", &data);
        self.index += 1;
    }

    fn close_thinking(&mut self, out: &mut Vec<u8>) {
        if self.thinking_started && !self.thinking_done {
            self.thinking_done = true;
            self.stop(out);
        }
    }

    fn thinking(&mut self, out: &mut Vec<u8>, piece: &str) {
        if self.thinking_done {
            return;
        }
        if self.text_started {
            self.text_started = false;
            self.stop(out);
        }
        if !self.thinking_started {
            self.thinking_started = true;
            self.start(out, json!({ "type": "thinking", "thinking": "" }));
        }
        self.delta(out, json!({ "type": "thinking_delta", "thinking": piece }));
    }

    fn text(&mut self, out: &mut Vec<u8>, piece: &str) {
        self.close_thinking(out);
        if !self.text_started {
            self.text_started = true;
            self.start(out, json!({ "type": "text", "text": "" }));
        }
        self.delta(out, json!({ "type": "text_delta", "text": piece }));
    }

    fn calls(&mut self, out: &mut Vec<u8>, calls: &[Value]) {
        for call in calls {
            self.close_thinking(out);
            if self.text_started {
                self.text_started = false;
                self.stop(out);
            }
            self.start(out, tool_use(call, json!({})));
            let args =
                String::from_utf8_lossy(&go_json(&call["function"]["arguments"])).into_owned();
            self.delta(
                out,
                json!({ "type": "input_json_delta", "partial_json": args }),
            );
            self.stop(out);
            self.calls_sent = true;
        }
    }

    fn done(&mut self, out: &mut Vec<u8>, p: &Plan) {
        if self.text_started || (self.thinking_started && !self.thinking_done) {
            let data = json!({ "type": "content_block_stop", "index": self.index });
            event(out, "content_block_stop", &data);
        }
        let (input, output) = p.usage();
        let reason = stop_reason(p, self.calls_sent);
        let delta = if reason.is_empty() {
            json!({})
        } else {
            json!({ "stop_reason": reason })
        };
        let data = json!({ "type": "message_delta", "delta": delta,
            "usage": { "input_tokens": input, "output_tokens": output } });
        event(out, "message_delta", &data);
        event(out, "message_stop", &json!({ "type": "message_stop" }));
    }
}

impl Converter for Stream {
    fn process(&mut self, p: &Plan, step: Step<'_>) -> Vec<u8> {
        let mut out = Vec::new();
        if !self.started {
            self.started = true;
            // The first chunk carries no prompt count unless it is the last one.
            let input = match step {
                Step::Done if p.usage().0 > 0 => p.usage().0,
                _ => self.estimate,
            };
            let message = json!({ "id": self.id, "type": "message", "role": "assistant",
                "model": self.model, "content": [],
                "usage": { "input_tokens": input, "output_tokens": 0 } });
            event(
                &mut out,
                "message_start",
                &json!({ "type": "message_start", "message": message }),
            );
        }
        match step {
            Step::Thinking(t) => self.thinking(&mut out, t),
            Step::Text(t) if !t.is_empty() => self.text(&mut out, t),
            Step::Text(_) => {}
            Step::Calls(calls) => self.calls(&mut out, calls),
            Step::Done => self.done(&mut out, p),
        }
        out
    }
}
