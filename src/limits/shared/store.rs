//! [`SharedStore`]: a handle on the store, and its two calls (admit,
//! charge), each bounded by the store timeout and failing at once while
//! there is no connection.

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering},
    },
    time::Duration,
};

use tokio::sync::Notify;

use super::connection;
use super::keys::BucketSpec;
use super::scripts::{self, Verdict};
use super::state::{Health, Inner, StoreError, TIMEOUTS_BEFORE_RECONNECT, broken, lock, lost};

/// A handle on the shared store; cheap to clone.
#[derive(Clone)]
pub(crate) struct SharedStore {
    pub(super) inner: Arc<Inner>,
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
    pub(super) fn timed_out(&self, number: u64, seen: u64) {
        if self.inner.replies.load(Ordering::Relaxed) != seen {
            return;
        }
        let n = self.inner.timeouts.fetch_add(1, Ordering::Relaxed) + 1;
        if n >= TIMEOUTS_BEFORE_RECONNECT {
            self.lost(number, "no answer to several calls in a row");
        }
    }
}
