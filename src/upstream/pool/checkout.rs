//! A pool's connections handed out and taken back: the newest idle one,
//! else a new one, each handed to one request at a time.

use std::{
    collections::VecDeque,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    task::{Context, Poll},
    time::{Duration, Instant},
};

use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use crate::error::ProxyError;
use crate::upstream::socket::Socket;

use super::dial::{self, Dial, SlotAddr};
use super::state::{CONNECTIONS_OPENED, Idle, Inner, Lease, Opening, Pool};

impl Pool {
    /// A pool for `addr` (`host:port`), keeping at most `max_idle`
    /// connections for at most `idle_timeout` each.
    pub(in crate::upstream) fn new(
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

    /// The same pool settings, connecting to `slot`'s current address (a
    /// member found by DNS), with no connection yet.
    pub(in crate::upstream) fn dialing(&self, slot: Arc<SlotAddr>) -> Self {
        Self {
            inner: Arc::new(Inner {
                idle: Mutex::new(VecDeque::new()),
                dial: Dial::Slot(slot),
                connect_timeout: self.inner.connect_timeout,
                idle_timeout: self.inner.idle_timeout,
                max_idle: self.inner.max_idle,
                in_use: AtomicUsize::new(0),
                peak: AtomicUsize::new(0),
            }),
        }
    }

    /// A connection ready for a request: the most recently used idle one
    /// that is still open, or a new one.
    pub(in crate::upstream) async fn checkout(&self) -> Result<Lease, ProxyError> {
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
    pub(super) fn hand_out(&self, mut lease: Lease) -> Lease {
        lease.out = true;
        let in_use = self.inner.in_use.fetch_add(1, Ordering::Relaxed) + 1;
        self.inner.peak.fetch_max(in_use, Ordering::Relaxed);
        lease
    }

    /// A new connection.
    pub(in crate::upstream) async fn connect(&self) -> Result<Lease, ProxyError> {
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
    pub(super) async fn open(&self) -> Result<Lease, Opening> {
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

    pub(super) fn take_idle(&self) -> Option<Idle> {
        self.inner.idle.lock().ok()?.pop_back()
    }

    /// Close idle connections older than the idle timeout, and those the
    /// upstream has closed (after an Ollama restart they would otherwise
    /// hold their descriptors until taken).
    pub(in crate::upstream) async fn sweep(&self) {
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
    pub(in crate::upstream) fn idle_count(&self) -> usize {
        self.inner.idle.lock().map(|i| i.len()).unwrap_or(0)
    }

    pub(super) fn put_back(&self, mut lease: Lease) {
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
