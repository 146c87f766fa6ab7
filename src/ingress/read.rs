//! Request bodies, bounded: read whole (routes that name models) or
//! streamed through a limit (everything else but blob uploads).

use std::{
    pin::Pin,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    task::{Context, Poll},
};

use axum::body::Body;
use bytes::{Bytes, BytesMut};
use http::{header, request::Parts};
use http_body::{Body as HttpBody, Frame, SizeHint};
use http_body_util::{BodyExt, LengthLimitError, Limited};

use crate::{config::Config, error::ProxyError};

use super::routes::RouteSpec;

/// 413 at once when the declared length is over `limit`.
fn check_declared(parts: &Parts, limit: u64) -> Result<(), ProxyError> {
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    match declared {
        Some(n) if n > limit => Err(ProxyError::BodyTooLarge(limit)),
        _ => Ok(()),
    }
}

/// Read the whole body, at most `body_limit` bytes; a client that sends
/// nothing for `client_header_timeout` is cut off (408).
pub(super) async fn whole(
    parts: &Parts,
    mut body: Body,
    config: &Config,
) -> Result<Bytes, ProxyError> {
    let limit = config.body_limit;
    check_declared(parts, limit)?;
    // A body that arrives in one frame (the usual case) is kept as it
    // came; only a body in several frames is copied together.
    let mut first: Option<Bytes> = None;
    let mut buf = BytesMut::new();
    let mut len: u64 = 0;
    loop {
        let frame = tokio::time::timeout(config.client_header_timeout, body.frame())
            .await
            .map_err(|_| ProxyError::ClientTimeout)?;
        let Some(frame) = frame else { break };
        let frame = frame
            .map_err(|e| ProxyError::BadRequest(format!("error reading request body: {e}")))?;
        if let Ok(data) = frame.into_data() {
            len += data.len() as u64;
            if len > limit {
                return Err(ProxyError::BodyTooLarge(limit));
            }
            match first.take() {
                None if buf.is_empty() => first = Some(data),
                held => {
                    if let Some(held) = held {
                        buf.extend_from_slice(&held);
                    }
                    buf.extend_from_slice(&data);
                }
            }
        }
    }
    Ok(first.unwrap_or_else(|| buf.freeze()))
}

/// Set when a streamed request body went over the body limit; in the
/// request's extensions, so that a failed forward can answer 413.
#[derive(Debug, Clone, Default)]
pub(crate) struct BodyLimit(Arc<AtomicBool>);

impl BodyLimit {
    /// Whether the body was cut at the limit.
    pub(crate) fn exceeded(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// The body to forward for a route augur does not read: bounded by the
/// limit unless the route takes blobs (streamed, never held).
pub(super) fn bounded(
    parts: &mut Parts,
    body: Body,
    route: &RouteSpec,
    config: &Config,
) -> Result<Body, ProxyError> {
    if route.unbounded_body || !has_body(&parts.method) {
        return Ok(body);
    }
    check_declared(parts, config.body_limit)?;
    let flag = BodyLimit::default();
    parts.extensions.insert(flag.clone());
    Ok(Body::new(Bounded {
        inner: Limited::new(body, config.body_limit as usize),
        flag,
    }))
}

pin_project_lite::pin_project! {
    struct Bounded {
        #[pin]
        inner: Limited<Body>,
        flag: BodyLimit,
    }
}

impl HttpBody for Bounded {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.project();
        let polled = this.inner.poll_frame(cx);
        if let Poll::Ready(Some(Err(e))) = &polled
            && e.downcast_ref::<LengthLimitError>().is_some()
        {
            this.flag.0.store(true, Ordering::Relaxed);
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

/// Whether `method` may carry a request body worth bounding.
pub(super) fn has_body(method: &http::Method) -> bool {
    !(method == http::Method::GET || method == http::Method::HEAD)
}
