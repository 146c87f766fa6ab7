//! Anthropic's Messages API (`POST /v1/messages`), as Ollama serves it.
//!
//! [`request::translate`] turns a `MessagesRequest` into an Ollama
//! `/api/chat` body the way Ollama's Anthropic layer does (with the
//! `tool_choice` augur's tool emulation reads), and [`render`] writes the
//! pipeline's Ollama-shaped output back as an Anthropic `message`
//! (`response`) or as SSE events (`stream`), byte-compatible with
//! Ollama's own writer.
//! Pure functions: the route owns the I/O.

mod answer;
mod decode;
mod estimate;
mod fields;
mod format;

mod messages;
pub(crate) mod request;
pub(crate) mod response;
pub(crate) mod stream;

#[cfg(test)]
mod tests;

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
    render::{json_answer, sse_answer},
};
use crate::{
    error::ProxyError,
    ingress::Admitted,
    pipeline::{Exchange, output::Output, plan::Route},
    state::AppState,
    telemetry::Timing,
};

/// `POST /v1/messages`.
pub(crate) async fn messages(
    State(state): State<AppState>,
    admitted: Admitted,
    req: Request,
) -> Response {
    super::serve::serve(&Messages, state, admitted, req).await
}

/// The Messages surface.
struct Messages;

/// What rendering a Messages answer needs, and the server tools left out.
struct Run {
    meta: Meta,
    dropped: Option<Dropped>,
}

impl Adapter for Messages {
    type Meta = Run;

    fn translate(&self, body: Map<String, Value>) -> Result<Translation<Run>, ProxyError> {
        let translated = translate(&body)?;
        let dropped = match translated.server_tools.is_empty() {
            true => None,
            false => Some(Dropped::new(
                &translated.server_tools,
                &body,
                request::is_server_tool,
            )?),
        };
        let meta = Meta::new(&translated);
        // Ollama's Anthropic layer drops thinking a model cannot do rather
        // than refusing it; so does augur when it does not emulate thinking.
        // Ollama runs a web search itself, unless augur emulates tools.
        let exchange = Exchange {
            relax_think: true,
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

/// Render an Ollama-shaped [`Output`] as Anthropic's answer: one JSON
/// object, or SSE events written as each chunk arrives. The output's
/// headers (`X-Augur-*`) are passed on; a stream that fails reports how
/// it ended to `timing`.
pub(crate) fn render(meta: Meta, output: Output, timing: Option<Arc<Timing>>) -> Response {
    match output {
        Output::Full { value, headers } => json_answer(
            crate::wire::go::marshal(&response::message(&meta, &value)),
            headers,
        ),
        Output::Stream { rx, headers } => sse_answer(stream::body(meta, rx, timing), true, headers),
    }
}
