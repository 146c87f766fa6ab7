//! `GET /api/tags`, `GET /api/ps` and `GET /v1/models` with several
//! upstreams: every healthy upstream's list as one, in Ollama's shape,
//! each model once (see [`crate::upstream::fleet::Listing`]). With one
//! upstream, or one named by `X-Augur-Upstream`, the request is forwarded
//! as it came.

use axum::{
    extract::{Request, State},
    response::{IntoResponse, Response},
};
use http::Method;

use crate::{
    client::ClientInfo,
    error::ProxyError,
    ingress::Admitted,
    state::AppState,
    surface::passthrough,
    upstream::{fleet::Listing, fleet::X_AUGUR_UPSTREAM},
};

/// `GET /api/ps`.
pub(crate) async fn ps(State(state): State<AppState>, _: Admitted, req: Request) -> Response {
    fetch(&state, Listing::Ps, req)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

/// `GET /v1/models`.
pub(crate) async fn openai_models(
    State(state): State<AppState>,
    _: Admitted,
    req: Request,
) -> Response {
    fetch(&state, Listing::OpenAiModels, req)
        .await
        .unwrap_or_else(IntoResponse::into_response)
}

/// `listing` of every upstream, merged; or the request forwarded.
pub(crate) async fn fetch(
    state: &AppState,
    listing: Listing,
    req: Request,
) -> Result<Response, ProxyError> {
    let merge = !state.fleet.is_single()
        && req.method() == Method::GET
        && !req.headers().contains_key(&X_AUGUR_UPSTREAM);
    if !merge {
        return passthrough::forward(state, req).await;
    }
    let client = req.extensions().get::<ClientInfo>().cloned();
    let limit = state.config.stream_buffer_limit as usize;
    state
        .fleet
        .merged(listing, req.headers(), client, limit)
        .await
}
