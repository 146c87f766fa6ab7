//! Stage 7: run a transformed request to completion: call the upstream,
//! interpret the answer (parse, repair, validate; tool calls or a plain
//! answer), and retry with the violations as feedback, up to the policy's
//! limit. Schemas the upstream's grammar converter rejects are degraded
//! and retried.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::{
    error::{ProxyError, UpstreamKind},
    policy::ValidatePolicy,
    tools::{ToolCall, ToolSet},
    validate::{Validators, Violation},
};

use super::{call::CallCtx, checks, plan::Route, retry::Retry};

pub use super::interpret::interpret;

/// What the model's text is expected to be.
#[derive(Clone)]
pub enum Expect {
    /// Any JSON object (`format: "json"`).
    Json,
    /// JSON valid against the client's original schema.
    Schema(Value),
    /// The tool envelope: calls to declared tools, or an answer; with
    /// `think`, as the answer of the emulated-thinking object. `screen`
    /// judges the calls against the conversation. With `text`, calls
    /// written as text instead ([`super::text_mode`]).
    Tools {
        set: ToolSet,
        answer_schema: Option<Value>,
        json_answer: bool,
        think: bool,
        screen: std::sync::Arc<super::call_screen::CallScreen>,
        text: Option<super::text_mode::TextMode>,
    },
    /// `{"reasoning": "...", "answer": ...}` for emulated thinking.
    Think {
        answer_schema: Option<Value>,
        json_answer: bool,
    },
    /// No constraint (nothing to validate).
    Text,
}

/// One interpreted answer.
#[derive(Debug, Clone, Default)]
pub struct Interp {
    pub content: String,
    pub thinking: Option<String>,
    pub calls: Vec<ToolCall>,
    pub violations: Vec<Violation>,
    pub repairs: Vec<String>,
    /// Some of the answer could not be checked against the client's schema
    /// (reported, never taken as valid).
    pub unchecked: bool,
    /// Text mode: the answer could not be read as calls the request
    /// allows, so a grammar-mode attempt may follow.
    pub unparsed: bool,
}

/// The final result of the attempts.
pub struct Completed {
    /// The last upstream response object (metrics, done_reason, …).
    pub response: Value,
    pub interp: Interp,
    pub attempts: u32,
    /// Still invalid after the last attempt.
    pub invalid: bool,
}

/// The text a route's answer carries.
pub fn answer_text(route: Route, response: &Value) -> String {
    let v = match route {
        Route::Chat => response.pointer("/message/content"),
        Route::Generate => response.get("response"),
    };
    v.and_then(Value::as_str).unwrap_or_default().to_string()
}

/// Whether the upstream's grammar converter rejected the schema.
pub fn is_schema_rejection(e: &ProxyError) -> bool {
    matches!(
        e,
        ProxyError::Upstream {
            kind: UpstreamKind::SchemaRejected,
            ..
        }
    )
}

/// A streamed attempt that failed before anything of it was sent: the
/// whole-answer path goes on from it instead of asking the same again.
pub struct Seed {
    /// The model's text.
    pub text: String,
    /// The token limit cut it.
    pub truncated: bool,
}

/// Whether an answer ended before the model finished it: cut by the token
/// limit (`done_reason: "length"`), or ended without a done chunk, as
/// Ollama ends an answer once the model repeats one token too often (a
/// whole body then says `"done": false`).
pub fn cut_short(response: &Value) -> bool {
    response.get("done_reason").and_then(Value::as_str) == Some("length")
        || response.get("done").and_then(Value::as_bool) != Some(true)
}

/// Run `body` against the upstream until the answer is valid or the
/// attempts allowed by `vp` are spent (`seed`, if any, was the first). A
/// plain answer the token limit cut is answered as it is (`done_reason:
/// "length"`); anything else unusable is retried as [`super::retry`] plans.
pub async fn complete(
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
    if let Some(seed) = seed.filter(|_| max_attempts > 1) {
        let read = read_answer(seed.text, &owned, validators, vp.repair, false).await?;
        if seed.truncated || !read.interp.violations.is_empty() {
            attempts = 1;
            let failed = Failed {
                text: &read.text,
                interp: &read.interp,
                truncated: seed.truncated,
            };
            plan_next(&mut retry, &mut grammar, expect, route, failed);
        }
    }
    let mut degrades = 0u32;
    let mut best: Option<Completed> = None;
    while attempts < max_attempts {
        attempts += 1;
        if retry.needs_context() {
            let context = learn_context(ctx, &retry).await;
            retry.set_context(context);
        }
        let response = match ctx.json(route.path(), &Value::Object(retry.body())).await {
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
        // Every upstream call counts, degraded ones included.
        let candidate = Completed {
            response,
            interp,
            attempts: attempts + degrades,
            invalid: !valid,
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
        if attempts < max_attempts {
            let failed = Failed {
                text: &text,
                interp: &candidate.interp,
                truncated,
            };
            plan_next(&mut retry, &mut grammar, expect, route, failed);
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
/// `text`: the model's text), taken as the one attempt [`complete`] makes
/// when no retry is allowed.
pub fn streamed(
    response: Value,
    text: &str,
    expect: &Expect,
    validators: &Validators,
    vp: &ValidatePolicy,
) -> Completed {
    let mut interp = interpret(text, expect, validators, vp.repair);
    if cut_short(&response)
        && !interp.violations.is_empty()
        && let Some(plain) = super::retry::plain::recover(text, expect, validators)
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
    }
}

/// An answer read by [`read_answer`].
struct Read {
    /// The model's text.
    text: String,
    interp: Interp,
    /// The answer was cut short and failed, and is taken as a plain answer
    /// cut by the token limit ([`super::retry::plain::recover`]).
    plain: bool,
}

/// [`interpret`] `text` under `expect`, and when the answer was `cut`
/// short and fails, recover it as a plain answer cut by the token limit if
/// it is one. This is the CPU-heavy reading of a whole answer (schema
/// validation and repair, calls written as text, the calls' screening), so
/// it runs off the event loop ([`super::offload`]).
async fn read_answer(
    text: String,
    expect: &Arc<Expect>,
    validators: &Validators,
    repair: bool,
    cut: bool,
) -> Result<Read, ProxyError> {
    let (expect, validators) = (expect.clone(), validators.clone());
    super::offload::cpu(move || {
        let mut interp = interpret(&text, &expect, &validators, repair);
        let mut plain = false;
        if cut
            && !interp.violations.is_empty()
            && let Some(recovered) = super::retry::plain::recover(&text, &expect, &validators)
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
/// [`super::retry`] plans.
fn plan_next(
    retry: &mut Retry,
    grammar: &mut Option<Arc<Expect>>,
    expect: &Expect,
    route: Route,
    failed: Failed<'_>,
) {
    let fallback = super::text_mode::grammar_fallback(expect)
        .filter(|_| failed.interp.unparsed && grammar.is_none());
    let cause = match fallback {
        Some((mut body, switched)) => {
            tracing::info!(
                violations = %checks::describe(&failed.interp.violations),
                "a text-mode answer could not be read; asking again in grammar mode"
            );
            body.insert("stream".into(), Value::Bool(false));
            *retry = Retry::new(route, body);
            *grammar = Some(Arc::new(switched));
            super::retry::Cause::Grammar
        }
        None => retry.after(failed.text, &failed.interp.violations, failed.truncated),
    };
    metrics::counter!("augur_retries_total", "cause" => cause.as_str()).increment(1);
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
    super::retry::fit::context_of(shown.as_ref(), retry.options())
}

/// Degrade steps: two simpler schemas (see [`crate::schema::degrade`]),
/// then "json".
const MAX_DEGRADES: u32 = 3;

/// After `e`, replace `body`'s schema with a simpler one when the policy
/// allows it, the upstream rejected the schema and a schema was sent;
/// true = send `body` again.
pub fn degrade_after(
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
