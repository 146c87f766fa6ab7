//! The replay upstream: recorded answers served as an Ollama server. A
//! request whose path and canonical body match a recorded upstream call
//! gets its answer (status, content type, lines, byte for byte, paced as
//! recorded with `--timing recorded`); `/api/tags`, `/api/version` and
//! `/api/show` answer from the models seen (`tools` among the
//! capabilities of a model the upstream was sent tools for: it ran them
//! itself); anything else is a 404 in Ollama's error shape.

use std::{sync::Arc, time::Duration};

use axum::{
    Router,
    body::{Body, Bytes},
    extract::{Request, State},
    response::{IntoResponse, Response},
};
use futures_util::stream;
use http::{StatusCode, header};
use serde_json::{Value, json};

use super::tape::{Answer, Tape};
use crate::config::Timing;

/// Largest request body the replay upstream reads.
const MAX_BODY: usize = 64 << 20;

#[derive(Clone)]
struct Replaying {
    tape: Arc<Tape>,
    timing: Timing,
}

/// The replay upstream's routes.
pub(crate) fn router(tape: Arc<Tape>, timing: Timing) -> Router {
    Router::new()
        .fallback(answer)
        .with_state(Replaying { tape, timing })
}

async fn answer(State(r): State<Replaying>, req: Request) -> Response {
    let path = req.uri().path().to_string();
    let Ok(body) = axum::body::to_bytes(req.into_body(), MAX_BODY).await else {
        return not_found("request body too large");
    };
    let body = String::from_utf8_lossy(&body).into_owned();
    if let Some(recorded) = r.tape.answer(&path, &body) {
        return play(recorded.clone(), r.timing);
    }
    match path.as_str() {
        "/api/tags" => axum::Json(
            json!({"models": r.tape.models.iter().map(|m| listed(m)).collect::<Vec<_>>()}),
        )
        .into_response(),
        "/api/version" => axum::Json(json!({"version": "0.0.0-replay"})).into_response(),
        "/api/show" => show(&r.tape, &body),
        _ => not_found(&format!("no recorded answer for {path}")),
    }
}

/// A recorded answer, line by line.
fn play(answer: Answer, timing: Timing) -> Response {
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::OK);
    let content_type = answer
        .content_type
        .clone()
        .unwrap_or_else(|| "application/json; charset=utf-8".into());
    let started = tokio::time::Instant::now();
    let lines = stream::unfold(answer.lines.into_iter(), move |mut lines| async move {
        let (ms, line) = lines.next()?;
        if timing == Timing::Recorded {
            tokio::time::sleep_until(started + Duration::from_millis(ms)).await;
        }
        Some((Ok::<_, std::convert::Infallible>(Bytes::from(line)), lines))
    });
    let mut response = Response::new(Body::from_stream(lines));
    *response.status_mut() = status;
    if let Ok(v) = content_type.parse() {
        response.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    response
}

/// A model of the `/api/tags` listing.
fn listed(model: &str) -> Value {
    json!({
        "name": model,
        "model": model,
        "modified_at": "2026-01-01T00:00:00Z",
        "size": 0,
        "digest": "",
        "details": {"format": "gguf", "family": "", "parameter_size": "", "quantization_level": ""},
    })
}

/// `/api/show` of a model seen in the recordings.
fn show(tape: &Tape, body: &str) -> Response {
    let asked: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let name = asked
        .get("model")
        .or_else(|| asked.get("name"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let base = |m: &str| m.strip_suffix(":latest").unwrap_or(m).to_string();
    let is = |m: &String| base(m) == base(name);
    if !tape.models.iter().any(is) {
        return not_found(&format!("model '{name}' not found"));
    }
    let mut capabilities = vec!["completion"];
    if tape.tools.iter().any(is) {
        capabilities.push("tools");
    }
    axum::Json(json!({
        "modelfile": "",
        "parameters": "",
        "template": "",
        "details": {"format": "gguf", "family": "", "parameter_size": "", "quantization_level": ""},
        "model_info": {},
        "capabilities": capabilities,
    }))
    .into_response()
}

/// Ollama's error shape.
fn not_found(message: &str) -> Response {
    (
        StatusCode::NOT_FOUND,
        axum::Json(json!({ "error": message })),
    )
        .into_response()
}
