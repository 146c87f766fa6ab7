//! OpenAI's Responses API (`POST /v1/responses`), as Ollama serves it.
//!
//! [`request::translate`] turns a Responses request into the Ollama
//! `/api/chat` body the pipeline runs (tools, `tool_choice`, `text.format`
//! and history in the forms augur's tool emulation and format repair
//! read); [`response::render`] turns the pipeline's Ollama-shaped output
//! back into a `response` object or its SSE events. Both follow Ollama's
//! own Responses layer wherever a client could tell the difference.
//! Errors before an answer starts take OpenAI's error shape
//! ([`crate::error::Flavor::OpenAi`]); a stream that fails part-way ends
//! with `response.failed`.

mod echo;
mod go;
pub mod request;
pub mod response;
mod stream;

pub use echo::Echo;
pub use request::{Translated, translate};
pub use response::{Meta, render};

use axum::{
    extract::{Request, State},
    response::Response,
};

use crate::{
    error::ProxyError,
    ingress::Admitted,
    pipeline::{Exchange, Outcome, plan::Route},
    state::AppState,
};

/// `POST /v1/responses`.
pub async fn responses(
    State(state): State<AppState>,
    admitted: Admitted,
    req: Request,
) -> Response {
    let flavor = admitted.route.flavor;
    handle(state, admitted, req)
        .await
        .unwrap_or_else(|e| e.into_response_for(flavor))
}

async fn handle(state: AppState, admitted: Admitted, req: Request) -> Result<Response, ProxyError> {
    let (parts, _) = req.into_parts();
    let bytes = admitted.body.clone().unwrap_or_default();
    let Some(model) = super::acted_on(&admitted) else {
        return super::forward_bytes(&state, parts, bytes).await;
    };
    let translated = translate(&super::parse_object(&bytes)?)?;
    if translated.web_search {
        // Ollama runs the search loop itself.
        return super::forward_bytes(&state, parts, bytes).await;
    }
    let meta = Meta::new(&translated);
    let exchange = Exchange {
        route: Route::Chat,
        body: translated.body,
        stream_default: false,
        raw: None,
    };
    match super::run(&state, &admitted, model, &parts, exchange).await? {
        Outcome::Forward => super::forward_bytes(&state, parts, bytes).await,
        Outcome::Output(out) => Ok(render(meta, out)),
    }
}
