//! The store's connection kept open: opened, checked with `PING`, and
//! opened again with exponential backoff and jitter after a loss.

use std::{
    sync::{Arc, atomic::Ordering},
    time::Duration,
};

use redis::aio::MultiplexedConnection;

use super::state::{
    CONNECT_TIMEOUT, Inner, MAX_BACKOFF, MIN_BACKOFF, PING_INTERVAL, StoreClock, lock, lost,
    set_down,
};

/// Keep a connection open: connect, and after a loss connect again with
/// exponential backoff (with jitter, so replicas do not reconnect in step).
pub(super) async fn supervise(inner: Arc<Inner>) {
    let mut backoff = MIN_BACKOFF;
    let mut number = 0;
    loop {
        let current = lock(&inner.conn).clone();
        if let Some((n, mut conn, _)) = current {
            tokio::select! {
                _ = inner.wake.notified() => {}
                _ = tokio::time::sleep(PING_INTERVAL) => {
                    let cmd = redis::cmd("PING");
                    let ping = cmd.query_async::<String>(&mut conn);
                    match tokio::time::timeout(CONNECT_TIMEOUT, ping).await {
                        Ok(Ok(_)) => {
                            inner.replies.fetch_add(1, Ordering::Relaxed);
                        }
                        Ok(Err(e)) => lost(&inner, n, &e.to_string()),
                        Err(_) => lost(&inner, n, "no answer to PING"),
                    }
                }
            }
            continue;
        }
        match connect(&inner).await {
            Ok((conn, clock)) => {
                number += 1;
                *lock(&inner.conn) = Some((number, conn, clock));
                inner.timeouts.store(0, Ordering::Relaxed);
                *lock(&inner.last_error) = None;
                inner.up.store(true, Ordering::Release);
                if inner.reports {
                    metrics::gauge!("augur_limit_store_up").set(1.0);
                }
                tracing::info!(store = %inner.location, "limit store connected");
                backoff = MIN_BACKOFF;
            }
            Err(e) => {
                metrics::counter!("augur_limit_store_errors_total", "op" => "connect", "reason" => "connection")
                    .increment(1);
                tracing::debug!(store = %inner.location, error = %e, "cannot connect to the limit store");
                set_down(&inner, &e);
                tokio::time::sleep(jitter(backoff)).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}

/// `d` plus up to a quarter of it, from the clock's low bits.
fn jitter(d: Duration) -> Duration {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|t| t.subsec_nanos())
        .unwrap_or(0);
    d + d / 4 * (nanos % 1000) / 1000
}

/// Open a connection, load the scripts and read the store's clock.
async fn connect(inner: &Inner) -> Result<(MultiplexedConnection, StoreClock), String> {
    let config = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(CONNECT_TIMEOUT))
        .set_response_timeout(Some(CONNECT_TIMEOUT));
    let attempt = async {
        let mut conn = inner
            .client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(|e| e.to_string())?;
        inner
            .scripts
            .load(&mut conn)
            .await
            .map_err(|e| e.to_string())?;
        let (secs, micros): (i64, i64) = redis::cmd("TIME")
            .query_async(&mut conn)
            .await
            .map_err(|e| e.to_string())?;
        let clock = StoreClock {
            local: tokio::time::Instant::now(),
            store_us: secs.saturating_mul(1_000_000).saturating_add(micros),
        };
        Ok((conn, clock))
    };
    tokio::time::timeout(CONNECT_TIMEOUT * 2, attempt)
        .await
        .map_err(|_| "connection timed out".to_string())?
}
