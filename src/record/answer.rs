//! The answer as sent to the client, copied as it goes out (never
//! delaying it); the exchange is written when the body ends, or when it
//! is dropped unfinished (the client left).

use std::{
    collections::BTreeMap,
    pin::Pin,
    task::{Context, Poll},
};

use axum::{body::Body, response::Response};
use bytes::Bytes;
use http::header;
use http_body::{Body as HttpBody, Frame, SizeHint};

use super::{
    exchange::Answer,
    tap::{Copied, Tap, To},
};

/// `response` as it is, its head and body recorded on `tap`.
pub(crate) fn answer(response: Response, tap: Tap) -> Response {
    let (parts, body) = response.into_parts();
    let headers: BTreeMap<String, String> = parts
        .headers
        .iter()
        .filter(|(name, _)| {
            name.as_str().starts_with("x-augur-")
                || *name == header::CONTENT_TYPE
                || *name == header::CACHE_CONTROL
        })
        .map(|(n, v)| {
            (
                n.as_str().to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    tap.answer_head(Answer {
        status: parts.status.as_u16(),
        headers,
        ..Answer::default()
    });
    let body = Body::new(Answering {
        inner: Copied {
            inner: body,
            tap: tap.clone(),
            to: To::Answer,
        },
        tap: Some(tap),
    });
    Response::from_parts(parts, body)
}

pin_project_lite::pin_project! {
    struct Answering {
        #[pin]
        inner: Copied,
        tap: Option<Tap>,
    }

    impl PinnedDrop for Answering {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            if let Some(tap) = this.tap.take() {
                // An empty body may be dropped unpolled, having ended.
                tap.finish(this.inner.is_end_stream());
            }
        }
    }
}

impl HttpBody for Answering {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let mut this = self.project();
        let polled = this.inner.as_mut().poll_frame(cx);
        let ended = match &polled {
            Poll::Ready(None) => true,
            Poll::Ready(Some(Ok(_))) => this.inner.is_end_stream(),
            Poll::Ready(Some(Err(_))) => true,
            Poll::Pending => false,
        };
        if ended && let Some(tap) = this.tap.take() {
            tap.finish(true);
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
