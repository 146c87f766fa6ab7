//! [`Tap`]: one recorded request's handle, carried in its extensions
//! from the surface to every upstream call it makes. Its upstream calls
//! and its answer are noted here; the exchange is written once, when the
//! answer ends or is dropped.

use std::{
    fmt::Display,
    pin::Pin,
    sync::{Arc, Mutex},
    task::{Context, Poll},
    time::Instant,
};

use axum::body::Body;
use bytes::Bytes;
use http::{Response, header};
use http_body::{Body as HttpBody, Frame, SizeHint};

use super::{
    exchange::{Answer, Call, Exchange, MAX_LINE_BYTES, Meta, cut},
    redact::redact,
    writer::Sink,
};

/// A recorded request's handle (cheap to clone).
#[derive(Clone)]
pub(crate) struct Tap(Arc<Inner>);

struct Inner {
    started: Instant,
    sink: Sink,
    redact: Vec<String>,
    /// `None` once the exchange was written.
    exchange: Mutex<Option<Exchange>>,
}

impl Tap {
    /// Start recording a request whose body is `body`.
    pub(crate) fn new(sink: Sink, redact: Vec<String>, meta: Meta, body: &[u8]) -> Self {
        let mut budget = MAX_LINE_BYTES;
        let (request, request_truncated) = cut(body, &mut budget);
        let time = time::OffsetDateTime::now_utc()
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default();
        let exchange = Exchange {
            time,
            meta,
            request,
            request_truncated,
            calls: Vec::new(),
            answer: None,
            budget,
        };
        Self(Arc::new(Inner {
            started: Instant::now(),
            sink,
            redact,
            exchange: Mutex::new(Some(exchange)),
        }))
    }

    fn ms(&self) -> u64 {
        u64::try_from(self.0.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn with<R>(&self, f: impl FnOnce(&mut Exchange) -> R) -> Option<R> {
        let mut guard = self.0.exchange.lock().unwrap_or_else(|e| e.into_inner());
        guard.as_mut().map(f)
    }

    /// Note an upstream call to `path` with `body` (when augur holds it);
    /// returns the call's index.
    pub(crate) fn call(&self, path: &str, body: Option<&[u8]>) -> Option<usize> {
        self.with(|x| {
            let (body, body_truncated) = match body {
                Some(b) => {
                    let (text, cut) = cut(b, &mut x.budget);
                    (Some(text), cut)
                }
                None => (None, false),
            };
            x.calls.push(Call {
                path: path.to_string(),
                body,
                body_truncated,
                ..Call::default()
            });
            x.calls.len() - 1
        })
    }

    /// The upstream's answer to call `index`: its head noted, its body
    /// copied line by line as it is read.
    pub(crate) fn answered<E: Display>(
        &self,
        index: usize,
        result: Result<Response<Body>, E>,
    ) -> Result<Response<Body>, E> {
        let response = match result {
            Ok(r) => r,
            Err(e) => {
                self.with(|x| {
                    if let Some(c) = x.calls.get_mut(index) {
                        c.error = Some(e.to_string());
                    }
                });
                return Err(e);
            }
        };
        let (parts, body) = response.into_parts();
        self.with(|x| {
            if let Some(c) = x.calls.get_mut(index) {
                c.status = Some(parts.status.as_u16());
                c.content_type = parts
                    .headers
                    .get(header::CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string);
            }
        });
        let body = Body::new(Copied {
            inner: body,
            tap: self.clone(),
            to: To::Call(index),
        });
        Ok(Response::from_parts(parts, body))
    }

    /// Start the answer's record with its head.
    pub(super) fn answer_head(&self, answer: Answer) {
        self.with(|x| x.answer = Some(answer));
    }

    fn push(&self, to: To, data: &[u8]) {
        let ms = self.ms();
        self.with(|x| {
            let lines = match to {
                To::Call(i) => x.calls.get_mut(i).map(|c| &mut c.lines),
                To::Answer => x.answer.as_mut().map(|a| &mut a.lines),
            };
            if let Some(lines) = lines {
                lines.push(ms, data, &mut x.budget);
            }
        });
    }

    /// Write the exchange (once): `complete` is false when the answer's
    /// body was dropped before it ended.
    pub(super) fn finish(&self, complete: bool) {
        let taken = {
            let mut guard = self.0.exchange.lock().unwrap_or_else(|e| e.into_inner());
            guard.take()
        };
        let Some(exchange) = taken else { return };
        let mut line = exchange.into_json(complete);
        redact(&mut line, &self.0.redact);
        self.0.sink.send(line.to_string());
    }
}

/// Which body a copy goes to.
#[derive(Clone, Copy)]
pub(super) enum To {
    Call(usize),
    Answer,
}

pin_project_lite::pin_project! {
    /// A body passed through as it is, each data frame also noted.
    pub(super) struct Copied {
        #[pin]
        pub inner: Body,
        pub tap: Tap,
        pub to: To,
    }
}

impl HttpBody for Copied {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.project();
        let polled = this.inner.poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &polled
            && let Some(data) = frame.data_ref()
        {
            this.tap.push(*this.to, data);
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
