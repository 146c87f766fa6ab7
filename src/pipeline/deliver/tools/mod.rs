//! Emulated tool calling, streamed: the model's constrained JSON is read
//! as it arrives; answer text goes to the client token by token, each tool
//! call as soon as it is complete and valid, then the done chunk — the
//! chunk sequence Ollama produces for a natively tool-capable model.
//!
//! An invalid call before anything was sent falls back to the whole-answer
//! path (repair, retry with feedback) and streams its result. Calls are
//! screened as they complete ([`crate::pipeline::screen`]): an ungrounded
//! continuation is dropped, and a repeat of an answered call is held; when
//! the answer ends with only such repeats, the loop breaker's answer is
//! streamed instead (or, if there is none, the held calls).

mod calls;

use crate::pipeline::job::{Marks, Verdict};
use std::ops::ControlFlow;

use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::{
    error::ProxyError,
    format::think_stream::{ThinkEvent, ThinkStream},
    tools::{StreamEvent, ToolCall, ToolSet},
    wire::created_at_now,
};

use super::super::{
    attempt::{plain, reask, text_mode::Extractor},
    call::Lines,
    chunk::delta_chunk,
    confidence,
    job::{Expect, Job, Seed, answer_text, cut_short},
    output::{self, Item, Output, Report},
    plan::Route,
    screen::{Admit, CallScreen, StreamScreen},
};
use calls::{Progress, send_answer, send_call, validate_streamed_call};

/// Start the streamed emulation.
pub(crate) async fn run(job: Job) -> Result<Output, ProxyError> {
    let (job, lines) = job.open_stream(open).await?;
    // Headers go out before any call is known: say up front when some
    // tool's arguments can only be checked against its grammar copy.
    let inexact = matches!(&job.expect, Expect::Tools { set, .. } if !set.exact());
    let report = Report {
        emulated: job.emulated,
        unchecked: inexact && job.validate.enabled,
        fallback: job.answered.clone(),
        ..Report::default()
    };
    Ok(output::stream_fallible(report.headers(), |tx| async move {
        pump(&job, lines, &tx).await
    }))
}

/// Open the job's stream.
async fn open(job: &Job) -> Result<Lines, ProxyError> {
    let mut body = job.body.clone();
    body.insert("stream".into(), Value::Bool(true));
    job.ctx
        .lines(Route::Chat.path(), &Value::Object(body))
        .await
}

/// Go on with the stream, or end it with this result.
type Flow<T = ()> = ControlFlow<Result<(), ProxyError>, T>;

/// One streamed tool answer on its way to the client.
struct Pump<'a> {
    job: &'a Job,
    tx: &'a mpsc::Sender<Item>,
    lines: Lines,
    set: &'a ToolSet,
    screen: &'a CallScreen,
    /// Reads the envelope's calls and answer text; taken at the end.
    extractor: Option<Extractor>,
    /// With emulated thinking the envelope is the thinking object's answer.
    thinker: Option<ThinkStream>,
    gate: StreamScreen,
    p: Progress,
    last_model: Value,
}

async fn pump(job: &Job, lines: Lines, tx: &mpsc::Sender<Item>) -> Result<(), ProxyError> {
    let Expect::Tools {
        set,
        answer_schema,
        json_answer,
        think,
        screen,
        text,
    } = &job.expect
    else {
        return Err(ProxyError::Internal("tool stream without tools".into()));
    };
    let structured = answer_schema.is_some() || *json_answer;
    let mut pump = Pump {
        job,
        tx,
        lines,
        set,
        screen,
        extractor: Some(Extractor::new(set, structured, text.as_ref())),
        thinker: think.then(ThinkStream::new),
        gate: StreamScreen::default(),
        p: Progress::default(),
        last_model: Value::Null,
    };
    loop {
        if let ControlFlow::Break(result) = pump.step().await {
            return result;
        }
    }
}

impl Pump<'_> {
    /// One upstream chunk: its thinking and answer text out as they come,
    /// its complete calls checked and sent; the done chunk ends the answer.
    async fn step(&mut self) -> Flow {
        let (chunk, eof) = match self.next_chunk().await {
            Ok(next) => next,
            Err(e) => return ControlFlow::Break(Err(e)),
        };
        let model = chunk.get("model").cloned().unwrap_or(Value::Null);
        self.last_model = model.clone();
        let done = chunk.get("done").and_then(Value::as_bool) == Some(true);
        let delta = answer_text(Route::Chat, &chunk);
        self.p.raw.push_str(&delta);
        let (thinking, envelope) = self.split_thinking(&chunk, delta);
        if !thinking.is_empty() {
            self.p.sent_thinking = true;
            let c = delta_chunk(Route::Chat, &model, "", Some(&thinking));
            if !output::send(self.tx, Ok(c)).await {
                return ControlFlow::Break(Ok(()));
            }
        }
        let mut events = self
            .extractor
            .as_mut()
            .map(|x| x.feed(&envelope))
            .unwrap_or_default();
        if done {
            events.extend(self.finish(&chunk, eof).await?);
        }
        self.send_events(events, &model, done.then_some(&chunk))
            .await?;
        if done {
            return ControlFlow::Break(self.end(chunk, &model).await);
        }
        ControlFlow::Continue(())
    }

    /// The next chunk, and whether the upstream ended without one: Ollama
    /// ends a stream without a done chunk when the model repeats one token
    /// too often, and that end is handled like a done chunk.
    async fn next_chunk(&mut self) -> Result<(Value, bool), ProxyError> {
        Ok(match self.lines.next().await {
            Some(item) => (item?, false),
            None => (
                json!({"model": self.last_model, "created_at": created_at_now(),
                       "message": {"role": "assistant", "content": ""},
                       "done": true, "done_reason": "stop"}),
                true,
            ),
        })
    }

    /// A chunk's thinking (the model's own: a thinking model keeps its
    /// `think`; or the emulated object's reasoning) and envelope text.
    fn split_thinking(&mut self, chunk: &Value, delta: String) -> (String, String) {
        let mut thinking = chunk
            .pointer("/message/thinking")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let Some(thinker) = self.thinker.as_mut() else {
            return (thinking, delta);
        };
        let mut envelope = String::new();
        for e in thinker.feed(&delta) {
            match e {
                ThinkEvent::Thinking(x) => thinking.push_str(&x),
                ThinkEvent::AnswerRaw(x) => envelope.push_str(&x),
                // Not an envelope: the whole-answer path sorts it out.
                ThinkEvent::AnswerText(_) => {}
            }
        }
        (thinking, envelope)
    }

    /// The end of the envelope: its last events, or how an unreadable one
    /// ends (the whole-answer path when nothing went out yet).
    async fn finish(&mut self, chunk: &Value, eof: bool) -> Flow<Vec<StreamEvent>> {
        let finished = match self.extractor.take() {
            Some(x) => x.finish(),
            None => Ok(Vec::new()),
        };
        let e = match finished {
            Ok(more) => return ControlFlow::Continue(more),
            Err(e) => e,
        };
        let (job, p) = (self.job, &mut self.p);
        // A plain answer the token limit cut ends as Ollama ends it.
        if let Some(rest) =
            plain::stream_rest(chunk, &p.raw, p.answer_sent, &job.expect, &job.validators)
        {
            return ControlFlow::Continue(vec![StreamEvent::AnswerDelta(rest)]);
        }
        if !p.sent_anything && !self.gate.holding() {
            tracing::info!(error = %e, "streamed tool answer unusable; retrying whole");
            let raw = std::mem::take(&mut p.raw);
            if job.validate.max_retries == 0 && job.may_fall_back() {
                let (tx, lines) = (self.tx, &mut self.lines);
                let last = Some(chunk.clone());
                return ControlFlow::Break(
                    job.stream_whole(tx, p.sent_thinking, raw, lines, last)
                        .await,
                );
            }
            let seed = Seed {
                truncated: eof || cut_short(chunk),
                text: raw,
            };
            return ControlFlow::Break(
                job.stream_complete(Route::Chat, self.tx, p.sent_thinking, Some(seed))
                    .await,
            );
        }
        if eof && p.sent.is_empty() {
            // Answer text was streamed and the upstream stopped early: end
            // the stream as the upstream did.
            return ControlFlow::Break(Ok(()));
        }
        if !p.sent.is_empty() && (job.validate.repair || self.gate.holding()) {
            // Cut off after complete calls (a small model repeating calls
            // until the token limit): close the list there.
            tracing::info!(error = %e, calls = p.sent.len(), "closed a cut-off tool list");
            metrics::counter!("augur_repairs_total").increment(1);
            p.closed_truncated = true;
            return ControlFlow::Continue(Vec::new());
        }
        ControlFlow::Break(Err(ProxyError::Unprocessable(format!(
            "the model's answer is not a valid tool call or answer: {e}"
        ))))
    }

    /// Send answer text as it comes and each call once it is complete;
    /// `last`: the done chunk, when this chunk is it.
    async fn send_events(
        &mut self,
        events: Vec<StreamEvent>,
        model: &Value,
        last: Option<&Value>,
    ) -> Flow {
        for event in events {
            match event {
                StreamEvent::AnswerDelta(text) => {
                    if text.is_empty() {
                        continue;
                    }
                    self.p.sent_anything = true;
                    self.p.answer_sent += text.len();
                    let c = delta_chunk(Route::Chat, model, &text, None);
                    if !output::send(self.tx, Ok(c)).await {
                        return ControlFlow::Break(Ok(()));
                    }
                }
                StreamEvent::Call(call) => self.on_call(call, model, last).await?,
            }
        }
        ControlFlow::Continue(())
    }

    /// One complete call: checked, screened, and sent (with the calls the
    /// screen held until a related one came) or held.
    async fn on_call(&mut self, call: ToolCall, model: &Value, last: Option<&Value>) -> Flow {
        if self.p.sent.contains(&call) {
            return ControlFlow::Continue(());
        }
        let original = call.clone();
        // A call the gate will hold as one nobody asked for is checked for
        // placeholders only if it goes out after all.
        let held = self.gate.holds_unrelated(self.screen, self.set, &call);
        let call = self.checked(call, !held, last).await?;
        // Seen: a repeat of it is skipped whether it went out or not.
        self.p.sent.push(original);
        if self.gate.admit(self.screen, self.set, &call) != Admit::Send {
            return ControlFlow::Continue(());
        }
        // The first call the model was unsure of, before anything went
        // out: the policy's retry or fallback answers instead.
        if !self.p.sent_anything && self.unsure_of_last_call() {
            let raw = std::mem::take(&mut self.p.raw);
            let (job, tx, lines) = (self.job, self.tx, &mut self.lines);
            let rest = (raw, lines, last.cloned());
            return ControlFlow::Break(job.stream_unsure(tx, self.p.sent_thinking, rest).await);
        }
        // Held calls go out after all: checked in full now.
        let mut released = Vec::new();
        for held in self.gate.take_unrelated() {
            released.push(self.checked(held, true, last).await?);
        }
        for call in released.iter().chain([&call]) {
            if !send_call(self.job, self.tx, model, call, &mut self.p).await {
                return ControlFlow::Break(Ok(()));
            }
        }
        ControlFlow::Continue(())
    }

    /// Whether the call just completed is one the model was unsure of and
    /// the policy acts on (a streamed call is held until complete anyway).
    fn unsure_of_last_call(&self) -> bool {
        if self.job.ctx.probs.policy.is_none() {
            return false;
        }
        let scored = crate::confidence::of_envelope(self.lines.tokens());
        scored
            .and_then(|c| c.calls.last().map(|call| call.score.min))
            .is_some_and(|min| self.job.acts_on_unsure_call(min))
    }

    /// A call validated (and repaired); one that fails goes to the
    /// whole-answer path, which ends this stream.
    async fn checked(
        &mut self,
        call: ToolCall,
        placeholders: bool,
        last: Option<&Value>,
    ) -> Flow<ToolCall> {
        match validate_streamed_call(self.job, self.set, call, placeholders, &mut self.p) {
            Ok(Some(call)) => ControlFlow::Continue(call),
            Ok(None) => {
                let raw = std::mem::take(&mut self.p.raw);
                let (tx, lines) = (self.tx, &mut self.lines);
                ControlFlow::Break(
                    self.job
                        .stream_whole(tx, self.p.sent_thinking, raw, lines, last.cloned())
                        .await,
                )
            }
            Err(e) => ControlFlow::Break(Err(e)),
        }
    }

    /// The done chunk: held repeats or unrelated calls answered by a
    /// re-ask (or sent after all), then the upstream's done chunk with
    /// what was repaired.
    async fn end(&mut self, chunk: Value, model: &Value) -> Result<(), ProxyError> {
        let (job, tx) = (self.job, self.tx);
        // Only repeats of answered calls, or calls nobody asked for: ask
        // for an answer instead.
        if self.gate.holding() && !self.p.sent_anything {
            let held = self.gate.take_held();
            let unrelated = self.gate.take_unrelated();
            let note = reask::note_for(&held);
            if let Some(answer) = reask::reask(job, note).await {
                let repairs = self.gate.repairs_answered(held.len(), unrelated.len());
                return send_answer(job, tx, answer, self.p.sent_thinking, repairs).await;
            }
            for call in unrelated.iter().chain(&held) {
                if !send_call(job, tx, model, call, &mut self.p).await {
                    return Ok(());
                }
            }
        }
        // Held calls nobody asked for, after answer text: they go out.
        for call in self.gate.take_unrelated() {
            if !send_call(job, tx, model, &call, &mut self.p).await {
                return Ok(());
            }
        }
        let mut repairs = self.gate.repairs(self.gate.withheld());
        if self.p.closed_truncated {
            repairs.insert(0, "closed_truncated");
        }
        let mut last = chunk;
        if let Value::Object(f) = &mut last {
            f.insert("created_at".into(), json!(created_at_now()));
            f.insert(
                "message".into(),
                json!({"role": "assistant", "content": ""}),
            );
            if self.p.invalid {
                Marks::on(f).validation(Verdict::Invalid);
            }
            if self.p.closed_truncated {
                f.insert("done_reason".into(), json!("stop"));
            }
            if !repairs.is_empty() {
                Marks::on(f).repaired(&repairs);
            }
        }
        let tokens = self.lines.tokens();
        let sent = &self.p.sent;
        let scorer = |t: &_| confidence::score_stream(&job.expect, t, sent);
        confidence::end_stream(job, tokens, scorer, &mut last);
        let _ = output::send(tx, Ok(last)).await;
        Ok(())
    }
}
