//! [`Limits`]: every limiter's state, and the calls of the request path
//! (authenticate, check a model, admit, charge tokens); an [`Admission`]
//! holds what a request was granted until its answer ends.

use std::{net::IpAddr, sync::Arc, time::Duration};

use http::HeaderMap;

use super::auth::{Principal, authenticate, principal_rate};
use super::concurrency::Permit;
use super::error::{LimitError, Scope};
use super::rate::RateInfo;
use super::shared::{SharedStore, admission::SharedCharge};
use super::tokens::{BucketKey, TokenBuckets};
use super::{concurrency, fair, rate, shared};

use crate::policy::{ModelPolicy, Policy};

#[derive(Debug, Default)]
pub(super) struct Inner {
    pub(super) rates: rate::RateLimiters,
    pub(super) tokens: TokenBuckets,
    pub(super) semaphores: concurrency::Semaphores,
}

/// All limiter state; cheap to clone (shared).
#[derive(Debug, Clone, Default)]
pub struct Limits {
    pub(super) inner: Arc<Inner>,
    /// This thread's handle on the shared store, if one is configured.
    pub(super) shared: Option<SharedStore>,
}

/// A request that passed every limit. Holds the concurrency slot until
/// dropped: keep it until the response body has finished streaming.
#[derive(Debug)]
#[must_use = "dropping the admission releases the concurrency slot"]
pub struct Admission {
    permit: Option<Permit>,
    rate: Option<RateInfo>,
    buckets: Vec<BucketKey>,
    shared: Option<SharedCharge>,
    limits: Limits,
}

impl Admission {
    /// `RateLimit-*` headers of the tightest request limit, if any applied.
    pub fn rate_headers(&self) -> HeaderMap {
        self.rate.map(|r| r.headers()).unwrap_or_default()
    }

    /// The tightest request limit, if any applied.
    pub fn rate_info(&self) -> Option<RateInfo> {
        self.rate
    }

    /// Whether a concurrency slot is held.
    pub fn holds_slot(&self) -> bool {
        self.permit.is_some()
    }

    /// Whether any token budget applies (the answer's counts are needed).
    pub fn charges_tokens(&self) -> bool {
        !self.buckets.is_empty() || self.shared.is_some()
    }

    /// Charge the budgets that applied to this request.
    pub fn charge_tokens(&self, tokens: u64) {
        if let Some(shared) = &self.shared {
            shared.settle(tokens);
            if tokens > 0 {
                metrics::counter!("augur_tokens_charged_total").increment(tokens);
            }
        }
        self.limits.charge_buckets(&self.buckets, tokens);
    }
}

impl Limits {
    /// Empty state, kept in this process.
    pub fn new() -> Self {
        Self::default()
    }

    /// Rates and token budgets in the store at `url` (Redis or Valkey),
    /// under keys starting with `prefix`; each call waits at most `timeout`.
    pub fn with_redis(url: &str, prefix: &str, timeout: Duration) -> Result<Self, String> {
        let store = SharedStore::new(url, prefix, timeout)?;
        Ok(Self {
            inner: Arc::default(),
            shared: Some(store),
        })
    }

    /// The same limits for a worker thread with its own event loop: the
    /// counters, and concurrency slots, are the same; the connection to a
    /// shared store is the worker's own, so a store call does not wait on
    /// another thread. Call [`Limits::start`] on the worker's event loop.
    pub fn for_worker(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            shared: self.shared.as_ref().map(SharedStore::sibling),
        }
    }

    /// Connect the shared store, if any, waiting up to `wait` for it.
    pub async fn start(&self, wait: Duration) {
        if let Some(s) = &self.shared {
            s.start(wait).await;
        }
    }

    /// The shared store's health, if one is configured.
    pub fn store_health(&self) -> Option<shared::Health> {
        self.shared.as_ref().map(SharedStore::health)
    }

    /// See [`auth::authenticate`].
    pub fn authenticate(
        &self,
        policy: &Policy,
        headers: &HeaderMap,
        client_ip: IpAddr,
    ) -> Result<Principal, LimitError> {
        authenticate(policy, headers, client_ip)
    }

    /// The token buckets that apply to a request (the model's name is
    /// normalized), in check order.
    fn buckets(
        policy: &Policy,
        principal: &Principal,
        model: Option<(&str, &ModelPolicy)>,
    ) -> Vec<BucketKey> {
        let mut keys = Vec::new();
        if let Some(per_minute) =
            principal_rate(policy, principal).and_then(|r| r.tokens_per_minute)
        {
            keys.push(BucketKey {
                per_minute,
                who: principal.limiter_key(),
            });
        }
        if let Some((m, model_policy)) = model
            && let Some(per_minute) = model_policy.rate_limit.and_then(|r| r.tokens_per_minute)
        {
            let who = format!("{}\0{m}", principal.limiter_key());
            keys.push(BucketKey { per_minute, who });
        }
        keys
    }

    /// Admit a request for `model` (its normalized name and resolved
    /// settings; `None` for routes without one). In order: the token budgets
    /// (429), the per-principal and per-(principal, model) rates (429), then
    /// a concurrency slot, waiting up to the queue timeout (503). With
    /// `counts == false` nothing is checked. Whether the key may use the
    /// model is [`auth::check_model`], checked before. `estimate` (the
    /// prompt's estimated tokens) is reserved from token budgets in a
    /// shared store until the answer is charged.
    pub async fn admit(
        &self,
        policy: &Policy,
        principal: &Principal,
        model: Option<(&str, &ModelPolicy)>,
        counts: bool,
        estimate: u64,
    ) -> Result<Admission, LimitError> {
        let mut admission = Admission {
            permit: None,
            rate: None,
            buckets: Vec::new(),
            shared: None,
            limits: self.clone(),
        };
        if !counts {
            return Ok(admission);
        }
        let shared = match &self.shared {
            Some(store) => {
                // Boxed: a store's exchange is needed with a store only.
                Box::pin(shared::admission::admit(
                    store, policy, principal, model, estimate,
                ))
                .await?
            }
            None => None,
        };
        match shared {
            Some(outcome) => {
                admission.rate = outcome.rate;
                admission.shared = outcome.charge;
            }
            // No store, or one that could not answer under `allow`: this
            // replica's own buckets.
            None => self.admit_local(&mut admission, policy, principal, model)?,
        }
        if let Some((m, model_policy)) = model {
            admission.permit = self.slot(policy, principal, m, model_policy).await?;
        }
        Ok(admission)
    }

    /// A concurrency slot of `model` (normalized) for `principal`, under
    /// the model's `concurrency` (`None` when it has none): waits in the
    /// model's fair queue up to its `queue_timeout_ms`, else
    /// [`LimitError::Busy`]. [`Limits::admit`] takes one for the model a
    /// request names; a fallback model takes its own the same way (rates
    /// and budgets are counted once, at admission).
    pub(crate) async fn slot(
        &self,
        policy: &Policy,
        principal: &Principal,
        model: &str,
        model_policy: &ModelPolicy,
    ) -> Result<Option<Permit>, LimitError> {
        let Some(limit) = model_policy.concurrency else {
            return Ok(None);
        };
        let label = model_policy.matched_glob.as_deref().unwrap_or("default");
        let who = principal.limiter_key();
        let waiting = fair::Waiting {
            key: &who,
            label: principal.label(),
            weight: principal.api_key(policy).map_or(1, |k| k.weight),
        };
        let permit = self
            .inner
            .semaphores
            .acquire(model, label, limit, waiting)
            .await?;
        Ok(Some(permit))
    }

    /// Rates and budgets in this process.
    fn admit_local(
        &self,
        admission: &mut Admission,
        policy: &Policy,
        principal: &Principal,
        model: Option<(&str, &ModelPolicy)>,
    ) -> Result<(), LimitError> {
        let buckets = Self::buckets(policy, principal, model);
        for b in &buckets {
            self.inner.tokens.check(b)?;
        }
        admission.buckets = buckets;
        // Keys are built only for the limits that apply: most requests
        // run under none.
        if let Some(rate) = principal_rate(policy, principal) {
            let who = principal.limiter_key();
            let info = self.inner.rates.check(Scope::Principal, &rate, &who)?;
            admission.rate = RateInfo::tighter(admission.rate, info);
        }
        if let Some((m, model_policy)) = model
            && let Some(rate) = model_policy.rate_limit
        {
            let key = format!("{}\0{m}", principal.limiter_key());
            let info = self.inner.rates.check(Scope::Model, &rate, &key)?;
            admission.rate = RateInfo::tighter(admission.rate, info);
        }
        Ok(())
    }

    /// Charge `tokens` (prompt_eval_count + eval_count) to the budgets that
    /// apply to `principal` and `model` under `policy`. Prefer
    /// [`Admission::charge_tokens`], which remembers them.
    pub fn charge_tokens(
        &self,
        policy: &Policy,
        principal: &Principal,
        model: Option<(&str, &ModelPolicy)>,
        tokens: u64,
    ) {
        self.charge_buckets(&Self::buckets(policy, principal, model), tokens);
    }

    fn charge_buckets(&self, buckets: &[BucketKey], tokens: u64) {
        if tokens == 0 {
            return;
        }
        for b in buckets {
            self.inner.tokens.charge(b, tokens);
        }
        if !buckets.is_empty() {
            metrics::counter!("augur_tokens_charged_total").increment(tokens);
        }
    }

    /// Remaining per-principal token budget (diagnostics and tests).
    pub fn token_balance(&self, policy: &Policy, principal: &Principal) -> Option<f64> {
        let key = Self::buckets(policy, principal, None).into_iter().next()?;
        Some(self.inner.tokens.balance(&key))
    }

    /// Forget idle limiter keys, full token buckets and unused semaphores.
    pub fn housekeeping(&self) {
        self.inner.rates.housekeeping();
        self.inner.tokens.housekeeping();
        self.inner.semaphores.housekeeping();
    }
}
