//! Whole answers and SSE answers as the surfaces send them, with the
//! output's `X-Augur-*` headers.

use axum::{body::Body, response::Response};
use http::{HeaderMap, HeaderValue, header};

/// A whole answer as Ollama's compatibility layers write it: `json` and a
/// newline (Go's `json.Encoder`), with the output's `X-Augur-*` headers.
pub(crate) fn json_answer(mut json: String, headers: HeaderMap) -> Response {
    json.push('\n');
    let mut r = Response::new(Body::from(json));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r.headers_mut().extend(headers);
    r
}

/// An answer of SSE events, with the output's `X-Augur-*` headers;
/// `no_cache`: the layer also sends `Cache-Control: no-cache`.
pub(crate) fn sse_answer(body: Body, no_cache: bool, headers: HeaderMap) -> Response {
    let mut r = Response::new(body);
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    if no_cache {
        r.headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    }
    r.headers_mut().extend(headers);
    r
}
