//! OpenAI's `POST /v1/chat/completions`: tool emulation and
//! `response_format` repair for OpenAI clients. The request is translated
//! to Ollama's `/api/chat` the way Ollama's own OpenAI layer does it, run
//! through the pipeline, and the answer translated back. Requests augur has
//! nothing to change about are forwarded byte for byte to the upstream's
//! own OpenAI layer.

pub mod request;
pub mod response;

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

/// `POST /v1/chat/completions`.
pub async fn chat_completions(
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
    let translated = request::translate(&super::parse_object(&bytes)?)?;
    let exchange = Exchange {
        route: Route::Chat,
        body: translated.body,
        stream_default: false,
        raw: None,
    };
    match super::run(&state, &admitted, model, &parts, exchange).await? {
        Outcome::Forward => super::forward_bytes(&state, parts, bytes).await,
        Outcome::Output(out) => {
            let meta = response::Meta::new(&translated.model, translated.include_usage);
            Ok(response::render(meta, out))
        }
    }
}
