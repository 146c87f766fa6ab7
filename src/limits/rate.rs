//! Request rate limits: governor keyed GCRA limiters, one per
//! (scope, quota), each keyed by principal or (principal, model).
//!
//! Limiters live outside the policy snapshot. A reload that leaves a quota
//! unchanged finds the same limiter and the same per-key state; a changed
//! quota maps to another limiter, so that scope starts fresh; nothing else
//! is reset. A denied request still spends cells in scopes checked before
//! the one that denied it (as a request counts once it arrives).

use std::{
    collections::HashMap,
    num::NonZeroU32,
    sync::{Arc, Mutex, RwLock},
    time::{Duration, Instant},
};

use governor::{
    Quota, RateLimiter,
    clock::{Clock, DefaultClock},
    middleware::StateInformationMiddleware,
    state::keyed::DefaultKeyedStateStore,
};

use super::error::{LimitError, Scope};
use crate::policy::RateLimit;

type Limiter =
    RateLimiter<String, DefaultKeyedStateStore<String>, DefaultClock, StateInformationMiddleware>;

/// Values for `RateLimit-*` headers on an admitted request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateInfo {
    /// Burst size of the tightest limit.
    pub limit: u32,
    pub remaining: u32,
    /// Seconds until the bucket is full again.
    pub reset_secs: u64,
}

impl RateInfo {
    /// `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset`.
    pub fn headers(&self) -> http::HeaderMap {
        let mut h = http::HeaderMap::new();
        for (name, v) in [
            ("ratelimit-limit", u64::from(self.limit)),
            ("ratelimit-remaining", u64::from(self.remaining)),
            ("ratelimit-reset", self.reset_secs),
        ] {
            h.insert(http::HeaderName::from_static(name), v.into());
        }
        h
    }

    /// A GCRA bucket of `burst` with `remaining` requests left, refilling
    /// one per `interval`: reset is when it is full again, in whole
    /// seconds rounded up.
    pub(crate) fn gcra(burst: u32, remaining: u32, interval: Duration) -> Self {
        let to_full = interval.saturating_mul(burst.saturating_sub(remaining));
        Self {
            limit: burst,
            remaining,
            reset_secs: to_full.as_secs() + u64::from(to_full.subsec_nanos() > 0),
        }
    }

    /// The tighter of two (fewer remaining).
    pub(crate) fn tighter(a: Option<Self>, b: Option<Self>) -> Option<Self> {
        match (a, b) {
            (Some(a), Some(b)) => Some(if b.remaining < a.remaining { b } else { a }),
            (a, b) => a.or(b),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct QuotaKey {
    scope: Scope,
    per_minute: u32,
    burst: u32,
}

/// The governor quota of a `rate_limit` block, if it limits requests.
fn quota_of(rate: &RateLimit) -> Option<(u32, u32, Quota)> {
    let rpm = NonZeroU32::new(rate.requests_per_minute?)?;
    let burst = rate.burst.and_then(NonZeroU32::new).unwrap_or(rpm);
    Some((
        rpm.get(),
        burst.get(),
        Quota::per_minute(rpm).allow_burst(burst),
    ))
}

/// Most (scope, key) pairs whose last check is kept for the status page.
const MAX_SEEN: usize = 256;

/// The last check of one (scope, key): its bucket as it was then.
#[derive(Debug, Clone, Copy)]
struct Seen {
    burst: u32,
    remaining: u32,
    interval: Duration,
    at: Instant,
}

impl Seen {
    /// Requests left now: what was left, refilled one per interval since.
    fn remaining_now(&self, now: Instant) -> u32 {
        let refilled =
            now.saturating_duration_since(self.at).as_nanos() / self.interval.as_nanos().max(1);
        let refilled = u32::try_from(refilled).unwrap_or(u32::MAX);
        self.remaining.saturating_add(refilled).min(self.burst)
    }
}

/// One row of [`RateLimiters::views`]: scope, key, burst, requests left now.
pub(crate) type RateView = (Scope, String, u32, u32);

/// All request-rate limiters.
#[derive(Debug, Default)]
pub(crate) struct RateLimiters {
    limiters: RwLock<HashMap<QuotaKey, Arc<Limiter>>>,
    /// The last check per (scope, key), at most [`MAX_SEEN`]; written
    /// only when its lock is free (a request never waits for it).
    seen: Mutex<HashMap<(Scope, String), Seen>>,
}

impl RateLimiters {
    fn limiter(&self, key: QuotaKey, quota: Quota) -> Arc<Limiter> {
        if let Ok(map) = self.limiters.read()
            && let Some(l) = map.get(&key)
        {
            return l.clone();
        }
        let mut map = self.limiters.write().unwrap_or_else(|p| p.into_inner());
        map.entry(key)
            .or_insert_with(|| Arc::new(RateLimiter::dashmap(quota).with_middleware()))
            .clone()
    }

    /// Take one cell for `who` under `rate`; `Ok(None)` when `rate` sets no
    /// request limit.
    pub(crate) fn check(
        &self,
        scope: Scope,
        rate: &RateLimit,
        who: &str,
    ) -> Result<Option<RateInfo>, LimitError> {
        let Some((per_minute, burst, quota)) = quota_of(rate) else {
            return Ok(None);
        };
        let key = QuotaKey {
            scope,
            per_minute,
            burst,
        };
        let limiter = self.limiter(key, quota);
        let interval = quota.replenish_interval();
        match limiter.check_key(&who.to_string()) {
            Ok(state) => {
                let remaining = state.remaining_burst_capacity();
                self.note(scope, who, burst, remaining, interval);
                Ok(Some(RateInfo::gcra(burst, remaining, interval)))
            }
            Err(not_until) => {
                self.note(scope, who, burst, 0, interval);
                let wait: Duration = not_until.wait_time_from(limiter.clock().now());
                metrics::counter!("augur_rate_limited_total", "scope" => scope.as_str())
                    .increment(1);
                Err(LimitError::RateLimited {
                    scope,
                    limit: u64::from(burst),
                    retry_after: wait,
                })
            }
        }
    }

    /// Keep the bucket `who` had after this check, if the table's lock is
    /// free and it has room.
    fn note(&self, scope: Scope, who: &str, burst: u32, remaining: u32, interval: Duration) {
        let Ok(mut seen) = self.seen.try_lock() else {
            return;
        };
        let last = Seen {
            burst,
            remaining,
            interval,
            at: Instant::now(),
        };
        if let Some(entry) = seen.get_mut(&(scope, who.to_string())) {
            *entry = last;
        } else if seen.len() < MAX_SEEN {
            seen.insert((scope, who.to_string()), last);
        }
    }

    /// The buckets checked lately and not yet full again (at most
    /// `max_rows`, the emptiest first).
    pub(crate) fn views(&self, max_rows: usize) -> Vec<RateView> {
        let now = Instant::now();
        let mut rows: Vec<RateView> = {
            let seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
            seen.iter()
                .map(|((scope, who), s)| (*scope, who.clone(), s.burst, s.remaining_now(now)))
                .filter(|r| r.3 < r.2)
                .collect()
        };
        let share = |r: &RateView| f64::from(r.3) / f64::from(r.2.max(1));
        rows.sort_unstable_by(|a, b| share(a).total_cmp(&share(b)).then_with(|| a.1.cmp(&b.1)));
        rows.truncate(max_rows);
        rows
    }

    /// Forget idle keys and drop limiters that track none.
    pub(crate) fn housekeeping(&self) {
        let now = Instant::now();
        self.seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|_, s| s.remaining_now(now) < s.burst);
        let mut map = self.limiters.write().unwrap_or_else(|p| p.into_inner());
        map.retain(|_, l| {
            l.retain_recent();
            l.shrink_to_fit();
            !l.is_empty()
        });
    }
}

#[cfg(test)]
#[path = "rate_tests.rs"]
mod tests;
