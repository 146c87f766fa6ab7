//! Routes augur does not change, forwarded byte for byte.
//!
//! Admission has already run (see [`crate::ingress`]): the body was read
//! and checked when the route names models, and is otherwise streamed
//! through the body limit (blob uploads of many GB stream unbounded and are
//! never held in memory).

use axum::{
    extract::{Request, State},
    response::Response,
};

use crate::{
    error::ProxyError,
    ingress::{Admitted, BodyLimit},
    state::AppState,
    telemetry::Timing,
    upstream::ClientInfo,
};

/// Fallback handler: forward anything augur does not handle itself.
pub async fn handle(State(state): State<AppState>, admitted: Admitted, req: Request) -> Response {
    let flavor = admitted.route.flavor;
    let limit = req.extensions().get::<BodyLimit>().cloned();
    forward(&state, req)
        .await
        .map_err(|e| match limit {
            // The body limit was hit while streaming the body upstream.
            Some(l) if l.exceeded() => ProxyError::BodyTooLarge(state.config.body_limit),
            _ => e,
        })
        .unwrap_or_else(|e| e.into_response_for(flavor))
}

/// Forward `req` to the upstream, with the client's address and timing.
pub async fn forward(state: &AppState, req: Request) -> Result<Response, ProxyError> {
    let client = req.extensions().get::<ClientInfo>().cloned();
    let timing = req.extensions().get::<std::sync::Arc<Timing>>().cloned();
    state.upstream.forward(req, client, timing).await
}
