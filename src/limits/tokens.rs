//! Token budgets: `tokens_per_minute`, charged after each response.
//!
//! A refilling bucket per (level, budget, principal[, model]): it starts
//! full at `tokens_per_minute` and refills continuously at
//! `tokens_per_minute / 60` per second, capped at full. Charges arrive after
//! the response (`prompt_eval_count + eval_count`), so a large answer may
//! take the balance below zero; while the balance is not positive requests
//! get 429 with `Retry-After` = time until it is positive again. This is a
//! small hand-rolled bucket rather than governor's `check_n`, which refuses
//! a charge larger than the burst and cannot go into debt.
//!
//! Like rate limiters, buckets live outside the policy snapshot and are
//! keyed by the budget, so an unchanged budget keeps its balance across a
//! reload and a changed one starts full.

use std::{
    collections::HashMap,
    sync::Mutex,
    time::{Duration, Instant},
};

use super::error::{LimitError, Scope};

/// Identifies one bucket.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct BucketKey {
    pub per_minute: u64,
    /// `key:<id>` / `ip:<addr>`, plus `\0<model>` for per-model budgets.
    pub who: String,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    balance: f64,
    at: Instant,
}

impl Bucket {
    fn refill(&mut self, per_minute: u64, now: Instant) {
        let rate = per_minute as f64 / 60.0;
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.balance = (self.balance + elapsed * rate).min(per_minute as f64);
        self.at = now;
    }
}

/// All token buckets. The lock is held for a map lookup and arithmetic only.
#[derive(Debug, Default)]
pub(crate) struct TokenBuckets {
    buckets: Mutex<HashMap<BucketKey, Bucket>>,
}

impl TokenBuckets {
    fn with<R>(&self, key: &BucketKey, f: impl FnOnce(&mut Bucket) -> R) -> R {
        let now = Instant::now();
        let mut map = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        let bucket = map.entry(key.clone()).or_insert(Bucket {
            balance: key.per_minute as f64,
            at: now,
        });
        bucket.refill(key.per_minute, now);
        f(bucket)
    }

    /// 429 while the budget is spent.
    pub(crate) fn check(&self, key: &BucketKey) -> Result<(), LimitError> {
        let balance = self.with(key, |b| b.balance);
        if balance > 0.0 {
            return Ok(());
        }
        let rate = key.per_minute as f64 / 60.0;
        let wait = Duration::from_secs_f64(((1.0 - balance) / rate).min(86_400.0));
        metrics::counter!("augur_rate_limited_total", "scope" => Scope::Tokens.as_str())
            .increment(1);
        Err(LimitError::RateLimited {
            scope: Scope::Tokens,
            limit: key.per_minute,
            retry_after: wait,
        })
    }

    /// Spend `tokens`; the balance may go negative.
    pub(crate) fn charge(&self, key: &BucketKey, tokens: u64) {
        self.with(key, |b| b.balance -= tokens as f64);
    }

    /// Current balance (tests and diagnostics).
    pub(crate) fn balance(&self, key: &BucketKey) -> f64 {
        self.with(key, |b| b.balance)
    }

    /// Each bucket's key, budget and balance now (at most `max_rows`, the
    /// most spent first).
    pub(crate) fn views(&self, max_rows: usize) -> Vec<(String, u64, f64)> {
        let now = Instant::now();
        let mut rows: Vec<(String, u64, f64)> = {
            let mut map = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
            map.iter_mut()
                .map(|(k, b)| {
                    b.refill(k.per_minute, now);
                    (k.who.clone(), k.per_minute, b.balance)
                })
                .collect()
        };
        rows.sort_unstable_by(|a, b| {
            let spent = |r: &(String, u64, f64)| r.2 / r.1.max(1) as f64;
            spent(a).total_cmp(&spent(b)).then_with(|| a.0.cmp(&b.0))
        });
        rows.truncate(max_rows);
        rows
    }

    /// Drop full buckets: a new bucket starts full anyway.
    pub(crate) fn housekeeping(&self) {
        let now = Instant::now();
        let mut map = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        map.retain(|k, b| {
            b.refill(k.per_minute, now);
            b.balance < k.per_minute as f64
        });
    }
}

#[cfg(test)]
#[path = "tokens_tests.rs"]
mod tests;
