//! The upstream response body on its way to the client: passed through
//! frame by frame, with an idle timeout between frames and upstream
//! timing. An upstream that fails mid-way never looks like a complete
//! answer:
//!
//! - an NDJSON stream ends with an `{"error": ...}` line, an SSE stream
//!   with an error event (a Responses stream with `response.failed`, see
//!   [`super::terminator`]). Streams are passed on in whole lines (a line
//!   the upstream sent in pieces is held until its end, up to
//!   [`MAX_HELD_LINE`]), so a cut drops the unfinished line and the error
//!   line stands on its own; after a longer line, the error line starts
//!   on a new line;
//! - any other body ends in an error, which aborts the client connection
//!   (the client sees an incomplete body). The bytes before the cut are
//!   let out first, so that the client sees at least the status line.
//!   Before any byte of such a body went out, [`RelayBody::first_frame`]
//!   reports the failure as an error response instead.
//!
//! Upstream time is counted into the request's [`Timing`] as the body
//! comes: from sending the request to the last byte received (so a body
//! its reader drops after the answer it needed is counted too). A body
//! that is the client's response ([`RelayBody::ending_the_request`])
//! also reports how it ended when the upstream cut it or stalled.

use std::{
    future::Future as _,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
    time::{Duration, Instant},
};

use bytes::{Bytes, BytesMut};
use http_body::{Body as HttpBody, Frame, SizeHint};

pub(super) use super::terminator::Terminator;
use super::terminator::{Trail, trailing_newlines};
use crate::{
    error::{Ending, ProxyError},
    telemetry::Timing,
};

/// The longest unfinished stream line held back; a longer one is passed
/// on in pieces.
pub(super) const MAX_HELD_LINE: usize = 1 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum State {
    Streaming,
    Done,
}

/// The error a body ends with when the upstream sent nothing for the idle
/// timeout: readers tell it from a cut with [`stalled`].
#[derive(Debug, thiserror::Error)]
#[error("upstream stalled for {} ms", .0.as_millis())]
struct Stalled(Duration);

/// The idle timeout after which `error` (or an error it wraps) says the
/// upstream stalled, if it does.
pub(crate) fn stalled(error: &(dyn std::error::Error + 'static)) -> Option<Duration> {
    let mut cause = Some(error);
    // Each wrapper adds one level; a few are all a body error has.
    for _ in 0..8 {
        let e = cause?;
        if let Some(Stalled(idle)) = e.downcast_ref::<Stalled>() {
            return Some(*idle);
        }
        cause = e.source();
    }
    None
}

/// What the upstream body did.
enum Event {
    Frame(Frame<Bytes>),
    End,
    Failed(axum::Error),
    Stalled(Duration),
}

pin_project_lite::pin_project! {
    /// The upstream body, passed through frame by frame, plus: an idle
    /// timeout between frames, an error line instead of a silent cut, and
    /// upstream timing.
    pub(super) struct RelayBody<B> {
        #[pin]
        inner: B,
        terminator: Terminator,
        idle_timeout: Duration,
        // The idle timer, kept across frames so that it is allocated once.
        sleep: Option<Pin<Box<tokio::time::Sleep>>>,
        // Whether `sleep` counts from the last frame (it is re-armed at
        // the first wait after each frame).
        armed: bool,
        state: State,
        timing: Option<Arc<Timing>>,
        started: Instant,
        // Upstream time already counted into `timing` (since `started`).
        counted: Duration,
        // The body is the client's response: its failure ends the request.
        ends_request: bool,
        // A frame read ahead by `first_frame`, passed on first.
        first: Option<Frame<Bytes>>,
        // The error that ends an aborted body, held for one poll so that
        // the bytes before it are written first.
        abort: Option<axum::Error>,
        // The unfinished last line of a stream, held until its end.
        held: BytesMut,
        // Newlines the bytes passed on so far end with (at most 2), and
        // whether any were.
        newlines: u8,
        sent: bool,
        // The upstream's in-flight count, released with the body.
        in_flight: Option<super::load::InFlight>,
        // What a Responses stream passed on says about itself.
        trail: Option<Box<Trail>>,
    }
}

impl<B> RelayBody<B>
where
    B: HttpBody<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    pub(super) fn new(
        inner: B,
        terminator: Terminator,
        idle_timeout: Duration,
        timing: Option<Arc<Timing>>,
        started: Instant,
    ) -> Self {
        // The wait for the response head is upstream time.
        let counted = started.elapsed();
        if let Some(t) = &timing {
            t.upstream_time(counted);
        }
        Self {
            inner,
            terminator,
            idle_timeout,
            sleep: None,
            armed: false,
            state: State::Streaming,
            timing,
            started,
            counted,
            ends_request: false,
            first: None,
            abort: None,
            held: BytesMut::new(),
            newlines: 0,
            sent: false,
            in_flight: None,
            trail: (terminator == Terminator::Responses).then(Box::default),
        }
    }

    /// Hold `in_flight` until the body is dropped.
    pub(super) fn holding(mut self, in_flight: Option<super::load::InFlight>) -> Self {
        self.in_flight = in_flight;
        self
    }

    /// This body is the client's response: when the upstream cuts it or
    /// stalls, the request ends so (see [`Timing::report_ending`]).
    pub(super) fn ending_the_request(mut self) -> Self {
        self.ends_request = true;
        self
    }

    /// Wait for the body's first frame (kept, and passed on first), so
    /// that a body that fails before its first byte can be answered with
    /// an error response rather than a status line and nothing.
    pub(super) async fn first_frame(mut self: Pin<&mut Self>) -> Result<(), ProxyError> {
        if self.inner.is_end_stream() {
            return Ok(());
        }
        match std::future::poll_fn(|cx| self.as_mut().poll_upstream(cx)).await {
            Event::Frame(frame) => {
                *self.as_mut().project().first = Some(frame);
                Ok(())
            }
            Event::End => Ok(()),
            Event::Failed(e) => {
                metrics::counter!("augur_upstream_stream_errors_total").increment(1);
                Err(ProxyError::UpstreamCut(format!(
                    "the upstream closed the connection before the response was complete: {e}"
                )))
            }
            Event::Stalled(idle) => Err(ProxyError::UpstreamTimeout(idle.as_millis())),
        }
    }

    fn poll_upstream(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Event> {
        let mut this = self.project();
        let polled = this.inner.as_mut().poll_frame(cx);
        if polled.is_ready() {
            // Each byte received (and the end) moves the upstream time on.
            if let Some(t) = this.timing.as_ref() {
                let now = this.started.elapsed();
                t.upstream_time(now.saturating_sub(*this.counted));
                *this.counted = now;
            }
        }
        match polled {
            Poll::Ready(Some(Ok(frame))) => {
                *this.armed = false;
                Poll::Ready(Event::Frame(frame))
            }
            Poll::Ready(None) => {
                *this.state = State::Done;
                Poll::Ready(Event::End)
            }
            Poll::Ready(Some(Err(e))) => {
                *this.state = State::Done;
                Poll::Ready(Event::Failed(axum::Error::new(e)))
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
                        // Waiting on a silent upstream is upstream time.
                        if let Some(t) = this.timing.as_ref() {
                            let now = this.started.elapsed();
                            t.upstream_time(now.saturating_sub(*this.counted));
                            *this.counted = now;
                        }
                        Poll::Ready(Event::Stalled(idle))
                    }
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }
}

impl<B> HttpBody for RelayBody<B>
where
    B: HttpBody<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if let Some(frame) = self.as_mut().project().first.take() {
            return Poll::Ready(Some(Ok(self.passed(frame))));
        }
        if let Some(e) = self.as_mut().project().abort.take() {
            return Poll::Ready(Some(Err(e)));
        }
        loop {
            if self.state == State::Done {
                // A last line without a newline still goes out whole.
                let rest = self.as_mut().project().held.split().freeze();
                if rest.is_empty() {
                    return Poll::Ready(None);
                }
                return Poll::Ready(Some(Ok(self.passed(Frame::data(rest)))));
            }
            let failed = match std::task::ready!(self.as_mut().poll_upstream(cx)) {
                Event::Frame(frame) => match self.as_mut().whole_lines(frame) {
                    Some(frame) => return Poll::Ready(Some(Ok(self.passed(frame)))),
                    None => continue,
                },
                Event::End => continue,
                Event::Failed(e) => {
                    tracing::warn!(error = %e, "upstream body failed mid-stream");
                    metrics::counter!("augur_upstream_stream_errors_total").increment(1);
                    let message = "upstream connection closed before the response was complete";
                    (message.to_string(), e, Ending::UpstreamCut)
                }
                Event::Stalled(idle) => {
                    let stalled = Stalled(idle);
                    (
                        stalled.to_string(),
                        axum::Error::new(stalled),
                        Ending::TimedOut,
                    )
                }
            };
            let (message, error, ending) = failed;
            let this = self.project();
            if *this.ends_request
                && let Some(t) = this.timing.as_ref()
            {
                t.report_ending(ending);
            }
            // An unfinished line is no line: it is dropped.
            this.held.clear();
            // Nothing sent yet counts as the start of a line (and event).
            let newlines = if *this.sent { *this.newlines } else { 2 };
            if let Some(ending) = this
                .terminator
                .ending(&message, newlines, this.trail.as_deref())
            {
                return Poll::Ready(Some(Ok(Frame::data(ending))));
            }
            if !*this.sent {
                return Poll::Ready(Some(Err(error)));
            }
            // Let the bytes already passed on be written before the abort.
            *this.abort = Some(error);
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
    }

    fn is_end_stream(&self) -> bool {
        self.first.is_none()
            && self.abort.is_none()
            && self.held.is_empty()
            && (self.state == State::Done || self.inner.is_end_stream())
    }

    fn size_hint(&self) -> SizeHint {
        let mut hint = self.inner.size_hint();
        let first = self
            .first
            .as_ref()
            .and_then(Frame::data_ref)
            .map_or(0, Bytes::len);
        let len = (first + self.held.len()) as u64;
        if len > 0 {
            if let Some(upper) = hint.upper() {
                hint.set_upper(upper.saturating_add(len));
            }
            hint.set_lower(hint.lower().saturating_add(len));
        }
        hint
    }
}

impl<B> RelayBody<B> {
    /// The whole lines of a stream's frame, with what was held before
    /// them; the unfinished rest is held. `None` = all of it is held.
    fn whole_lines(self: Pin<&mut Self>, frame: Frame<Bytes>) -> Option<Frame<Bytes>> {
        let this = self.project();
        if *this.terminator == Terminator::None {
            return Some(frame);
        }
        let data = match frame.into_data() {
            Ok(data) => data,
            Err(other) => return Some(other),
        };
        let Some(last) = data.iter().rposition(|b| *b == b'\n') else {
            if this.held.len() + data.len() <= MAX_HELD_LINE {
                this.held.extend_from_slice(&data);
                return None;
            }
            // Too long to hold: pass it on in pieces.
            let mut out = this.held.split();
            out.extend_from_slice(&data);
            return Some(Frame::data(out.freeze()));
        };
        let lines = if this.held.is_empty() {
            data.slice(..=last)
        } else {
            let mut out = this.held.split();
            out.extend_from_slice(&data[..=last]);
            out.freeze()
        };
        this.held.extend_from_slice(&data[last + 1..]);
        Some(Frame::data(lines))
    }

    /// Note what a frame passed on ends with.
    fn passed(self: Pin<&mut Self>, frame: Frame<Bytes>) -> Frame<Bytes> {
        let this = self.project();
        if let Some(data) = frame.data_ref().filter(|d| !d.is_empty()) {
            *this.newlines = trailing_newlines(*this.newlines, data);
            *this.sent = true;
            if let Some(trail) = this.trail.as_mut() {
                trail.observe(data);
            }
        }
        frame
    }
}

#[cfg(test)]
#[path = "relay_tests.rs"]
mod tests;
