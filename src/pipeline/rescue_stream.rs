//! [`super::rescue`], streamed: the upstream's chunks go on as they come,
//! each carrying its own fields (thinking, counts), and only content that
//! may be the start of a call is held back until it is decided. A block
//! of calls to declared tools goes out as tool-call chunks (one call a
//! chunk, as Ollama streams native calls) once it closes; the done chunk
//! reports `augur_repaired: "text_tool_call"` when something was rescued.
//!
//! Once the model sends calls of its own, its parser works: what was held
//! goes out and the rest passes through unread.

use bytes::Bytes;
use futures_util::StreamExt;
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use crate::{
    error::ProxyError,
    tools::{
        self, ToolCall, ToolSet,
        text::{TextEvent, TextStream},
    },
    wire::created_at_now,
};

use super::{
    call::Lines,
    flows::{self, Job},
    output::{self, Item, Output},
    plan::Route,
    rescue::{TEXT_TOOL_CALL, admit, has_calls},
};

/// Start the stream.
pub async fn run(job: Job, set: ToolSet, raw: Option<Bytes>) -> Result<Output, ProxyError> {
    let path = job.route.path();
    let lines = match raw {
        Some(bytes) => job.ctx.lines_raw(path, bytes).await?,
        None => {
            let mut body = job.body.clone();
            body.insert("stream".into(), Value::Bool(true));
            job.ctx.lines(path, &Value::Object(body)).await?
        }
    };
    Ok(output::stream_fallible(
        http::HeaderMap::new(),
        |tx| async move {
            let mut pump = Pump {
                job,
                set: set.clone(),
                reader: Some(TextStream::new(&set)),
                sent_calls: 0,
                repairs: Vec::new(),
                tx,
            };
            pump.run(lines).await
        },
    ))
}

/// What goes out for a piece of content.
enum Out {
    Text(String),
    Call(ToolCall),
}

struct Pump {
    job: Job,
    set: ToolSet,
    /// `None` once the model sent calls of its own.
    reader: Option<TextStream>,
    sent_calls: usize,
    repairs: Vec<String>,
    tx: mpsc::Sender<Item>,
}

impl Pump {
    async fn run(&mut self, mut lines: Lines) -> Result<(), ProxyError> {
        let mut model = Value::Null;
        while let Some(item) = lines.next().await {
            let chunk = item?;
            model = chunk.get("model").cloned().unwrap_or(Value::Null);
            let done = chunk.get("done").and_then(Value::as_bool) == Some(true);
            let Some(reader) = self.reader.as_mut() else {
                if !self.send(chunk).await || done {
                    return Ok(());
                }
                continue;
            };
            if has_calls(chunk.pointer("/message/tool_calls")) {
                let mut rest = reader.feed(content(&chunk));
                rest.extend(reader.finish());
                self.reader = None;
                let outs = self.outs(rest);
                let chunk = with_content(chunk, "");
                if !self.send_outs(&model, outs).await || !self.send(chunk).await || done {
                    return Ok(());
                }
                continue;
            }
            let mut events = reader.feed(content(&chunk));
            if done {
                events.extend(reader.finish());
            }
            let outs = self.outs(events);
            let sent = if done {
                self.send_outs(&model, outs).await && self.send(self.done_chunk(chunk)).await
            } else {
                self.send_piece(chunk, outs).await
            };
            if !sent || done {
                return Ok(());
            }
        }
        // Cut without a done chunk: what was held goes out, and the stream
        // ends as the upstream's did.
        if let Some(mut reader) = self.reader.take() {
            let outs = self.outs(reader.finish());
            self.send_outs(&model, outs).await;
        }
        Ok(())
    }

    /// Events as what goes out: text, or calls checked against their
    /// tools (a block with an invalid call goes out as it was written).
    fn outs(&mut self, events: Vec<TextEvent>) -> Vec<Out> {
        let mut outs = Vec::new();
        let push_text = |outs: &mut Vec<Out>, t: String| match outs.last_mut() {
            Some(Out::Text(last)) => last.push_str(&t),
            _ => outs.push(Out::Text(t)),
        };
        for event in events {
            match event {
                TextEvent::Text(t) | TextEvent::Unparsed { raw: t, .. } => push_text(&mut outs, t),
                TextEvent::Calls { calls, raw } => match admit(&self.set, calls, &self.job) {
                    Some((calls, repairs)) => {
                        if !self.repairs.iter().any(|r| r == TEXT_TOOL_CALL) {
                            self.repairs.push(TEXT_TOOL_CALL.to_string());
                        }
                        self.repairs.extend(repairs);
                        outs.extend(calls.into_iter().map(Out::Call));
                    }
                    None => push_text(&mut outs, raw),
                },
            }
        }
        outs
    }

    /// A `done: false` chunk with its content decided: the first text in
    /// the chunk itself (its other fields kept), the rest after it.
    async fn send_piece(&mut self, chunk: Value, outs: Vec<Out>) -> bool {
        let model = chunk.get("model").cloned().unwrap_or(Value::Null);
        let carries = chunk
            .pointer("/message/thinking")
            .and_then(Value::as_str)
            .is_some_and(|t| !t.is_empty());
        let mut outs = outs.into_iter().peekable();
        let first = match outs.peek() {
            Some(Out::Text(_)) => match outs.next() {
                Some(Out::Text(t)) => Some(with_content(chunk, &t)),
                _ => None,
            },
            _ if carries => Some(with_content(chunk, "")),
            _ => None,
        };
        if let Some(first) = first
            && !self.send(first).await
        {
            return false;
        }
        self.send_outs(&model, outs.collect()).await
    }

    /// Each text as a content chunk, each call in a chunk of its own.
    async fn send_outs(&mut self, model: &Value, outs: Vec<Out>) -> bool {
        for out in outs {
            let chunk = match out {
                Out::Text(t) => flows::delta_chunk(Route::Chat, model, &t, None),
                Out::Call(call) => {
                    let calls =
                        tools::ollama_tool_calls(std::slice::from_ref(&call), self.sent_calls);
                    self.sent_calls += 1;
                    json!({
                        "model": model,
                        "created_at": created_at_now(),
                        "message": {"role": "assistant", "content": "", "tool_calls": calls},
                        "done": false,
                    })
                }
            };
            if !self.send(chunk).await {
                return false;
            }
        }
        true
    }

    /// The done chunk, its content sent already, with what was repaired.
    fn done_chunk(&self, chunk: Value) -> Value {
        let mut chunk = with_content(chunk, "");
        if !self.repairs.is_empty()
            && let Value::Object(f) = &mut chunk
        {
            f.insert("augur_repaired".into(), json!(self.repairs.join(", ")));
        }
        chunk
    }

    async fn send(&self, chunk: Value) -> bool {
        output::send(&self.tx, Ok(chunk)).await
    }
}

fn content(chunk: &Value) -> &str {
    chunk
        .pointer("/message/content")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// `chunk` with `message.content` set to `text`.
fn with_content(mut chunk: Value, text: &str) -> Value {
    if let Some(Value::Object(message)) = chunk.get_mut("message") {
        message.insert("content".into(), Value::String(text.to_string()));
    } else if let Value::Object(f) = &mut chunk {
        let mut message = Map::new();
        message.insert("role".into(), json!("assistant"));
        message.insert("content".into(), Value::String(text.to_string()));
        f.insert("message".into(), Value::Object(message));
    }
    chunk
}
