//! Emulated tool calling, streamed: the model's constrained JSON is read
//! as it arrives; answer text goes to the client token by token, each tool
//! call as soon as it is complete and valid, then the done chunk — the
//! chunk sequence Ollama produces for a natively tool-capable model.
//!
//! An invalid call before anything was sent falls back to the whole-answer
//! path (repair, retry with feedback) and streams its result.

use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::{
    error::ProxyError,
    format::think_stream::{ThinkEvent, ThinkStream},
    policy::OnFailure,
    tools::{self, StreamEvent, StreamExtractor, ToolCall},
    wire::created_at_now,
};

use super::{
    attempts::{self, Expect, Seed},
    call::Lines,
    checks,
    flows::{self, Job},
    output::{self, CHANNEL, Item, Output, Report},
    plan::Route,
};

/// Start the streamed emulation.
pub async fn run(job: Job) -> Result<Output, ProxyError> {
    let mut body = job.body.clone();
    body.insert("stream".into(), Value::Bool(true));
    let lines = job
        .ctx
        .lines(Route::Chat.path(), &Value::Object(body))
        .await?;
    let (tx, rx) = mpsc::channel::<Item>(CHANNEL);
    // Headers go out before any call is known: say up front when some
    // tool's arguments can only be checked against its grammar copy.
    let inexact = matches!(&job.expect, Expect::Tools { set, .. } if !set.exact());
    let report = Report {
        emulated: job.emulated,
        unchecked: inexact && job.validate.enabled,
        ..Report::default()
    };
    output::spawn_producer(tx, |tx| async move {
        if let Err(e) = pump(&job, lines, &tx).await {
            let _ = tx.send(Err(e)).await;
        }
    });
    Ok(Output::Stream {
        rx,
        headers: report.headers(),
    })
}

struct Progress {
    sent_anything: bool,
    /// Calls already sent (repeats are not sent again).
    sent: Vec<ToolCall>,
    /// The answer was cut off after complete calls and closed there.
    closed_truncated: bool,
    next_index: usize,
    raw: String,
    invalid: bool,
    /// Thinking went out (a fallback then sends none again).
    sent_thinking: bool,
    /// Bytes of answer text sent.
    answer_sent: usize,
}

async fn pump(job: &Job, mut lines: Lines, tx: &mpsc::Sender<Item>) -> Result<(), ProxyError> {
    let Expect::Tools {
        set,
        answer_schema,
        json_answer,
        think,
    } = &job.expect
    else {
        return Err(ProxyError::Internal("tool stream without tools".into()));
    };
    let structured = answer_schema.is_some() || *json_answer;
    let mut extractor = Some(StreamExtractor::new(set, structured));
    // With emulated thinking the envelope is the thinking object's answer.
    let mut thinker = think.then(ThinkStream::new);
    let mut p = Progress {
        sent_anything: false,
        sent: Vec::new(),
        closed_truncated: false,
        next_index: 0,
        raw: String::new(),
        invalid: false,
        sent_thinking: false,
        answer_sent: 0,
    };
    let mut last_model = Value::Null;
    loop {
        // Ollama ends a stream without a done chunk when the model repeats
        // one token too often; that end is handled like a done chunk.
        let (chunk, eof) = match lines.next().await {
            Some(item) => (item?, false),
            None => (
                json!({"model": last_model, "created_at": created_at_now(),
                       "message": {"role": "assistant", "content": ""},
                       "done": true, "done_reason": "stop"}),
                true,
            ),
        };
        let model = chunk.get("model").cloned().unwrap_or(Value::Null);
        last_model = model.clone();
        let done = chunk.get("done").and_then(Value::as_bool) == Some(true);
        let delta = attempts::answer_text(Route::Chat, &chunk);
        p.raw.push_str(&delta);
        // Thinking: the model's own (a thinking model keeps its `think`), or
        // the emulated object's reasoning.
        let mut thinking = chunk
            .pointer("/message/thinking")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let envelope = match thinker.as_mut() {
            Some(t) => {
                let mut envelope = String::new();
                for e in t.feed(&delta) {
                    match e {
                        ThinkEvent::Thinking(x) => thinking.push_str(&x),
                        ThinkEvent::AnswerRaw(x) => envelope.push_str(&x),
                        // Not an envelope: the whole-answer path sorts it out.
                        ThinkEvent::AnswerText(_) => {}
                    }
                }
                envelope
            }
            None => delta,
        };
        if !thinking.is_empty() {
            p.sent_thinking = true;
            let c = flows::delta_chunk(Route::Chat, &model, "", Some(&thinking));
            if !output::send(tx, Ok(c)).await {
                return Ok(());
            }
        }
        let mut events = extractor
            .as_mut()
            .map(|x| x.feed(&envelope))
            .unwrap_or_default();
        if done {
            let finished = match extractor.take() {
                Some(x) => x.finish(),
                None => Ok(Vec::new()),
            };
            // A plain answer the token limit cut ends as Ollama ends it.
            let rest = match &finished {
                Err(_) => super::retry::plain::stream_rest(
                    &chunk,
                    &p.raw,
                    p.answer_sent,
                    &job.expect,
                    &job.validators,
                ),
                Ok(_) => None,
            };
            match finished {
                Ok(more) => events.extend(more),
                Err(_) if rest.is_some() => events.extend(rest.map(StreamEvent::AnswerDelta)),
                Err(e) if !p.sent_anything => {
                    tracing::info!(error = %e, "streamed tool answer unusable; retrying whole");
                    let seed = Seed {
                        truncated: chunk.get("done_reason") == Some(&json!("length")),
                        text: std::mem::take(&mut p.raw),
                    };
                    return fallback(job, tx, p.sent_thinking, Some(seed)).await;
                }
                Err(_) if eof && p.sent.is_empty() => {
                    // Answer text was streamed and the upstream stopped
                    // early: end the stream as the upstream did.
                    return Ok(());
                }
                Err(e) if !p.sent.is_empty() && job.validate.repair => {
                    // Cut off after complete calls (a small model repeating
                    // calls until the token limit): close the list there.
                    tracing::info!(error = %e, calls = p.sent.len(), "closed a cut-off tool list");
                    metrics::counter!("augur_repairs_total").increment(1);
                    p.closed_truncated = true;
                }
                Err(e) => {
                    return Err(ProxyError::Unprocessable(format!(
                        "the model's answer is not a valid tool call or answer: {e}"
                    )));
                }
            }
        }
        for event in events {
            match event {
                StreamEvent::AnswerDelta(text) => {
                    if text.is_empty() {
                        continue;
                    }
                    p.sent_anything = true;
                    p.answer_sent += text.len();
                    let c = flows::delta_chunk(Route::Chat, &model, &text, None);
                    if !output::send(tx, Ok(c)).await {
                        return Ok(());
                    }
                }
                StreamEvent::Call(call) => {
                    if p.sent.contains(&call) {
                        continue;
                    }
                    let original = call.clone();
                    let Some(call) = checked_call(job, set, call, &mut p)? else {
                        return fallback(job, tx, p.sent_thinking, None).await;
                    };
                    if let Some(audit) = &job.audit {
                        audit.record(&call, if p.invalid { "invalid" } else { "valid" });
                    }
                    let calls = tools::ollama_tool_calls(std::slice::from_ref(&call), p.next_index);
                    p.next_index += 1;
                    p.sent_anything = true;
                    p.sent.push(original);
                    let c = json!({
                        "model": model,
                        "created_at": created_at_now(),
                        "message": {"role": "assistant", "content": "", "tool_calls": calls},
                        "done": false,
                    });
                    if !output::send(tx, Ok(c)).await {
                        return Ok(());
                    }
                }
            }
        }
        if done {
            let mut last = chunk;
            if let Value::Object(f) = &mut last {
                f.insert("created_at".into(), json!(created_at_now()));
                f.insert(
                    "message".into(),
                    json!({"role": "assistant", "content": ""}),
                );
                if p.invalid {
                    f.insert("augur_validation".into(), json!("invalid"));
                }
                if p.closed_truncated {
                    f.insert("done_reason".into(), json!("stop"));
                    f.insert("augur_repaired".into(), json!("closed_truncated"));
                }
            }
            let _ = output::send(tx, Ok(last)).await;
            return Ok(());
        }
    }
}

/// Validate (and repair) one completed call. `Ok(None)` = fall back to the
/// whole-answer path.
fn checked_call(
    job: &Job,
    set: &tools::ToolSet,
    mut call: ToolCall,
    p: &mut Progress,
) -> Result<Option<ToolCall>, ProxyError> {
    let mut violations = checks::check_call(set, &call);
    if !violations.is_empty() && job.validate.repair {
        let mut candidate = call.clone();
        let repaired = checks::repair_call(set, &mut candidate);
        let after = checks::check_call(set, &candidate);
        if after.len() < violations.len() {
            violations = after;
            call = candidate;
            if !repaired.is_empty() {
                metrics::counter!("augur_repairs_total").increment(1);
            }
        }
    }
    if violations.is_empty() || !job.validate.enabled {
        return Ok(Some(call));
    }
    if !p.sent_anything && job.validate.max_retries > 0 {
        return Ok(None);
    }
    match job.validate.on_failure {
        OnFailure::Error => Err(ProxyError::Unprocessable(format!(
            "tool call {:?} has invalid arguments: {}",
            call.name,
            checks::describe(&violations)
        ))),
        OnFailure::Pass => {
            p.invalid = true;
            Ok(Some(call))
        }
    }
}

/// Nothing of the answer was sent yet: answer through the whole-answer
/// path (repair, retries) and stream its chunks, leaving out its thinking
/// when thinking went out already.
async fn fallback(
    job: &Job,
    tx: &mpsc::Sender<Item>,
    sent_thinking: bool,
    seed: Option<Seed>,
) -> Result<(), ProxyError> {
    if tx.is_closed() {
        // The client has gone: nothing is asked again.
        return Ok(());
    }
    let (value, _report) = job.complete(seed).await?;
    for chunk in flows::chunks_of(Route::Chat, &value) {
        if sent_thinking && flows::is_thinking_only(&chunk) {
            continue;
        }
        if !output::send(tx, Ok(chunk)).await {
            break;
        }
    }
    Ok(())
}
