//! [`Adapter`]: what a generation surface supplies (its request as the
//! pipeline's exchange, its answer in its own wire shape), and what its
//! translation may hand back ([`Translation`], [`Amended`], [`Metered`]).

use std::sync::Arc;

use axum::response::Response;
use bytes::Bytes;
use http::HeaderMap;
use serde_json::{Map, Value};

use crate::{
    error::ProxyError,
    limits::Usage,
    pipeline::{Exchange, output::Output, plan::Route},
    telemetry::Timing,
};

/// A generation surface: how its request becomes the pipeline's
/// [`Exchange`] and how the pipeline's output goes back in its own wire
/// shape. [`serve`] does the rest, the same for every surface.
pub(crate) trait Adapter: Sync {
    /// What rendering needs to know of the request (the model as the
    /// client named it, ids, stream options).
    type Meta: Send;

    /// Whether a translated exchange's body is the client's own JSON as it
    /// came (Ollama's routes): then, when augur only reads the answer, the
    /// client's bytes go upstream rather than the body re-encoded.
    const OWN_BODY: bool = false;

    /// Translate the admitted request's JSON object. Translation only:
    /// what the model or upstream can do is the pipeline's to decide (it
    /// may still forward the client's own bytes).
    fn translate(&self, body: Map<String, Value>) -> Result<Translation<Self::Meta>, ProxyError>;

    /// The pipeline's output in the surface's own shape; a stream that
    /// fails reports how it ended to `timing`.
    fn render(&self, meta: Self::Meta, out: Output, timing: Option<Arc<Timing>>) -> Response;

    /// What goes upstream when the pipeline forwards a translated request:
    /// `None`, the client's own bytes; else the client's body less what the
    /// translation left out (tools neither the model nor the upstream can
    /// run), and the headers that say so.
    fn amended(&self, _meta: &Self::Meta) -> Option<Amended> {
        None
    }

    /// What goes upstream in place of a body forwarded as it came, so that
    /// its answer reports the tokens the client did not ask to see; `None`:
    /// the client's own bytes (see [`openai::usage`]).
    fn metered(&self, _body: &[u8]) -> Option<Metered> {
        None
    }
}

/// A forwarded body amended only to have the upstream count tokens, and
/// what puts the answer back as the client's own body would have had it
/// (reporting the counts to the request's [`Usage`]).
pub(crate) struct Metered {
    pub body: Bytes,
    pub answer: fn(Response, Arc<Usage>) -> Response,
}

/// A client's body as an adapter amended it, forwarded in place of the
/// client's own bytes, and the headers its answer gets.
pub(crate) struct Amended {
    pub body: Bytes,
    pub headers: HeaderMap,
}

/// What [`Adapter::translate`] made of a request: the exchange to run,
/// and what rendering its output needs.
pub(crate) enum Translation<M> {
    /// Run this exchange; render its output with this meta.
    Run(Exchange, M),
}

impl<M> Translation<M> {
    /// Run an Ollama `/api/chat` body translated from another surface
    /// (whose `stream` defaults to false).
    pub(crate) fn chat(body: Map<String, Value>, meta: M) -> Self {
        Self::Run(Exchange::new(Route::Chat, body, false), meta)
    }
}
