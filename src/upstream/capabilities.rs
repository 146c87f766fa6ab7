//! Model capabilities ("completion", "tools", "thinking", …) from the
//! upstream's `POST /api/show`, cached per model.
//!
//! The lookup is augur's own call, made over the same connection pool as
//! everything it forwards. Entries expire after the configured TTL and are
//! dropped when a model is pulled, created, copied or deleted through augur.
//! The cache is shared by every worker; each worker looks up through its
//! own pool.

use std::{sync::Arc, time::Duration};

use axum::body::Body;
use http::{Method, Request, StatusCode, header};
use http_body_util::{BodyExt, Limited};
use moka::future::Cache;
use serde_json::Value;

use super::Upstream;
use crate::error::ProxyError;

/// Largest `/api/show` answer read (model info can be long).
const SHOW_LIMIT: usize = 4 * 1024 * 1024;

/// Cached capability lookups.
#[derive(Clone)]
pub struct Capabilities {
    cache: Cache<String, Arc<Vec<String>>>,
    upstream: Upstream,
}

impl Capabilities {
    /// Lookups through `upstream`, cached for `ttl`.
    pub fn new(upstream: Upstream, ttl: Duration) -> Self {
        Self {
            cache: Cache::builder()
                .max_capacity(10_000)
                .time_to_live(ttl)
                .build(),
            upstream,
        }
    }

    /// The same cache, looked up through another pool (a worker's own).
    pub fn through(&self, upstream: Upstream) -> Self {
        Self {
            cache: self.cache.clone(),
            upstream,
        }
    }

    /// The capabilities of `model`. A model the upstream does not know
    /// has none (the request then fails upstream with Ollama's own error).
    pub async fn of(&self, model: &str) -> Result<Arc<Vec<String>>, ProxyError> {
        let upstream = self.upstream.clone();
        self.cache
            .try_get_with(model.to_string(), async move {
                fetch(&upstream, model).await.map(Arc::new)
            })
            .await
            .map_err(|e: Arc<ProxyError>| match &*e {
                ProxyError::UpstreamTimeout(ms) => ProxyError::UpstreamTimeout(*ms),
                other => ProxyError::UpstreamUnavailable(format!("capability lookup: {other}")),
            })
    }

    /// Whether `model` has capability `cap`.
    pub async fn has(&self, model: &str, cap: &str) -> Result<bool, ProxyError> {
        Ok(self.of(model).await?.iter().any(|c| c == cap))
    }

    /// Forget everything (a model changed upstream).
    pub fn invalidate_all(&self) {
        self.cache.invalidate_all();
    }
}

async fn fetch(upstream: &Upstream, model: &str) -> Result<Vec<String>, ProxyError> {
    let body = serde_json::to_vec(&serde_json::json!({ "model": model }))
        .map_err(|e| ProxyError::Internal(format!("capability lookup body: {e}")))?;
    let req = Request::builder()
        .method(Method::POST)
        .uri("/api/show")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body))
        .map_err(|e| ProxyError::Internal(format!("capability lookup request: {e}")))?;
    let response = upstream.call(req, None, None).await?;
    let status = response.status();
    if status == StatusCode::NOT_FOUND {
        return Ok(Vec::new());
    }
    if !status.is_success() {
        return Err(ProxyError::UpstreamUnavailable(format!(
            "capability lookup answered {status}"
        )));
    }
    let bytes = Limited::new(response.into_body(), SHOW_LIMIT)
        .collect()
        .await
        .map_err(|e| ProxyError::UpstreamProtocol(format!("capability lookup: {e}")))?
        .to_bytes();
    let body: Value = serde_json::from_slice(&bytes)
        .map_err(|e| ProxyError::UpstreamProtocol(format!("capability lookup: {e}")))?;
    Ok(body
        .get("capabilities")
        .and_then(Value::as_array)
        .map(|caps| {
            caps.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default())
}
