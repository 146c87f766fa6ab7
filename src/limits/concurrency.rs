//! Concurrency toward the upstream, per model.
//!
//! One semaphore per (normalized model name, `max_in_flight`): `gemma3` and
//! `gemma3:latest` share one, `gemma3:27b` has its own even when the same
//! glob configured both. A reload that changes `max_in_flight` moves new
//! requests to a fresh semaphore while requests holding the old one finish.
//! Requests wait up to `queue_timeout_ms` for a slot (0 = refuse at once),
//! then get 503 with Ollama's "server busy" text.
//!
//! Metric labels use the glob that selected the setting (or `default`), not
//! the model name: model names come from clients and are unbounded.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::error::LimitError;
use crate::policy::Concurrency;

/// A concurrency slot; released (and the in-flight gauge lowered) on drop.
#[derive(Debug)]
pub(crate) struct Permit {
    _permit: OwnedSemaphorePermit,
    label: String,
}

impl Drop for Permit {
    fn drop(&mut self) {
        metrics::gauge!("augur_concurrency_in_flight", "model" => self.label.clone()).decrement(1);
    }
}

/// All per-model semaphores.
#[derive(Debug, Default)]
pub(crate) struct Semaphores {
    map: Mutex<HashMap<(String, u32), Arc<Semaphore>>>,
}

impl Semaphores {
    fn semaphore(&self, model: &str, max: u32) -> Arc<Semaphore> {
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        map.entry((model.to_string(), max))
            .or_insert_with(|| Arc::new(Semaphore::new(max as usize)))
            .clone()
    }

    /// Wait for a slot for `model` (normalized) under `limit`.
    pub(crate) async fn acquire(
        &self,
        model: &str,
        label: &str,
        limit: Concurrency,
    ) -> Result<Permit, LimitError> {
        let sem = self.semaphore(model, limit.max_in_flight);
        let permit = match sem.clone().try_acquire_owned() {
            Ok(p) => Some(p),
            Err(_) if limit.queue_timeout_ms == 0 => None,
            Err(_) => {
                metrics::counter!("augur_concurrency_queued_total", "model" => label.to_string())
                    .increment(1);
                let wait = Duration::from_millis(limit.queue_timeout_ms);
                match tokio::time::timeout(wait, sem.acquire_owned()).await {
                    Ok(Ok(p)) => Some(p),
                    _ => None,
                }
            }
        };
        let Some(permit) = permit else {
            metrics::counter!("augur_concurrency_rejected_total", "model" => label.to_string())
                .increment(1);
            return Err(LimitError::Busy {
                model: model.to_string(),
            });
        };
        metrics::gauge!("augur_concurrency_in_flight", "model" => label.to_string()).increment(1);
        Ok(Permit {
            _permit: permit,
            label: label.to_string(),
        })
    }

    /// Drop idle semaphores; held ones stay alive through their permits.
    pub(crate) fn housekeeping(&self) {
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        map.retain(|(_, max), s| Arc::strong_count(s) > 1 || s.available_permits() < *max as usize);
    }
}
