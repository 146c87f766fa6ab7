//! The fallback model: when the requested model's answer keeps failing, a
//! model the policy names answers the same request instead (a cheap model
//! first, a stronger one when it fails).
//!
//! ```text
//! outcome = attempts(model)                       // retries, repairs, loop breaker
//! while chain.on(outcome) says why                // invalid | truncated | upstream_error | repaired
//!     outcome = attempts(next fallback model)     // same rewritten request, its own upstreams
//! answer   = finalize(outcome)                    // 422 / pass as the policy says
//! ```
//!
//! It happens only while nothing has reached the client: for whole
//! answers and buffered streams, when a streamed emulation falls back to
//! the whole-answer path before sending anything, and when a stream's
//! upstreams fail before its first byte. The request augur sends is the
//! one it rewrote for the requested model (tool and thinking emulation
//! work on any completion model), with `model` replaced; it runs under the
//! requested model's policy and admission. Every answer keeps the model
//! name the client asked for (clients compare it); `X-Augur-Model` and
//! `X-Augur-Fallback` (or, on a stream whose headers went out first,
//! `augur_model` / `augur_fallback` in its done chunk),
//! `augur_fallbacks_total{from,to,reason}` and the access log say what
//! happened.
//!
//! A fallback model takes a slot of its own model's concurrency pool
//! (`models.<glob>.concurrency`, under its queue rules) before it is
//! asked. One that fails (any upstream error: not found, a 5xx,
//! unreachable, timed out; or no slot in time) is passed over: the next
//! one is asked, and when none is left the best answer so far (the
//! requested model's, with a chain of one) stands, `on_failure` deciding
//! over it, reported as `X-Augur-Fallback: failed` (`augur_fallback` in a
//! done chunk) and counted in `augur_fallback_failures_total{from,to}`.
//! A stream whose upstreams failed before its first byte gets the
//! requested model's error when every fallback fails. The fallback
//! model's own error never reaches the client.

use crate::pipeline::job::{Marks, Verdict};
use std::sync::Arc;

use futures_util::StreamExt;
use serde_json::{Value, json};
use tracing::Instrument;

use super::{
    super::{
        call::{CallCtx, Lines},
        confidence,
        job::{
            Answered, Chain, Completed, Expect, Job, Reason, Seed, Tried, answer_text,
            chain::FAILED,
        },
        output::Report,
    },
    retry_loop, screen_calls,
};
use crate::{error::ProxyError, limits::LimitError, telemetry::spans, upstream::Target};

impl Job {
    /// Attempts of this job's model (retries, repairs, the loop breaker),
    /// not yet finalized.
    pub(crate) async fn attempt(&self, seed: Option<Seed>) -> Result<Completed, ProxyError> {
        let completed = retry_loop::run_until_valid(
            &self.ctx,
            self.route,
            self.body.clone(),
            &self.expect,
            &self.validate,
            &self.validators,
            seed,
        )
        .await?;
        // Scored first: under `small_model: auto` the screen reads it.
        let completed = self.scored(completed);
        let completed = screen_calls::after_complete(self, completed).await?;
        let completed = match completed.confidence {
            Some(_) => completed,
            None => self.scored(completed),
        };
        super::doubt::after_scored(self, completed).await
    }

    /// `outcome` of this job, or, when the chain says so, of its next
    /// fallback models in turn; a fallback model that fails is passed
    /// over, the best outcome so far standing when none is left.
    pub(crate) async fn fall_back(
        &self,
        mut outcome: Result<Completed, ProxyError>,
    ) -> (Result<Completed, ProxyError>, Tried) {
        let mut tried = Tried {
            answered: self.answered.clone(),
            failed: false,
        };
        let Some(chain) = self.fallback.clone() else {
            return (outcome, tried);
        };
        let timing = self.ctx.timing.as_ref();
        for entry in chain.models.iter().skip(self.position) {
            let reason = match &outcome {
                Ok(completed) => chain.after(completed, self.validate.enabled),
                Err(e) => chain.after_error(e),
            };
            let Some(reason) = reason else { break };
            let span = spans::fallback(&entry.0, reason.as_str());
            let next = match self
                .for_fallback(&chain, entry, reason)
                .instrument(span.clone())
                .await
            {
                Ok(next) => next,
                Err(e) => {
                    spans::record_error(&span, &e);
                    chain.failed(entry, reason, &e, timing);
                    tried.failed = true;
                    continue;
                }
            };
            chain.note(entry, reason, timing);
            match next.attempt(None).instrument(span.clone()).await {
                Ok(completed) => {
                    spans::record_fallback(&span, "answered");
                    outcome = Ok(completed);
                    tried = Tried {
                        answered: next.answered,
                        failed: false,
                    };
                }
                Err(e) => {
                    spans::record_error(&span, &e);
                    chain.failed(entry, reason, &e, timing);
                    tried.failed = true;
                }
            }
        }
        (outcome, tried)
    }

    /// Open this job's stream with `open`; when its upstreams fail before
    /// the first byte and the chain says so, the next fallback model's,
    /// and so on. Returns the job whose stream opened; when every
    /// fallback model fails too, this job's error.
    pub(crate) async fn open_stream<T>(
        self,
        open: impl AsyncFn(&Job) -> Result<T, ProxyError>,
    ) -> Result<(Job, T), ProxyError> {
        let e = match open(&self).await {
            Ok(opened) => return Ok((self, opened)),
            Err(e) => e,
        };
        let Some(chain) = self.fallback.clone() else {
            return Err(e);
        };
        let Some(reason) = chain.after_error(&e) else {
            return Err(e);
        };
        let timing = self.ctx.timing.as_ref();
        for entry in chain.models.iter().skip(self.position) {
            let span = spans::fallback(&entry.0, reason.as_str());
            let next = match self
                .for_fallback(&chain, entry, reason)
                .instrument(span.clone())
                .await
            {
                Ok(next) => next,
                Err(why) => {
                    spans::record_error(&span, &why);
                    chain.failed(entry, reason, &why, timing);
                    continue;
                }
            };
            chain.note(entry, reason, timing);
            match open(&next).instrument(span.clone()).await {
                Ok(opened) => {
                    spans::record_fallback(&span, "answered");
                    return Ok((next, opened));
                }
                Err(why) => {
                    spans::record_error(&span, &why);
                    chain.failed(entry, reason, &why, timing);
                }
            }
        }
        Err(e)
    }

    /// Whether an answer of this job failing validation would be answered
    /// by a fallback model.
    pub(crate) fn may_fall_back(&self) -> bool {
        self.validate.enabled
            && self
                .fallback
                .as_ref()
                .is_some_and(|c| c.takes_invalid(self.position))
    }

    /// Whether a streamed call this unsure (`min`) is acted on before it
    /// goes out: a fallback on low confidence, or a retry, is configured.
    pub(crate) fn acts_on_unsure_call(&self, min: f64) -> bool {
        let retry = self.validate.on_low_confidence == crate::policy::OnLowConfidence::Retry
            && self.ctx.probs.is_low_value(min);
        let fall = self
            .fallback
            .as_ref()
            .is_some_and(|c| c.falls_back_below(self.position, min));
        retry || fall
    }

    /// The rest of a stream read (`text` so far, `last`: its done chunk
    /// if it came), taken as one attempt.
    pub(crate) async fn read_to_end(
        &self,
        mut text: String,
        lines: &mut Lines,
        mut last: Option<Value>,
    ) -> Result<Completed, ProxyError> {
        let mut model = Value::Null;
        while last.is_none() {
            let Some(chunk) = lines.next().await.transpose()? else {
                break;
            };
            text.push_str(&answer_text(self.route, &chunk));
            model = chunk.get("model").cloned().unwrap_or(Value::Null);
            if chunk.get("done").and_then(Value::as_bool) == Some(true) {
                last = Some(chunk);
            }
        }
        // No done chunk: ended as Ollama ends a model repeating itself.
        let response = last.unwrap_or_else(
            || json!({"model": model, "created_at": crate::wire::created_at_now(), "done": false}),
        );
        Ok(retry_loop::streamed(
            response,
            &text,
            &self.expect,
            &self.validators,
            &self.validate,
        ))
    }

    /// This job for fallback `entry` of `chain` (as written, normalized),
    /// holding a slot of its model's concurrency pool.
    pub(crate) async fn for_fallback(
        &self,
        chain: &Arc<Chain>,
        entry: &(String, String),
        reason: Reason,
    ) -> Result<Job, LimitError> {
        let (model, name) = entry.clone();
        let seat = self.seat.take(&self.ctx.state.limits, &name).await?;
        let position = chain
            .models
            .iter()
            .position(|m| m == entry)
            .map_or(chain.models.len(), |i| i + 1);
        let mut body = self.body.clone();
        body.insert("model".into(), Value::String(model.clone()));
        // Text mode's grammar-mode request goes to the same model.
        let mut expect = self.expect.clone();
        if let Expect::Tools {
            text: Some(mode), ..
        } = &mut expect
        {
            mode.grammar
                .insert("model".into(), Value::String(model.clone()));
        }
        let affinity = match &self.ctx.target {
            Target::Model { affinity, .. } => *affinity,
            Target::Any | Target::First => None,
        };
        let target = Target::Model {
            name: name.clone(),
            prefer: None,
            affinity,
        };
        let upstream = self
            .ctx
            .state
            .fleet
            .choose(&self.ctx.headers, &target)
            .unwrap_or(0);
        let ctx = CallCtx {
            target: Target::Model {
                name,
                prefer: Some(upstream),
                affinity,
            },
            answer_as: Some(Value::String(chain.asked.clone())),
            ..self.ctx.clone()
        };
        Ok(Job {
            ctx,
            route: self.route,
            body,
            expect,
            validate: self.validate.clone(),
            validators: self.validators.clone(),
            emulated: self.emulated,
            audit: self.audit.clone(),
            fallback: Some(chain.clone()),
            position,
            answered: Some(Answered { model, reason }),
            seat,
        })
    }
}

/// The done chunk of a stream whose headers went out before the fallback
/// models were asked (through the whole-answer path) says what they came
/// to: the one that answered, or `augur_fallback: "failed"`; and
/// `augur_validation: "invalid"` when `on_failure: pass` let an invalid
/// answer through.
pub(crate) fn note_in_done(job: &Job, report: &Report, chunk: &mut Value) {
    let Value::Object(fields) = chunk else {
        return;
    };
    if report.fallback != job.answered
        && let Some(f) = &report.fallback
    {
        Marks::on(fields).model(&f.model);
        Marks::on(fields).fallback(f.reason.as_str());
    }
    if report.fallback_failed {
        Marks::on(fields).fallback(FAILED);
    }
    if report.invalid {
        Marks::on(fields).validation(Verdict::Invalid);
    }
    if let Some(c) = &report.confidence {
        confidence::done_fields(c.as_ref(), fields);
    }
}
