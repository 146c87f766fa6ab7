//! The upstream response body on its way to the client: passed through
//! frame by frame, with an idle timeout between frames, upstream timing,
//! and an `{"error": ...}` line (NDJSON) or event (SSE) instead of a
//! silent cut when the upstream fails mid-way.

use std::{
    future::Future as _,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
    time::{Duration, Instant},
};

use bytes::Bytes;
use http::HeaderValue;
use http_body::{Body as HttpBody, Frame, SizeHint};

use super::pool::DrivenBody;
use crate::telemetry::Timing;

/// How a failed body is reported to the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Terminator {
    /// `{"error": "..."}\n` (what Ollama sends mid-stream).
    Ndjson,
    /// `data: {"error": {...}}\n\n` (OpenAI-style streams).
    Sse,
    /// Nothing can be appended: abort the connection.
    None,
}

impl Terminator {
    pub(super) fn for_content_type(ct: Option<&HeaderValue>) -> Self {
        let ct = ct.and_then(|v| v.to_str().ok()).unwrap_or("");
        if ct.starts_with("application/x-ndjson") {
            Terminator::Ndjson
        } else if ct.starts_with("text/event-stream") {
            Terminator::Sse
        } else {
            Terminator::None
        }
    }

    fn line(self, message: &str) -> Option<Bytes> {
        match self {
            Terminator::Ndjson => Some(crate::error::error_line(message)),
            Terminator::Sse => {
                let body = crate::error::error_body(
                    http::StatusCode::BAD_GATEWAY,
                    message,
                    crate::error::Flavor::OpenAi,
                );
                Some(Bytes::from(format!("data: {body}\n\n")))
            }
            Terminator::None => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum State {
    Streaming,
    Done,
}

pin_project_lite::pin_project! {
    /// The upstream body, passed through frame by frame, plus: an idle
    /// timeout between frames, an error line instead of a silent cut, and
    /// upstream timing.
    pub(super) struct GuardedBody {
        #[pin]
        pub(super) inner: DrivenBody,
        pub(super) terminator: Terminator,
        pub(super) idle_timeout: Duration,
        // The idle timer, kept across frames so that it is allocated once.
        pub(super) sleep: Option<Pin<Box<tokio::time::Sleep>>>,
        // Whether `sleep` counts from the last frame (it is re-armed at
        // the first wait after each frame).
        pub(super) armed: bool,
        pub(super) state: State,
        pub(super) timing: Option<Arc<Timing>>,
        pub(super) started: Instant,
    }
}

impl HttpBody for GuardedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.project();
        if *this.state == State::Done {
            return Poll::Ready(None);
        }
        match this.inner.poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                *this.armed = false;
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(None) => {
                *this.state = State::Done;
                if let Some(t) = this.timing.as_ref() {
                    t.upstream_done(this.started.elapsed());
                }
                Poll::Ready(None)
            }
            Poll::Ready(Some(Err(e))) => {
                *this.state = State::Done;
                if let Some(t) = this.timing.as_ref() {
                    t.upstream_done(this.started.elapsed());
                }
                tracing::warn!(error = %e, "upstream body failed mid-stream");
                metrics::counter!("augur_upstream_stream_errors_total").increment(1);
                finish_with(
                    *this.terminator,
                    "upstream connection closed before the response was complete",
                    axum::Error::new(e),
                )
            }
            Poll::Pending => {
                let idle = *this.idle_timeout;
                if !*this.armed
                    && let Some(sleep) = this.sleep.as_mut()
                {
                    sleep.as_mut().reset(tokio::time::Instant::now() + idle);
                }
                *this.armed = true;
                let sleep = this
                    .sleep
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(idle)));
                match sleep.as_mut().poll(cx) {
                    Poll::Ready(()) => {
                        *this.state = State::Done;
                        let msg = format!("upstream stalled for {} ms", idle.as_millis());
                        finish_with(*this.terminator, &msg, axum::Error::new(msg.clone()))
                    }
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.state == State::Done || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

fn finish_with(
    terminator: Terminator,
    message: &str,
    error: axum::Error,
) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
    match terminator.line(message) {
        Some(line) => Poll::Ready(Some(Ok(Frame::data(line)))),
        None => Poll::Ready(Some(Err(error))),
    }
}
