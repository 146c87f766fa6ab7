//! Rate limits and token budgets shared by every replica, in Redis or
//! Valkey (`[limits] store = "redis://host:port/db"`).
//!
//! Each admission is one call: [`SharedStore::admit`] runs `admit.lua`,
//! which checks every bucket that applies to the request on the server's
//! clock and consumes them all or none. The answer's tokens are charged
//! afterwards by one more call ([`SharedStore::charge`], `charge.lua`).
//! Scripts are sent by digest (`EVALSHA`), loaded once per connection and
//! again whenever the server has lost them.
//!
//! Each worker thread has its own multiplexed connection, opened on its own
//! event loop before it serves (so a call never hops threads), and the
//! admin listener one more, whose health `/-/ready` shows. A supervisor
//! task per connection opens it, and opens it again with exponential
//! backoff (50 ms to 2 s) after the server went away; an open connection is
//! checked with `PING` every second. A call never waits for a connection: while
//! there is none, or when the server does not answer within
//! `store_timeout_ms`, the call fails at once with a [`StoreError`] and the
//! policy's `limits.on_store_error` decides. Three timeouts in a row, with
//! no reply to any call of the connection meanwhile, count as a lost
//! connection: a slow reply while others keep arriving (a loaded replica's
//! own scheduling delay) is a timeout, not an outage.
//!
//! An admission carries its deadline on the store's clock (read when the
//! connection opened): a script that runs after it, because the caller gave
//! up waiting, consumes nothing.

pub(crate) mod admission;
mod connection;
mod keys;
mod scripts;
#[cfg(test)]
pub(crate) mod tests;

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering},
    },
    time::Duration,
};

use redis::aio::MultiplexedConnection;
use tokio::sync::Notify;

pub(crate) use keys::{BucketSpec, key_for};
pub(crate) use scripts::Verdict;

const MIN_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(2);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// How often an open connection is checked with `PING` (a handle that
/// makes no calls, such as the admin listener's, learns of a loss so).
const PING_INTERVAL: Duration = Duration::from_secs(1);
/// Timeouts in a row after which the connection is replaced.
const TIMEOUTS_BEFORE_RECONNECT: u32 = 3;

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
    fn reason(&self) -> &'static str {
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
struct StoreClock {
    /// When the answer to `TIME` was read.
    local: tokio::time::Instant,
    /// The answer, in microseconds.
    store_us: i64,
}

impl StoreClock {
    /// `when` on the store's clock, in microseconds. The answer's travel
    /// time puts it a little behind the store's own reading: a deadline
    /// errs early, never late.
    fn at(&self, when: tokio::time::Instant) -> i64 {
        let since = when.saturating_duration_since(self.local).as_micros();
        self.store_us
            .saturating_add(i64::try_from(since).unwrap_or(i64::MAX))
    }
}

/// An open connection: its number (a call that failed on an older one must
/// not drop its replacement), the connection, and the store's clock.
type Conn = (u64, MultiplexedConnection, StoreClock);

struct Inner {
    client: redis::Client,
    location: String,
    prefix: String,
    timeout: Duration,
    conn: Mutex<Option<Conn>>,
    up: AtomicBool,
    timeouts: AtomicU32,
    /// Replies read on any connection (a timeout while this grows is a
    /// slow reply, not a dead connection).
    replies: AtomicU64,
    last_error: Mutex<Option<String>>,
    wake: Notify,
    started: AtomicBool,
    scripts: scripts::Scripts,
    /// Whether this handle sets `augur_limit_store_up` (the first one,
    /// whose health `/-/ready` shows; not the workers' siblings).
    reports: bool,
}

/// A handle on the shared store; cheap to clone.
#[derive(Clone)]
pub(crate) struct SharedStore {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for SharedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedStore")
            .field("location", &self.inner.location)
            .field("up", &self.inner.up.load(Ordering::Relaxed))
            .finish()
    }
}

impl SharedStore {
    /// A store at `url` (checked by the config); nothing is connected
    /// until [`SharedStore::start`].
    pub(crate) fn new(url: &str, prefix: &str, timeout: Duration) -> Result<Self, String> {
        let client = redis::Client::open(url).map_err(|e| e.to_string())?;
        let info = client.get_connection_info();
        let location = format!("{}", info.addr());
        metrics::gauge!("augur_limit_store_up").set(0.0);
        Ok(Self::unconnected(
            client,
            location,
            prefix.to_string(),
            timeout,
            true,
        ))
    }

    /// Another handle on the same store with a connection of its own, for
    /// another thread's event loop (a connection's I/O runs on the event
    /// loop that opened it).
    pub(crate) fn sibling(&self) -> Self {
        let i = &self.inner;
        Self::unconnected(
            i.client.clone(),
            i.location.clone(),
            i.prefix.clone(),
            i.timeout,
            false,
        )
    }

    /// A handle on `client` with no connection yet; `reports` says whether
    /// it sets `augur_limit_store_up`.
    fn unconnected(
        client: redis::Client,
        location: String,
        prefix: String,
        timeout: Duration,
        reports: bool,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                client,
                location,
                prefix,
                timeout,
                conn: Mutex::new(None),
                up: AtomicBool::new(false),
                timeouts: AtomicU32::new(0),
                replies: AtomicU64::new(0),
                last_error: Mutex::new(Some("not connected yet".into())),
                wake: Notify::new(),
                started: AtomicBool::new(false),
                scripts: scripts::Scripts::new(),
                reports,
            }),
        }
    }

    /// Start the connection supervisor on the current runtime (once), and
    /// wait up to `wait` for the first connection.
    pub(crate) async fn start(&self, wait: Duration) {
        self.ensure_started();
        let deadline = tokio::time::Instant::now() + wait;
        while !self.is_up() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    fn ensure_started(&self) {
        if self.inner.started.swap(true, Ordering::AcqRel) {
            return;
        }
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                rt.spawn(connection::supervise(self.inner.clone()));
            }
            Err(_) => self.inner.started.store(false, Ordering::Release),
        }
    }

    pub(crate) fn is_up(&self) -> bool {
        self.inner.up.load(Ordering::Acquire)
    }

    pub(crate) fn health(&self) -> Health {
        let error = if self.is_up() {
            None
        } else {
            lock(&self.inner.last_error).clone()
        };
        Health {
            up: self.is_up(),
            location: self.inner.location.clone(),
            error,
        }
    }

    /// The prefix of every key.
    pub(crate) fn prefix(&self) -> &str {
        &self.inner.prefix
    }

    /// Check and consume `buckets` at once; `reserve` tokens are taken from
    /// every token bucket until the answer's charge replaces them.
    pub(crate) async fn admit(
        &self,
        buckets: &[BucketSpec],
        reserve: u64,
    ) -> Result<Verdict, StoreError> {
        let scripts = &self.inner.scripts;
        let raw: Vec<i64> = self
            .call("admit", |deadline| {
                scripts.admit(buckets, reserve, deadline)
            })
            .await?;
        match scripts::verdict(&raw, buckets.len()).map_err(StoreError::Server)? {
            // Read before augur's own deadline: the clocks differ by the
            // answer's travel time.
            Verdict::Late => Err(StoreError::Timeout),
            verdict => Ok(verdict),
        }
    }

    /// Charge `amount` tokens (negative: refund) to token buckets given as
    /// (key, tokens_per_minute); returns their balances.
    pub(crate) async fn charge(
        &self,
        buckets: &[(String, u64)],
        amount: i64,
    ) -> Result<Vec<i64>, StoreError> {
        let scripts = &self.inner.scripts;
        self.call("charge", |_| scripts.charge(buckets, amount))
            .await
    }

    /// Run the script `invocation` builds, given the call's deadline on the
    /// store's clock.
    async fn call<'s, T: redis::FromRedisValue>(
        &self,
        op: &'static str,
        invocation: impl FnOnce(i64) -> redis::ScriptInvocation<'s>,
    ) -> Result<T, StoreError> {
        self.ensure_started();
        let conn = lock(&self.inner.conn).clone();
        let result = match conn {
            None => Err(StoreError::Unavailable),
            Some((number, mut conn, clock)) => {
                let deadline = tokio::time::Instant::now() + self.inner.timeout;
                let invocation = invocation(clock.at(deadline));
                let seen = self.inner.replies.load(Ordering::Relaxed);
                match tokio::time::timeout_at(deadline, invocation.invoke_async(&mut conn)).await {
                    Ok(Ok(v)) => {
                        self.inner.replies.fetch_add(1, Ordering::Relaxed);
                        self.inner.timeouts.store(0, Ordering::Relaxed);
                        Ok(v)
                    }
                    Ok(Err(e)) if broken(&e) => {
                        self.lost(number, &e.to_string());
                        Err(StoreError::Connection(e.to_string()))
                    }
                    Ok(Err(e)) => {
                        self.inner.replies.fetch_add(1, Ordering::Relaxed);
                        Err(StoreError::Server(e.to_string()))
                    }
                    Err(_) => {
                        self.timed_out(number, seen);
                        Err(StoreError::Timeout)
                    }
                }
            }
        };
        if let Err(e) = &result {
            metrics::counter!("augur_limit_store_errors_total", "op" => op, "reason" => e.reason())
                .increment(1);
            tracing::debug!(op, error = %e, "limit store call failed");
        }
        result
    }

    fn lost(&self, number: u64, why: &str) {
        lost(&self.inner, number, why);
    }

    /// A call on connection `number` timed out, `seen` replies having been
    /// read when it was sent: counted toward a lost connection only when no
    /// reply came since.
    fn timed_out(&self, number: u64, seen: u64) {
        if self.inner.replies.load(Ordering::Relaxed) != seen {
            return;
        }
        let n = self.inner.timeouts.fetch_add(1, Ordering::Relaxed) + 1;
        if n >= TIMEOUTS_BEFORE_RECONNECT {
            self.lost(number, "no answer to several calls in a row");
        }
    }
}

/// Drop connection `number`, if still in use, and have the supervisor open
/// another.
fn lost(inner: &Inner, number: u64, why: &str) {
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
fn broken(e: &redis::RedisError) -> bool {
    e.is_io_error()
        || e.is_connection_dropped()
        || e.is_connection_refusal()
        || e.is_unrecoverable_error()
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn set_down(inner: &Inner, why: &str) {
    *lock(&inner.last_error) = Some(why.to_string());
    if inner.up.swap(false, Ordering::AcqRel) && inner.reports {
        metrics::gauge!("augur_limit_store_up").set(0.0);
    }
}
