//! The state every request can reach: startup config, the upstreams, the
//! policy store, limiter state, the audit log, metrics and caches. One
//! pointer, cheap to clone; each worker thread has its own copy with its
//! own upstream connection pools.

use std::sync::Arc;

use metrics_exporter_prometheus::PrometheusHandle;

use crate::{
    config::{Config, LimitStore},
    error::ProxyError,
    limits::Limits,
    policy::{AuditLog, Policy, PolicyStore},
    upstream::{Fleet, capabilities::Capabilities},
    validate::Validators,
};

/// Everything a request may need; one pointer, cheap to clone.
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// The state behind an [`AppState`].
pub struct Shared {
    pub config: Arc<Config>,
    pub fleet: Fleet,
    pub policies: Arc<PolicyStore>,
    pub limits: Limits,
    pub audit: AuditLog,
    pub metrics: Option<PrometheusHandle>,
    pub capabilities: Capabilities,
    pub validators: Validators,
    /// The response cache (see [`crate::cache`]), one for every worker.
    pub(crate) cache: Arc<crate::cache::Store>,
    /// The ring of recent events and the totals since start, every
    /// worker recording into it (shown by `/-/status`).
    pub(crate) events: Arc<crate::telemetry::events::Events>,
    /// The record files' writers (see [`crate::record`]), one for every worker.
    pub(crate) record: Arc<crate::record::Sinks>,
}

impl AppState {
    /// Build the state with a fixed initial policy (tests, embedding).
    pub fn new(
        config: Config,
        policy: Policy,
        metrics: Option<PrometheusHandle>,
    ) -> Result<Self, ProxyError> {
        let store = PolicyStore::with_policy(policy, &config.policies, &config.schemas);
        Self::with_store(config, store, metrics)
    }

    /// Build the state from the startup config and a loaded policy store.
    pub fn with_store(
        config: Config,
        store: PolicyStore,
        metrics: Option<PrometheusHandle>,
    ) -> Result<Self, ProxyError> {
        let fleet = Fleet::new(&config)?;
        let capabilities = Capabilities::new(fleet.clone(), config.capabilities_ttl);
        let limits = match &config.limit_store {
            LimitStore::Memory => Limits::new(),
            LimitStore::Redis { url } => {
                Limits::with_redis(url, &config.limit_key_prefix, config.limit_store_timeout)
                    .map_err(|e| ProxyError::Internal(format!("limits.store: {e}")))?
            }
        };
        // Before the first schema is compiled: the caches are sized once.
        crate::validate::set_cache_budget(config.schema_cache_bytes);
        Ok(Self(Arc::new(Shared {
            config: Arc::new(config),
            fleet,
            policies: Arc::new(store),
            limits,
            audit: AuditLog::spawn(),
            metrics,
            capabilities,
            validators: Validators::shared().clone(),
            cache: Arc::default(),
            events: Arc::default(),
            record: Arc::default(),
        })))
    }

    /// The same state with its own upstream connection pools, for a
    /// worker thread that runs its own event loop.
    pub fn for_worker(&self) -> Result<Self, ProxyError> {
        let fleet = self.fleet.for_worker(&self.config)?;
        let capabilities = self.capabilities.through(fleet.clone());
        Ok(Self(Arc::new(Shared {
            config: self.config.clone(),
            fleet,
            policies: self.policies.clone(),
            limits: self.limits.for_worker(),
            audit: self.audit.clone(),
            metrics: self.metrics.clone(),
            capabilities,
            validators: self.validators.clone(),
            cache: self.cache.clone(),
            events: self.events.clone(),
            record: self.record.clone(),
        })))
    }

    /// The policy snapshot a new request runs under.
    pub fn policy(&self) -> Arc<Policy> {
        self.policies.snapshot()
    }
}
