//! Emulated thinking, streamed: the model's `{"reasoning", "answer"}`
//! object is read as it arrives, and the thinking goes to the client as it
//! is produced, in Ollama's `thinking` deltas. A text answer follows the
//! same way. An answer with a schema is held (bounded), validated and
//! repaired before it is sent; when it is still invalid, and nothing of it
//! was sent, the whole-answer path (retries with feedback) answers and
//! only its answer is sent, the thinking having gone out already. With no
//! retries left, the fallback models (if any) answer the same way.

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

async fn pump(job: &Job, mut lines: Lines, tx: &mpsc::Sender<Item>) -> Result<(), ProxyError> {
    let structured = answer_schema(&job.expect)?;
    let route = job.route;
    let limit = job.ctx.state.config.stream_buffer_limit as usize;
    let mut reader = ThinkStream::new();
    let mut sent_thinking = false;
    let mut sent_answer = false;
    // The whole text, bounded by the limit (a cut plain answer is read
    // from it); and the answer text's bytes sent.
    let mut raw = String::new();
    let mut answer_sent = 0usize;
    let mut model = Value::Null;
    loop {
        let (chunk, eof) = match lines.next().await {
            Some(item) => (item?, false),
            None => (
                json!({"model": model, "done": true, "done_reason": "stop"}),
                true,
            ),
        };
        model = chunk.get("model").cloned().unwrap_or(Value::Null);
        let done = eof || chunk.get("done").and_then(Value::as_bool) == Some(true);
        let delta = answer_text(route, &chunk);
        if raw.len() + delta.len() > limit {
            return Err(ProxyError::UpstreamProtocol(format!(
                "the answer exceeds the buffer limit of {limit} bytes"
            )));
        }
        raw.push_str(&delta);
        for event in reader.feed(&delta) {
            let out = match event {
                ThinkEvent::Thinking(t) => {
                    sent_thinking = true;
                    delta_chunk(route, &model, "", Some(&t))
                }
                ThinkEvent::AnswerText(t) if structured.is_none() => {
                    sent_answer = true;
                    answer_sent += t.len();
                    delta_chunk(route, &model, &t, None)
                }
                // A structured answer is held until it is complete.
                _ => continue,
            };
            if !output::send(tx, Ok(out)).await {
                return Ok(());
            }
        }
        if !done {
            continue;
        }
        let finished = reader.finish();
        // A plain answer the token limit cut ends as Ollama ends it.
        let rest = match (&finished, structured) {
            (Err(_), None) => {
                plain::stream_rest(&chunk, &raw, answer_sent, &job.expect, &job.validators)
            }
            _ => None,
        };
        if let Some(rest) = rest {
            if !rest.is_empty()
                && !output::send(tx, Ok(delta_chunk(route, &model, &rest, None))).await
            {
                return Ok(());
            }
            let _ = output::send(tx, Ok(done_chunk(route, chunk))).await;
            return Ok(());
        }
        let mut last = chunk;
        let answer = match finished {
            Ok(finished) => Some(finished),
            Err(_) if !sent_answer => None,
            Err(e) => {
                return Err(ProxyError::Unprocessable(e.to_string()));
            }
        };
        let Some(finished) = answer else {
            let seed = Seed {
                truncated: eof || cut_short(&last),
                text: raw,
            };
            return job
                .stream_complete(job.route, tx, sent_thinking, Some(seed))
                .await;
        };
        if !sent_thinking && !finished.thinking.is_empty() {
            let c = delta_chunk(route, &model, "", Some(&finished.thinking));
            if !output::send(tx, Ok(c)).await {
                return Ok(());
            }
            sent_thinking = true;
        }
        match structured {
            None if !sent_answer => {
                let text = crate::format::think::answer_text(&finished.answer);
                if !output::send(tx, Ok(delta_chunk(route, &model, &text, None))).await {
                    return Ok(());
                }
            }
            None => {}
            Some(schema) => {
                let text = finished.answer.to_string();
                let expect = match schema {
                    Some(s) => Expect::Schema(s.clone()),
                    None => Expect::Json,
                };
                let interp = interpret(&text, &expect, &job.validators, job.validate.repair);
                let invalid = !interp.violations.is_empty() && job.validate.enabled;
                if invalid && job.validate.max_retries > 0 {
                    return job.stream_complete(job.route, tx, true, None).await;
                }
                // No retries left: the streamed answer was this model's one
                // attempt, and the fallback models answer after it
                // (`on_failure` deciding only when none is left).
                if invalid && job.may_fall_back() {
                    return job
                        .stream_whole(tx, sent_thinking, raw, &mut lines, Some(last))
                        .await;
                }
                if invalid && job.validate.on_failure == OnFailure::Error {
                    metrics::counter!("augur_validation_rejected_total").increment(1);
                    return Err(ProxyError::Unprocessable(format!(
                        "the model's answer does not match the requested format: {}",
                        checks::describe(&interp.violations)
                    )));
                }
                if let Value::Object(f) = &mut last {
                    if invalid {
                        f.insert("augur_validation".into(), json!("invalid"));
                    } else if interp.unchecked {
                        f.insert("augur_validation".into(), json!("unchecked"));
                    }
                }
                if !output::send(tx, Ok(delta_chunk(route, &model, &interp.content, None))).await {
                    return Ok(());
                }
            }
        }
        let _ = output::send(tx, Ok(done_chunk(route, last))).await;
        return Ok(());
    }
}
