//! Model capabilities ("completion", "tools", "thinking", …) and context
//! sizes from an upstream's `POST /api/show`, cached per (upstream,
//! model): the same name can be a different model on another box.
//!
//! The lookup is augur's own call, made over the same connection pool as
//! everything it forwards to that upstream. Entries expire after the
//! configured TTL and are dropped when a model is pulled, created, copied
//! or deleted through augur. The cache is shared by every worker; each
//! worker looks up through its own pools.

use std::{sync::Arc, time::Duration};

use bytes::Bytes;
use http::{Method, Request, StatusCode, header};
use http_body_util::{BodyExt, Limited};
use moka::future::Cache;
use serde_json::Value;

use super::{client::Upstream, fleet::Fleet};
use crate::error::ProxyError;

/// Largest `/api/show` answer read (model info can be long).
const SHOW_LIMIT: usize = 4 * 1024 * 1024;

/// What `/api/show` says of a model's context, in tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ModelContext {
    /// The context the model was trained for (`model_info`
    /// `<arch>.context_length`).
    pub context_length: Option<u64>,
    /// The context its Modelfile sets (`PARAMETER num_ctx`).
    pub num_ctx: Option<u64>,
}

/// What one `/api/show` lookup keeps.
#[derive(Debug, Default)]
struct Shown {
    capabilities: Vec<String>,
    context: ModelContext,
}

/// Cached capability lookups.
#[derive(Clone)]
pub struct Capabilities {
    /// By upstream index, its member's placement (see `Fleet::generation`)
    /// and model.
    cache: Cache<(usize, u64, String), Arc<Shown>>,
    fleet: Fleet,
}

impl Capabilities {
    /// Lookups through `fleet`'s clients, cached for `ttl`.
    pub fn new(fleet: Fleet, ttl: Duration) -> Self {
        Self {
            cache: Cache::builder()
                .max_capacity(10_000)
                .time_to_live(ttl)
                .build(),
            fleet,
        }
    }

    /// The same cache, looked up through other pools (a worker's own).
    pub fn through(&self, fleet: Fleet) -> Self {
        Self {
            cache: self.cache.clone(),
            fleet,
        }
    }

    /// What upstream `upstream`'s `/api/show` says of `model`. A model the
    /// upstream does not know has no capabilities (the request then fails
    /// upstream with Ollama's own error).
    async fn of(&self, upstream: usize, model: &str) -> Result<Arc<Shown>, ProxyError> {
        let generation = self.fleet.generation(upstream);
        let client = self
            .fleet
            .client(upstream)
            .ok_or_else(|| ProxyError::Internal(format!("no upstream {upstream}")))?
            .clone();
        // Boxed: the lookup's state (an upstream exchange) stays out of
        // the futures of the requests that ask.
        let lookup = self
            .cache
            .try_get_with((upstream, generation, model.to_string()), async move {
                fetch(&client, model).await.map(Arc::new)
            });
        Box::pin(lookup)
            .await
            .map_err(|e: Arc<ProxyError>| match &*e {
                ProxyError::UpstreamTimeout(ms) => ProxyError::UpstreamTimeout(*ms),
                other => ProxyError::UpstreamUnavailable(format!("capability lookup: {other}")),
            })
    }

    /// Whether `model` on upstream `upstream` has capability `cap`.
    pub async fn has(&self, upstream: usize, model: &str, cap: &str) -> Result<bool, ProxyError> {
        Ok(self
            .of(upstream, model)
            .await?
            .capabilities
            .iter()
            .any(|c| c == cap))
    }

    /// What upstream `upstream`'s `/api/show` says of `model`'s context.
    pub async fn context(&self, upstream: usize, model: &str) -> Result<ModelContext, ProxyError> {
        Ok(self.of(upstream, model).await?.context)
    }

    /// A model changed upstream: forget everything, and have every
    /// upstream's models read again.
    pub fn models_changed(&self) {
        self.cache.invalidate_all();
        self.fleet.models_changed();
    }
}

async fn fetch(upstream: &Upstream, model: &str) -> Result<Shown, ProxyError> {
    let body = serde_json::to_vec(&serde_json::json!({ "model": model }))
        .map_err(|e| ProxyError::Internal(format!("capability lookup body: {e}")))?;
    let req = Request::builder()
        .method(Method::POST)
        .uri("/api/show")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Bytes::from(body))
        .map_err(|e| ProxyError::Internal(format!("capability lookup request: {e}")))?;
    let response = upstream.call(req, None, None).await?;
    let status = response.status();
    if status == StatusCode::NOT_FOUND {
        return Ok(Shown::default());
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
    Ok(shown(&body))
}

/// The parts of an `/api/show` answer augur uses.
fn shown(body: &Value) -> Shown {
    let capabilities = body
        .get("capabilities")
        .and_then(Value::as_array)
        .map(|caps| {
            caps.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    Shown {
        capabilities,
        context: ModelContext {
            context_length: context_length(body),
            num_ctx: num_ctx(body),
        },
    }
}

/// `model_info["<arch>.context_length"]`, `<arch>` being
/// `general.architecture`.
fn context_length(body: &Value) -> Option<u64> {
    let info = body.get("model_info")?.as_object()?;
    let arch = info.get("general.architecture")?.as_str()?;
    info.get(&format!("{arch}.context_length"))?
        .as_u64()
        .filter(|n| *n > 0)
}

/// `num_ctx` in the `parameters` text (`num_ctx    8192`, one per line).
fn num_ctx(body: &Value) -> Option<u64> {
    let text = body.get("parameters")?.as_str()?;
    text.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        (words.next()? == "num_ctx")
            .then(|| words.next()?.parse::<u64>().ok())
            .flatten()
            .filter(|n| *n > 0)
    })
}

#[cfg(test)]
#[path = "capabilities_tests.rs"]
mod tests;
