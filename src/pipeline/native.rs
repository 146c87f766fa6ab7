//! `POST /api/chat` and `POST /api/generate`: stages 4 to 9 for Ollama's
//! native generation routes, after admission.
//!
//! A request augur has nothing to change about (no emulation, a format
//! that needs neither fixing nor validation) is forwarded byte for byte.
//! Admission has already read the body and noted whether it holds a field
//! augur acts on; most requests don't, and are never parsed in full.

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
    app::AppState, error::ProxyError, ingress::Admitted, passthrough, telemetry::Timing,
    upstream::ClientInfo,
};

use super::{
    call::CallCtx,
    flows::{self, Delivery, Job},
    output,
    plan::{self, Route},
    prepare,
};

/// `POST /api/chat`.
pub async fn chat(State(state): State<AppState>, admitted: Admitted, req: Request) -> Response {
    let flavor = admitted.route.flavor;
    handle(state, admitted, req, Route::Chat)
        .await
        .unwrap_or_else(|e| e.into_response_for(flavor))
}

/// `POST /api/generate`.
pub async fn generate(State(state): State<AppState>, admitted: Admitted, req: Request) -> Response {
    let flavor = admitted.route.flavor;
    handle(state, admitted, req, Route::Generate)
        .await
        .unwrap_or_else(|e| e.into_response_for(flavor))
}

/// The JSON object of an admitted body. Admission read its models the way
/// the upstream will; a body augur must change but cannot parse in full
/// (a lone surrogate, a number out of range, nesting past 128) is refused
/// rather than forwarded unchanged.
pub fn parse_object(bytes: &[u8]) -> Result<Map<String, Value>, ProxyError> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(ProxyError::BadRequest(
            "the request body must be a JSON object".into(),
        )),
        Err(e) => Err(ProxyError::BadRequest(format!(
            "augur cannot read this request body: {e}"
        ))),
    }
}

/// The call context for augur's own upstream calls on behalf of an
/// admitted request.
pub fn call_ctx(state: &AppState, admitted: &Admitted, parts: &Parts) -> CallCtx {
    CallCtx {
        state: state.clone(),
        headers: parts.headers.clone(),
        client: parts.extensions.get::<ClientInfo>().cloned(),
        timing: parts.extensions.get::<Arc<Timing>>().cloned(),
        usage: Some(admitted.usage.clone()),
    }
}

/// Forward the client's own bytes.
pub async fn forward_bytes(
    state: &AppState,
    parts: Parts,
    bytes: Bytes,
) -> Result<Response, ProxyError> {
    passthrough::forward(state, Request::from_parts(parts, Body::from(bytes))).await
}

async fn handle(
    state: AppState,
    admitted: Admitted,
    req: Request,
    route: Route,
) -> Result<Response, ProxyError> {
    let (parts, _) = req.into_parts();
    let bytes = admitted.body.clone().unwrap_or_default();
    let Some(model) = &admitted.model else {
        // No model: the upstream answers as Ollama does.
        return forward_bytes(&state, parts, bytes).await;
    };
    // A policy schema may apply to a request without a format.
    if !admitted.acted_on && model.policy.format.is_none() {
        return forward_bytes(&state, parts, bytes).await;
    }
    let body = parse_object(&bytes)?;
    if is_load_request(route, &body) {
        return forward_bytes(&state, parts, bytes).await;
    }
    let plan = plan::decide(
        route,
        &body,
        &model.raw,
        &model.policy,
        &state.capabilities,
        true,
    )
    .await?;
    if plan.is_passthrough() {
        return forward_bytes(&state, parts, bytes).await;
    }
    let emulated = emulated(&plan);
    note_emulation(&parts, emulated);
    let delivery = delivery_for(&plan);
    let (upstream_body, expect) = prepare::prepare(route, &body, plan, state.config.format_limit)?;
    let job = job(
        &state,
        &admitted,
        &parts,
        route,
        upstream_body,
        expect,
        emulated,
    );
    let out = flows::run(job, delivery).await?;
    Ok(output::ndjson(out))
}

/// What a planned request emulates, for headers, logs and metrics.
pub fn emulated(plan: &plan::Plan) -> Option<&'static str> {
    if plan.tools.is_some() {
        Some("tools")
    } else if plan.think {
        Some("thinking")
    } else {
        None
    }
}

/// Count an emulation and note it in the access log.
pub fn note_emulation(parts: &Parts, emulated: Option<&'static str>) {
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

/// The stages 6-9 job for an admitted, prepared request.
pub fn job(
    state: &AppState,
    admitted: &Admitted,
    parts: &Parts,
    route: Route,
    body: Map<String, Value>,
    expect: super::attempts::Expect,
    emulated: Option<&'static str>,
) -> Job {
    let policy = &admitted.policy;
    let (model, validate) = match &admitted.model {
        Some(m) => (m.raw.clone(), m.policy.validate.clone()),
        None => (String::new(), policy.models.defaults().validate.clone()),
    };
    Job {
        ctx: call_ctx(state, admitted, parts),
        route,
        body,
        expect,
        validate,
        validators: state.validators.clone(),
        emulated,
        audit: policy.audit.path.as_ref().map(|_| flows::Audit {
            log: state.audit.clone(),
            policy: policy.audit.clone(),
            principal: admitted.principal.label().to_string(),
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
