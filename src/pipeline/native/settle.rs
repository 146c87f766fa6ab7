//! The guarantees of emulated calls for a model's native tool calls, on
//! whole `/api/chat` answers of the rescue path ([`super`]):
//!
//! ```text
//! answer = upstream(request)
//! lost?  (no tool_calls, no content, eval_count > 0) -> ask once more,
//!        emulated ([`super::recover`])
//! calls: check each against its tool's schema (undeclared = invalid)
//!        valid                -> the answer, untouched
//!        repaired valid       -> arguments rewritten  (native_call_repaired)
//!        invalid, retries > 0 -> ask again with the violations (native_call_retried)
//!        still invalid, or the retry came back empty
//!                             -> validate.on_failure: 422, or the best attempt
//!                                as written, with X-Augur-Validation: invalid
//! ```
//!
//! Counted in `augur_native_calls_total{outcome}` (`valid`, `repaired`,
//! `retried`, `invalid`, `lost`, `recovered`).

use serde_json::{Map, Value, json};

use crate::{error::ProxyError, policy::OnFailure, tools::ToolSet};

use super::{
    super::{checks, job::Job, output::Report, plan::Route, retry},
    check::{self, Verdict},
    markup::has_calls,
    recover,
};

/// The repair reported when invalid native arguments were repaired.
pub(crate) const REPAIRED: &str = "native_call_repaired";
/// The repair reported when a retry with feedback made the calls valid.
pub(crate) const RETRIED: &str = "native_call_retried";
/// The repair reported when an empty answer was asked again and answered.
pub(crate) const RECOVERED: &str = "lost_call_recovered";

/// `tools.native` of the model's policy.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Checks {
    /// Check, repair and retry the calls.
    pub validate: bool,
    /// Ask an empty answer once more.
    pub recover: bool,
    /// Rescue calls written as text in the content.
    pub text: bool,
}

/// What settling a native answer came to.
pub(crate) struct Settled {
    pub response: Value,
    pub report: Report,
}

/// Check (repair, retry) the native calls of `response`, a whole chat
/// answer to `job`; a valid answer comes back untouched, with no call.
pub(crate) async fn settle(
    job: &Job,
    set: &ToolSet,
    checks: Checks,
    response: Value,
) -> Result<Settled, ProxyError> {
    let mut report = Report {
        attempts: 1,
        ..Report::default()
    };
    if job.route != Route::Chat || !job.validate.enabled {
        return Ok(Settled { response, report });
    }
    let mut body = job.body.clone();
    body.insert("stream".into(), Value::Bool(false));
    let mut response = response;
    if checks.recover && is_lost(&response) {
        count("lost");
        tracing::info!("a native answer came back empty; asking once more, emulated");
        report.attempts += 1;
        match recover::recover(job, set, &body).await? {
            Some(again) if !is_lost(&again) => response = again,
            _ => return Ok(Settled { response, report }),
        }
        count("recovered");
        report.repaired.push(RECOVERED.into());
    }
    if !checks.validate {
        return Ok(Settled { response, report });
    }
    validate(job, set, body, response, report).await
}

/// The calls of `response` checked; retried with feedback while invalid
/// and retries are left; `on_failure` over the best attempt.
async fn validate(
    job: &Job,
    set: &ToolSet,
    mut body: Map<String, Value>,
    mut response: Value,
    mut report: Report,
) -> Result<Settled, ProxyError> {
    let mut retries = 0u32;
    let mut best: Option<(Value, Verdict)> = None;
    loop {
        let Some(calls) = message(&response).and_then(check::calls_of) else {
            if retries > 0 && is_lost(&response) {
                // The retry came back empty: the best attempt stands, as
                // `on_failure` says.
                break;
            }
            // The retry answered in words: that answer stands.
            return Ok(Settled { response, report });
        };
        let verdict = check::check(set, calls, job.validate.repair);
        if verdict.is_valid() {
            count(match (retries, verdict.repairs.is_empty()) {
                (0, true) => "valid",
                (0, false) => "repaired",
                _ => "retried",
            });
            if retries > 0 {
                report.repaired.push(RETRIED.into());
            }
            repaired(&mut response, &verdict, &mut report);
            return Ok(Settled { response, report });
        }
        metrics::counter!("augur_validation_failures_total").increment(1);
        let details = check::details(set, &verdict);
        tracing::info!(
            attempt = report.attempts,
            violations = %checks::describe(&details),
            "native tool calls failed validation"
        );
        let better = best
            .as_ref()
            .is_none_or(|(_, b)| verdict.count() <= b.count());
        let last = retries >= job.validate.max_retries;
        if !last {
            add_feedback(&mut body, &response, &details);
        }
        if better {
            best = Some((response, verdict));
        }
        if last {
            break;
        }
        retries += 1;
        metrics::counter!("augur_retries_total", "cause" => "native_call").increment(1);
        response = ask(job, &body).await?;
        report.attempts += 1;
    }
    count("invalid");
    let (response, verdict) = best.ok_or_else(|| ProxyError::Internal("no attempt".into()))?;
    fail(job, set, response, verdict, report)
}

/// After the last attempt: 422 naming the tool, or the best attempt (as
/// the model wrote it) marked invalid, as `validate.on_failure` says.
fn fail(
    job: &Job,
    set: &ToolSet,
    response: Value,
    verdict: Verdict,
    mut report: Report,
) -> Result<Settled, ProxyError> {
    if job.validate.on_failure == OnFailure::Error {
        metrics::counter!("augur_validation_rejected_total").increment(1);
        let (name, _) = verdict.first_invalid().unwrap_or(("", String::new()));
        let why = checks::describe(&check::details(set, &verdict));
        return Err(ProxyError::Unprocessable(format!(
            "tool call {name:?} is invalid: {why}"
        )));
    }
    // A repair that leaves the calls invalid is not applied: the answer
    // goes as the model wrote it.
    report.invalid = true;
    Ok(Settled { response, report })
}

/// Write repaired arguments back and report the repairs.
fn repaired(response: &mut Value, verdict: &Verdict, report: &mut Report) {
    if verdict.repairs.is_empty() {
        return;
    }
    if let Some(Value::Object(m)) = response.get_mut("message") {
        check::write_back(m, verdict);
    }
    metrics::counter!("augur_repairs_total").increment(1);
    report.repaired.push(REPAIRED.into());
    report.repaired.extend(verdict.repairs.iter().cloned());
}

/// Append the model's answer (with its calls) and a user message listing
/// the violations, as emulation's retry feedback words it.
fn add_feedback(
    body: &mut Map<String, Value>,
    response: &Value,
    details: &[crate::validate::Violation],
) {
    let Some(Value::Array(messages)) = body.get_mut("messages") else {
        return;
    };
    let answer = message(response);
    let content = answer
        .and_then(|m| m.get("content"))
        .cloned()
        .unwrap_or_else(|| Value::String(String::new()));
    let calls = answer
        .and_then(|m| m.get("tool_calls"))
        .cloned()
        .unwrap_or(json!([]));
    messages.push(json!({"role": "assistant", "content": content, "tool_calls": calls}));
    let text = serde_json::to_string(&calls).unwrap_or_default();
    let turn = retry::invalid_turn(&text, details, true);
    messages.push(json!({"role": "user", "content": turn.message(true)}));
}

/// The upstream's whole answer to `body`.
async fn ask(job: &Job, body: &Map<String, Value>) -> Result<Value, ProxyError> {
    job.ctx
        .json(job.route.path(), &Value::Object(body.clone()))
        .await
}

/// An answer Ollama's parser ate: no calls, no content, yet tokens were
/// generated (and not cut by the token limit).
pub(crate) fn is_lost(response: &Value) -> bool {
    let Some(m) = message(response) else {
        return false;
    };
    let content = m.get("content").and_then(Value::as_str).unwrap_or_default();
    let evaluated = response
        .get("eval_count")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let cut = response.get("done_reason").and_then(Value::as_str) == Some("length");
    !has_calls(m.get("tool_calls")) && content.trim().is_empty() && evaluated > 0 && !cut
}

fn message(response: &Value) -> Option<&Map<String, Value>> {
    response.get("message").and_then(Value::as_object)
}

fn count(outcome: &'static str) {
    metrics::counter!("augur_native_calls_total", "outcome" => outcome).increment(1);
}
