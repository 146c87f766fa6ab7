//! A valid answer the model was unsure of (below `confidence.threshold`),
//! under `validate.on_low_confidence: retry`: the model is asked once
//! more, told which value it was unsure of. Its second answer is taken
//! when it is valid; otherwise the first stands. (`fallback` is the
//! fallback chain's to act on; `pass` changes nothing.)

use serde_json::{Value, json};
use tracing::Instrument;

use crate::{error::ProxyError, policy::OnLowConfidence, telemetry::spans};

use super::{
    super::{
        confidence,
        job::{Completed, Job, answer_text},
        plan::Route,
    },
    retry_loop,
};

impl Job {
    /// `completed` with its confidence, when the policy asks for it.
    pub(crate) fn scored(&self, mut completed: Completed) -> Completed {
        if self.ctx.probs.policy.is_some() {
            let tokens = confidence::tokens_of(&completed.response);
            completed.confidence = confidence::score(
                &self.expect,
                &tokens,
                &completed.response,
                &completed.interp,
            );
        }
        completed
    }
}

/// `completed`, or the answer asked for once more when the model was
/// unsure of it and the policy says to retry.
pub(crate) async fn after_scored(job: &Job, completed: Completed) -> Result<Completed, ProxyError> {
    let probs = job.ctx.probs;
    if completed.invalid
        || job.route != Route::Chat
        || job.validate.on_low_confidence != OnLowConfidence::Retry
        || !probs.is_low(completed.confidence.as_ref())
    {
        return Ok(completed);
    }
    let Some(turns) = doubt_turns(&completed) else {
        return Ok(completed);
    };
    tracing::info!(
        confidence = completed.confidence.as_ref().map(|c| c.answer.min),
        "the model was unsure of its answer; asking it once more"
    );
    metrics::counter!("augur_retries_total", "cause" => "low_confidence").increment(1);
    let mut body = job.body.clone();
    if let Some(Value::Array(messages)) = body.get_mut("messages") {
        messages.extend(turns);
    }
    let span = spans::attempt(completed.attempts + 1, None);
    spans::record_cause(&span, Some("low_confidence"));
    let again = retry_loop::run_until_valid(
        &job.ctx,
        job.route,
        body,
        &job.expect,
        &job.validate,
        &job.validators,
        None,
    )
    .instrument(span)
    .await;
    let mut again = match again {
        Ok(again) if !again.invalid => job.scored(again),
        // No better answer: the first stands.
        _ => return Ok(completed),
    };
    again.attempts += completed.attempts;
    Ok(again)
}

/// The model's answer and a user turn naming what it was unsure of: the
/// weakest token, and the call it is in.
fn doubt_turns(completed: &Completed) -> Option<[Value; 2]> {
    let c = completed.confidence.as_ref()?;
    let weakest = &c.answer.weakest.token;
    let call = c
        .calls
        .iter()
        .min_by(|a, b| a.score.min.total_cmp(&b.score.min))
        .map(|call| format!(" in your call to {}", call.name))
        .unwrap_or_default();
    let said = answer_text(Route::Chat, &completed.response);
    let note = format!(
        "You were unsure of the value containing {:?}{call}. Check it against the \
         conversation and answer again: the same answer if it is right, a corrected one if not.",
        weakest.trim()
    );
    Some([
        json!({"role": "assistant", "content": said}),
        json!({"role": "user", "content": note}),
    ])
}
