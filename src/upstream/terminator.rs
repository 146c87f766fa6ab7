//! How a forwarded stream that failed part-way ends for the client
//! ([`Terminator`]): an error line or event in the shape the client reads,
//! never a silent cut. A Responses stream (`/v1/responses`) ends as augur's
//! own Responses streams end: with `response.failed` for the response its
//! `response.created` event opened, numbered after the last event passed
//! on, or with an `error` event when no response was opened yet. What that
//! needs is read off the events as they pass ([`Trail`]).

use bytes::{Bytes, BytesMut};
use http::HeaderValue;
use serde_json::Value;

use crate::{error::Flavor, wire::content::BodyKind};

/// How a failed body is reported to the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Terminator {
    /// `{"error": "..."}\n` (what Ollama sends mid-stream).
    Ndjson,
    /// An error event: `data: {"error": {...}}` on OpenAI's streams,
    /// `event: error` with Anthropic's error object on its streams.
    Sse(Flavor),
    /// A Responses stream: `event: response.failed` (or `event: error`),
    /// from what its [`Trail`] saw.
    Responses,
    /// Nothing can be appended: abort the connection.
    None,
}

impl Terminator {
    /// How a body of content type `ct` ends on failure, for a client that
    /// reads errors in `flavor`'s shape; `responses`: the request was a
    /// `POST /v1/responses`.
    pub(super) fn for_content_type(
        ct: Option<&HeaderValue>,
        flavor: Flavor,
        responses: bool,
    ) -> Self {
        match BodyKind::of(ct) {
            BodyKind::Ndjson => Terminator::Ndjson,
            BodyKind::Sse if responses => Terminator::Responses,
            BodyKind::Sse => Terminator::Sse(flavor),
            BodyKind::Whole => Terminator::None,
        }
    }

    /// The bytes that end a stream with `message`, after a body whose last
    /// bytes ended `newlines` newlines (0, 1 or 2: at most 2 count);
    /// `trail`: what a Responses stream passed on.
    pub(super) fn ending(
        self,
        message: &str,
        newlines: u8,
        trail: Option<&Trail>,
    ) -> Option<Bytes> {
        let (needed, line) = match self {
            Terminator::Ndjson => (1u8, crate::error::error_line(message)),
            Terminator::Sse(Flavor::Anthropic) => {
                let error = serde_json::json!({"type": "error", "error": {
                    "type": crate::error::anthropic_error_type(http::StatusCode::BAD_GATEWAY),
                    "message": message}});
                let body = crate::wire::to_go_json(&error);
                (2, Bytes::from(format!("event: error\ndata: {body}\n\n")))
            }
            Terminator::Sse(_) => {
                let body = crate::error::error_body(
                    http::StatusCode::BAD_GATEWAY,
                    message,
                    Flavor::OpenAi,
                );
                (2, Bytes::from(format!("data: {body}\n\n")))
            }
            Terminator::Responses => (2, trail.unwrap_or(&Trail::default()).ending(message)),
            Terminator::None => return None,
        };
        let missing = needed.saturating_sub(newlines) as usize;
        let mut out = BytesMut::with_capacity(missing + line.len());
        out.extend_from_slice(&b"\n\n"[..missing]);
        out.extend_from_slice(&line);
        Some(out.freeze())
    }
}

/// How many newlines the bytes sent so far end with (at most 2), after
/// `data`, when they ended with `before`. Carriage returns do not count.
pub(super) fn trailing_newlines(before: u8, data: &[u8]) -> u8 {
    let mut n = 0u8;
    for b in data.iter().rev() {
        match b {
            b'\n' => n += 1,
            b'\r' => {}
            _ => return n.min(2),
        }
        if n >= 2 {
            return 2;
        }
    }
    before.saturating_add(n).min(2)
}

/// Longest response id or model name kept from a `response.created` event.
const MAX_KEPT: usize = 256;

/// What a Responses stream passed on so far says about itself.
#[derive(Debug, Default)]
pub(super) struct Trail {
    /// The response's id and model, from its `response.created` event.
    opened: Option<(String, String)>,
    /// The `sequence_number` the next event takes.
    next: u64,
}

impl Trail {
    /// Note the events in `data`, bytes passed on to the client (whole
    /// lines, but for a line too long to hold).
    pub(super) fn observe(&mut self, data: &[u8]) {
        for line in data.split(|b| *b == b'\n') {
            let Some(json) = line.strip_prefix(b"data:") else {
                continue;
            };
            if let Some(n) = sequence_number(json) {
                self.next = n.saturating_add(1);
            }
            if self.opened.is_none() && find(json, b"\"response.created\"").is_some() {
                self.opened = opened(json);
            }
        }
    }

    /// The event that ends the stream with `message` (a 502 on the way).
    fn ending(&self, message: &str) -> Bytes {
        use crate::wire::responses_end::{error_event, failed_event};
        match &self.opened {
            Some((id, model)) => failed_event(id, model, self.next, 502, message),
            None => error_event(self.next, 502, message),
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The top-level `sequence_number` of an event's data (the key cannot
/// occur unescaped inside a string).
fn sequence_number(json: &[u8]) -> Option<u64> {
    const KEY: &[u8] = b"\"sequence_number\":";
    let at = find(json, KEY)? + KEY.len();
    let rest = &json[at..];
    let start = rest.iter().position(|b| !b.is_ascii_whitespace())?;
    let digits = rest[start..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .take(20);
    let mut n: Option<u64> = None;
    for d in digits {
        n = Some(
            n.unwrap_or(0)
                .checked_mul(10)?
                .checked_add(u64::from(d - b'0'))?,
        );
    }
    n
}

/// The response id and model a `response.created` event's data names.
fn opened(json: &[u8]) -> Option<(String, String)> {
    let event: Value = serde_json::from_slice(json).ok()?;
    let response = event.get("response")?;
    let kept = |key: &str| -> String {
        let text = response.get(key).and_then(Value::as_str).unwrap_or("");
        text.chars().take(MAX_KEPT).collect()
    };
    response.get("id")?.as_str()?;
    Some((kept("id"), kept("model")))
}

#[cfg(test)]
#[path = "terminator_tests.rs"]
mod tests;
