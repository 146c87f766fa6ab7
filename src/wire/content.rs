//! What a response's `Content-Type` says about its body: one JSON value,
//! an NDJSON stream (Ollama's native streams) or server-sent events
//! (OpenAI's and Anthropic's streams).

use http::HeaderValue;

/// The kind of body a content type announces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyKind {
    /// `application/x-ndjson`: one JSON value per line.
    Ndjson,
    /// `text/event-stream`.
    Sse,
    /// Anything else: one whole body.
    Whole,
}

impl BodyKind {
    /// The kind announced by `content_type`.
    pub(crate) fn of(content_type: Option<&HeaderValue>) -> Self {
        let ct = content_type
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .trim_start();
        if starts_with_ignore_case(ct, "application/x-ndjson") {
            BodyKind::Ndjson
        } else if starts_with_ignore_case(ct, "text/event-stream") {
            BodyKind::Sse
        } else {
            BodyKind::Whole
        }
    }

    /// Whether the body is a stream of lines or events.
    pub(crate) fn is_stream(self) -> bool {
        self != BodyKind::Whole
    }
}

fn starts_with_ignore_case(s: &str, prefix: &str) -> bool {
    s.len() >= prefix.len() && s.as_bytes()[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
}

#[cfg(test)]
#[path = "content_tests.rs"]
mod tests;
