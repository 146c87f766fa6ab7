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
    sync::{Arc, RwLock},
    time::Duration,
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

/// All request-rate limiters.
#[derive(Debug, Default)]
pub(crate) struct RateLimiters {
    limiters: RwLock<HashMap<QuotaKey, Arc<Limiter>>>,
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
        match limiter.check_key(&who.to_string()) {
            Ok(state) => Ok(Some(RateInfo::gcra(
                burst,
                state.remaining_burst_capacity(),
                quota.replenish_interval(),
            ))),
            Err(not_until) => {
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

    /// Forget idle keys and drop limiters that track none.
    pub(crate) fn housekeeping(&self) {
        let mut map = self.limiters.write().unwrap_or_else(|p| p.into_inner());
        map.retain(|_, l| {
            l.retain_recent();
            l.shrink_to_fit();
            !l.is_empty()
        });
    }
}
