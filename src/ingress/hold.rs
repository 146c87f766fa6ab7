//! The admission lives as long as the response body: a stream holds its
//! concurrency slot until its last byte, and the request's token budgets
//! are charged once, when the body ends or the client leaves (see
//! [`crate::limits::usage`] for what is charged).

use std::{
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
};

use axum::{body::Body, response::Response};
use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};

use crate::{
    limits::{
        self, Usage,
        usage::{Counts, counts_in, estimate_from_bytes},
    },
    telemetry::genai::{Ending, Meter},
    upstream::capabilities::Capabilities,
};

/// How much of the end of an answer is kept to read its token counts
/// (Ollama's done chunk names them in its last 200 bytes or so, after
/// `/api/generate`'s `context`; OpenAI's usage chunk and Anthropic's
/// `message_delta` are shorter).
const TAIL: usize = 1024;

/// How the generated tokens of a body without counts are estimated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// One token per NDJSON line.
    Lines,
    /// One token per SSE event (two newlines each).
    Events,
    /// One token per four bytes.
    Whole,
}

/// What happens when the response ends: charge, release, invalidate.
struct Settlement {
    admission: Option<limits::Admission>,
    usage: Arc<Usage>,
    /// Whether token budgets apply.
    charges: bool,
    /// The request's GenAI metrics, recorded when it settles.
    meter: Option<Meter>,
    /// Non-success answers cost only what the pipeline reported.
    success: bool,
    shape: Shape,
    tail: Vec<u8>,
    newlines: u64,
    bytes: u64,
    /// Dropped when a model-changing request finishes.
    invalidate: Option<Capabilities>,
    settled: bool,
}

impl Settlement {
    fn observe(&mut self, data: &Bytes) {
        if let Some(meter) = &mut self.meter {
            meter.chunk();
        } else if !self.charges {
            return;
        }
        self.bytes += data.len() as u64;
        self.newlines += memchr::memchr_iter(b'\n', data).count() as u64;
        self.tail.extend_from_slice(data);
        if self.tail.len() > 2 * TAIL {
            let cut = self.tail.len() - TAIL;
            self.tail.drain(..cut);
        }
    }

    /// The counts the upstream reported: to the pipeline, else at the end
    /// of a forwarded answer sent whole.
    fn counts(&self, completed: bool) -> Option<Counts> {
        self.usage
            .counts()
            .or_else(|| (completed && self.success).then(|| counts_in(&self.tail))?)
    }

    /// Tokens to charge; `completed` is false when the client left early.
    fn tokens(&self, completed: bool, counts: Option<Counts>) -> u64 {
        if self.usage.is_waived() {
            return 0;
        }
        let generated = match self.shape {
            Shape::Lines => self.newlines,
            Shape::Events => self.newlines / 2,
            Shape::Whole => estimate_from_bytes(self.bytes as usize),
        };
        let estimate = self.usage.prompt_estimate() + generated;
        match counts.map(|c| c.input + c.output) {
            Some(counted) if completed => counted,
            Some(counted) => counted.max(estimate),
            None if !self.success => 0,
            None => estimate,
        }
    }

    fn settle(&mut self, completed: bool) {
        if self.settled {
            return;
        }
        self.settled = true;
        let counts = self.counts(completed);
        if let Some(a) = &self.admission
            && self.charges
        {
            // `charge_tokens` counts augur_tokens_charged_total.
            a.charge_tokens(self.tokens(completed, counts));
        }
        // A replayed answer was not generated: the GenAI metrics describe
        // the upstream's work only.
        if let Some(meter) = self.meter.take().filter(|_| !self.usage.is_replayed()) {
            let ok = completed && self.success;
            let streamed = self.shape != Shape::Whole;
            meter.finish(counts, Ending { ok, streamed });
        }
        if let Some(caps) = self.invalidate.take() {
            caps.models_changed();
        }
        // Releases the concurrency slot.
        self.admission = None;
    }
}

impl Drop for Settlement {
    fn drop(&mut self) {
        self.settle(false);
    }
}

pin_project_lite::pin_project! {
    struct HeldBody {
        #[pin]
        inner: Body,
        settlement: Settlement,
    }
}

impl HttpBody for HeldBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let mut this = self.project();
        let polled = this.inner.as_mut().poll_frame(cx);
        let ended = match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    this.settlement.observe(data);
                }
                // A body of known length is not polled past its last
                // frame (hyper stops at `is_end_stream`), so its end
                // must be noticed here.
                this.inner.is_end_stream()
            }
            Poll::Ready(None) => true,
            // A failed body did not reach the client whole.
            Poll::Ready(Some(Err(_))) => {
                this.settlement.settle(false);
                false
            }
            Poll::Pending => false,
        };
        if ended {
            this.settlement.settle(true);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// What to hold for the life of a response.
pub(super) struct Hold {
    pub admission: Option<limits::Admission>,
    pub usage: Arc<Usage>,
    pub invalidate: Option<Capabilities>,
    pub meter: Option<Meter>,
}

/// Attach `hold` to `response`: rate-limit headers now; the slot, the
/// token charge and any cache invalidation when the body ends.
pub(super) fn hold(response: Response, hold: Hold) -> Response {
    let (mut parts, body) = response.into_parts();
    let success = parts.status.is_success();
    if let Some(a) = &hold.admission
        && a.rate_info().is_some()
    {
        parts.headers.extend(a.rate_headers());
    }
    let invalidate = hold.invalidate.filter(|_| success);
    if let Some(caps) = &invalidate {
        caps.models_changed();
    }
    let charges = hold
        .admission
        .as_ref()
        .is_some_and(limits::Admission::charges_tokens);
    let holds_slot = hold
        .admission
        .as_ref()
        .is_some_and(limits::Admission::holds_slot);
    if !charges && !holds_slot && invalidate.is_none() && hold.meter.is_none() {
        // Nothing to wait for.
        return Response::from_parts(parts, body);
    }
    use crate::wire::content::BodyKind;
    let shape = match BodyKind::of(parts.headers.get(http::header::CONTENT_TYPE)) {
        BodyKind::Ndjson => Shape::Lines,
        BodyKind::Sse => Shape::Events,
        BodyKind::Whole => Shape::Whole,
    };
    let settlement = Settlement {
        admission: hold.admission,
        usage: hold.usage,
        charges,
        meter: hold.meter,
        success,
        shape,
        tail: Vec::new(),
        newlines: 0,
        bytes: 0,
        invalidate,
        settled: false,
    };
    Response::from_parts(
        parts,
        Body::new(HeldBody {
            inner: body,
            settlement,
        }),
    )
}

#[cfg(test)]
#[path = "hold_tests.rs"]
mod tests;
