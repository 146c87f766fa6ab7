//! Stages 4-5 decided: what augur changes about a chat or generate request
//! (normalize `format`, emulate tools, emulate thinking, validate), or
//! that it changes nothing and the bytes pass through. Every schema is
//! checked against the schema budget and compiled here, before any model
//! call: one that does not fit or compile is a 400.

use serde_json::{Map, Value};

use crate::{
    error::ProxyError,
    format::{self, Format},
    policy::{EmulateTools, FormatApply, ModelPolicy, StreamMode, TextFormat, ToolsMode},
    schema::FormatForms,
    tools::{ToolChoice, ToolSet},
};

use crate::upstream::capabilities::Capabilities;

/// Which native route a request is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    Chat,
    Generate,
}

impl Route {
    /// The upstream path.
    pub(crate) fn path(self) -> &'static str {
        match self {
            Route::Chat => "/api/chat",
            Route::Generate => "/api/generate",
        }
    }
}

/// Tool emulation settings for one request.
pub(crate) struct ToolPlan {
    pub set: ToolSet,
    pub choice: ToolChoice,
    pub parallel: bool,
    /// `tools.loop_breaker` of the model's policy.
    pub loop_breaker: bool,
    /// `tools.drop_ungrounded` of the model's policy.
    pub drop_ungrounded: bool,
    /// `tools.answer_unrelated` of the model's policy.
    pub answer_unrelated: bool,
    /// `tools.small_model: auto`: those rules judge only calls the model
    /// was unsure of, once the answer is scored.
    pub gated: bool,
    /// `tools.mode` of the model's policy.
    pub mode: ToolsMode,
    /// `tools.text_format` of the model's policy.
    pub text_format: TextFormat,
}

/// What augur does to one request.
pub(crate) struct Plan {
    pub tools: Option<ToolPlan>,
    /// The model runs the declared tools itself and augur reads its answer
    /// (to rescue calls written as text, or for a tool guard): these are
    /// the declared tools.
    pub rescue: Option<ToolSet>,
    /// Calls written as text are rescued and the model's own calls
    /// checked (`tools.rescue_text_calls`); when `rescue` is set for a
    /// guard or a confidence score alone, the answer is only read.
    pub rescue_text: bool,
    /// The answer is read for its confidence, with nothing else to change.
    pub score: bool,
    /// `tool_choice: "none"`: the tools are removed and the model answers.
    pub strip_tools: bool,
    /// The normalized format (after a named-schema policy).
    pub format: Option<Format>,
    pub format_changed: bool,
    /// Thinking is emulated with a reasoning field.
    pub think: bool,
    /// The answer is validated (and repaired, retried).
    pub validate: bool,
    /// Whether a streamed answer is held for validation.
    pub stream_mode: StreamMode,
    /// Whether the client asked for a stream.
    pub stream: bool,
}

impl Plan {
    /// Nothing to change: forward the client's bytes.
    pub(crate) fn is_passthrough(&self) -> bool {
        self.tools.is_none()
            && self.rescue.is_none()
            && !self.strip_tools
            && !self.format_changed
            && !self.think
            && !self.validate
            && !self.score
    }
}

/// Whether a JSON value is "truthy" for `think` (true or a level string).
fn think_requested(body: &Map<String, Value>) -> bool {
    match body.get("think") {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => !s.is_empty(),
        _ => false,
    }
}

/// Ollama's `relax_thinking`: on `/v1/messages` a request for thinking to
/// a model that cannot think is answered without thinking rather than
/// refused ("does not support thinking"). Removes a truthy `think` from
/// `body`; true if it did. [`Exchange::relax_think`] asks for it, and the
/// pipeline does it when the model lacks the `thinking` capability and
/// augur does not emulate thinking.
///
/// [`Exchange::relax_think`]: super::Exchange::relax_think
pub(crate) fn relax_think(body: &mut Map<String, Value>) -> bool {
    let truthy = think_requested(body);
    if truthy {
        body.remove("think");
    }
    truthy
}

/// Whether augur emulates tools for `model` rather than the upstream
/// running them: the policy says so, or (`auto`) the model has no tools
/// on `upstream`. (A request forcing a call emulates them too.)
pub(crate) async fn emulates_tools(
    policy: &ModelPolicy,
    (caps, upstream): (&Capabilities, usize),
    model: &str,
) -> Result<bool, ProxyError> {
    Ok(match policy.emulate_tools {
        EmulateTools::Always => true,
        EmulateTools::Never => false,
        EmulateTools::Auto => !caps.has(upstream, model, "tools").await?,
    })
}

/// Ollama's default: stream unless `"stream": false`.
pub(crate) fn wants_stream(body: &Map<String, Value>, default: bool) -> bool {
    match body.get("stream") {
        Some(Value::Bool(b)) => *b,
        _ => default,
    }
}

/// Who reads an answer beside the plan's own stages.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Readers {
    /// A tool guard (the model's or the key's) judges the answer's calls:
    /// an answer that may hold calls is never forwarded unread, whatever
    /// else the policy says.
    pub guard: bool,
    /// The answer's confidence is scored: no answer is forwarded unread.
    pub score: bool,
}

/// Decide what to do with a request for `model`, whose capabilities are
/// looked up on upstream `upstream`, for `readers`.
pub(crate) async fn decide(
    route: Route,
    body: &Map<String, Value>,
    model: &str,
    policy: &ModelPolicy,
    (caps, upstream): (&Capabilities, usize),
    stream_default: bool,
    readers: Readers,
) -> Result<Plan, ProxyError> {
    let stream = wants_stream(body, stream_default);
    let normalized =
        format::normalize(body.get("format")).map_err(|e| ProxyError::BadRequest(e.to_string()))?;
    let (format, mut format_changed) = apply_named_format(normalized.format, policy);
    format_changed |= normalized.changed;
    if let Some(Format::Schema(s)) = &format {
        admit("format", s).await?;
    }

    let declared_tools = body
        .get("tools")
        .and_then(Value::as_array)
        .filter(|t| !t.is_empty() && route == Route::Chat);
    let mut tools = None;
    // Declared tools the model runs itself.
    let mut native = None;
    let mut strip_tools = false;
    if let Some(declared) = declared_tools {
        // Very small models are held to the common forms of string
        // formats (an operator's opt-in; see `schema::FormatForms`).
        let forms = match policy.small_model {
            true => FormatForms::Common,
            false => FormatForms::Exact,
        };
        let set = ToolSet::from_request_cached(declared, forms)
            .map_err(|e| ProxyError::BadRequest(e.to_string()))?;
        let choice = ToolChoice::from_request(body.get("tool_choice"), &set)
            .map_err(|e| ProxyError::BadRequest(e.to_string()))?;
        if choice == ToolChoice::None {
            strip_tools = true;
        } else {
            let emulate = match policy.emulate_tools {
                EmulateTools::Always => true,
                EmulateTools::Never => false,
                EmulateTools::Auto => {
                    !caps.has(upstream, model, "tools").await?
                        || !matches!(choice, ToolChoice::Auto)
                }
            };
            if emulate {
                // Emulation builds a grammar and validates calls from the
                // schema: one that is not JSON Schema is the client's bug.
                if let Some(e) = set.invalid_schema() {
                    return Err(ProxyError::BadRequest(e.to_string()));
                }
                let parallel = policy.parallel_tool_calls
                    && body.get("parallel_tool_calls") != Some(&Value::Bool(false));
                tools = Some(ToolPlan {
                    set,
                    choice,
                    parallel,
                    loop_breaker: policy.loop_breaker,
                    drop_ungrounded: policy.drops_ungrounded(),
                    answer_unrelated: policy.answers_unrelated(),
                    gated: policy.small_model_auto,
                    mode: policy.tools_mode,
                    text_format: policy.text_format,
                });
            } else {
                native = Some(set);
            }
        }
    }

    // A constrained answer (a format, or the tool envelope) leaves no room
    // for the model's own thinking: emulate it there, and wherever the
    // model cannot think.
    let think = policy.think_emulation
        && think_requested(body)
        && (tools.is_some() || format.is_some() || !caps.has(upstream, model, "thinking").await?);

    if think && let Some(Format::Schema(s)) = &format {
        admit("format", &format::think::validation_schema(Some(s))).await?;
    }

    // A constrained or emulated answer holds no calls written as text.
    let rescue_text = policy.rescues_text_calls() && format.is_none() && !think;
    let validate = policy.validate.enabled && (format.is_some() || tools.is_some() || think);
    let stream_mode = policy.validate.stream.unwrap_or(match &format {
        Some(Format::Schema(_)) => StreamMode::Buffer,
        _ => StreamMode::Pass,
    });
    let mut plan = Plan {
        tools,
        rescue: None,
        rescue_text,
        score: false,
        strip_tools,
        format,
        format_changed,
        think,
        validate,
        stream_mode,
        stream,
    };
    // Every other plan reads the answer, and the guard with it.
    let unread = plan.is_passthrough();
    let read = rescue_text || ((readers.guard || readers.score) && unread);
    plan.rescue = native.filter(|_| read);
    plan.score = readers.score && plan.is_passthrough();
    Ok(plan)
}

/// The schema budget and compilation every schema passes before any
/// model call (compiled once per distinct schema, then cached). A schema
/// not yet compiled is compiled off the event loop, in its turn
/// ([`super::offload`]): compilations run no more at once than there are
/// CPUs, however many clients send new schemas.
async fn admit(what: &str, schema: &Value) -> Result<(), ProxyError> {
    let compiled = match crate::validate::Validators::shared().cached(schema) {
        Some(known) => known,
        None => {
            let schema = schema.clone();
            super::offload::cpu(move || crate::validate::admit(&schema)).await?
        }
    };
    compiled.map(|_| ()).map_err(|source| ProxyError::Schema {
        what: what.to_string(),
        source,
    })
}

/// A policy-bound schema replaces the client's format per `apply`.
fn apply_named_format(format: Option<Format>, policy: &ModelPolicy) -> (Option<Format>, bool) {
    let Some(named) = &policy.format else {
        return (format, false);
    };
    let replace = matches!(
        (named.apply, &format),
        (FormatApply::Always, _)
            | (FormatApply::WhenJson, Some(Format::Json))
            | (FormatApply::WhenMissing, None)
    );
    if replace {
        (Some(Format::Schema((*named.schema).clone())), true)
    } else {
        (format, false)
    }
}
