//! Stage 7: run a transformed request to completion: call the upstream,
//! interpret the answer (parse, repair, validate; tool calls or a plain
//! answer), and retry with the violations as feedback, up to the policy's
//! limit. Schemas the upstream's grammar converter rejects are degraded
//! and retried.

use std::sync::Arc;

use serde_json::{Map, Value, json};
use tracing::Instrument;

use crate::{error::ProxyError, policy::ValidatePolicy, telemetry::spans, validate::Validators};

use super::{
    super::{
        call::{CallCtx, Lines},
        checks,
        job::{Completed, Expect, Interp, Job, Seed, answer_text, cut_short, is_schema_rejection},
        offload,
        plan::Route,
        retry::{self, Retry},
    },
    interpret::interpret,
    plain, text_mode,
};

/// Run `body` against the upstream until the answer is valid or the
/// attempts allowed by `vp` are spent (`seed`, if any, was the first). A
/// plain answer the token limit cut is answered as it is (`done_reason:
/// "length"`); anything else unusable is retried as [`retry`] plans.
pub(crate) async fn run_until_valid(
    ctx: &CallCtx,
    route: Route,
    mut body: Map<String, Value>,
    expect: &Expect,
    vp: &ValidatePolicy,
    validators: &Validators,
    seed: Option<Seed>,
) -> Result<Completed, ProxyError> {
    body.insert("stream".into(), Value::Bool(false));
    let max_attempts = if vp.enabled { 1 + vp.max_retries } else { 1 };
    let mut retry = Retry::new(route, body);
    retry.set_text_mode(matches!(expect, Expect::Tools { text: Some(_), .. }));
    // Answers are read off the event loop, which needs their expectation
    // owned: cloned once here (tool sets and screens are shared).
    let owned = Arc::new(expect.clone());
    // Text mode, after an answer that could not be read: grammar mode.
    let mut grammar: Option<Arc<Expect>> = None;
    let mut attempts = 0u32;
    // Why the next attempt is made, for its span.
    let mut cause: Option<&'static str> = None;
    if let Some(seed) = seed.filter(|_| max_attempts > 1) {
        let read = read_answer(seed.text, &owned, validators, vp.repair, false).await?;
        if seed.truncated || !read.interp.violations.is_empty() {
            attempts = 1;
            let failed = Failed {
                text: &read.text,
                interp: &read.interp,
                truncated: seed.truncated,
            };
            cause = Some(plan_next(&mut retry, &mut grammar, expect, route, failed));
        }
    }
    let mut degrades = 0u32;
    let mut best: Option<Completed> = None;
    while attempts < max_attempts {
        attempts += 1;
        let span = spans::attempt(attempts, Some(retry.model()));
        spans::record_cause(&span, cause.take());
        if retry.needs_context() {
            let context = learn_context(ctx, &retry).instrument(span.clone()).await;
            retry.set_context(context);
        }
        let body = Value::Object(retry.body());
        let response = match ctx.json(route.path(), &body).instrument(span.clone()).await {
            Ok(r) => r,
            Err(e) if degrade_after(&e, vp, retry.base_mut(), &mut degrades) => {
                attempts -= 1;
                continue;
            }
            Err(e) => return Err(e),
        };
        let truncated = cut_short(&response);
        let current = grammar.as_ref().unwrap_or(&owned);
        let text = answer_text(route, &response);
        if checks::calls_only(&response, &text, current) {
            return Ok(Completed {
                response,
                interp: Interp {
                    native_calls: true,
                    ..Interp::default()
                },
                attempts: attempts + degrades,
                invalid: false,
                confidence: None,
            });
        }
        let Read {
            text,
            interp,
            plain,
        } = read_answer(text, current, validators, vp.repair, truncated).await?;
        if plain {
            tracing::info!(
                attempt = attempts,
                "a plain answer was cut by the token limit"
            );
        }
        let valid = interp.violations.is_empty();
        spans::record_answer(&span, retry.model(), &response, &interp.repairs, valid);
        // Every upstream call counts, degraded ones included.
        let candidate = Completed {
            response,
            interp,
            attempts: attempts + degrades,
            invalid: !valid,
            confidence: None,
        };
        if valid {
            return Ok(candidate);
        }
        metrics::counter!("augur_validation_failures_total").increment(1);
        let better = best
            .as_ref()
            .is_none_or(|b| candidate.interp.violations.len() <= b.interp.violations.len());
        tracing::info!(
            attempt = attempts,
            violations = %checks::describe(&candidate.interp.violations),
            truncated,
            "answer failed validation"
        );
        if !span.is_disabled() {
            let violations = checks::describe(&candidate.interp.violations);
            span.record("augur.violations", violations.as_str());
        }
        if attempts < max_attempts {
            let failed = Failed {
                text: &text,
                interp: &candidate.interp,
                truncated,
            };
            cause = Some(plan_next(&mut retry, &mut grammar, expect, route, failed));
        }
        if better {
            best = Some(candidate);
        }
    }
    let mut best = best.ok_or_else(|| ProxyError::Internal("no attempt was made".into()))?;
    best.attempts = attempts + degrades;
    best.invalid = true;
    Ok(best)
}

/// A streamed answer read to its end (`response`: its done chunk;
/// `text`: the model's text), taken as the one attempt [`run_until_valid`] makes
/// when no retry is allowed.
pub(crate) fn streamed(
    response: Value,
    text: &str,
    expect: &Expect,
    validators: &Validators,
    vp: &ValidatePolicy,
) -> Completed {
    if checks::calls_only(&response, text, expect) {
        return Completed {
            response,
            interp: Interp {
                native_calls: true,
                ..Interp::default()
            },
            attempts: 1,
            invalid: false,
            confidence: None,
        };
    }
    let mut interp = interpret(text, expect, validators, vp.repair);
    if cut_short(&response)
        && !interp.violations.is_empty()
        && let Some(plain) = plain::recover(text, expect, validators)
    {
        interp = plain;
    }
    let invalid = !interp.violations.is_empty();
    if invalid {
        metrics::counter!("augur_validation_failures_total").increment(1);
    }
    Completed {
        response,
        interp,
        attempts: 1,
        invalid,
        confidence: None,
    }
}

/// An answer read by [`read_answer`].
struct Read {
    /// The model's text.
    text: String,
    interp: Interp,
    /// The answer was cut short and failed, and is taken as a plain answer
    /// cut by the token limit ([`plain::recover`]).
    plain: bool,
}

/// [`interpret`] `text` under `expect`, and when the answer was `cut`
/// short and fails, recover it as a plain answer cut by the token limit if
/// it is one. This is the CPU-heavy reading of a whole answer (schema
/// validation and repair, calls written as text, the calls' screening), so
/// it runs off the event loop ([`offload`]).
async fn read_answer(
    text: String,
    expect: &Arc<Expect>,
    validators: &Validators,
    repair: bool,
    cut: bool,
) -> Result<Read, ProxyError> {
    let (expect, validators) = (expect.clone(), validators.clone());
    offload::cpu(move || {
        let mut interp = interpret(&text, &expect, &validators, repair);
        let mut plain = false;
        if cut
            && !interp.violations.is_empty()
            && let Some(recovered) = plain::recover(&text, &expect, &validators)
        {
            interp = recovered;
            plain = true;
        }
        Read {
            text,
            interp,
            plain,
        }
    })
    .await
}

/// An attempt that failed.
struct Failed<'a> {
    text: &'a str,
    interp: &'a Interp,
    /// The token limit cut it.
    truncated: bool,
}

/// Plan the attempt after `failed`: in text mode, an answer that could
/// not be read is asked again once in grammar mode (the retry then starts
/// from the grammar-mode body); anything else is retried as
/// [`retry`] plans.
fn plan_next(
    retry: &mut Retry,
    grammar: &mut Option<Arc<Expect>>,
    expect: &Expect,
    route: Route,
    failed: Failed<'_>,
) -> &'static str {
    let fallback =
        text_mode::grammar_fallback(expect).filter(|_| failed.interp.unparsed && grammar.is_none());
    let cause = match fallback {
        Some((mut body, switched)) => {
            tracing::info!(
                violations = %checks::describe(&failed.interp.violations),
                "a text-mode answer could not be read; asking again in grammar mode"
            );
            body.insert("stream".into(), Value::Bool(false));
            *retry = Retry::new(route, body);
            *grammar = Some(Arc::new(switched));
            retry::Cause::Grammar
        }
        None => retry.after(failed.text, &failed.interp.violations, failed.truncated),
    };
    metrics::counter!("augur_retries_total", "cause" => cause.as_str()).increment(1);
    cause.as_str()
}

/// The context a retry must fit in: from `/api/show` (cached) and the
/// request's options; Ollama's default when the lookup fails.
async fn learn_context(ctx: &CallCtx, retry: &Retry) -> u64 {
    let shown = match ctx
        .state
        .capabilities
        .context(ctx.upstream(), retry.model())
        .await
    {
        Ok(shown) => Some(shown),
        Err(e) => {
            tracing::debug!(error = %e, "context lookup failed; assuming the default");
            None
        }
    };
    retry::fit::context_of(shown.as_ref(), retry.options())
}

/// Degrade steps: two simpler schemas (see [`crate::schema::degrade`]),
/// then "json".
const MAX_DEGRADES: u32 = 3;

/// After `e`, replace `body`'s schema with a simpler one when the policy
/// allows it, the upstream rejected the schema and a schema was sent;
/// true = send `body` again.
pub(crate) fn degrade_after(
    e: &ProxyError,
    vp: &ValidatePolicy,
    body: &mut Map<String, Value>,
    degrades: &mut u32,
) -> bool {
    let schema_sent = body.get("format").is_some_and(Value::is_object);
    if !(vp.degrade && schema_sent && *degrades < MAX_DEGRADES && is_schema_rejection(e)) {
        return false;
    }
    *degrades += 1;
    degrade_format(body);
    metrics::counter!("augur_format_degraded_total").increment(1);
    tracing::info!(error = %e, "upstream rejected the schema; retrying with a simpler one");
    true
}

/// Replace the format with a simpler one: a degraded schema, then "json".
fn degrade_format(body: &mut Map<String, Value>) {
    let next = match body.get("format") {
        Some(schema @ Value::Object(_)) => crate::schema::degrade(schema).unwrap_or(json!("json")),
        _ => json!("json"),
    };
    body.insert("format".into(), next);
}

impl Job {
    /// The upstream's stream of this request's answer, opened on its own
    /// route (see [`Job::open_stream`] for the fallback models). A rejected
    /// schema is known before any byte is streamed: it is degraded and
    /// asked again.
    pub(crate) async fn open_lines(&self) -> Result<Lines, ProxyError> {
        let mut body = self.body.clone();
        body.insert("stream".into(), Value::Bool(true));
        let mut degrades = 0;
        loop {
            match self
                .ctx
                .lines(self.route.path(), &Value::Object(body.clone()))
                .await
            {
                Ok(lines) => return Ok(lines),
                Err(e) if degrade_after(&e, &self.validate, &mut body, &mut degrades) => {}
                Err(e) => return Err(e),
            }
        }
    }
}
