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
use serde_json::{Map, Value};

use super::{Adapter, Translation};
use crate::{
    error::ProxyError,
    ingress::Admitted,
    pipeline::{
        Exchange,
        output::{self, Output},
        plan::Route,
    },
    state::AppState,
};

/// `POST /api/chat`.
pub async fn chat(State(state): State<AppState>, admitted: Admitted, req: Request) -> Response {
    super::serve(&Ollama(Route::Chat), state, admitted, req).await
}

/// `POST /api/generate`.
pub async fn generate(State(state): State<AppState>, admitted: Admitted, req: Request) -> Response {
    super::serve(&Ollama(Route::Generate), state, admitted, req).await
}

/// One of Ollama's own routes: the body is run as it is.
struct Ollama(Route);

impl Adapter for Ollama {
    type Meta = ();
    const OWN_BODY: bool = true;

    fn translate(&self, body: Map<String, Value>) -> Result<Translation<()>, ProxyError> {
        Ok(Translation::Run(Exchange::new(self.0, body, true), ()))
    }

    fn render(&self, (): (), out: Output) -> Response {
        output::ndjson(out)
    }
}
