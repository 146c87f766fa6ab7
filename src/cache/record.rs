//! A miss: the answer goes to the client as it comes, each chunk also
//! copied aside (never delaying it), and kept once the body has ended
//! normally and [`super::verdict`] finds it clean. Recording stops, and
//! nothing is kept, when the answer grows past its entry's bound, the
//! body fails, or the client leaves (the body is dropped unfinished).

use std::{
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
    time::Duration,
};

use axum::{body::Body, response::Response};
use bytes::Bytes;
use http::{HeaderMap, header};
use http_body::{Body as HttpBody, Frame, SizeHint};

use super::{
    entry::{Entry, Key, Lookup, X_AUGUR_CACHE, overhead},
    store::Store,
    verdict,
};
use crate::{
    limits::{Usage, usage::counts_in},
    wire::content::BodyKind,
};

/// Where and how a miss's answer is kept.
pub(crate) struct Recorder {
    pub store: Arc<Store>,
    pub key: Key,
    /// The whole cache's bound (see [`super::store`]).
    pub capacity: u64,
    /// The most bytes this entry may take.
    pub cap: u64,
    pub ttl: Duration,
    /// The route (one of [`super::request::GENERATION_ROUTES`]).
    pub path: &'static str,
    /// The request's token counts, as its upstream calls reported them.
    pub usage: Arc<Usage>,
}

/// What is kept while the body goes out.
struct Tape {
    recorder: Recorder,
    kind: BodyKind,
    headers: HeaderMap,
    chunks: Vec<Bytes>,
    bytes: u64,
}

impl Tape {
    /// Copy `data` aside; false once the answer is past its bound.
    fn push(&mut self, data: &Bytes) -> bool {
        self.bytes += data.len() as u64;
        if self.bytes + overhead(&self.headers, self.chunks.len() + 1) > self.recorder.cap {
            return false;
        }
        // A copy: a chunk may be a slice of a much larger buffer.
        self.chunks.push(Bytes::copy_from_slice(data));
        true
    }

    /// The body ended normally: keep it if it is clean.
    fn finish(self) {
        let body = self.chunks.concat();
        if !verdict::clean_body(self.recorder.path, self.kind, &body) {
            return;
        }
        let r = self.recorder;
        let counts = r.usage.counts().or_else(|| counts_in(&body));
        let weight = self.bytes + overhead(&self.headers, self.chunks.len());
        let Ok(bytes) = u32::try_from(weight) else {
            return;
        };
        let entry = Entry {
            headers: self.headers,
            chunks: self.chunks,
            counts,
            ttl: r.ttl,
            bytes,
        };
        r.store.insert(r.key, entry, r.capacity);
    }
}

/// The headers a replay needs: the body's type, `cache-control` and
/// augur's own `X-Augur-*` (but `X-Augur-Cache`, which a hit sets).
fn kept(headers: &HeaderMap) -> HeaderMap {
    let mut out = HeaderMap::new();
    for (name, value) in headers {
        let ours = name.as_str().starts_with("x-augur-") && *name != X_AUGUR_CACHE;
        if ours || name == header::CONTENT_TYPE || name == header::CACHE_CONTROL {
            out.append(name.clone(), value.clone());
        }
    }
    out
}

/// `response`, marked a miss, its body recorded when its head is clean.
pub(crate) fn record(response: Response, recorder: Recorder) -> Response {
    let (mut parts, body) = response.into_parts();
    parts.headers.insert(X_AUGUR_CACHE, Lookup::Miss.header());
    if !verdict::clean_head(parts.status, &parts.headers) {
        return Response::from_parts(parts, body);
    }
    let tape = Tape {
        recorder,
        kind: BodyKind::of(parts.headers.get(header::CONTENT_TYPE)),
        headers: kept(&parts.headers),
        chunks: Vec::new(),
        bytes: 0,
    };
    let body = Body::new(Recording {
        inner: body,
        tape: Some(tape),
    });
    Response::from_parts(parts, body)
}

pin_project_lite::pin_project! {
    struct Recording {
        #[pin]
        inner: Body,
        tape: Option<Tape>,
    }
}

impl HttpBody for Recording {
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
                if let Some(data) = frame.data_ref()
                    && let Some(tape) = this.tape.as_mut()
                    && !tape.push(data)
                {
                    *this.tape = None;
                }
                // A body of known length is not polled past its last frame.
                this.inner.is_end_stream()
            }
            Poll::Ready(None) => true,
            // A failed body did not reach the client whole.
            Poll::Ready(Some(Err(_))) => {
                *this.tape = None;
                false
            }
            Poll::Pending => false,
        };
        if ended && let Some(tape) = this.tape.take() {
            tape.finish();
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
