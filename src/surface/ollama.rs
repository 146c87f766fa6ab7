//! Ollama's native generation routes, `POST /api/chat` and
//! `POST /api/generate`: the body already is the pipeline's exchange, and
//! the output is rendered as Ollama's JSON or NDJSON.
//!
//! Admission has read the body and noted whether it holds a field augur
//! acts on; most requests don't, and are forwarded byte for byte without a
//! full parse.

use std::sync::Arc;

use axum::{
    body::Body,
    extract::{Request, State},
    response::Response,
};
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde_json::{Map, Value};

use super::{
    adapter::{Adapter, Translation},
    frames::{self, Frames},
};
use crate::{
    error::ProxyError,
    ingress::Admitted,
    pipeline::{Exchange, output::Output, plan::Route},
    state::AppState,
    telemetry::Timing,
};

/// `POST /api/chat`.
pub(crate) async fn chat(
    State(state): State<AppState>,
    admitted: Admitted,
    req: Request,
) -> Response {
    super::serve::serve(&Ollama(Route::Chat), state, admitted, req).await
}

/// `POST /api/generate`.
pub(crate) async fn generate(
    State(state): State<AppState>,
    admitted: Admitted,
    req: Request,
) -> Response {
    super::serve::serve(&Ollama(Route::Generate), state, admitted, req).await
}

/// One of Ollama's own routes: the body is run as it is.
struct Ollama(Route);

impl Adapter for Ollama {
    type Meta = ();
    const OWN_BODY: bool = true;

    fn translate(&self, body: Map<String, Value>) -> Result<Translation<()>, ProxyError> {
        Ok(Translation::Run(Exchange::new(self.0, body, true), ()))
    }

    fn render(&self, (): (), out: Output, timing: Option<Arc<Timing>>) -> Response {
        ndjson(out, timing)
    }
}

/// Render an [`Output`] in Ollama's wire format.
fn ndjson(output: Output, timing: Option<Arc<Timing>>) -> Response {
    match output {
        Output::Full { value, headers } => json_response(StatusCode::OK, &value, headers),
        Output::Stream { rx, headers } => {
            let mut response = Response::new(frames::body(rx, Ndjson, timing));
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/x-ndjson"),
            );
            response.headers_mut().extend(headers);
            response
        }
    }
}

/// A JSON response the way Ollama's handlers write one (`c.JSON`).
fn json_response(status: StatusCode, value: &Value, headers: HeaderMap) -> Response {
    let mut response = Response::new(Body::from(crate::wire::to_go_json(value)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json; charset=utf-8"),
    );
    response.headers_mut().extend(headers);
    response
}

/// Ollama's stream: one NDJSON line per chunk; an error is the last line.
struct Ndjson;

impl Frames for Ndjson {
    fn chunk(&mut self, chunk: &Value) -> Vec<Bytes> {
        vec![crate::wire::ndjson_line(chunk)]
    }

    fn error(&mut self, e: &ProxyError) -> Vec<Bytes> {
        vec![e.stream_line()]
    }
}
