//! Model capabilities ("completion", "tools", "thinking", …) from the
//! upstream's `POST /api/show`, cached per model.
//!
//! augur is the client here, so this uses reqwest. Entries expire after the
//! configured TTL and are dropped when a model is pulled, created, copied
//! or deleted through augur.

use std::{sync::Arc, time::Duration};

use moka::future::Cache;
use serde_json::Value;

use crate::error::ProxyError;

/// Cached capability lookups.
#[derive(Clone)]
pub struct Capabilities {
    client: reqwest::Client,
    show_url: String,
    cache: Cache<String, Arc<Vec<String>>>,
}

impl Capabilities {
    /// Lookups against `base` (the upstream URL), cached for `ttl`.
    pub fn new(base: &http::Uri, ttl: Duration, timeout: Duration) -> Result<Self, ProxyError> {
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .no_proxy()
            .build()
            .map_err(|e| ProxyError::Internal(format!("capability client: {e}")))?;
        let base = base.to_string();
        Ok(Self {
            client,
            show_url: format!("{}/api/show", base.trim_end_matches('/')),
            cache: Cache::builder()
                .max_capacity(10_000)
                .time_to_live(ttl)
                .build(),
        })
    }

    /// The capabilities of `model`. A model the upstream does not know
    /// has none (the request then fails upstream with Ollama's own error).
    pub async fn of(&self, model: &str) -> Result<Arc<Vec<String>>, ProxyError> {
        let key = model.to_string();
        let client = self.client.clone();
        let url = self.show_url.clone();
        self.cache
            .try_get_with(key, async move {
                fetch(&client, &url, model).await.map(Arc::new)
            })
            .await
            .map_err(|e: Arc<ProxyError>| match &*e {
                ProxyError::UpstreamTimeout(ms) => ProxyError::UpstreamTimeout(*ms),
                other => ProxyError::UpstreamUnavailable(other.to_string()),
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

async fn fetch(
    client: &reqwest::Client,
    url: &str,
    model: &str,
) -> Result<Vec<String>, ProxyError> {
    let response = client
        .post(url)
        .json(&serde_json::json!({ "model": model }))
        .send()
        .await
        .map_err(|e| {
            if e.is_timeout() {
                ProxyError::UpstreamTimeout(0)
            } else {
                ProxyError::UpstreamUnavailable(format!("capability lookup: {e}"))
            }
        })?;
    if response.status() == reqwest::StatusCode::NOT_FOUND {
        return Ok(Vec::new());
    }
    if !response.status().is_success() {
        return Err(ProxyError::UpstreamUnavailable(format!(
            "capability lookup answered {}",
            response.status()
        )));
    }
    let body: Value = response
        .json()
        .await
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
