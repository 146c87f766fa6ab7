//! Stages 4-9 for every generation surface, in one function.
//!
//! A surface (Ollama's native routes, OpenAI chat, OpenAI Responses,
//! Anthropic Messages) translates its request into an [`Exchange`]: an
//! Ollama `/api/chat` or `/api/generate` body (messages, tools,
//! tool_choice, format, think, options, stream). [`run`] then decides what
//! augur changes (normalize `format`, emulate tools or thinking, validate),
//! and either says the client's own bytes should go upstream as they came
//! ([`Outcome::Forward`]) or runs the changed request through the upstream,
//! validating, repairing and retrying, and hands back Ollama-shaped output
//! for the surface to render ([`Outcome::Output`]).
//!
//! ```text
//! plan   = plan::decide(exchange, model policy, capabilities)    // 4 normalize, 5 emulate?
//! if plan.is_passthrough() { return Forward }
//! if plan.rescue { return native::run(…) }                         // native tools: calls checked,
//!                                                                // lost calls recovered
//! (body, expect) = prepare::prepare(exchange, plan)                // 4-5 rewrite
//! output = deliver::run(Job { body, expect, … }, delivery)         // 6 forward, 7 attempt
//!                                                                // (validate, repair, retry,
//!                                                                // fallback models), 8 chunk,
//!                                                                // 9 deliver (whole or streamed)
//! tool_guard::apply_all(output)                                         // tools.guard
//! ```
//!
//! The folder reads in that order, each stage using only the ones below
//! it: `job` (what every stage shares) and the leaves `plan`, `probs`,
//! `call`, `checks`, `screen`, `retry`, `chunk`, `confidence`, `output`
//! at the bottom; then
//! `prepare`, `attempt/`, `native/`, `deliver/`, `guard`; this module on
//! top.

pub(crate) mod attempt;
pub(crate) mod call;
pub(crate) mod checks;
pub(crate) mod chunk;
pub(crate) mod confidence;
pub(crate) mod deliver;
pub(crate) mod job;
pub(crate) mod native;
pub(crate) mod offload;
pub(crate) mod output;
pub(crate) mod plan;
pub(crate) mod prepare;
pub(crate) mod probs;
pub(crate) mod retry;
pub(crate) mod screen;
pub(crate) mod splitter;
pub(crate) mod tool_guard;

use std::sync::Arc;

use http::request::Parts;
use serde_json::{Map, Value};

use crate::{
    client::ClientInfo,
    error::ProxyError,
    limits::{Principal, Usage},
    policy::{ModelPolicy, Policy},
    state::AppState,
    telemetry::Timing,
    upstream::{Target, fleet::Affinity},
};

use call::CallCtx;
use job::{Delivery, Job};
use output::Output;
use plan::Route;
use probs::Probs;

/// What a surface asks of the pipeline.
pub(crate) struct Exchange {
    /// The upstream route the body is for.
    pub route: Route,
    /// An Ollama `/api/chat` or `/api/generate` request body.
    pub body: Map<String, Value>,
    /// Whether the surface streams when the body does not say.
    pub stream_default: bool,
    /// The client's own bytes, when `body` is them parsed (Ollama's
    /// native routes): what goes upstream when augur only reads the answer.
    pub raw: Option<bytes::Bytes>,
    /// Drop `think` for a model that cannot think, rather than have the
    /// upstream refuse it (Ollama's Anthropic layer), unless augur
    /// emulates thinking.
    pub relax_think: bool,
    /// The body holds tools the upstream runs itself (`web_search`): unless
    /// augur emulates tools, the client's request goes upstream as sent
    /// ([`Outcome::ForwardAsSent`]).
    pub upstream_runs_tools: bool,
}

impl Exchange {
    /// An exchange of `body` for `route`, nothing else asked.
    pub(crate) fn new(route: Route, body: Map<String, Value>, stream_default: bool) -> Self {
        Self {
            route,
            body,
            stream_default,
            raw: None,
            relax_think: false,
            upstream_runs_tools: false,
        }
    }
}

/// Who and what an exchange runs for, as admission established it.
pub(crate) struct Context<'a> {
    pub state: &'a AppState,
    /// The client request's head: its headers go upstream with augur's own
    /// calls; its extensions hold the client's address and timing.
    pub parts: &'a Parts,
    /// The request's one policy snapshot.
    pub policy: &'a Arc<Policy>,
    /// The model as the client wrote it (sent upstream unchanged).
    pub model: &'a str,
    /// The model normalized (how upstreams' model lists are matched).
    pub model_name: &'a str,
    /// The model's resolved settings.
    pub model_policy: &'a ModelPolicy,
    /// Who sent the request (an API key, or an anonymous client's
    /// address): its label goes in the audit log, and fallback models take
    /// concurrency slots in its name.
    pub principal: &'a Principal,
    /// Where the token counts of augur's own calls are reported.
    pub usage: &'a Arc<Usage>,
    /// The models that answer when this one's answer fails.
    pub fallback: Option<Arc<job::Chain>>,
    /// The conversation's affinity, when its model routes by one: the
    /// model's upstream, and every fallback model's, is chosen by it.
    pub affinity: Option<Affinity>,
}

/// What the pipeline made of an exchange.
pub(crate) enum Outcome {
    /// Nothing to change: forward the client's request (as the surface
    /// amended it, if it did).
    Forward,
    /// Forward the client's request exactly as it was sent: the upstream
    /// runs what it asks for ([`Exchange::upstream_runs_tools`]).
    ForwardAsSent,
    /// The answer, Ollama-shaped, for the surface to render.
    Output(Output),
}

/// Run stages 4-9 for `exchange`.
pub(crate) async fn run(cx: Context<'_>, exchange: Exchange) -> Result<Outcome, ProxyError> {
    run_once(cx, exchange, true).await
}

/// [`run`]; `reask`: when the tool guard refuses every call of a whole
/// answer, the model may be asked once more.
async fn run_once(cx: Context<'_>, exchange: Exchange, reask: bool) -> Result<Outcome, ProxyError> {
    let Exchange {
        route,
        mut body,
        stream_default,
        mut raw,
        relax_think,
        upstream_runs_tools,
    } = exchange;
    if is_load_request(route, &body) {
        return Ok(Outcome::Forward);
    }
    // The upstream the plan is made for (capabilities differ between
    // boxes); calls go there first.
    let upstream = cx.state.fleet.choose(
        &cx.parts.headers,
        &Target::Model {
            name: cx.model_name.to_string(),
            prefer: None,
            affinity: cx.affinity,
        },
    )?;
    let target = Target::Model {
        name: cx.model_name.to_string(),
        prefer: Some(upstream),
        affinity: cx.affinity,
    };
    let caps = &cx.state.capabilities;
    if relax_think
        && !cx.model_policy.think_emulation
        && !caps.has(upstream, cx.model, "thinking").await?
    {
        plan::relax_think(&mut body);
    }
    // A guard reads every answer: tools it does not offer are left out,
    // and the request never goes upstream unread.
    let guards = guards_of(&cx);
    let narrowed = guards.iter().fold(false, |narrowed, g| {
        tool_guard::narrow_offer(g, &mut body) | tool_guard::narrow_schemas(g, &mut body) | narrowed
    });
    if narrowed {
        raw = None;
    }
    if upstream_runs_tools
        && guards.is_empty()
        && !plan::emulates_tools(cx.model_policy, (caps, upstream), cx.model).await?
    {
        return Ok(Outcome::ForwardAsSent);
    }
    let mut plan = plan::decide(
        route,
        &body,
        cx.model,
        cx.model_policy,
        (caps, upstream),
        stream_default,
        plan::Readers {
            guard: !guards.is_empty(),
            score: cx.model_policy.confidence().is_some(),
        },
    )
    .await?;
    if narrowed && plan.is_passthrough() {
        // The client's bytes hold the tools left out: send the body.
        plan.rescue = Some(crate::tools::ToolSet::default());
    }
    if plan.is_passthrough() {
        return Ok(Outcome::Forward);
    }
    let witness = tool_guard::Witness {
        principal: cx.principal.label().to_string(),
        audit: audit_of(&cx),
    };
    if let Some(set) = plan.rescue.take() {
        // Only the answer is read: the request goes as the client sent it.
        let raw = raw.filter(|_| !plan.format_changed);
        let stream = plan.stream;
        let text = plan.rescue_text;
        let (mut upstream_body, _) =
            prepare::prepare(route, &body, plan, cx.state.config.format_limit)?;
        let probs = Probs::ask(cx.model_policy.confidence(), &mut upstream_body);
        // Probabilities asked for: the body goes, not the client's bytes.
        let raw = raw.filter(|_| probs.policy.is_none() || probs.keep);
        let prepared = (upstream_body, job::Expect::Text, probs);
        let job = job(&cx, route, prepared, None, target);
        // Read for a guard alone, the answer is judged and nothing else.
        let checks = native::Checks {
            validate: text && cx.model_policy.native_validate,
            recover: text && cx.model_policy.native_recover,
            text,
        };
        let output = native::run(job, (set, checks), raw, stream).await?;
        let guarded = tool_guard::apply_all(&guards, output, &witness).await;
        let again = reask.then_some((route, body, stream_default));
        return settle_guarded(cx, guarded, again).await;
    }
    let emulated = emulated(&plan);
    note_emulation(cx.parts, emulated);
    let delivery = delivery_for(&plan);
    let (mut upstream_body, expect) =
        prepare::prepare(route, &body, plan, cx.state.config.format_limit)?;
    let probs = Probs::ask(cx.model_policy.confidence(), &mut upstream_body);
    let job = job(&cx, route, (upstream_body, expect, probs), emulated, target);
    let output = deliver::run(job, delivery).await?;
    let guarded = tool_guard::apply_all(&guards, output, &witness).await;
    let again = reask.then_some((route, body, stream_default));
    settle_guarded(cx, guarded, again).await
}

/// The guards that read this request's answer: the model's, then the
/// key's.
fn guards_of(cx: &Context<'_>) -> Vec<Arc<crate::guard::Guard>> {
    [
        cx.model_policy.guard.clone(),
        cx.principal
            .api_key(cx.policy)
            .and_then(|k| k.guard.clone()),
    ]
    .into_iter()
    .flatten()
    .filter(|g| !g.is_empty())
    .collect()
}

/// The guarded answer; when the guard refused every call of a whole
/// answer and `again` holds the request, the model is asked once more,
/// told which call was refused and why (a second refusal is a 422).
async fn settle_guarded(
    cx: Context<'_>,
    guarded: tool_guard::Guarded,
    again: Option<(Route, Map<String, Value>, bool)>,
) -> Result<Outcome, ProxyError> {
    let (refused, (route, mut body, stream_default)) = match (guarded, again) {
        (tool_guard::Guarded::Refused(refused), Some(again)) => (refused, again),
        (guarded, _) => return Ok(Outcome::Output(guarded.into_result()?)),
    };
    tracing::info!("the tool guard refused every call; asking the model once more");
    metrics::counter!("augur_retries_total", "cause" => "tool_guard").increment(1);
    if let Some(Value::Array(messages)) = body.get_mut("messages") {
        messages.push(tool_guard::reask_turn(&refused.why));
    }
    let exchange = Exchange::new(route, body, stream_default);
    match Box::pin(run_once(cx, exchange, false)).await {
        // The answer says what fired the first time too.
        Ok(Outcome::Output(output)) => Ok(Outcome::Output(refused.carried_into(output))),
        // No answer the second time (an error, or nothing read): the
        // refusal stands; never the client's own bytes, which hold what
        // was refused.
        _ => Err(tool_guard::Guarded::Refused(refused)
            .into_result()
            .err()
            .unwrap_or_else(|| {
                ProxyError::Internal("the tool guard's second answer was not read".into())
            })),
    }
}

/// What a planned request emulates, for headers, logs and metrics.
fn emulated(plan: &plan::Plan) -> Option<&'static str> {
    if plan.tools.is_some() {
        Some("tools")
    } else if plan.think {
        Some("thinking")
    } else {
        None
    }
}

/// Count an emulation and note it in the access log.
fn note_emulation(parts: &Parts, emulated: Option<&'static str>) {
    let Some(what) = emulated else { return };
    if let Some(t) = parts.extensions.get::<Arc<Timing>>() {
        t.set_note(if what == "tools" {
            "emulated_tools"
        } else {
            "emulated_thinking"
        });
    }
    metrics::counter!("augur_emulations_total", "kind" => what).increment(1);
}

/// The stages 6-9 job for a prepared request: its upstream body, what its
/// answer must be, and what it does with token probabilities.
fn job(
    cx: &Context<'_>,
    route: Route,
    (body, expect, probs): (Map<String, Value>, job::Expect, Probs),
    emulated: Option<&'static str>,
    target: Target,
) -> Job {
    let state = cx.state;
    Job {
        ctx: CallCtx {
            state: state.clone(),
            headers: cx.parts.headers.clone(),
            client: cx.parts.extensions.get::<ClientInfo>().cloned(),
            timing: cx.parts.extensions.get::<Arc<Timing>>().cloned(),
            usage: Some(cx.usage.clone()),
            tap: cx.parts.extensions.get::<crate::record::Tap>().cloned(),
            target,
            answer_as: None,
            probs,
        },
        route,
        body,
        expect,
        validate: cx.model_policy.validate.clone(),
        validators: state.validators.clone(),
        emulated,
        audit: audit_of(cx),
        fallback: cx.fallback.clone(),
        position: 0,
        answered: None,
        seat: job::Seat::for_request(cx.policy, cx.principal),
    }
}

/// The request's audit log, when the policy keeps one.
fn audit_of(cx: &Context<'_>) -> Option<job::Audit> {
    cx.policy.audit.path.as_ref().map(|_| job::Audit {
        log: cx.state.audit.clone(),
        policy: cx.policy.audit.clone(),
        principal: cx.principal.label().to_string(),
        model: cx.model.to_string(),
    })
}

/// How the answer of a planned request is delivered.
fn delivery_for(plan: &plan::Plan) -> Delivery {
    use crate::policy::StreamMode;
    if !plan.stream {
        Delivery::Whole
    } else if plan.tools.is_some() {
        Delivery::Tools
    } else if plan.think {
        Delivery::Think
    } else if plan.validate && plan.stream_mode == StreamMode::Buffer {
        Delivery::Buffered
    } else {
        Delivery::Pass
    }
}

/// Empty `messages` / `prompt`: Ollama just loads (or unloads) the model.
fn is_load_request(route: Route, body: &Map<String, Value>) -> bool {
    match route {
        Route::Chat => body
            .get("messages")
            .and_then(Value::as_array)
            .is_none_or(|m| m.is_empty()),
        Route::Generate => body
            .get("prompt")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty),
    }
}

#[cfg(test)]
mod tests;
