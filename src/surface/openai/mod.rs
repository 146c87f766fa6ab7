//! OpenAI's `POST /v1/chat/completions`: tool emulation and
//! `response_format` repair for OpenAI clients. The request is translated
//! to Ollama's `/api/chat` the way Ollama's own OpenAI layer does it, run
//! through the pipeline, and the answer translated back. Requests augur has
//! nothing to change about are forwarded byte for byte to the upstream's
//! own OpenAI layer.

pub(crate) mod request;
pub(crate) mod response;
pub(crate) mod usage;

use std::sync::Arc;

use axum::{
    extract::{Request, State},
    response::Response,
};
use serde_json::{Map, Value};

use super::adapter::{Adapter, Metered, Translation};
use crate::{
    error::ProxyError, ingress::Admitted, pipeline::output::Output, state::AppState,
    telemetry::Timing,
};

/// `POST /v1/chat/completions`.
pub(crate) async fn chat_completions(
    State(state): State<AppState>,
    admitted: Admitted,
    req: Request,
) -> Response {
    super::serve::serve(&OpenAi, state, admitted, req).await
}

/// The chat completions surface.
struct OpenAi;

impl Adapter for OpenAi {
    /// The translated request, its body taken: the answer's id and
    /// timestamp are made when the answer is.
    type Meta = request::Translated;

    fn translate(&self, body: Map<String, Value>) -> Result<Translation<Self::Meta>, ProxyError> {
        let mut translated = request::translate(&body)?;
        let body = std::mem::take(&mut translated.body);
        Ok(Translation::chat(body, translated))
    }

    fn render(&self, t: Self::Meta, out: Output, timing: Option<Arc<Timing>>) -> Response {
        let meta = response::Meta::new(&t.model, t.include_usage);
        response::render(meta, out, timing)
    }

    fn metered(&self, body: &[u8]) -> Option<Metered> {
        Some(Metered {
            body: usage::ask_usage(body)?,
            answer: usage::strip_answer,
        })
    }
}
