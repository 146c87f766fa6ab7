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
//! with `response.failed` ([`failed_event`]), and so does a stream augur
//! forwards without its pipeline when the upstream cuts it (see
//! `crate::upstream`; before the response opened: an `error` event).

mod echo;
mod failed;
mod go;
pub mod request;
pub mod response;
mod stream;

pub use echo::Echo;
pub use failed::{error_event, failed_event};
pub use request::{Translated, translate};
pub use response::{Meta, render};

use axum::{
    extract::{Request, State},
    response::Response,
};
use serde_json::{Map, Value};

use super::{Adapter, Translation};
use crate::{
    error::ProxyError,
    ingress::{Admitted, Model},
    pipeline::output::Output,
    state::AppState,
};

/// `POST /v1/responses`.
pub async fn responses(
    State(state): State<AppState>,
    admitted: Admitted,
    req: Request,
) -> Response {
    super::serve(&Responses, state, admitted, req).await
}

/// The Responses surface.
struct Responses;

impl Adapter for Responses {
    type Meta = Meta;

    async fn translate(
        &self,
        _: &AppState,
        _: &Model,
        _: &http::HeaderMap,
        body: Map<String, Value>,
    ) -> Result<Translation<Meta>, ProxyError> {
        let translated = translate(&body)?;
        if translated.web_search {
            // Ollama runs the search loop itself.
            return Ok(Translation::Forward);
        }
        let meta = Meta::new(&translated);
        Ok(Translation::chat(translated.body, meta))
    }

    fn render(&self, meta: Meta, out: Output) -> Response {
        render(meta, out)
    }
}
