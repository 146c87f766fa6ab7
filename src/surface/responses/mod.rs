//! OpenAI's Responses API (`POST /v1/responses`), as Ollama serves it.
//!
//! [`request::translate`] turns a Responses request into the Ollama
//! `/api/chat` body the pipeline runs (tools, `tool_choice`, `text.format`
//! and history in the forms augur's tool emulation and format repair
//! read); [`render`] turns the pipeline's Ollama-shaped output back into
//! a `response` object ([`response`]) or its SSE events ([`stream`]).
//! Both follow Ollama's own Responses layer wherever a client could tell
//! the difference, but for two things Ollama's layer drops: `text.format:
//! json_object` is JSON mode, and tools that are not functions (Codex's
//! `web_search`, …) are left out where neither the model nor Ollama can
//! run them ([`super::dropped`]).
//! Errors before an answer starts take OpenAI's error shape
//! ([`crate::error::Flavor::OpenAi`]); a stream that fails part-way ends
//! with `response.failed` ([`failed_event`]), and so does a stream augur
//! forwards without its pipeline when the upstream cuts it (see
//! `crate::upstream`; before the response opened: an `error` event).

mod answer;
mod echo;

pub(crate) mod request;
pub(crate) mod response;
mod stream;

pub(crate) use answer::Meta;
pub(crate) use request::translate;

use std::sync::Arc;

use axum::{
    extract::{Request, State},
    response::Response,
};
use serde_json::{Map, Value};

use super::{
    adapter::{Adapter, Amended, Translation},
    dropped::Dropped,
    frames,
    render::{json_answer, sse_answer},
};
use crate::{
    error::ProxyError,
    ingress::Admitted,
    pipeline::{Exchange, output::Output, plan::Route},
    state::AppState,
    telemetry::Timing,
};

/// `POST /v1/responses`.
pub(crate) async fn responses(
    State(state): State<AppState>,
    admitted: Admitted,
    req: Request,
) -> Response {
    super::serve::serve(&Responses, state, admitted, req).await
}

/// The Responses surface.
struct Responses;

/// What rendering a Responses answer needs, and the tools left out.
pub(crate) struct Run {
    meta: Meta,
    dropped: Option<Dropped>,
}

impl Adapter for Responses {
    type Meta = Run;

    fn translate(&self, body: Map<String, Value>) -> Result<Translation<Run>, ProxyError> {
        let translated = translate(&body)?;
        let dropped = if translated.hosted.is_empty() {
            None
        } else {
            Some(Dropped::new(&translated.hosted, &body, request::is_hosted)?)
        };
        let meta = Meta::new(&translated);
        // Ollama runs the search loop itself, unless augur emulates tools.
        let exchange = Exchange {
            upstream_runs_tools: translated.web_search,
            ..Exchange::new(Route::Chat, translated.body, false)
        };
        Ok(Translation::Run(exchange, Run { meta, dropped }))
    }

    fn render(&self, run: Run, mut out: Output, timing: Option<Arc<Timing>>) -> Response {
        if let Some(d) = &run.dropped {
            d.mark(&mut out);
        }
        render(run.meta, out, timing)
    }

    fn amended(&self, run: &Run) -> Option<Amended> {
        run.dropped.as_ref().map(Dropped::amended)
    }
}

/// Render an Ollama-shaped [`Output`] as a Responses answer; a stream
/// that fails reports how it ended to `timing`.
pub(crate) fn render(meta: Meta, out: Output, timing: Option<Arc<Timing>>) -> Response {
    match out {
        Output::Full { value, headers } => {
            let text = crate::wire::to_go_json(&response::whole(&meta, &value, answer::now()));
            json_answer(text, headers)
        }
        Output::Stream { rx, headers } => {
            let converter = stream::Converter::new(meta, answer::now);
            sse_answer(frames::body(rx, converter, timing), true, headers)
        }
    }
}
