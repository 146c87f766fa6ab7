//! Admission through the shared store: which buckets apply to a request,
//! the one call that checks them, and the token charge settled after the
//! answer.

use std::{
    sync::atomic::{AtomicBool, Ordering},
    time::Duration,
};

use super::keys::{BucketSpec, key_for};
use super::scripts::Verdict;
use super::store::SharedStore;
use crate::{
    limits::{
        auth::{Principal, principal_rate},
        error::{LimitError, Scope},
        rate::RateInfo,
    },
    policy::{ModelPolicy, OnStoreError, Policy, RateLimit},
};

/// What the store admitted.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    /// The tightest request limit, for `RateLimit-*`.
    pub rate: Option<RateInfo>,
    /// The token budgets to charge after the answer.
    pub charge: Option<SharedCharge>,
}

/// Token budgets of an admission kept in the shared store.
#[derive(Debug)]
pub(crate) struct SharedCharge {
    store: SharedStore,
    /// (key, tokens_per_minute).
    buckets: Vec<(String, u64)>,
    /// Tokens taken at admission, settled by the charge.
    reserved: u64,
    settled: AtomicBool,
}

impl SharedCharge {
    /// Charge `tokens` less what was reserved, once, off the request path.
    pub(crate) fn settle(&self, tokens: u64) {
        if self.settled.swap(true, Ordering::AcqRel) {
            return;
        }
        let amount = i64::try_from(tokens)
            .unwrap_or(i64::MAX)
            .saturating_sub(i64::try_from(self.reserved).unwrap_or(i64::MAX));
        if amount == 0 {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (store, buckets) = (self.store.clone(), self.buckets.clone());
        rt.spawn(async move {
            // A failure is counted in augur_limit_store_errors_total.
            let _ = store.charge(&buckets, amount).await;
        });
    }
}

impl Drop for SharedCharge {
    /// An admission dropped uncharged (refused later, by the concurrency
    /// queue) gives its reservation back.
    fn drop(&mut self) {
        self.settle(0);
    }
}

/// A request's rate buckets in the shared store, in check order.
fn shared_buckets(
    prefix: &str,
    policy: &Policy,
    principal: &Principal,
    model: Option<(&str, &ModelPolicy)>,
) -> Vec<BucketSpec> {
    let who = principal.limiter_key();
    let own = principal_rate(policy, principal);
    let per_model = model.and_then(|(m, p)| p.rate_limit.map(|r| (m, r)));
    let mut out = Vec::new();
    if let Some(per_minute) = own.and_then(|r| r.tokens_per_minute) {
        let key = key_for(prefix, &who, "tokens", None);
        out.push(BucketSpec::Tokens { key, per_minute });
    }
    if let Some((m, r)) = per_model
        && let Some(per_minute) = r.tokens_per_minute
    {
        let key = key_for(prefix, &who, "tokens", Some(m));
        out.push(BucketSpec::Tokens { key, per_minute });
    }
    let rate = |r: RateLimit| r.requests_per_minute.map(|n| (n, r.burst.unwrap_or(n)));
    if let Some((n, burst)) = own.and_then(rate) {
        let key = key_for(prefix, &who, "rate", None);
        out.push(BucketSpec::rate(key, Scope::Principal, n, burst));
    }
    if let Some((m, r)) = per_model
        && let Some((n, burst)) = rate(r)
    {
        let key = key_for(prefix, &who, "rate", Some(m));
        out.push(BucketSpec::rate(key, Scope::Model, n, burst));
    }
    out
}

/// Rates and budgets in the shared store: one call for all of them. A
/// store that cannot answer refuses (`deny`), or, under `allow`, gives
/// `None`: the caller counts the request in this replica's own buckets.
pub(crate) async fn admit(
    store: &SharedStore,
    policy: &Policy,
    principal: &Principal,
    model: Option<(&str, &ModelPolicy)>,
    estimate: u64,
) -> Result<Option<Outcome>, LimitError> {
    let mut outcome = Outcome::default();
    let buckets = shared_buckets(store.prefix(), policy, principal, model);
    if buckets.is_empty() {
        return Ok(Some(outcome));
    }
    let values = match store.admit(&buckets, estimate).await {
        Ok(Verdict::Admitted(values)) => values,
        Ok(Verdict::Refused { index, wait }) => {
            let bucket = &buckets[index.min(buckets.len() - 1)];
            let scope = bucket.scope();
            metrics::counter!("augur_rate_limited_total", "scope" => scope.as_str()).increment(1);
            let limit = match bucket {
                BucketSpec::Rate { burst, .. } => u64::from(*burst),
                BucketSpec::Tokens { per_minute, .. } => *per_minute,
            };
            return Err(LimitError::RateLimited {
                scope,
                limit,
                retry_after: wait,
            });
        }
        Err(_) => {
            return match policy.on_store_error {
                OnStoreError::Allow => {
                    metrics::counter!("augur_limit_store_local_total").increment(1);
                    Ok(None)
                }
                OnStoreError::Deny => Err(LimitError::StoreUnavailable),
            };
        }
        Ok(Verdict::Late) => return Err(LimitError::StoreUnavailable),
    };
    let mut token_buckets = Vec::new();
    for (bucket, value) in buckets.iter().zip(values) {
        match bucket {
            BucketSpec::Rate {
                interval_us, burst, ..
            } => {
                let remaining = u32::try_from(value.max(0)).unwrap_or(0).min(*burst);
                let info = RateInfo::gcra(*burst, remaining, Duration::from_micros(*interval_us));
                outcome.rate = RateInfo::tighter(outcome.rate, Some(info));
            }
            BucketSpec::Tokens { key, per_minute } => {
                token_buckets.push((key.clone(), *per_minute));
            }
        }
    }
    if !token_buckets.is_empty() {
        outcome.charge = Some(SharedCharge {
            store: store.clone(),
            buckets: token_buckets,
            reserved: estimate,
            settled: AtomicBool::new(false),
        });
    }
    Ok(Some(outcome))
}
