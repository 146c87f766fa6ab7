//! The spans of a request's trace, as plain `tracing` spans of target
//! [`TARGET`]: exported when traces are on (see [`super::otel`]), disabled
//! at their call sites otherwise.
//!
//! ```text
//! chat gemma3:4b            server: the request (GenAI and augur attributes)
//! ├── admission             receive, authenticate, scope, limit
//! │   └── queue wait        a concurrency slot, waited for
//! ├── attempt               one ask of the model: the upstream call, validation
//! │   └── chat gemma3:4b    client: one upstream request (`traceparent` sent)
//! ├── retry                 the same, asked again with the violations
//! ├── reask                 asked for an answer instead of withheld calls
//! └── fallback              the next model of the policy's chain
//! ```
//!
//! Field names follow the OpenTelemetry GenAI and HTTP conventions
//! (`gen_ai.*`, `http.*`, `server.address`); augur's own are `augur.*`.

use tracing::{Span, field::Empty};

use super::{operation::operation, otel::TARGET};

/// The span of one whole request (kind server), named `{method} {route}`
/// until its model is known ([`name_for_model`]).
pub(crate) fn request(
    method: &http::Method,
    route: &'static str,
    path: &str,
    request_id: &str,
) -> Span {
    tracing::info_span!(
        target: TARGET,
        "request",
        otel.name = format_args!("{method} {route}"),
        otel.kind = "server",
        otel.status_code = Empty,
        http.request.method = %method,
        http.route = route,
        url.path = path,
        http.response.status_code = Empty,
        error.type = Empty,
        augur.request_id = request_id,
        augur.principal = Empty,
        gen_ai.operation.name = operation(route),
        gen_ai.request.model = Empty,
        gen_ai.response.model = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.tool.name = Empty,
        augur.attempts = Empty,
        augur.repairs = Empty,
        augur.validation = Empty,
        augur.fallback = Empty,
        augur.note = Empty,
        augur.confidence = Empty,
        augur.ending = Empty,
    )
}

/// Name the request span `{operation} {model}` once its model is known.
pub(crate) fn name_for_model(span: &Span, route: &str, model: &str) {
    if span.is_disabled() {
        return;
    }
    span.record("gen_ai.request.model", model);
    if let Some(op) = operation(route) {
        super::otel::rename(span, format!("{op} {model}"));
    }
}

/// The end of a request: its status, an error status from 500 up.
pub(crate) fn record_status(span: &Span, status: u16) {
    if span.is_disabled() {
        return;
    }
    span.record("http.response.status_code", status);
    if status >= 500 {
        span.record("otel.status_code", "ERROR");
        span.record("error.type", status);
    }
}

/// The end of a request: its status and how it ended (`augur.ending`,
/// see [`crate::ending`]); an error status from 500 up, and for a
/// success status whose body the upstream failed (cut, stalled).
pub(crate) fn record_end(span: &Span, status: u16, ending: crate::ending::Ending) {
    if span.is_disabled() {
        return;
    }
    record_status(span, status);
    span.record("augur.ending", ending.as_str());
    if status < 400 && ending.is_failure() {
        span.record("otel.status_code", "ERROR");
        span.record("error.type", ending.as_str());
    }
}

/// Admission: the body received, the caller authenticated, scoped and
/// admitted by its limits.
pub(crate) fn admission() -> Span {
    tracing::info_span!(
        target: TARGET,
        "admission",
        otel.status_code = Empty,
        otel.status_description = Empty,
    )
}

/// Waiting in the fair queue of a concurrency pool (its policy glob).
pub(crate) fn queue_wait(pool: &str) -> Span {
    tracing::info_span!(target: TARGET, "queue wait", augur.pool = pool)
}

/// One request to an upstream (kind client): `{operation} {model}`, or
/// `{method} {path}` for a request naming no model.
pub(crate) fn upstream(
    upstream: &str,
    model: Option<&str>,
    method: &http::Method,
    path: &str,
) -> Span {
    let span = tracing::info_span!(
        target: TARGET,
        "upstream",
        otel.name = Empty,
        otel.kind = "client",
        otel.status_code = Empty,
        otel.status_description = Empty,
        http.request.method = %method,
        url.path = path,
        server.address = upstream,
        augur.upstream = upstream,
        gen_ai.operation.name = operation(path),
        gen_ai.request.model = model,
        http.response.status_code = Empty,
        error.type = Empty,
    );
    if !span.is_disabled() {
        match (operation(path), model) {
            (Some(op), Some(model)) => span.record("otel.name", format_args!("{op} {model}")),
            _ => span.record("otel.name", format_args!("{method} {path}")),
        };
    }
    span
}

/// A step that failed (an upstream request before its answer, an
/// admission refused, a fallback model passed over): an error status.
pub(crate) fn record_error(span: &Span, error: &dyn std::fmt::Display) {
    if span.is_disabled() {
        return;
    }
    span.record("otel.status_code", "ERROR");
    span.record("otel.status_description", format_args!("{error}"));
}

/// The fields of an attempt or retry span (a span's name is static).
macro_rules! attempt_span {
    ($name:literal) => {
        tracing::info_span!(
            target: TARGET,
            $name,
            augur.attempt = Empty,
            gen_ai.request.model = Empty,
            gen_ai.response.model = Empty,
            gen_ai.usage.input_tokens = Empty,
            gen_ai.usage.output_tokens = Empty,
            augur.validation = Empty,
            augur.violations = Empty,
            augur.repairs = Empty,
            augur.retry.cause = Empty,
        )
    };
}

/// How a fallback model's turn ended (`augur.outcome`).
pub(crate) fn record_fallback(span: &Span, outcome: &'static str) {
    if !span.is_disabled() {
        span.record("augur.outcome", outcome);
    }
}

/// One ask of the model in the validation loop: `attempt` the first
/// time, `retry` after.
pub(crate) fn attempt(number: u32, model: Option<&str>) -> Span {
    let fields = |span: Span| {
        if !span.is_disabled() {
            span.record("augur.attempt", number);
            if let Some(model) = model {
                span.record("gen_ai.request.model", model);
            }
        }
        span
    };
    if number <= 1 {
        fields(attempt_span!("attempt"))
    } else {
        fields(attempt_span!("retry"))
    }
}

/// The re-ask: an answer asked for in place of withheld calls.
pub(crate) fn reask() -> Span {
    tracing::info_span!(target: TARGET, "reask")
}

/// A fallback model of the chain, asked for `reason`.
pub(crate) fn fallback(model: &str, reason: &str) -> Span {
    tracing::info_span!(
        target: TARGET,
        "fallback",
        gen_ai.request.model = model,
        augur.fallback.reason = reason,
        augur.outcome = Empty,
        otel.status_code = Empty,
        otel.status_description = Empty,
    )
}

/// Why an attempt is made again (`augur.retry.cause`), if it is.
pub(crate) fn record_cause(span: &Span, cause: Option<&'static str>) {
    if let Some(cause) = cause
        && !span.is_disabled()
    {
        span.record("augur.retry.cause", cause);
    }
}

/// What one answer came to: the model that answered, its token counts,
/// the repairs made to it and whether it is valid.
pub(crate) fn record_answer(
    span: &Span,
    model: &str,
    answer: &serde_json::Value,
    repairs: &[String],
    valid: bool,
) {
    if span.is_disabled() {
        return;
    }
    span.record("gen_ai.response.model", model);
    record_usage(span, answer);
    if !repairs.is_empty() {
        span.record("augur.repairs", repairs.join(", ").as_str());
    }
    span.record("augur.validation", if valid { "valid" } else { "invalid" });
}

/// Ollama's token counts of `answer` as GenAI usage.
fn record_usage(span: &Span, answer: &serde_json::Value) {
    let count = |k: &str| answer.get(k).and_then(serde_json::Value::as_u64);
    if let Some(n) = count("prompt_eval_count") {
        span.record("gen_ai.usage.input_tokens", n);
    }
    if let Some(n) = count("eval_count") {
        span.record("gen_ai.usage.output_tokens", n);
    }
}

/// The answer the client gets, on the request span: the model that gave
/// it, its usage, attempts, repairs, validation outcome (`valid`,
/// `repaired`, `invalid`) and the tools it calls (emulated calls).
pub(crate) fn record_outcome(
    span: &Span,
    model: &str,
    answer: &serde_json::Value,
    outcome: &Outcome<'_>,
) {
    if span.is_disabled() {
        return;
    }
    span.record("gen_ai.response.model", model);
    record_usage(span, answer);
    span.record("augur.attempts", outcome.attempts);
    span.record("augur.repairs", outcome.repairs);
    span.record("augur.validation", outcome.validation);
    if !outcome.tools.is_empty() {
        span.record("gen_ai.tool.name", outcome.tools.join(",").as_str());
    }
}

/// How sure the model was of the answer (its weakest token's
/// probability), where the policy asks; `-1` when the upstream returned
/// no probabilities.
pub(crate) fn record_confidence(span: &Span, confidence: Option<f64>) {
    if !span.is_disabled() {
        span.record("augur.confidence", confidence.unwrap_or(-1.0));
    }
}

/// What [`record_outcome`] records beyond the answer itself.
pub(crate) struct Outcome<'a> {
    pub attempts: u32,
    pub repairs: usize,
    pub validation: &'static str,
    pub tools: Vec<&'a str>,
}
