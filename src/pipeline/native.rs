//! `POST /api/chat` and `POST /api/generate`: stage 1 to 9 for Ollama's
//! native generation routes.
//!
//! A request augur has nothing to change about (no emulation, a format
//! that needs neither fixing nor validation) is forwarded byte for byte.

use std::sync::Arc;

use axum::{
    body::Body,
    extract::{Request, State},
    response::Response,
};
use bytes::Bytes;
use http::request::Parts;
use serde_json::{Map, Value};

use crate::{
    app::AppState,
    error::{Flavor, ProxyError},
    passthrough,
    telemetry::Timing,
    upstream::ClientInfo,
};

use super::{
    call::CallCtx,
    flows::{self, Delivery, Job},
    gate::{self, RouteClass},
    output,
    plan::{self, Route},
    prepare,
    skim::{self, Skim},
};

/// `POST /api/chat`.
pub async fn chat(State(state): State<AppState>, req: Request) -> Response {
    respond(handle(state, req, Route::Chat).await)
}

/// `POST /api/generate`.
pub async fn generate(State(state): State<AppState>, req: Request) -> Response {
    respond(handle(state, req, Route::Generate).await)
}

fn respond(result: Result<Response, ProxyError>) -> Response {
    result.unwrap_or_else(|e| e.into_response_for(Flavor::Ollama))
}

/// A parsed native request: its parts, raw bytes and JSON object.
pub struct Parsed {
    pub parts: Parts,
    pub bytes: Bytes,
    pub body: Option<Map<String, Value>>,
    pub model: Option<String>,
}

/// Read and parse the body (bounded by the configured limit).
pub async fn read(state: &AppState, req: Request) -> Result<Parsed, ProxyError> {
    let (parts, bytes) = read_bytes(state, req).await?;
    Ok(Parsed::full(parts, bytes))
}

/// Read the body and skim it: a body with nothing augur acts on is left
/// unparsed (`body` is `None`, as for a body augur does not understand).
async fn read_skimmed(state: &AppState, req: Request) -> Result<Parsed, ProxyError> {
    let (parts, bytes) = read_bytes(state, req).await?;
    Ok(match skim::skim(&bytes) {
        Skim::Plain { model } => Parsed {
            parts,
            bytes,
            body: None,
            model,
        },
        Skim::NeedsParse => Parsed::full(parts, bytes),
    })
}

async fn read_bytes(state: &AppState, req: Request) -> Result<(Parts, Bytes), ProxyError> {
    passthrough::check_content_length(&req, state.config.body_limit)?;
    let (parts, body) = req.into_parts();
    let bytes = passthrough::read_body(body, state.config.body_limit).await?;
    Ok((parts, bytes))
}

impl Parsed {
    fn full(parts: Parts, bytes: Bytes) -> Self {
        let body = match serde_json::from_slice::<Value>(&bytes) {
            Ok(Value::Object(map)) => Some(map),
            _ => None,
        };
        let model = body
            .as_ref()
            .and_then(|b| b.get("model"))
            .and_then(Value::as_str)
            .filter(|m| !m.is_empty())
            .map(str::to_string);
        Self {
            parts,
            bytes,
            body,
            model,
        }
    }
}

/// The call context for augur's own upstream calls on behalf of `parts`.
pub fn call_ctx(state: &AppState, parts: &Parts) -> CallCtx {
    CallCtx {
        state: state.clone(),
        headers: parts.headers.clone(),
        client: parts.extensions.get::<ClientInfo>().cloned(),
        timing: parts.extensions.get::<Arc<Timing>>().cloned(),
    }
}

/// Forward the client's own bytes.
pub async fn forward_bytes(state: &AppState, parsed: Parsed) -> Result<Response, ProxyError> {
    let req = Request::from_parts(parsed.parts, Body::from(parsed.bytes));
    passthrough::forward(state, req).await
}

/// A generation request read and admitted: stages 1-3.
pub struct Admitted {
    pub parsed: Parsed,
    pub model: Option<String>,
    pub policy: Arc<crate::policy::Policy>,
    pub admission: gate::Admission,
}

/// Read the body, note the model, take the request's policy snapshot and
/// admit it under auth and limits.
pub async fn admit(state: &AppState, req: Request) -> Result<Admitted, ProxyError> {
    admit_read(state, read(state, req).await?).await
}

async fn admit_read(state: &AppState, parsed: Parsed) -> Result<Admitted, ProxyError> {
    let model = parsed.model.clone();
    if let (Some(m), Some(t)) = (&model, parsed.parts.extensions.get::<Arc<Timing>>()) {
        t.set_model(m);
    }
    let policy = state.policy();
    let admission = gate::admit(
        state,
        &policy,
        &parsed.parts,
        RouteClass::Model,
        model.as_deref(),
    )
    .await?;
    Ok(Admitted {
        parsed,
        model,
        policy,
        admission,
    })
}

async fn handle(state: AppState, req: Request, route: Route) -> Result<Response, ProxyError> {
    let Admitted {
        mut parsed,
        model,
        policy,
        admission,
    } = admit_read(&state, read_skimmed(&state, req).await?).await?;
    if parsed.body.is_none()
        && let Some(m) = &model
        && policy.model(m).format.is_some()
    {
        // A policy schema may apply to a request without a format.
        parsed = Parsed::full(parsed.parts, parsed.bytes);
    }
    let (Some(body), Some(model)) = (parsed.body.as_ref(), model) else {
        // Not something augur understands: the upstream answers as Ollama does.
        let response = forward_bytes(&state, parsed).await?;
        return Ok(gate::hold_until_done(response, admission));
    };
    if is_load_request(route, body) {
        let response = forward_bytes(&state, parsed).await?;
        return Ok(gate::hold_until_done(response, admission));
    }
    let model_policy = policy.model(&model);
    let plan = plan::decide(
        route,
        body,
        &model,
        &model_policy,
        &state.capabilities,
        true,
    )
    .await?;
    if plan.is_passthrough() {
        let response = forward_bytes(&state, parsed).await?;
        return Ok(gate::hold_until_done(response, admission));
    }
    let emulated = if plan.tools.is_some() {
        Some("tools")
    } else if plan.think {
        Some("thinking")
    } else {
        None
    };
    if let (Some(what), Some(t)) = (emulated, parsed.parts.extensions.get::<Arc<Timing>>()) {
        t.set_note(if what == "tools" {
            "emulated_tools"
        } else {
            "emulated_thinking"
        });
        metrics::counter!("augur_emulations_total", "kind" => what).increment(1);
    }
    let delivery = delivery_for(&plan);
    let (upstream_body, expect) = prepare::prepare(route, body, plan, state.config.format_limit)?;
    let admitted = Admitted {
        parsed,
        model: Some(model),
        policy,
        admission,
    };
    let job = job(&state, &admitted, route, upstream_body, expect, emulated);
    let out = flows::run(job, delivery).await?;
    Ok(gate::hold_until_done(
        output::ndjson(out),
        admitted.admission,
    ))
}

/// The stages 6-9 job for an admitted, prepared request.
pub fn job(
    state: &AppState,
    admitted: &Admitted,
    route: Route,
    body: Map<String, Value>,
    expect: super::attempts::Expect,
    emulated: Option<&'static str>,
) -> Job {
    let model = admitted.model.clone().unwrap_or_default();
    let policy = &admitted.policy;
    Job {
        ctx: call_ctx(state, &admitted.parsed.parts),
        route,
        body,
        expect,
        validate: policy.model(&model).validate.clone(),
        validators: state.validators.clone(),
        emulated,
        audit: policy.audit.path.as_ref().map(|_| flows::Audit {
            log: state.audit.clone(),
            policy: policy.audit.clone(),
            principal: admitted.admission.principal_label(),
            model,
        }),
    }
}

/// How the answer of a planned request is delivered.
pub fn delivery_for(plan: &plan::Plan) -> Delivery {
    use crate::policy::StreamMode;
    if !plan.stream {
        Delivery::Whole
    } else if plan.tools.is_some() {
        Delivery::Tools
    } else if plan.think || (plan.validate && plan.stream_mode == StreamMode::Buffer) {
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
