//! Token counts of a forwarded chat completions stream whose client did
//! not ask for them.
//!
//! Ollama's OpenAI layer reports a stream's tokens only when the request
//! says `stream_options: {include_usage: true}`: then one more event,
//! `choices: []` with `usage`, comes before `data: [DONE]`, and the other
//! events are the same. For a streamed request without `stream_options`,
//! augur asks for that event ([`ask_usage`]), reads the counts from it, and
//! leaves it out of the answer ([`StripUsage`]): the client gets the bytes
//! it would have had without augur, and the request's token metrics and
//! budgets get the upstream's own counts instead of an estimate.
//!
//! Events are passed on as they come; only an event cut across body frames
//! is held until its end (at most [`MAX_PENDING`] bytes, after which the
//! rest of the stream is passed on untouched).

use std::{
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
};

use axum::{body::Body, response::Response};
use bytes::{Bytes, BytesMut};
use http_body::{Body as HttpBody, Frame, SizeHint};
use serde::Deserialize;
use serde::de::IgnoredAny;

use crate::limits::{Usage, usage::Counts};

/// Most bytes of one event held while waiting for its end.
pub(crate) const MAX_PENDING: usize = 1 << 20;

/// What decides whether a forwarded request is asked for usage.
#[derive(Deserialize)]
struct Peek {
    stream: Option<bool>,
    stream_options: Option<IgnoredAny>,
}

/// The client's body asking for usage, when it streams and names no
/// `stream_options` (`None`: forward it as it came). The field goes first,
/// the client's bytes follow unchanged.
pub(crate) fn ask_usage(body: &[u8]) -> Option<Bytes> {
    // Most bodies say nothing of streaming: no need to read them.
    if !contains(body, b"\"stream\"") {
        return None;
    }
    let peek: Peek = serde_json::from_slice(body).ok()?;
    if peek.stream != Some(true) || peek.stream_options.is_some() {
        return None;
    }
    let open = body.iter().position(|b| !b.is_ascii_whitespace())?;
    if body[open] != b'{' {
        return None;
    }
    let rest = &body[open + 1..];
    let empty = rest.iter().all(|b| b.is_ascii_whitespace() || *b == b'}');
    let field: &[u8] = if empty {
        br#"{"stream_options":{"include_usage":true}"#
    } else {
        br#"{"stream_options":{"include_usage":true},"#
    };
    let mut out = BytesMut::with_capacity(body.len() + field.len());
    out.extend_from_slice(&body[..open]);
    out.extend_from_slice(field);
    out.extend_from_slice(rest);
    Some(out.freeze())
}

pin_project_lite::pin_project! {
    /// An SSE answer with its usage-only event left out and reported.
    pub(crate) struct StripUsage {
        #[pin]
        inner: Body,
        pending: BytesMut,
        usage: Arc<Usage>,
        // The usage event was found, or the stream is passed on as is.
        done: bool,
    }
}

impl StripUsage {
    /// `inner`, whose usage event is reported to `usage`.
    pub(crate) fn new(inner: Body, usage: Arc<Usage>) -> Self {
        Self {
            inner,
            pending: BytesMut::new(),
            usage,
            done: false,
        }
    }
}

/// `answer` with its usage event left out and reported to `usage`, when
/// it is a successful SSE stream; else as it came.
pub(crate) fn strip_answer(answer: Response, usage: Arc<Usage>) -> Response {
    let sse = answer
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !answer.status().is_success() || !sse {
        return answer;
    }
    answer.map(|body| Body::new(StripUsage::new(body, usage)))
}

/// Whether `haystack` holds `needle`.
fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(haystack, needle).is_some()
}

/// A usage-only event, read without building its tree: the other fields
/// are skipped.
#[derive(Deserialize)]
struct UsageEvent {
    choices: Vec<IgnoredAny>,
    usage: Option<UsageCounts>,
}

#[derive(Deserialize)]
struct UsageCounts {
    prompt_tokens: u64,
    completion_tokens: u64,
}

/// The counts of a usage-only event (`data: {"choices":[],"usage":…}`).
fn usage_of(event: &[u8]) -> Option<Counts> {
    let data = event.strip_prefix(b"data: ")?;
    if !contains(data, br#""choices":[]"#) {
        return None;
    }
    let v: UsageEvent = serde_json::from_slice(data.trim_ascii_end()).ok()?;
    if !v.choices.is_empty() {
        return None;
    }
    let usage = v.usage?;
    Some(Counts {
        input: usage.prompt_tokens,
        output: usage.completion_tokens,
        eval_ns: None,
    })
}

/// The end of the last whole event in `buf` (after its blank line).
fn last_boundary(buf: &[u8]) -> Option<usize> {
    memchr::memmem::rfind(buf, b"\n\n").map(|i| i + 2)
}

impl StripUsage {
    /// What of `data` goes on now: whole events, the usage event left out.
    fn feed(self: Pin<&mut Self>, data: Bytes) -> Bytes {
        let this = self.project();
        if *this.done {
            if this.pending.is_empty() {
                return data;
            }
            // The part of an event held before the usage event was found.
            this.pending.extend_from_slice(&data);
            return this.pending.split().freeze();
        }
        if this.pending.is_empty()
            && data.ends_with(b"\n\n")
            && !contains(&data, br#""choices":[]"#)
        {
            return data;
        }
        this.pending.extend_from_slice(&data);
        let Some(end) = last_boundary(this.pending) else {
            if this.pending.len() > MAX_PENDING {
                *this.done = true;
                return this.pending.split().freeze();
            }
            return Bytes::new();
        };
        let whole = this.pending.split_to(end);
        let mut out = BytesMut::with_capacity(whole.len());
        let mut rest = &whole[..];
        while !rest.is_empty() {
            let end = memchr::memmem::find(rest, b"\n\n").map_or(rest.len(), |i| i + 2);
            let (event, after) = rest.split_at(end);
            match (!*this.done).then(|| usage_of(event)).flatten() {
                Some(counts) => {
                    this.usage.report(counts);
                    *this.done = true;
                }
                None => out.extend_from_slice(event),
            }
            rest = after;
        }
        out.freeze()
    }
}

impl HttpBody for StripUsage {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        loop {
            let polled = self.as_mut().project().inner.poll_frame(cx);
            match polled {
                Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                    Ok(data) => {
                        let out = self.as_mut().feed(data);
                        if !out.is_empty() {
                            return Poll::Ready(Some(Ok(Frame::data(out))));
                        }
                    }
                    Err(frame) => return Poll::Ready(Some(Ok(frame))),
                },
                Poll::Ready(None) => {
                    let rest = self.as_mut().project().pending.split().freeze();
                    return Poll::Ready((!rest.is_empty()).then(|| Ok(Frame::data(rest))));
                }
                other => return other,
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.pending.is_empty() && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

#[cfg(test)]
#[path = "usage_tests.rs"]
mod tests;
