//! Routes augur does not change, forwarded byte for byte.
//!
//! The request body streams through (blob uploads of many GB are never held
//! in memory); other bodies are bounded by the configured limit. Routes
//! that name a model in a small JSON body (`/api/embed`, `/api/pull`, …)
//! are read first, within the limit, so that auth and limits can see the
//! model; the same bytes are forwarded.

use axum::{
    body::Body,
    extract::{Request, State},
    response::Response,
};
use bytes::Bytes;
use http::{Method, header};
use http_body_util::{BodyExt, Limited};

use crate::{
    app::AppState,
    error::{Flavor, ProxyError},
    pipeline::gate::{self, RouteClass},
    telemetry::Timing,
    upstream::ClientInfo,
};

/// Fallback handler: forward anything augur does not handle itself.
pub async fn handle(State(state): State<AppState>, req: Request) -> Response {
    let flavor = Flavor::of_path(req.uri().path());
    match handle_inner(state, req).await {
        Ok(response) => response,
        Err(e) => e.into_response_for(flavor),
    }
}

async fn handle_inner(state: AppState, req: Request) -> Result<Response, ProxyError> {
    let path = req.uri().path();
    let class = RouteClass::of(req.method(), path);
    let is_blob = path.starts_with("/api/blobs/");
    let changes_models = changes_models(path);
    if !is_blob {
        check_content_length(&req, state.config.body_limit)?;
    }
    if class.reads_model() {
        let (parts, body) = req.into_parts();
        let bytes = read_body(body, state.config.body_limit).await?;
        let model = model_of(&bytes);
        let policy = state.policy();
        let admission = gate::admit(&state, &policy, &parts, class, model.as_deref()).await?;
        let req = Request::from_parts(parts, Body::from(bytes));
        let response = forward(&state, req).await?;
        if response.status().is_success() && changes_models {
            state.capabilities.invalidate_all();
        }
        return Ok(gate::hold_until_done(response, admission));
    }
    let (parts, body) = req.into_parts();
    let policy = state.policy();
    let admission = gate::admit(&state, &policy, &parts, class, None).await?;
    let body = if is_blob || parts.method == Method::GET || parts.method == Method::HEAD {
        body
    } else {
        Body::new(Limited::new(body, state.config.body_limit as usize))
    };
    let req = Request::from_parts(parts, body);
    let response = forward(&state, req).await.map_err(|e| match e {
        ProxyError::UpstreamUnavailable(detail) if detail.contains("length limit exceeded") => {
            ProxyError::BodyTooLarge(state.config.body_limit)
        }
        other => other,
    })?;
    Ok(gate::hold_until_done(response, admission))
}

/// Routes after which cached model capabilities may be stale.
fn changes_models(path: &str) -> bool {
    matches!(
        path,
        "/api/pull" | "/api/create" | "/api/copy" | "/api/delete"
    )
}

/// Forward `req` to the upstream, with the client's address and timing.
pub async fn forward(state: &AppState, req: Request) -> Result<Response, ProxyError> {
    let client = req.extensions().get::<ClientInfo>().cloned();
    let timing = req.extensions().get::<std::sync::Arc<Timing>>().cloned();
    state.upstream.forward(req, client, timing).await
}

/// 413 at once when the declared length is over the limit.
pub fn check_content_length(req: &Request, limit: u64) -> Result<(), ProxyError> {
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    match declared {
        Some(n) if n > limit => Err(ProxyError::BodyTooLarge(limit)),
        _ => Ok(()),
    }
}

/// Read a whole request body, at most `limit` bytes.
pub async fn read_body(body: Body, limit: u64) -> Result<Bytes, ProxyError> {
    match Limited::new(body, limit as usize).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) => {
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some()
            {
                Err(ProxyError::BodyTooLarge(limit))
            } else if e.to_string().contains("timed out") {
                Err(ProxyError::ClientTimeout)
            } else {
                Err(ProxyError::BadRequest(format!(
                    "error reading request body: {e}"
                )))
            }
        }
    }
}

/// The `model` (or legacy `name`) of a JSON body, if any.
pub fn model_of(body: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Named {
        model: Option<serde_json::Value>,
        name: Option<serde_json::Value>,
        source: Option<serde_json::Value>,
    }
    let named: Named = serde_json::from_slice(body).ok()?;
    [named.model, named.name, named.source]
        .into_iter()
        .flatten()
        .find_map(|v| v.as_str().filter(|s| !s.is_empty()).map(str::to_string))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_names_come_from_model_or_name() {
        assert_eq!(
            model_of(br#"{"model":"gemma3","x":1}"#).as_deref(),
            Some("gemma3")
        );
        assert_eq!(model_of(br#"{"name":"llama3"}"#).as_deref(), Some("llama3"));
        assert_eq!(
            model_of(br#"{"source":"a","destination":"b"}"#).as_deref(),
            Some("a")
        );
        assert_eq!(model_of(b"not json"), None);
        assert_eq!(model_of(br#"{"model":5}"#), None);
    }
}
