//! Screening a whole answer's calls ([`crate::pipeline::screen`]) where it
//! needs the upstream: when only repeats of answered calls, or only calls
//! nobody asked for, are left, the model is asked once more for an answer
//! ([`super::reask`]).

use crate::{error::ProxyError, tools::ToolCall};

use super::{
    super::{
        job::{Completed, Expect, Job},
        offload,
        screen::{DROPPED_UNGROUNDED, LOOP, UNRELATED, note_dropped},
    },
    reask,
};

/// Screen a whole, valid answer's calls; re-ask for an answer when only
/// repeats of answered calls, or only calls nobody asked for, are left.
pub(crate) async fn after_complete(
    job: &Job,
    mut completed: Completed,
) -> Result<Completed, ProxyError> {
    let Expect::Tools { set, screen, .. } = &job.expect else {
        return Ok(completed);
    };
    if completed.invalid || completed.interp.calls.is_empty() {
        return Ok(completed);
    }
    // Judging calls against the conversation (indexing it, searching it)
    // is CPU work on a large one: off the event loop.
    let calls = std::mem::take(&mut completed.interp.calls);
    // Under `small_model: auto`, which calls the model was unsure of.
    let unsure = match screen.is_gated() {
        true => unsure_calls(job, &completed, &calls),
        false => Vec::new(),
    };
    let (screen, set) = (screen.clone(), set.clone());
    let (screened, unrelated) = offload::cpu(move || {
        let screened = screen.screen_judged(&set, calls.clone(), &unsure);
        let judged = |c: &ToolCall| {
            let i = calls.iter().position(|x| x == c);
            let unsure = i.and_then(|i| unsure.get(i)).copied().unwrap_or(false);
            screen.is_unrelated_judged(&set, c, unsure)
        };
        let unrelated = !screened.calls.is_empty() && screened.calls.iter().all(judged);
        (screened, unrelated)
    })
    .await?;
    let dropped = if screened.ungrounded > 0 {
        vec![DROPPED_UNGROUNDED.to_string()]
    } else {
        Vec::new()
    };
    completed.interp.repairs.extend(dropped.iter().cloned());
    let repeats_only = !screened.repeats.is_empty() && screened.calls.is_empty();
    if !unrelated && !repeats_only {
        note_dropped(screened.ungrounded, screened.repeats.len());
        if !screened.repeats.is_empty() {
            completed.interp.repairs.push(LOOP.to_string());
        }
        completed.interp.calls = screened.calls;
        return Ok(completed);
    }
    match reask::reask(job, reask::note_for(&screened.repeats)).await {
        Some(mut answer) => {
            note_dropped(screened.ungrounded, screened.repeats.len());
            answer.attempts += completed.attempts;
            answer.interp.repairs.extend(dropped);
            if !screened.repeats.is_empty() {
                answer.interp.repairs.push(LOOP.to_string());
            }
            if unrelated {
                metrics::counter!("augur_tool_calls_dropped_total", "reason" => "unrelated")
                    .increment(screened.calls.len() as u64);
                answer.interp.repairs.push(UNRELATED.to_string());
            }
            Ok(answer)
        }
        None if unrelated => {
            note_dropped(screened.ungrounded, screened.repeats.len());
            if !screened.repeats.is_empty() {
                completed.interp.repairs.push(LOOP.to_string());
            }
            completed.interp.calls = screened.calls;
            Ok(completed)
        }
        None => {
            note_dropped(screened.ungrounded, 0);
            completed.interp.calls = screened.repeats;
            Ok(completed)
        }
    }
}

/// For each of `calls`, whether the answer's scores mark it unsure: its
/// score (the same tool's calls matched in order) below the policy's
/// threshold. A call without a score is taken as sure.
fn unsure_calls(job: &Job, completed: &Completed, calls: &[ToolCall]) -> Vec<bool> {
    let (Some(policy), Some(c)) = (job.ctx.probs.policy, completed.confidence.as_ref()) else {
        return vec![false; calls.len()];
    };
    let threshold = policy.threshold.get();
    let mut seen: Vec<&str> = Vec::new();
    calls
        .iter()
        .map(|call| {
            let nth = seen.iter().filter(|n| **n == call.name).count();
            seen.push(&call.name);
            c.calls
                .iter()
                .filter(|s| s.name == call.name)
                .nth(nth)
                .is_some_and(|s| s.score.min < threshold)
        })
        .collect()
}
