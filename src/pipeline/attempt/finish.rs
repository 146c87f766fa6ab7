//! The end of the attempts: fallback models asked when the answer keeps
//! failing, then the answer the client gets (shaped, reported, audited)
//! or 422 as the policy says.

use serde_json::Value;

use crate::{error::ProxyError, policy::OnFailure, telemetry::spans};

use super::super::{
    checks, chunk, confidence,
    job::{Answered, Completed, Expect, Job, Seed},
    output::Report,
};

impl Job {
    /// Run to a whole, validated answer (with retries, and fallback
    /// models when the policy names them), shaped for the client; `seed`:
    /// a streamed attempt that failed first.
    pub(crate) async fn complete(&self, seed: Option<Seed>) -> Result<(Value, Report), ProxyError> {
        let outcome = self.attempt(seed).await;
        self.conclude(outcome).await
    }

    /// The answer for `outcome` of this job's attempts, or of its fallback
    /// models', shaped for the client (422 as the policy says).
    pub(crate) async fn conclude(
        &self,
        outcome: Result<Completed, ProxyError>,
    ) -> Result<(Value, Report), ProxyError> {
        let (outcome, tried) = self.fall_back(outcome).await;
        let (value, mut report) = finalize_as(self, outcome?, tried.answered.as_ref())?;
        report.fallback = tried.answered;
        report.fallback_failed = tried.failed;
        Ok((value, report))
    }
}

/// The client-facing response for a completed run, or 422.
pub(crate) fn finalize(job: &Job, completed: Completed) -> Result<(Value, Report), ProxyError> {
    finalize_as(job, completed, job.answered.as_ref())
}

/// [`finalize`], the answer given by the fallback model `answered` if any.
fn finalize_as(
    job: &Job,
    completed: Completed,
    answered: Option<&Answered>,
) -> Result<(Value, Report), ProxyError> {
    let validation_on = job.validate.enabled;
    if completed.invalid && validation_on && job.validate.on_failure == OnFailure::Error {
        metrics::counter!("augur_validation_rejected_total").increment(1);
        return Err(ProxyError::Unprocessable(failure_message(
            &job.expect,
            &completed,
        )));
    }
    if !completed.interp.repairs.is_empty() {
        metrics::counter!("augur_repairs_total").increment(1);
    }
    let report = Report {
        repaired: completed.interp.repairs.clone(),
        attempts: completed.attempts,
        invalid: completed.invalid && validation_on,
        unchecked: completed.interp.unchecked && validation_on,
        emulated: job.emulated,
        fallback: job.answered.clone(),
        fallback_failed: false,
        confidence: None,
        below: None,
    };
    let mut report = report;
    (report.confidence, report.below) = job.ctx.probs.report(completed.confidence.clone());
    if let Some(audit) = &job.audit {
        let outcome = match (completed.invalid, completed.interp.repairs.is_empty()) {
            (true, _) => "invalid",
            (false, false) => "repaired",
            (false, true) => "valid",
        };
        for call in &completed.interp.calls {
            audit.record(call, outcome);
        }
    }
    record_outcome(job, &completed, &report, answered);
    let mut value = chunk::shape(job.route, completed);
    job.ctx.probs.strip(&mut value);
    Ok((value, report))
}

/// The answer's outcome on the request's trace span.
fn record_outcome(job: &Job, completed: &Completed, report: &Report, answered: Option<&Answered>) {
    let span = job.ctx.timing.as_ref().map(|t| t.trace());
    if report.confidence.is_some() {
        let (model, outcome) = match answered {
            Some(a) => (a.model.as_str(), "fallback"),
            None => (
                job.body.get("model").and_then(Value::as_str).unwrap_or(""),
                "answered",
            ),
        };
        confidence::observe(model, completed.confidence.as_ref(), outcome, span);
    }
    let Some(span) = span else {
        return;
    };
    if span.is_disabled() {
        return;
    }
    let model = match answered {
        Some(answered) => answered.model.as_str(),
        None => job.body.get("model").and_then(Value::as_str).unwrap_or(""),
    };
    let validation = match (report.invalid, report.repaired.is_empty()) {
        (true, _) => "invalid",
        (false, false) => "repaired",
        (false, true) => "valid",
    };
    let tools = match job.emulated {
        Some(_) => completed
            .interp
            .calls
            .iter()
            .map(|c| c.name.as_str())
            .collect(),
        None => Vec::new(),
    };
    let outcome = spans::Outcome {
        attempts: report.attempts,
        repairs: report.repaired.len(),
        validation,
        tools,
    };
    spans::record_outcome(span, model, &completed.response, &outcome);
}

fn failure_message(expect: &Expect, completed: &Completed) -> String {
    let what = match (expect, completed.interp.calls.first()) {
        (Expect::Tools { .. }, Some(call)) => {
            format!("tool call {:?} has invalid arguments", call.name)
        }
        (Expect::Tools { .. }, None) => {
            "the model's answer is not a valid tool call or answer".to_string()
        }
        _ => "the model's answer does not match the requested format".to_string(),
    };
    format!(
        "{what} after {} attempt{}: {}",
        completed.attempts,
        if completed.attempts == 1 { "" } else { "s" },
        checks::describe(&completed.interp.violations)
    )
}
