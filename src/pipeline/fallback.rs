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

use std::sync::Arc;

use serde_json::Value;

use super::{
    attempts::{self, Completed, Expect, Seed},
    call::CallCtx,
    flows::Job,
    output::Report,
};
use crate::{
    error::ProxyError,
    policy::{Fallback, FallbackOn},
    telemetry::Timing,
    upstream::Target,
};

/// Why a fallback model answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    Invalid,
    Truncated,
    UpstreamError,
    Repaired,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Invalid => "invalid",
            Reason::Truncated => "truncated",
            Reason::UpstreamError => "upstream_error",
            Reason::Repaired => "repaired",
        }
    }
}

/// A fallback model that answered, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answered {
    /// As the policy wrote it.
    pub model: String,
    pub reason: Reason,
}

/// The fallback models of one request, allowed for its client.
#[derive(Debug)]
pub struct Chain {
    /// The model the client asked for, as written.
    asked: String,
    /// Normalized, for metric labels.
    asked_name: String,
    /// As written and normalized, in order.
    models: Vec<(String, String)>,
    on: FallbackOn,
}

impl Chain {
    /// The chain for a request for `asked` (`asked_name` normalized), of
    /// the models `allowed` lets the client use; `None` when none is left.
    pub fn new(
        fallback: &Fallback,
        asked: &str,
        asked_name: &str,
        allowed: impl Fn(&str) -> bool,
    ) -> Option<Arc<Self>> {
        let models: Vec<(String, String)> = fallback
            .models
            .iter()
            .map(|m| (m.clone(), crate::wire::normalize_model_name(m)))
            .filter(|(_, name)| name != asked_name && allowed(name))
            .collect();
        (!models.is_empty()).then(|| {
            Arc::new(Self {
                asked: asked.to_string(),
                asked_name: asked_name.to_string(),
                models,
                on: fallback.on,
            })
        })
    }

    /// Why a completed run calls for the next model, if it does.
    fn after(&self, completed: &Completed, validating: bool) -> Option<Reason> {
        if completed.invalid && validating {
            let cut = completed
                .response
                .get("done_reason")
                .and_then(Value::as_str)
                == Some("length");
            return match cut {
                true if self.on.truncated => Some(Reason::Truncated),
                false if self.on.invalid => Some(Reason::Invalid),
                _ => None,
            };
        }
        (self.on.repaired && !completed.interp.repairs.is_empty()).then_some(Reason::Repaired)
    }

    /// Why a failed run calls for the next model, if it does.
    fn after_error(&self, e: &ProxyError) -> Option<Reason> {
        (self.on.upstream_error && e.is_upstream_failure()).then_some(Reason::UpstreamError)
    }

    /// Count and log that fallback `i` answers for the asked model.
    fn note(&self, i: usize, reason: Reason, timing: Option<&Arc<Timing>>) {
        let Some((model, name)) = self.models.get(i) else {
            return;
        };
        tracing::info!(
            asked = %self.asked,
            fallback = %model,
            reason = reason.as_str(),
            "a fallback model answers"
        );
        metrics::counter!(
            "augur_fallbacks_total",
            "from" => self.asked_name.clone(),
            "to" => name.clone(),
            "reason" => reason.as_str(),
        )
        .increment(1);
        if let Some(t) = timing {
            t.set_fallback(format!("{model} ({})", reason.as_str()));
        }
    }
}

impl Job {
    /// Attempts of this job's model (retries, repairs, the loop breaker),
    /// not yet finalized.
    pub(super) async fn attempt(&self, seed: Option<Seed>) -> Result<Completed, ProxyError> {
        let completed = attempts::complete(
            &self.ctx,
            self.route,
            self.body.clone(),
            &self.expect,
            &self.validate,
            &self.validators,
            seed,
        )
        .await?;
        super::call_screen::after_complete(self, completed).await
    }

    /// `outcome` of this job, or, when the chain says so, of its next
    /// fallback models in turn; with the fallback that answered.
    pub(super) async fn fall_back(
        &self,
        mut outcome: Result<Completed, ProxyError>,
    ) -> (Result<Completed, ProxyError>, Option<Answered>) {
        let mut answered = self.answered.clone();
        let Some(chain) = self.fallback.clone() else {
            return (outcome, answered);
        };
        for i in self.position..chain.models.len() {
            let reason = match &outcome {
                Ok(completed) => chain.after(completed, self.validate.enabled),
                Err(e) => chain.after_error(e),
            };
            let Some(reason) = reason else { break };
            let Some(next) = self.for_fallback(&chain, i, reason) else {
                break;
            };
            chain.note(i, reason, self.ctx.timing.as_ref());
            outcome = next.attempt(None).await;
            answered = next.answered;
        }
        (outcome, answered)
    }

    /// Open this job's stream with `open`; when its upstreams fail before
    /// the first byte and the chain says so, the next fallback model's,
    /// and so on. Returns the job whose stream opened.
    pub(super) async fn open_stream<T>(
        self,
        open: impl AsyncFn(&Job) -> Result<T, ProxyError>,
    ) -> Result<(Job, T), ProxyError> {
        let mut job = self;
        loop {
            let e = match open(&job).await {
                Ok(opened) => return Ok((job, opened)),
                Err(e) => e,
            };
            let Some(chain) = job.fallback.clone() else {
                return Err(e);
            };
            let i = job.position;
            let next = chain
                .after_error(&e)
                .and_then(|reason| job.for_fallback(&chain, i, reason));
            let Some(next) = next else {
                return Err(e);
            };
            if let Some(answered) = &next.answered {
                chain.note(i, answered.reason, job.ctx.timing.as_ref());
            }
            job = next;
        }
    }

    /// This job for fallback model `i` of `chain` (`None` past its end).
    fn for_fallback(&self, chain: &Arc<Chain>, i: usize, reason: Reason) -> Option<Job> {
        let (model, name) = chain.models.get(i)?.clone();
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
        let target = Target::Model {
            name: name.clone(),
            prefer: None,
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
            },
            answer_as: Some(Value::String(chain.asked.clone())),
            ..self.ctx.clone()
        };
        Some(Job {
            ctx,
            route: self.route,
            body,
            expect,
            validate: self.validate.clone(),
            validators: self.validators.clone(),
            emulated: self.emulated,
            audit: self.audit.clone(),
            fallback: Some(chain.clone()),
            position: i + 1,
            answered: Some(Answered { model, reason }),
        })
    }
}

/// The done chunk of a stream whose headers went out before a fallback
/// model answered (through the whole-answer path) says so.
pub(super) fn note_in_done(job: &Job, report: &Report, chunk: &mut Value) {
    if report.fallback == job.answered {
        return;
    }
    if let (Some(f), Value::Object(fields)) = (&report.fallback, chunk) {
        fields.insert("augur_model".into(), Value::String(f.model.clone()));
        fields.insert(
            "augur_fallback".into(),
            Value::String(f.reason.as_str().into()),
        );
    }
}
