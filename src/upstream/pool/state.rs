//! What a pool is made of: its idle connections, its dialer and bounds,
//! a [`Lease`] on one connection, and why opening or sending failed.

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex, atomic::AtomicUsize},
    time::{Duration, Instant},
};

use axum::body::Body;
use http::Request;
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;

use crate::upstream::socket::{Heard, Socket};

use super::dial::Dial;

pub(super) type Conn = http1::Connection<TokioIo<Socket>, Body>;

thread_local! {
    pub(super) static CONNECTIONS_OPENED: metrics::Counter =
        metrics::counter!("augur_upstream_connections_opened_total");
}

/// Idle connections to one upstream address.
#[derive(Clone)]
pub(crate) struct Pool {
    pub(super) inner: Arc<Inner>,
}

pub(super) struct Inner {
    /// Oldest first; requests take the newest.
    pub(super) idle: Mutex<VecDeque<Idle>>,
    pub(super) dial: Dial,
    pub(super) connect_timeout: Duration,
    pub(super) idle_timeout: Duration,
    pub(super) max_idle: usize,
    /// Connections handed to requests and not back yet, and the most at
    /// once since the last top-up (see `ahead.rs`).
    pub(super) in_use: AtomicUsize,
    pub(super) peak: AtomicUsize,
}

pub(super) struct Idle {
    pub(super) lease: Lease,
    pub(super) since: Instant,
}

/// One connection, held by one request at a time.
pub(crate) struct Lease {
    pub(super) sender: http1::SendRequest<Body>,
    /// `None` once the connection has closed. Boxed: a lease moves from
    /// the pool to a request, into its response body and back, and hyper's
    /// connection state is kilobytes.
    pub(super) conn: Option<Box<Conn>>,
    pub(super) pool: Pool,
    /// Whether the upstream sent anything since the last request began.
    pub(super) heard: Heard,
    /// Opened for this request rather than taken from the pool.
    pub fresh: bool,
    /// Held by a request (counted in `Inner::in_use`), not idle.
    pub(super) out: bool,
    /// The generation of the address it was opened to (0: a fixed one).
    pub(super) generation: u64,
}

/// Why a new connection could not be opened.
pub(super) enum Opening {
    TimedOut,
    Refused(std::io::Error),
    Handshake(hyper::Error),
}

/// Why a request could not be sent; `request` is given back when it never
/// reached the connection, so it can be retried on another one.
pub(crate) struct SendError {
    pub error: hyper::Error,
    pub request: Option<Request<Body>>,
    /// The request was written (in part or whole), then the connection
    /// closed or was reset before one byte of an answer arrived.
    pub unanswered: bool,
}
