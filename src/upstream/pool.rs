//! Kept-alive HTTP/1.1 connections to the upstream, each driven by the
//! request that is using it.
//!
//! A hyper client connection is a future that performs the connection's
//! I/O. hyper-util's pooled client spawns that future as a task of its own
//! and hands the response to the request through a one-slot channel, so
//! each chunk of an NDJSON stream costs a task hand-off and its own write
//! to the client. Here the request's task polls the connection itself:
//! while the request is sent, while the response head is awaited, and from
//! the response body. Chunks that reach augur together leave together, in
//! one write, and every chunk is still flushed as soon as nothing more has
//! arrived, as a line-by-line stream needs.
//!
//! A connection goes back to the pool only once its response has ended
//! cleanly. A response dropped early (the client went away) closes its
//! connection, which is what tells Ollama to stop generating.

use std::{
    collections::VecDeque,
    future::Future,
    pin::Pin,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    task::{Context, Poll},
    time::{Duration, Instant},
};

use axum::body::Body;
use bytes::Bytes;
use http::{Request, Response};
use http_body::{Body as HttpBody, Frame, SizeHint};
use hyper::{body::Incoming, client::conn::http1};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use super::socket::{self, Heard, Socket};
use crate::error::ProxyError;

mod ahead;
mod dial;

pub(crate) use ahead::Ahead;
use dial::Dial;
pub(crate) use dial::{Placed, SlotAddr};

type Conn = http1::Connection<TokioIo<Socket>, Body>;

thread_local! {
    static CONNECTIONS_OPENED: metrics::Counter =
        metrics::counter!("augur_upstream_connections_opened_total");
}

/// Idle connections to one upstream address.
#[derive(Clone)]
pub(super) struct Pool {
    inner: Arc<Inner>,
}

struct Inner {
    /// Oldest first; requests take the newest.
    idle: Mutex<VecDeque<Idle>>,
    dial: Dial,
    connect_timeout: Duration,
    idle_timeout: Duration,
    max_idle: usize,
    /// Connections handed to requests and not back yet, and the most at
    /// once since the last top-up (see `ahead.rs`).
    in_use: AtomicUsize,
    peak: AtomicUsize,
}

struct Idle {
    lease: Lease,
    since: Instant,
}

/// One connection, held by one request at a time.
pub(super) struct Lease {
    sender: http1::SendRequest<Body>,
    /// `None` once the connection has closed. Boxed: a lease moves from
    /// the pool to a request, into its response body and back, and hyper's
    /// connection state is kilobytes.
    conn: Option<Box<Conn>>,
    pool: Pool,
    /// Whether the upstream sent anything since the last request began.
    heard: Heard,
    /// Opened for this request rather than taken from the pool.
    pub fresh: bool,
    /// Held by a request (counted in `Inner::in_use`), not idle.
    out: bool,
    /// The generation of the address it was opened to (0: a fixed one).
    generation: u64,
}

/// Why a new connection could not be opened.
enum Opening {
    TimedOut,
    Refused(std::io::Error),
    Handshake(hyper::Error),
}

/// Why a request could not be sent; `request` is given back when it never
/// reached the connection, so it can be retried on another one.
pub(super) struct SendError {
    pub error: hyper::Error,
    pub request: Option<Request<Body>>,
    /// The request was written (in part or whole), then the connection
    /// closed or was reset before one byte of an answer arrived.
    pub unanswered: bool,
}

impl Pool {
    /// A pool for `addr` (`host:port`), keeping at most `max_idle`
    /// connections for at most `idle_timeout` each.
    pub(super) fn new(
        addr: String,
        connect_timeout: Duration,
        idle_timeout: Duration,
        max_idle: usize,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                idle: Mutex::new(VecDeque::new()),
                dial: Dial::Fixed(addr),
                connect_timeout,
                idle_timeout,
                max_idle,
                in_use: AtomicUsize::new(0),
                peak: AtomicUsize::new(0),
            }),
        }
    }

    /// A connection ready for a request: the most recently used idle one
    /// that is still open, or a new one.
    pub(super) async fn checkout(&self) -> Result<Lease, ProxyError> {
        while let Some(idle) = self.take_idle() {
            if idle.since.elapsed() >= self.inner.idle_timeout
                || !self.inner.dial.current(idle.lease.generation)
            {
                continue;
            }
            let mut lease = idle.lease;
            // Outside tokio's cooperative budget: once a task has used it
            // up, socket reads answer "pending" without looking, and a
            // connection the upstream closed would pass for an open one.
            // After an upstream restart every idle connection is closed,
            // and they are all checked here, one read each.
            let reusable = std::future::poll_fn(|cx| Poll::Ready(lease.poll_reusable(cx)));
            if tokio::task::unconstrained(reusable).await {
                return Ok(self.hand_out(lease));
            }
        }
        self.connect().await
    }

    /// `lease`, counted as in use until it is back or closed.
    fn hand_out(&self, mut lease: Lease) -> Lease {
        lease.out = true;
        let in_use = self.inner.in_use.fetch_add(1, Ordering::Relaxed) + 1;
        self.inner.peak.fetch_max(in_use, Ordering::Relaxed);
        lease
    }

    /// A new connection.
    pub(super) async fn connect(&self) -> Result<Lease, ProxyError> {
        // Boxed: opening is rare, and its state would otherwise be part of
        // every request's future.
        let opened = Box::pin(self.open())
            .await
            .map(|lease| self.hand_out(lease));
        opened.map_err(|failed| {
            // The address goes to the log only: clients are told what
            // failed, not where augur's upstreams are.
            let upstream = self.inner.dial.describe();
            let upstream = upstream.as_str();
            match failed {
                Opening::TimedOut => {
                    tracing::warn!(upstream, "timed out connecting to the upstream");
                    ProxyError::UpstreamTimeout(self.inner.connect_timeout.as_millis())
                }
                Opening::Refused(e) => {
                    tracing::warn!(upstream, error = %e, "cannot connect to the upstream");
                    ProxyError::UpstreamUnavailable(format!(
                        "cannot connect to the upstream: {}",
                        e.kind()
                    ))
                }
                Opening::Handshake(e) => {
                    tracing::warn!(upstream, error = %e, "upstream handshake failed");
                    ProxyError::UpstreamUnavailable("upstream handshake failed".into())
                }
            }
        })
    }

    /// A new connection, or why not (unlogged).
    async fn open(&self) -> Result<Lease, Opening> {
        let (stream, generation) = match &self.inner.dial {
            Dial::Fixed(addr) => {
                let connect = TcpStream::connect(addr.as_str());
                (
                    tokio::time::timeout(self.inner.connect_timeout, connect).await,
                    0,
                )
            }
            Dial::Slot(slot) => {
                let placed = slot
                    .load()
                    .ok_or_else(|| Opening::Refused(dial::no_address()))?;
                let connect = TcpStream::connect(placed.addr);
                let timed = tokio::time::timeout(self.inner.connect_timeout, connect);
                (timed.await, placed.generation)
            }
        };
        let stream = match stream {
            Err(_) => return Err(Opening::TimedOut),
            Ok(Err(e)) => return Err(Opening::Refused(e)),
            Ok(Ok(stream)) => stream,
        };
        let _ = stream.set_nodelay(true);
        let (socket, heard) = Socket::new(stream);
        let (sender, conn) = http1::Builder::new()
            .handshake(TokioIo::new(socket))
            .await
            .map_err(Opening::Handshake)?;
        CONNECTIONS_OPENED.with(|c| c.increment(1));
        Ok(Lease {
            sender,
            conn: Some(Box::new(conn)),
            pool: self.clone(),
            heard,
            fresh: true,
            out: false,
            generation,
        })
    }

    fn take_idle(&self) -> Option<Idle> {
        self.inner.idle.lock().ok()?.pop_back()
    }

    /// Close idle connections older than the idle timeout, and those the
    /// upstream has closed (after an Ollama restart they would otherwise
    /// hold their descriptors until taken).
    pub(super) async fn sweep(&self) {
        // Unconstrained for the same reason as in `checkout`; a waker that
        // does nothing, as nothing waits on an idle connection.
        let sweep = std::future::poll_fn(|_| {
            let mut cx = Context::from_waker(std::task::Waker::noop());
            if let Ok(mut idle) = self.inner.idle.lock() {
                let timeout = self.inner.idle_timeout;
                let dial = &self.inner.dial;
                idle.retain_mut(|i| {
                    i.since.elapsed() < timeout
                        && dial.current(i.lease.generation)
                        && i.lease.poll_reusable(&mut cx)
                });
            }
            Poll::Ready(())
        });
        tokio::task::unconstrained(sweep).await
    }

    /// Idle connections held.
    #[cfg(test)]
    pub(super) fn idle_count(&self) -> usize {
        self.inner.idle.lock().map(|i| i.len()).unwrap_or(0)
    }

    fn put_back(&self, mut lease: Lease) {
        if lease.out {
            lease.out = false;
            self.inner.in_use.fetch_sub(1, Ordering::Relaxed);
        }
        if lease.conn.is_none()
            || lease.sender.is_closed()
            || !self.inner.dial.current(lease.generation)
        {
            return;
        }
        lease.fresh = false;
        if let Ok(mut idle) = self.inner.idle.lock()
            && idle.len() < self.inner.max_idle
        {
            idle.push_back(Idle {
                lease,
                since: Instant::now(),
            });
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if self.out {
            self.pool.inner.in_use.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl Lease {
    /// Poll the connection's I/O; notes when it has closed.
    fn drive(&mut self, cx: &mut Context<'_>) {
        if let Some(conn) = self.conn.as_mut()
            && Pin::new(&mut **conn).poll(cx).is_ready()
        {
            self.conn = None;
        }
    }

    /// Whether an idle connection can take a new request: still open and
    /// done with its previous exchange.
    fn poll_reusable(&mut self, cx: &mut Context<'_>) -> bool {
        self.drive(cx);
        self.conn.is_some() && matches!(self.sender.poll_ready(cx), Poll::Ready(Ok(())))
    }

    /// Send `req` and drive the connection until the response head has
    /// arrived; the body keeps driving it from then on.
    pub(super) async fn send(
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
pub(super) struct DrivenBody {
    inner: Incoming,
    lease: Option<Lease>,
}

impl DrivenBody {
    fn release(&mut self) {
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

#[cfg(test)]
#[path = "pool_tests.rs"]
mod tests;
