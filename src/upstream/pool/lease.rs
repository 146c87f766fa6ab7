//! A leased connection driven by its request, and the response body
//! ([`DrivenBody`]) that returns it to the pool once it ended cleanly.

use std::{
    future::Future,
    pin::Pin,
    sync::atomic::Ordering,
    task::{Context, Poll},
};

use axum::body::Body;
use bytes::Bytes;
use http::{Request, Response};
use http_body::{Body as HttpBody, Frame, SizeHint};
use hyper::body::Incoming;

use crate::upstream::socket::{self};

use super::state::{Lease, SendError};

impl Drop for Lease {
    fn drop(&mut self) {
        if self.out {
            self.pool.inner.in_use.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl Lease {
    /// Poll the connection's I/O; notes when it has closed.
    pub(super) fn drive(&mut self, cx: &mut Context<'_>) {
        if let Some(conn) = self.conn.as_mut()
            && Pin::new(&mut **conn).poll(cx).is_ready()
        {
            self.conn = None;
        }
    }

    /// Whether an idle connection can take a new request: still open and
    /// done with its previous exchange.
    pub(super) fn poll_reusable(&mut self, cx: &mut Context<'_>) -> bool {
        self.drive(cx);
        self.conn.is_some() && matches!(self.sender.poll_ready(cx), Poll::Ready(Ok(())))
    }

    /// Send `req` and drive the connection until the response head has
    /// arrived; the body keeps driving it from then on.
    pub(in crate::upstream) async fn send(
        mut self,
        req: Request<Body>,
    ) -> Result<Response<DrivenBody>, SendError> {
        self.heard.clear();
        let mut response = std::pin::pin!(self.sender.try_send_request(req));
        let result = std::future::poll_fn(|cx| {
            self.drive(cx);
            response.as_mut().poll(cx)
        })
        .await;
        match result {
            Ok(response) => Ok(response.map(|inner| DrivenBody {
                inner,
                lease: Some(self),
            })),
            Err(mut e) => {
                let request = e.take_message();
                let error = e.into_error();
                let unanswered =
                    request.is_none() && !self.heard.any() && socket::closed_or_reset(&error);
                Err(SendError {
                    error,
                    request,
                    unanswered,
                })
            }
        }
    }
}

/// A response body that drives its connection, and returns the connection
/// to the pool when it has ended cleanly.
pub(crate) struct DrivenBody {
    inner: Incoming,
    lease: Option<Lease>,
}

impl DrivenBody {
    pub(super) fn release(&mut self) {
        if let Some(lease) = self.lease.take() {
            let pool = lease.pool.clone();
            pool.put_back(lease);
        }
    }
}

impl HttpBody for DrivenBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let this = &mut *self;
        if let Some(lease) = this.lease.as_mut() {
            lease.drive(cx);
        }
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(None) => this.release(),
            Poll::Ready(Some(Ok(_))) if this.inner.is_end_stream() => this.release(),
            Poll::Ready(Some(Err(_))) => this.lease = None,
            _ => {}
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

impl Drop for DrivenBody {
    fn drop(&mut self) {
        // A body of known length may be dropped as soon as its last byte
        // was read (or, empty, without being read at all): its connection
        // is still good. Any other early drop closes the connection.
        if self.inner.is_end_stream() {
            self.release();
        }
    }
}
