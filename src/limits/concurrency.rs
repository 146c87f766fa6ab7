//! Concurrency toward the upstream, per model.
//!
//! One slot pool per (normalized model name, `max_in_flight`): `gemma3` and
//! `gemma3:latest` share one, `gemma3:27b` has its own even when the same
//! glob configured both. A reload that changes `max_in_flight` moves new
//! requests to a fresh pool while requests holding the old one finish.
//! Requests wait up to `queue_timeout_ms` for a slot (0 = refuse at once),
//! in a queue fair across principals (see [`super::fair`]), then get 503
//! with Ollama's "server busy" text.
//!
//! Slots are counted per replica, on purpose: a slot held in a shared
//! store by a replica that died would stay taken until some timeout, while
//! a local slot is released with its connection.
//!
//! Metric labels use the glob that selected the setting (or `default`), not
//! the model name: model names come from clients and are unbounded.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use super::{
    error::LimitError,
    fair::{Gate, Slot, Waiting},
};
use crate::policy::Concurrency;

/// A concurrency slot; released (and the in-flight gauge lowered) on drop.
#[derive(Debug)]
pub(crate) struct Permit {
    _slot: Slot,
    label: String,
}

impl Drop for Permit {
    fn drop(&mut self) {
        metrics::gauge!("augur_concurrency_in_flight", "model" => self.label.clone()).decrement(1);
    }
}

/// All per-model slot pools.
#[derive(Debug, Default)]
pub(crate) struct Semaphores {
    map: Mutex<HashMap<(String, u32), Arc<Gate>>>,
}

impl Semaphores {
    fn gate(&self, model: &str, label: &str, max: u32) -> Arc<Gate> {
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        map.entry((model.to_string(), max))
            .or_insert_with(|| Gate::new(max, label))
            .clone()
    }

    /// Wait for a slot for `model` (normalized) under `limit`.
    pub(crate) async fn acquire(
        &self,
        model: &str,
        label: &str,
        limit: Concurrency,
        who: Waiting<'_>,
    ) -> Result<Permit, LimitError> {
        let gate = self.gate(model, label, limit.max_in_flight);
        let wait = Duration::from_millis(limit.queue_timeout_ms);
        let Some(slot) = gate.acquire(who, wait).await else {
            metrics::counter!("augur_concurrency_rejected_total", "model" => label.to_string())
                .increment(1);
            return Err(LimitError::Busy {
                model: model.to_string(),
            });
        };
        metrics::gauge!("augur_concurrency_in_flight", "model" => label.to_string()).increment(1);
        Ok(Permit {
            _slot: slot,
            label: label.to_string(),
        })
    }

    /// Each pool's model and state (at most `max_rows`, by model).
    pub(crate) fn views(&self, max_rows: usize) -> Vec<(String, super::fair::GateView)> {
        let gates: Vec<(String, Arc<Gate>)> = {
            let map = self.map.lock().unwrap_or_else(|p| p.into_inner());
            map.iter()
                .map(|((model, _), g)| (model.clone(), g.clone()))
                .collect()
        };
        let mut views: Vec<_> = gates
            .into_iter()
            .map(|(model, g)| (model, g.view(max_rows)))
            .collect();
        views.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        views.truncate(max_rows);
        views
    }

    /// Drop idle pools; held ones stay alive through their slots.
    pub(crate) fn housekeeping(&self) {
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        map.retain(|_, g| Arc::strong_count(g) > 1 || !g.idle());
    }
}
