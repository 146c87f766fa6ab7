//! Ollama's native generation routes, `POST /api/chat` and
//! `POST /api/generate`: the body already is the pipeline's exchange, and
//! the output is rendered as Ollama's JSON or NDJSON.
//!
//! Admission has read the body and noted whether it holds a field augur
//! acts on; most requests don't, and are forwarded byte for byte without a
//! full parse.

use axum::{
    extract::{Request, State},
    response::Response,
};

use crate::{
    error::ProxyError,
    ingress::Admitted,
    pipeline::{Exchange, Outcome, output, plan::Route},
    state::AppState,
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

async fn handle(
    state: AppState,
    admitted: Admitted,
    req: Request,
    route: Route,
) -> Result<Response, ProxyError> {
    let (parts, _) = req.into_parts();
    let bytes = admitted.body.clone().unwrap_or_default();
    let Some(model) = super::acted_on(&admitted) else {
        return super::forward_bytes(&state, parts, bytes).await;
    };
    let exchange = Exchange {
        route,
        body: super::parse_object(&bytes)?,
        stream_default: true,
        raw: Some(bytes.clone()),
    };
    match super::run(&state, &admitted, model, &parts, exchange).await? {
        Outcome::Forward => super::forward_bytes(&state, parts, bytes).await,
        Outcome::Output(out) => Ok(output::ndjson(out)),
    }
}
