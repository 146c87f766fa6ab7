//! Which requests the cache may answer: a model request on a generation
//! route that is deterministic (temperature 0, or a fixed seed) and whose
//! client did not say `Cache-Control: no-cache` (or `no-store`); and the
//! effective answer mode (streamed or whole), part of the key.

use http::{HeaderMap, header};
use serde_json::Value;

/// The routes whose answers the cache may keep.
pub(crate) const GENERATION_ROUTES: [&str; 6] = [
    "/api/chat",
    "/api/generate",
    "/v1/chat/completions",
    "/v1/completions",
    "/v1/responses",
    "/v1/messages",
];

/// Ollama's own routes: sampling settings in `options`, streamed unless
/// `stream: false`.
fn is_ollama(path: &str) -> bool {
    path.starts_with("/api/")
}

/// Whether the answer to `body` on `path` does not depend on chance:
/// temperature 0 (`options.temperature` on Ollama's routes, `temperature`
/// on the others) or a fixed seed (`options.seed`; `seed` on the OpenAI
/// routes; Anthropic's and the Responses API have none).
pub(crate) fn deterministic(path: &str, body: &Value) -> bool {
    let (temperature, seed) = if is_ollama(path) {
        let options = body.get("options");
        (
            options.and_then(|o| o.get("temperature")),
            options.and_then(|o| o.get("seed")),
        )
    } else {
        let seeded = matches!(path, "/v1/chat/completions" | "/v1/completions");
        (
            body.get("temperature"),
            seeded.then(|| body.get("seed")).flatten(),
        )
    };
    let zero = temperature.and_then(Value::as_f64) == Some(0.0);
    // A negative seed asks for a random one.
    let fixed = seed.is_some_and(|s| s.as_u64().is_some());
    zero || fixed
}

/// Whether the answer streams: `stream` when the body says, else the
/// route's default (Ollama's routes stream, the others answer whole).
pub(crate) fn streams(path: &str, body: &Value) -> bool {
    body.get("stream")
        .and_then(Value::as_bool)
        .unwrap_or(is_ollama(path))
}

/// Whether the client asked not to be answered from a cache:
/// `Cache-Control: no-cache` or `no-store`.
pub(crate) fn declined(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::CACHE_CONTROL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|d| d.split('=').next().unwrap_or_default().trim())
        .any(|d| d.eq_ignore_ascii_case("no-cache") || d.eq_ignore_ascii_case("no-store"))
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
