//! `POST /api/show` and `GET /api/tags`: when augur emulates tools for a
//! model, its capabilities gain "tools", so clients that check before
//! offering tools (editors, agent frameworks) enable them. Nothing else in
//! the answer changes; when nothing needs adding, the bytes pass through.
//! With several upstreams `/api/tags` lists all of theirs
//! ([`super::listing`]).

use axum::{
    body::Body,
    extract::{Request, State},
    response::{IntoResponse, Response},
};
use http::header;
use http_body_util::BodyExt;
use serde_json::Value;

use crate::{
    error::ProxyError,
    ingress::Admitted,
    policy::{EmulateTools, Policy},
    state::AppState,
    surface::passthrough,
    upstream::fleet::Listing,
};

/// `POST /api/show`.
pub(crate) async fn show(
    State(state): State<AppState>,
    admitted: Admitted,
    req: Request,
) -> Response {
    handle(state, admitted, req, true)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

/// `GET /api/tags`.
pub(crate) async fn tags(
    State(state): State<AppState>,
    admitted: Admitted,
    req: Request,
) -> Response {
    handle(state, admitted, req, false)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

async fn handle(
    state: AppState,
    admitted: Admitted,
    req: Request,
    is_show: bool,
) -> Result<Response, ProxyError> {
    let policy = admitted.policy.clone();
    let requested = admitted.model.as_ref().map(|m| m.raw.clone());
    let response = if is_show {
        passthrough::forward(&state, req).await?
    } else {
        super::listing::fetch(&state, Listing::Tags, req).await?
    };
    if !response.status().is_success() {
        return Ok(response);
    }
    let (mut parts, body) = response.into_parts();
    let limit = state.config.stream_buffer_limit as usize;
    let bytes = http_body_util::Limited::new(body, limit)
        .collect()
        .await
        .map_err(|e| ProxyError::UpstreamProtocol(format!("reading upstream answer: {e}")))?
        .to_bytes();
    let rewritten = serde_json::from_slice::<Value>(&bytes)
        .ok()
        .and_then(|mut v| {
            let changed = if is_show {
                let model = requested.as_deref().unwrap_or_default();
                add_tools(&policy, model, &mut v)
            } else {
                let mut changed = false;
                if let Some(Value::Array(models)) = v.get_mut("models") {
                    for m in models {
                        let name = m
                            .get("name")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string();
                        changed |= add_tools(&policy, &name, m);
                    }
                }
                changed
            };
            changed.then(|| crate::wire::to_go_json(&v))
        });
    let body = match rewritten {
        Some(text) => {
            parts.headers.remove(header::CONTENT_LENGTH);
            Body::from(text)
        }
        None => Body::from(bytes),
    };
    Ok(Response::from_parts(parts, body))
}

/// Add "tools" to `entry.capabilities` when augur emulates tools for
/// `model`. Returns whether it changed anything.
fn add_tools(policy: &Policy, model: &str, entry: &mut Value) -> bool {
    let mp = policy.model(model);
    if !mp.advertise_capabilities || mp.emulate_tools == EmulateTools::Never {
        return false;
    }
    let Some(Value::Array(caps)) = entry.get_mut("capabilities") else {
        return false;
    };
    let has = |c: &str| caps.iter().any(|v| v.as_str() == Some(c));
    if has("tools") || !has("completion") {
        return false;
    }
    caps.push(Value::String("tools".into()));
    true
}

#[cfg(test)]
#[path = "advertise_tests.rs"]
mod tests;
