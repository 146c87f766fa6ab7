//! How an upstream request failed, and whether another attempt (another
//! upstream) may change that: the one place hyper's client errors become
//! [`ProxyError`]s.

use axum::body::Body;
use http::Request;

use super::pool::SendError;
use crate::error::ProxyError;

/// Why an attempt failed, and whether another upstream may be asked.
#[derive(Debug)]
pub(crate) struct Failure {
    pub error: ProxyError,
    /// Nothing reached the client and the upstream could not be reached
    /// or reset the connection before answering.
    pub retryable: bool,
    /// The request, when it never left augur.
    pub unsent: Option<Request<Body>>,
    /// No response head came within `first_byte_timeout`: the upstream
    /// took the request and never began to answer.
    pub stalled: bool,
}

impl Failure {
    /// A failure no other upstream would change.
    pub(super) fn final_(error: ProxyError) -> Self {
        Self {
            error,
            retryable: false,
            unsent: None,
            stalled: false,
        }
    }

    pub(super) fn unsent(error: ProxyError, req: Request<Body>) -> Self {
        Self {
            error,
            retryable: true,
            unsent: Some(req),
            stalled: false,
        }
    }

    /// No first byte within `first_byte_timeout`.
    pub(super) fn stalled(error: ProxyError) -> Self {
        Self {
            stalled: true,
            ..Self::final_(error)
        }
    }
}

impl From<SendError> for Failure {
    /// The connection failed before the response head arrived. When the
    /// request's own body failed (the client left mid-upload, or sent more
    /// than the body limit), the upstream is not at fault.
    fn from(e: SendError) -> Self {
        Self {
            error: describe(&e.error),
            retryable: !e.error.is_user(),
            unsent: e.request,
            stalled: false,
        }
    }
}

/// A client error as a 502, with its causes.
fn describe(e: &hyper::Error) -> ProxyError {
    use std::error::Error as _;
    let mut detail = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        detail = format!("{detail}: {s}");
        source = s.source();
    }
    ProxyError::UpstreamUnavailable(detail)
}
