//! Sending a request on a kept-alive connection, and once more on a new
//! connection when the upstream had closed the one it went to.
//!
//! An idle connection is checked before it is taken (one the upstream
//! closed is skipped, see `Pool::checkout`), but a close can cross a
//! request on the wire: a server's keep-alive timeout or a load balancer
//! forgetting idle flows, or a connection the kernel completed that the
//! server never accepted (its listen backlog full). Such a request never
//! reached the upstream's application, so it is sent again, once, on a new
//! connection:
//!
//! - always when hyper gave it back unwritten (the connection was found
//!   closed first);
//! - when it was written on a connection taken from the pool that then
//!   closed or reset before one byte of an answer (Go's transport calls
//!   this "server closed idle connection"), and augur holds its body
//!   ([`Replay`]), unless that body changes the upstream's model store.
//!
//! Never after a byte of the answer, never for a connection opened for the
//! request (its failure says something about the upstream), never twice.
//! Each resend counts in `augur_upstream_resends_total{upstream, reason}`.

use axum::body::Body;
use bytes::Bytes;
use http::{Request, Response};

use super::{
    client::Upstream,
    failure::Failure,
    pool::{DrivenBody, SendError},
    replay::Replay,
};

/// Why a request was sent again.
#[derive(Debug, Clone, Copy)]
enum Reason {
    /// The connection was found closed before the request was written.
    Unsent,
    /// It closed or reset after the request, before any byte of an answer.
    Unanswered,
}

impl Reason {
    fn label(self) -> &'static str {
        match self {
            Reason::Unsent => "unsent",
            Reason::Unanswered => "unanswered",
        }
    }
}

impl Upstream {
    /// Send `req` on a pooled connection; once more on a new connection
    /// when the upstream had closed the pooled one (see the module doc).
    /// A request that never left augur is given back in the failure.
    pub(super) async fn send(
        &self,
        req: Request<Body>,
        replay: Option<&Replay>,
    ) -> Result<Response<DrivenBody>, Failure> {
        let lease = match self.pool.checkout().await {
            Ok(lease) => lease,
            Err(error) => return Err(Failure::unsent(error, req)),
        };
        if lease.fresh {
            return lease.send(req).await.map_err(Failure::from);
        }
        // hyper consumes the request: keep a copy to write again.
        let again = replay
            .filter(|r| r.after_write)
            .map(|r| copy(&req, r.body.clone()));
        match lease.send(req).await {
            Ok(response) => Ok(response),
            Err(SendError {
                request: Some(req), ..
            }) => Box::pin(self.again(req, Reason::Unsent)).await,
            Err(e) if e.unanswered => match again {
                Some(req) => Box::pin(self.again(req, Reason::Unanswered)).await,
                None => Err(Failure::from(e)),
            },
            Err(e) => Err(Failure::from(e)),
        }
    }

    /// Send `req` on a new connection, the last try on this upstream.
    async fn again(
        &self,
        req: Request<Body>,
        reason: Reason,
    ) -> Result<Response<DrivenBody>, Failure> {
        let label = reason.label();
        tracing::debug!(
            upstream = %self.name,
            reason = label,
            "the upstream had closed the connection: sending the request again"
        );
        metrics::counter!(
            "augur_upstream_resends_total",
            "upstream" => self.name.clone(),
            "reason" => label
        )
        .increment(1);
        let lease = match self.pool.connect().await {
            Ok(lease) => lease,
            Err(error) => return Err(Failure::unsent(error, req)),
        };
        lease.send(req).await.map_err(Failure::from)
    }
}

/// `req`'s head as it goes upstream, with `body`.
fn copy(req: &Request<Body>, body: Bytes) -> Request<Body> {
    let mut copy = Request::new(Body::from(body));
    *copy.method_mut() = req.method().clone();
    *copy.uri_mut() = req.uri().clone();
    *copy.version_mut() = req.version();
    *copy.headers_mut() = req.headers().clone();
    copy
}
