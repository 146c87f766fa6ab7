//! The calls of a streamed tool answer on their way out: each checked
//! (repaired, or the whole-answer path when it fails before anything went
//! out), sent as its own chunk, audited; and the loop breaker's answer
//! streamed in their place.

use crate::pipeline::job::Marks;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::{
    error::ProxyError,
    policy::OnFailure,
    tools::{self, ToolCall},
};

use super::super::super::{
    attempt::finish::finalize,
    checks,
    chunk::{call_chunk, chunks_of, is_thinking_only},
    job::{Completed, Expect, Job},
    output::{self, Item},
    plan::Route,
};

/// What of one streamed tool answer went out so far.
#[derive(Default)]
pub(super) struct Progress {
    pub(super) sent_anything: bool,
    /// Calls already sent (repeats are not sent again).
    pub(super) sent: Vec<ToolCall>,
    /// The answer was cut off after complete calls and closed there.
    pub(super) closed_truncated: bool,
    pub(super) next_index: usize,
    pub(super) raw: String,
    pub(super) invalid: bool,
    /// Thinking went out (a fallback then sends none again).
    pub(super) sent_thinking: bool,
    /// Bytes of answer text sent.
    pub(super) answer_sent: usize,
}

/// Send one call as its own chunk; false = the client has gone.
pub(super) async fn send_call(
    job: &Job,
    tx: &mpsc::Sender<Item>,
    model: &Value,
    call: &ToolCall,
    p: &mut Progress,
) -> bool {
    if let Some(audit) = &job.audit {
        audit.record(call, if p.invalid { "invalid" } else { "valid" });
    }
    let calls = tools::ollama_tool_calls(std::slice::from_ref(call), p.next_index);
    p.next_index += 1;
    p.sent_anything = true;
    output::send(tx, Ok(call_chunk(model, calls))).await
}

/// Stream the answer the loop breaker asked for, as the whole-answer path
/// would (thinking left out when thinking went out already), reporting
/// `repairs` in the done chunk.
pub(super) async fn send_answer(
    job: &Job,
    tx: &mpsc::Sender<Item>,
    mut answer: Completed,
    sent_thinking: bool,
    repairs: Vec<&'static str>,
) -> Result<(), ProxyError> {
    answer
        .interp
        .repairs
        .extend(repairs.iter().map(|r| r.to_string()));
    let repaired = answer.interp.repairs.clone();
    let (value, _report) = finalize(job, answer)?;
    let chunks = chunks_of(Route::Chat, &value);
    let last = chunks.len().saturating_sub(1);
    for (i, mut chunk) in chunks.into_iter().enumerate() {
        if sent_thinking && is_thinking_only(&chunk) {
            continue;
        }
        if i == last
            && let Some(mut marks) = Marks::of(&mut chunk)
        {
            marks.repaired(&repaired);
        }
        if !output::send(tx, Ok(chunk)).await {
            break;
        }
    }
    Ok(())
}

/// Validate (and repair) one completed call, its placeholders too when
/// `placeholders`. `Ok(None)` = fall back to the whole-answer path.
pub(super) fn validate_streamed_call(
    job: &Job,
    set: &tools::ToolSet,
    call: ToolCall,
    placeholders: bool,
    p: &mut Progress,
) -> Result<Option<ToolCall>, ProxyError> {
    let (call, mut violations, repaired) = checks::checked_call(set, call, job.validate.repair);
    if !repaired.is_empty() {
        metrics::counter!("augur_repairs_total").increment(1);
    }
    if let Expect::Tools { screen, .. } = &job.expect
        && placeholders
    {
        violations.extend(screen.violations(set, &call));
    }
    if violations.is_empty() || !job.validate.enabled {
        return Ok(Some(call));
    }
    if !p.sent_anything && (job.validate.max_retries > 0 || job.may_fall_back()) {
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
