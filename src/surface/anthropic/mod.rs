//! Anthropic's Messages API (`POST /v1/messages`), as Ollama serves it.
//!
//! [`request::translate`] turns a `MessagesRequest` into an Ollama
//! `/api/chat` body the way Ollama's Anthropic layer does (with the
//! `tool_choice` augur's tool emulation reads), and [`response::render`]
//! writes the pipeline's Ollama-shaped output back as an Anthropic
//! `message` or as SSE events, byte-compatible with Ollama's own writer.
//! Pure functions: the route owns the I/O.

mod decode;
mod estimate;
mod go;
mod messages;
pub mod request;
pub mod response;
pub mod stream;

#[cfg(test)]
mod tests;

pub use request::{Translated, relax_think, translate};
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

/// `POST /v1/messages`.
pub async fn messages(State(state): State<AppState>, admitted: Admitted, req: Request) -> Response {
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
    let mut translated = translate(&super::parse_object(&bytes)?)?;
    if translated.web_search {
        // Ollama runs the search loop itself.
        return super::forward_bytes(&state, parts, bytes).await;
    }
    // Ollama's Anthropic layer drops thinking a model cannot do rather
    // than refusing it; so does augur when it does not emulate thinking.
    if !model.policy.think_emulation && !state.capabilities.has(&model.raw, "thinking").await? {
        relax_think(&mut translated.body);
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
