//! Whether a recorded answer may be kept: only a clean one. A 200 whose
//! headers report nothing augur could not stand behind (an answer still
//! invalid or unchecked, a fallback model's, calls withheld or flagged,
//! low confidence), whose body ended with its final chunk (Ollama's
//! `"done":true`, `data: [DONE]`, `message_stop`, `response.completed`)
//! and holds no error and none of those marks in a stream's closing chunk.

use http::{HeaderMap, StatusCode};
use memchr::memmem;

use crate::wire::content::BodyKind;

/// Headers that mean the answer is not one to replay.
const UNCLEAN_HEADERS: [&str; 6] = [
    "x-augur-validation",
    "x-augur-fallback",
    "x-augur-model",
    "x-augur-guard",
    "x-augur-tool-risk",
    "x-augur-confidence-below",
];

/// The same, as a stream's closing chunk says them, and the errors a
/// stream ends with. JSON escapes quotes inside strings, so these only
/// match augur's own fields, never a model's text.
const UNCLEAN_MARKS: [&str; 10] = [
    "\"augur_validation\":\"invalid\"",
    "\"augur_validation\":\"unchecked\"",
    "\"augur_fallback\"",
    "\"augur_model\"",
    "\"augur_guard\"",
    "\"augur_tool_risk\"",
    "\"augur_confidence_below\"",
    "\nevent: error",
    "\nevent: response.failed",
    "\n{\"error\"",
];

/// Whether the head of an answer may be kept.
pub(crate) fn clean_head(status: StatusCode, headers: &HeaderMap) -> bool {
    status == StatusCode::OK && !UNCLEAN_HEADERS.iter().any(|h| headers.contains_key(*h))
}

/// Whether a whole recorded body on `path` (of `kind`) ended as it should
/// and carries no mark of failure.
pub(crate) fn clean_body(path: &str, kind: BodyKind, body: &[u8]) -> bool {
    // A leading newline, so a first line or event is matched like the rest.
    let framed = [b"\n", body].concat();
    if UNCLEAN_MARKS
        .iter()
        .any(|m| memmem::find(&framed, m.as_bytes()).is_some())
        || memmem::find(&framed, b"\ndata: {\"error\"").is_some()
    {
        return false;
    }
    let text = body.trim_ascii_end();
    match kind {
        BodyKind::Ndjson => {
            let last = text.rsplit(|b| *b == b'\n').next().unwrap_or_default();
            path.starts_with("/api/") && memmem::find(last, b"\"done\":true").is_some()
        }
        BodyKind::Sse => match path {
            "/v1/chat/completions" | "/v1/completions" => text.ends_with(b"data: [DONE]"),
            "/v1/messages" => memmem::find(text, b"event: message_stop").is_some(),
            "/v1/responses" => memmem::find(text, b"event: response.completed").is_some(),
            _ => false,
        },
        BodyKind::Whole if path.starts_with("/api/") => {
            memmem::find(text, b"\"done\":true").is_some()
        }
        BodyKind::Whole => !text.is_empty(),
    }
}

#[cfg(test)]
#[path = "verdict_tests.rs"]
mod tests;
