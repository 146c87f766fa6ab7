//! The fallback chain of one request: its models, why the next one
//! answers, what the chain came to, and where a fallback model's
//! concurrency slot comes from.

use std::{fmt::Display, sync::Arc};

use serde_json::Value;

use super::expect::Completed;
use crate::{
    error::ProxyError,
    limits::{LimitError, Limits, Permit, Principal},
    policy::{Fallback, FallbackOn, Policy},
    telemetry::Timing,
};

/// Why a fallback model answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reason {
    Invalid,
    Truncated,
    UpstreamError,
    Repaired,
    /// The answer was valid but the model was less sure of it than the
    /// policy's `confidence_below`.
    LowConfidence,
}

impl Reason {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Reason::Invalid => "invalid",
            Reason::Truncated => "truncated",
            Reason::UpstreamError => "upstream_error",
            Reason::Repaired => "repaired",
            Reason::LowConfidence => "low_confidence",
        }
    }
}

/// A fallback model that answered, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Answered {
    /// As the policy wrote it.
    pub model: String,
    pub reason: Reason,
}

/// What the fallback models of a request came to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Tried {
    /// The fallback model whose answer is given, if one's is.
    pub answered: Option<Answered>,
    /// The last fallback model asked failed: the answer is the best one
    /// before it.
    pub failed: bool,
}

/// Where a job's fallback models take their concurrency slots from (the
/// request's policy snapshot and principal), and the slot this job holds
/// for its own fallback model, released when the job ends.
pub(crate) struct Seat {
    policy: Arc<Policy>,
    principal: Principal,
    _held: Option<Permit>,
}

impl Seat {
    /// The seat of a request running under `policy` for `principal`, as
    /// admission established them.
    pub(crate) fn for_request(policy: &Arc<Policy>, principal: &Principal) -> Self {
        Self {
            policy: policy.clone(),
            principal: principal.clone(),
            _held: None,
        }
    }

    /// A slot of fallback model `name` (normalized), waiting as its
    /// `concurrency` says.
    pub(crate) async fn take(&self, limits: &Limits, name: &str) -> Result<Seat, LimitError> {
        let model_policy = self.policy.models.resolve_normalized(name);
        let held = limits
            .slot(&self.policy, &self.principal, name, &model_policy)
            .await?;
        Ok(Seat {
            policy: self.policy.clone(),
            principal: self.principal.clone(),
            _held: held,
        })
    }
}

/// The fallback models of one request, allowed for its client.
#[derive(Debug)]
pub(crate) struct Chain {
    /// The model the client asked for, as written.
    pub(crate) asked: String,
    /// Normalized, for metric labels.
    asked_name: String,
    /// As written and normalized, in order.
    pub(crate) models: Vec<(String, String)>,
    on: FallbackOn,
    /// A valid answer less sure than this goes to the next model.
    below: Option<f64>,
}

impl Chain {
    /// The chain for a request for `asked` (`asked_name` normalized), of
    /// the models `allowed` lets the client use; `None` when none is left.
    /// `below`: a valid answer less sure than this calls for the next one.
    pub(crate) fn new(
        fallback: &Fallback,
        (asked, asked_name): (&str, &str),
        below: Option<f64>,
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
                below,
            })
        })
    }

    /// Why a completed run calls for the next model, if it does.
    pub(crate) fn after(&self, completed: &Completed, validating: bool) -> Option<Reason> {
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
        let unsure = match (self.below, &completed.confidence) {
            (Some(below), Some(c)) => c.answer.min < below,
            _ => false,
        };
        if unsure {
            return Some(Reason::LowConfidence);
        }
        (self.on.repaired && !completed.interp.repairs.is_empty()).then_some(Reason::Repaired)
    }

    /// Why a failed run calls for the next model, if it does.
    pub(crate) fn after_error(&self, e: &ProxyError) -> Option<Reason> {
        (self.on.upstream_error && e.is_upstream_failure()).then_some(Reason::UpstreamError)
    }

    /// Whether an answer this unsure (`min`) would be answered by a model
    /// after `position`.
    pub(crate) fn falls_back_below(&self, position: usize, min: f64) -> bool {
        position < self.models.len() && self.below.is_some_and(|b| min < b)
    }

    /// Whether an answer failing validation (or cut) would be answered
    /// by a model after `position`.
    pub(crate) fn takes_invalid(&self, position: usize) -> bool {
        position < self.models.len() && (self.on.invalid || self.on.truncated)
    }

    /// Count and log that fallback `model` (`name` normalized) answers
    /// for the asked model.
    pub(crate) fn note(
        &self,
        (model, name): &(String, String),
        reason: Reason,
        timing: Option<&Arc<Timing>>,
    ) {
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

    /// Count and log that fallback `model` failed with `error`: it is
    /// passed over.
    pub(crate) fn failed(
        &self,
        (model, name): &(String, String),
        reason: Reason,
        error: &dyn Display,
        timing: Option<&Arc<Timing>>,
    ) {
        tracing::warn!(
            asked = %self.asked,
            fallback = %model,
            reason = reason.as_str(),
            %error,
            "a fallback model failed; passed over"
        );
        metrics::counter!(
            "augur_fallback_failures_total",
            "from" => self.asked_name.clone(),
            "to" => name.clone(),
        )
        .increment(1);
        if let Some(t) = timing {
            t.set_fallback(format!("{model} ({}, failed)", reason.as_str()));
        }
    }
}

/// `X-Augur-Fallback` (and `augur_fallback`) when the fallback models
/// failed and the best answer before them stands.
pub(crate) const FAILED: &str = "failed";
