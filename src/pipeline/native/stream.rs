//! [`super`] (the rescue path), streamed: the upstream's chunks go on as they come,
//! each carrying its own fields (thinking, counts), and only content that
//! may be the start of a call is held back until it is decided. A block
//! of calls to declared tools goes out as tool-call chunks (one call a
//! chunk, as Ollama streams native calls) once it closes; the done chunk
//! reports `augur_repaired: "text_tool_call"` when something was rescued.
//!
//! Once the model sends calls of its own, its parser works: what was held
//! goes out, and the rest passes through with each of its calls checked
//! against its tool (repaired, held while invalid, retried whole) and a
//! lost answer asked once more: [`super::gate`].

use crate::pipeline::job::{Marks, Verdict};
use bytes::Bytes;
use futures_util::StreamExt;
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use crate::{
    confidence::Tokens,
    error::ProxyError,
    tools::{
        self, ToolCall, ToolSet,
        text::{TextEvent, TextStream},
    },
};

use super::{
    super::{
        call::Lines,
        chunk::{call_chunk, delta_chunk},
        confidence,
        job::{Expect, Job},
        output::{self, Item, Output},
        plan::Route,
    },
    gate::{self, Admit, Gate},
    markup::{TEXT_TOOL_CALL, admit, has_calls},
    settle::{self, Checks},
};

/// Start the stream, native calls checked as `checks` says.
pub(crate) async fn run(
    job: Job,
    (set, checks): (ToolSet, Checks),
    raw: Option<Bytes>,
) -> Result<Output, ProxyError> {
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
                gate: Gate::new(&job, checks),
                job,
                set: set.clone(),
                reader: checks.text.then(|| TextStream::new(&set)),
                sent_calls: 0,
                repairs: Vec::new(),
                committed: false,
                tx,
                tokens: Tokens::default(),
                sent: Vec::new(),
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
    /// The checks of the model's own calls.
    gate: Gate,
    /// Content or a call went out (thinking does not count).
    committed: bool,
    tx: mpsc::Sender<Item>,
    /// The answer's token probabilities, read at its done chunk.
    tokens: Tokens,
    /// The calls sent, for scoring.
    sent: Vec<ToolCall>,
}

impl Pump {
    async fn run(&mut self, mut lines: Lines) -> Result<(), ProxyError> {
        let mut model = Value::Null;
        while let Some(item) = lines.next().await {
            let mut chunk = item?;
            model = chunk.get("model").cloned().unwrap_or(Value::Null);
            let done = chunk.get("done").and_then(Value::as_bool) == Some(true);
            if done {
                self.tokens = lines.tokens().clone();
            }
            if let Some(reader) = self.reader.as_mut() {
                if has_calls(chunk.pointer("/message/tool_calls")) {
                    let mut rest = reader.feed(content(&chunk));
                    rest.extend(reader.finish());
                    self.reader = None;
                    let outs = self.outs(rest);
                    if !self.send_outs(&model, outs).await {
                        return Ok(());
                    }
                    chunk = with_content(chunk, "");
                } else {
                    let mut events = reader.feed(content(&chunk));
                    if done {
                        events.extend(reader.finish());
                    }
                    let outs = self.outs(events);
                    if done {
                        if self.send_outs(&model, outs).await {
                            self.finish_text(chunk).await?;
                        }
                        return Ok(());
                    }
                    if !self.send_piece(chunk, outs).await {
                        return Ok(());
                    }
                    continue;
                }
            }
            if !self.native(chunk, done).await? || done {
                return Ok(());
            }
        }
        // Cut without a done chunk: what was held goes out, and the stream
        // ends as the upstream's did.
        if let Some(mut reader) = self.reader.take() {
            let outs = self.outs(reader.finish());
            self.send_outs(&model, outs).await;
        }
        if self.gate.holding() {
            let (held, verdict) = self.gate.take_held();
            gate::fail(&self.job, &self.set, verdict.as_ref())?;
            for chunk in held {
                if !self.send(chunk).await {
                    break;
                }
            }
        } else {
            self.gate.count_passed();
        }
        Ok(())
    }

    /// A chunk after the model's first call of its own: its calls checked,
    /// held from an invalid one on; `false` once the client is gone.
    async fn native(&mut self, chunk: Value, done: bool) -> Result<bool, ProxyError> {
        if self.gate.holding() {
            if done {
                return self.settle_held(chunk).await;
            }
            self.gate.hold(chunk);
            return Ok(true);
        }
        let chunk = if has_calls(chunk.pointer("/message/tool_calls")) {
            match self
                .gate
                .admit(&self.set, &self.job, chunk, &mut self.repairs)
            {
                Admit::Pass(chunk) => chunk,
                Admit::Hold if done => {
                    let done = self.gate.split_done();
                    return self.settle_held(done).await;
                }
                Admit::Hold => return Ok(true),
            }
        } else {
            chunk
        };
        if done {
            self.gate.count_passed();
            let chunk = self.reported(chunk, false);
            return Ok(self.send(chunk).await);
        }
        Ok(self.send(chunk).await)
    }

    /// The done chunk of an answer with an invalid call held: retried
    /// whole while nothing but thinking went out and retries are left,
    /// else `validate.on_failure`.
    async fn settle_held(&mut self, done: Value) -> Result<bool, ProxyError> {
        let (held, verdict) = self.gate.take_held();
        if !self.committed && self.job.validate.max_retries > 0 {
            let whole = gate::whole(&held, &done);
            let checks = Checks {
                validate: true,
                recover: false,
                text: false,
            };
            let settled = settle::settle(&self.job, &self.set, checks, whole).await?;
            return Ok(self.send_settled(settled, &done).await);
        }
        gate::fail(&self.job, &self.set, verdict.as_ref())?;
        for chunk in held {
            if !self.send(chunk).await {
                return Ok(false);
            }
        }
        let done = self.reported(done, true);
        Ok(self.send(done).await)
    }

    /// The done chunk of an answer with no call of the model's own: a
    /// lost answer asked once more, when nothing went out.
    async fn finish_text(&mut self, chunk: Value) -> Result<(), ProxyError> {
        let answer = with_content(chunk.clone(), "");
        if self.gate.recover && !self.committed && settle::is_lost(&answer) {
            let checks = Checks {
                validate: self.gate.validate,
                recover: true,
                text: false,
            };
            let settled = settle::settle(&self.job, &self.set, checks, answer).await?;
            if !settled.report.repaired.is_empty() || settled.report.invalid {
                self.send_settled(settled, &chunk).await;
                return Ok(());
            }
        }
        let chunk = self.done_chunk(chunk);
        self.send(chunk).await;
        Ok(())
    }

    /// A settled whole answer streamed: its content, its calls, its done
    /// chunk with what was repaired.
    async fn send_settled(&mut self, settled: settle::Settled, done: &Value) -> bool {
        let model = done.get("model").cloned().unwrap_or(Value::Null);
        self.repairs.extend(settled.report.repaired);
        let mut chunks = gate::chunks_of(&settled.response, &model);
        let last = chunks
            .pop()
            .map(|c| self.reported(c, settled.report.invalid));
        for chunk in chunks.into_iter().chain(last) {
            if !self.send(chunk).await {
                return false;
            }
        }
        true
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
                Out::Text(t) => delta_chunk(Route::Chat, model, &t, None),
                Out::Call(call) => {
                    let calls =
                        tools::ollama_tool_calls(std::slice::from_ref(&call), self.sent_calls);
                    self.sent_calls += 1;
                    call_chunk(model, calls)
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
        self.reported(with_content(chunk, ""), false)
    }

    /// `chunk` with what was repaired (each once), and marked invalid.
    fn reported(&self, mut chunk: Value, invalid: bool) -> Value {
        let Value::Object(f) = &mut chunk else {
            return chunk;
        };
        if !self.repairs.is_empty() {
            let mut seen: Vec<&str> = Vec::new();
            for r in &self.repairs {
                if !seen.contains(&r.as_str()) {
                    seen.push(r);
                }
            }
            Marks::on(f).repaired(&seen);
        }
        if invalid {
            Marks::on(f).validation(Verdict::Invalid);
        }
        chunk
    }

    async fn send(&mut self, mut chunk: Value) -> bool {
        let message = chunk.get("message");
        let text = message
            .and_then(|m| m.get("content"))
            .and_then(Value::as_str)
            .is_some_and(|t| !t.trim().is_empty());
        if text || has_calls(message.and_then(|m| m.get("tool_calls"))) {
            self.committed = true;
        }
        self.sent.extend(calls_in(&chunk));
        if chunk.get("done").and_then(Value::as_bool) == Some(true) {
            let calls = &self.sent;
            let scorer = |t: &_| confidence::score_stream(&Expect::Text, t, calls);
            confidence::end_stream(&self.job, &self.tokens, scorer, &mut chunk);
        }
        output::send(&self.tx, Ok(chunk)).await
    }
}

/// The calls a chunk carries, as read for scoring.
fn calls_in(chunk: &Value) -> Vec<ToolCall> {
    chunk
        .pointer("/message/tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| {
            let f = c.get("function").unwrap_or(c);
            ToolCall {
                name: f
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .into(),
                arguments: f.get("arguments").cloned().unwrap_or(json!({})),
            }
        })
        .collect()
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
