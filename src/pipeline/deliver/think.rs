//! Emulated thinking, streamed: the model's `{"reasoning", "answer"}`
//! object is read as it arrives, and the thinking goes to the client as it
//! is produced, in Ollama's `thinking` deltas. A text answer follows the
//! same way. An answer with a schema is held (bounded), validated and
//! repaired before it is sent; when it is still invalid, and nothing of it
//! was sent, the whole-answer path (retries with feedback) answers and
//! only its answer is sent, the thinking having gone out already. With no
//! retries left, the fallback models (if any) answer the same way.

use crate::pipeline::job::{Marks, Verdict};
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::{
    error::ProxyError,
    format::think_stream::{ThinkEvent, ThinkStream},
    policy::OnFailure,
};

use super::super::{
    attempt::{interpret::interpret, plain},
    call::Lines,
    checks,
    chunk::{delta_chunk, done_chunk},
    confidence,
    job::{Expect, Job, Seed, answer_text, cut_short},
    output::{self, Item, Output, Report},
};

/// Start the streamed thinking emulation.
pub(crate) async fn run(job: Job) -> Result<Output, ProxyError> {
    let (job, lines) = job.open_stream(Job::open_lines).await?;
    let report = Report {
        emulated: job.emulated,
        fallback: job.answered.clone(),
        ..Report::default()
    };
    Ok(output::stream_fallible(report.headers(), |tx| async move {
        pump(&job, lines, &tx).await
    }))
}

/// The answer's schema, when it has one (`Some(None)`: any JSON object).
fn answer_schema(expect: &Expect) -> Result<Option<Option<&Value>>, ProxyError> {
    match expect {
        Expect::Think {
            answer_schema: Some(s),
            ..
        } => Ok(Some(Some(s))),
        Expect::Think {
            json_answer: true, ..
        } => Ok(Some(None)),
        Expect::Think { .. } => Ok(None),
        _ => Err(ProxyError::Internal(
            "thinking stream without thinking".into(),
        )),
    }
}

/// One streamed emulated-thinking answer on its way to the client.
struct Pump<'a> {
    job: &'a Job,
    tx: &'a mpsc::Sender<Item>,
    lines: Lines,
    /// The answer's schema, when it has one (`Some(None)`: any JSON object).
    structured: Option<Option<&'a Value>>,
    reader: ThinkStream,
    sent_thinking: bool,
    sent_answer: bool,
    /// The whole text, bounded by the stream buffer limit (a cut plain
    /// answer is read from it).
    raw: String,
    /// The answer text's bytes sent.
    answer_sent: usize,
    model: Value,
}

async fn pump(job: &Job, lines: Lines, tx: &mpsc::Sender<Item>) -> Result<(), ProxyError> {
    let pump = Pump {
        job,
        tx,
        lines,
        structured: answer_schema(&job.expect)?,
        reader: ThinkStream::new(),
        sent_thinking: false,
        sent_answer: false,
        raw: String::new(),
        answer_sent: 0,
        model: Value::Null,
    };
    pump.run().await
}

impl Pump<'_> {
    async fn run(mut self) -> Result<(), ProxyError> {
        let route = self.job.route;
        let limit = self.job.ctx.state.config.stream_buffer_limit as usize;
        loop {
            let (chunk, eof) = match self.lines.next().await {
                Some(item) => (item?, false),
                None => (
                    json!({"model": self.model, "done": true, "done_reason": "stop"}),
                    true,
                ),
            };
            self.model = chunk.get("model").cloned().unwrap_or(Value::Null);
            let done = eof || chunk.get("done").and_then(Value::as_bool) == Some(true);
            let delta = answer_text(route, &chunk);
            if self.raw.len() + delta.len() > limit {
                return Err(ProxyError::UpstreamProtocol(format!(
                    "the answer exceeds the buffer limit of {limit} bytes"
                )));
            }
            self.raw.push_str(&delta);
            if !self.pass_on(&delta).await {
                return Ok(());
            }
            if done {
                return self.end(chunk, eof).await;
            }
        }
    }

    /// Send the thinking in `delta` as it comes, and a text answer too (a
    /// structured answer is held until it is complete); false = the client
    /// has gone.
    async fn pass_on(&mut self, delta: &str) -> bool {
        let route = self.job.route;
        for event in self.reader.feed(delta) {
            let out = match event {
                ThinkEvent::Thinking(t) => {
                    self.sent_thinking = true;
                    delta_chunk(route, &self.model, "", Some(&t))
                }
                ThinkEvent::AnswerText(t) if self.structured.is_none() => {
                    self.sent_answer = true;
                    self.answer_sent += t.len();
                    delta_chunk(route, &self.model, &t, None)
                }
                _ => continue,
            };
            if !output::send(self.tx, Ok(out)).await {
                return false;
            }
        }
        true
    }

    /// The end of the answer: the rest of a cut plain answer, or the
    /// whole-answer path for one that could not be read, or the answer
    /// (validated when it has a schema), then the done chunk.
    async fn end(mut self, chunk: Value, eof: bool) -> Result<(), ProxyError> {
        let (job, tx, route) = (self.job, self.tx, self.job.route);
        let reader = std::mem::take(&mut self.reader);
        let finished = reader.finish();
        // A plain answer the token limit cut ends as Ollama ends it.
        let rest = match (&finished, self.structured) {
            (Err(_), None) => plain::stream_rest(
                &chunk,
                &self.raw,
                self.answer_sent,
                &job.expect,
                &job.validators,
            ),
            _ => None,
        };
        if let Some(rest) = rest {
            if !rest.is_empty()
                && !output::send(tx, Ok(delta_chunk(route, &self.model, &rest, None))).await
            {
                return Ok(());
            }
            let _ = output::send(tx, Ok(done_chunk(route, chunk))).await;
            return Ok(());
        }
        let finished = match finished {
            Ok(finished) => finished,
            Err(e) if self.sent_answer => return Err(ProxyError::Unprocessable(e.to_string())),
            Err(_) => {
                let seed = Seed {
                    truncated: eof || cut_short(&chunk),
                    text: std::mem::take(&mut self.raw),
                };
                return job
                    .stream_complete(route, tx, self.sent_thinking, Some(seed))
                    .await;
            }
        };
        if !self.sent_thinking && !finished.thinking.is_empty() {
            let c = delta_chunk(route, &self.model, "", Some(&finished.thinking));
            if !output::send(tx, Ok(c)).await {
                return Ok(());
            }
            self.sent_thinking = true;
        }
        let last = match self.structured {
            None if !self.sent_answer => {
                let text = crate::format::think::answer_text(&finished.answer);
                if !output::send(tx, Ok(delta_chunk(route, &self.model, &text, None))).await {
                    return Ok(());
                }
                chunk
            }
            None => chunk,
            Some(schema) => match self.checked(schema, &finished.answer, chunk).await? {
                Some(last) => last,
                None => return Ok(()),
            },
        };
        let mut last = done_chunk(route, last);
        let scorer = |t: &_| confidence::score_stream(&job.expect, t, &[]);
        confidence::end_stream(job, self.lines.tokens(), scorer, &mut last);
        let _ = output::send(tx, Ok(last)).await;
        Ok(())
    }

    /// A structured answer validated (and repaired) and sent, or answered
    /// again by the whole-answer path or the fallback models; the done
    /// chunk to send with what validation found, `None` when the stream
    /// ended here.
    async fn checked(
        &mut self,
        schema: Option<&Value>,
        answer: &Value,
        mut last: Value,
    ) -> Result<Option<Value>, ProxyError> {
        let (job, tx, route) = (self.job, self.tx, self.job.route);
        let text = answer.to_string();
        let expect = match schema {
            Some(s) => Expect::Schema(s.clone()),
            None => Expect::Json,
        };
        let interp = interpret(&text, &expect, &job.validators, job.validate.repair);
        let invalid = !interp.violations.is_empty() && job.validate.enabled;
        if invalid && job.validate.max_retries > 0 {
            job.stream_complete(route, tx, true, None).await?;
            return Ok(None);
        }
        // No retries left: the streamed answer was this model's one
        // attempt, and the fallback models answer after it (`on_failure`
        // deciding only when none is left).
        if invalid && job.may_fall_back() {
            let raw = std::mem::take(&mut self.raw);
            job.stream_whole(tx, self.sent_thinking, raw, &mut self.lines, Some(last))
                .await?;
            return Ok(None);
        }
        if invalid && job.validate.on_failure == OnFailure::Error {
            metrics::counter!("augur_validation_rejected_total").increment(1);
            return Err(ProxyError::Unprocessable(format!(
                "the model's answer does not match the requested format: {}",
                checks::describe(&interp.violations)
            )));
        }
        if let Some(mut marks) = Marks::of(&mut last) {
            if invalid {
                marks.validation(Verdict::Invalid);
            } else if interp.unchecked {
                marks.validation(Verdict::Unchecked);
            }
        }
        let c = delta_chunk(route, &self.model, &interp.content, None);
        if !output::send(tx, Ok(c)).await {
            return Ok(None);
        }
        Ok(Some(last))
    }
}
