//! The shared store's state behind every handle: the open connection and
//! the store's clock, health, errors, and the timing constants the
//! connection's supervisor and the calls share.

use std::{
    sync::{
        Mutex,
        atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering},
    },
    time::Duration,
};

use redis::aio::MultiplexedConnection;
use tokio::sync::Notify;

use super::scripts;

pub(super) const MIN_BACKOFF: Duration = Duration::from_millis(50);
pub(super) const MAX_BACKOFF: Duration = Duration::from_secs(2);
pub(super) const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// How often an open connection is checked with `PING` (a handle that
/// makes no calls, such as the admin listener's, learns of a loss so).
pub(super) const PING_INTERVAL: Duration = Duration::from_secs(1);
/// Timeouts in a row after which the connection is replaced.
pub(super) const TIMEOUTS_BEFORE_RECONNECT: u32 = 3;

/// Why a call to the store did not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum StoreError {
    /// No connection (the server is down or not reached yet).
    #[error("limit store unavailable")]
    Unavailable,
    /// No answer within `store_timeout_ms`.
    #[error("limit store did not answer in time")]
    Timeout,
    /// The connection broke during the call.
    #[error("limit store connection lost: {0}")]
    Connection(String),
    /// The server answered with an error (out of memory, a foreign key of
    /// the wrong type, …).
    #[error("limit store error: {0}")]
    Server(String),
}

impl StoreError {
    /// `reason` label of `augur_limit_store_errors_total`.
    pub(super) fn reason(&self) -> &'static str {
        match self {
            Self::Unavailable => "unavailable",
            Self::Timeout => "timeout",
            Self::Connection(_) => "connection",
            Self::Server(_) => "server",
        }
    }
}

/// The store's state for `/-/ready`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Health {
    pub up: bool,
    /// Where the store is (no credentials).
    pub location: String,
    /// The last error, while down.
    pub error: Option<String>,
}

/// The store's clock as read when a connection opened: deadlines are sent
/// on it.
#[derive(Debug, Clone, Copy)]
pub(super) struct StoreClock {
    /// When the answer to `TIME` was read.
    pub(super) local: tokio::time::Instant,
    /// The answer, in microseconds.
    pub(super) store_us: i64,
}

impl StoreClock {
    /// `when` on the store's clock, in microseconds. The answer's travel
    /// time puts it a little behind the store's own reading: a deadline
    /// errs early, never late.
    pub(super) fn at(&self, when: tokio::time::Instant) -> i64 {
        let since = when.saturating_duration_since(self.local).as_micros();
        self.store_us
            .saturating_add(i64::try_from(since).unwrap_or(i64::MAX))
    }
}

/// An open connection: its number (a call that failed on an older one must
/// not drop its replacement), the connection, and the store's clock.
pub(super) type Conn = (u64, MultiplexedConnection, StoreClock);

pub(super) struct Inner {
    pub(super) client: redis::Client,
    pub(super) location: String,
    pub(super) prefix: String,
    pub(super) timeout: Duration,
    pub(super) conn: Mutex<Option<Conn>>,
    pub(super) up: AtomicBool,
    pub(super) timeouts: AtomicU32,
    /// Replies read on any connection (a timeout while this grows is a
    /// slow reply, not a dead connection).
    pub(super) replies: AtomicU64,
    pub(super) last_error: Mutex<Option<String>>,
    pub(super) wake: Notify,
    pub(super) started: AtomicBool,
    pub(super) scripts: scripts::Scripts,
    /// Whether this handle sets `augur_limit_store_up` (the first one,
    /// whose health `/-/ready` shows; not the workers' siblings).
    pub(super) reports: bool,
}

/// Drop connection `number`, if still in use, and have the supervisor open
/// another.
pub(super) fn lost(inner: &Inner, number: u64, why: &str) {
    {
        let mut conn = lock(&inner.conn);
        if !matches!(&*conn, Some((n, ..)) if *n == number) {
            return;
        }
        *conn = None;
    }
    tracing::warn!(store = %inner.location, error = why, "limit store connection lost");
    set_down(inner, why);
    inner.wake.notify_one();
}

/// Whether an error means the connection is gone (rather than the server
/// refusing one command).
pub(super) fn broken(e: &redis::RedisError) -> bool {
    e.is_io_error()
        || e.is_connection_dropped()
        || e.is_connection_refusal()
        || e.is_unrecoverable_error()
}

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

pub(super) fn set_down(inner: &Inner, why: &str) {
    *lock(&inner.last_error) = Some(why.to_string());
    if inner.up.swap(false, Ordering::AcqRel) && inner.reports {
        metrics::gauge!("augur_limit_store_up").set(0.0);
    }
}
