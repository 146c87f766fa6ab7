//! Active health and model discovery.
//!
//! With several upstreams, a task probes each one every
//! `health_interval` (`GET /api/version`) and reads the models it has
//! loaded (`GET /api/ps`); every `models_refresh`, and soon after a model
//! changed through augur, it reads the models it has (`GET /api/tags`).
//! Every call is bounded (2 s, a bounded answer) and all upstreams are
//! asked at once. An upstream that fails a probe leaves the rotation; one
//! that answers comes back. `/-/ready` and `/-/upstreams` run the same
//! probes on demand.

use std::collections::HashSet;

use serde_json::Value;
use tokio::{sync::watch, time::Instant};

use super::{get::get_json, member::Member, state::Fleet};
use crate::upstream::client::Upstream;

/// Most model names kept per upstream.
const MAX_NAMES: usize = 10_000;

impl Fleet {
    /// Probe every upstream now, all at once; records each one's health.
    /// Each one's name and outcome (members found by DNS: those taking
    /// requests).
    pub async fn probe_all(&self) -> Vec<(String, Result<(), String>)> {
        let probes = self.open().map(|(member, client)| async move {
            let outcome = probe(client).await;
            record(&member, &outcome);
            (member.name().to_string(), outcome)
        });
        futures_util::future::join_all(probes).await
    }

    /// Probe every upstream and read the models it has loaded, and, when
    /// `models`, the models it has.
    pub async fn refresh(&self, models: bool) {
        let rounds = self
            .open()
            .map(|(member, client)| async move { refresh_one(&member, client, models).await });
        futures_util::future::join_all(rounds).await;
    }

    /// The task keeping every upstream's health and models current until
    /// `shutdown`; nothing to do (`None`) with a single upstream.
    pub fn monitoring(
        &self,
        mut shutdown: watch::Receiver<bool>,
    ) -> Option<impl std::future::Future<Output = ()> + Send + 'static> {
        if self.is_single() {
            return None;
        }
        let fleet = self.clone();
        let (every, models_every) = self.intervals;
        Some(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut models_at: Option<Instant> = None;
            loop {
                let changed = tokio::select! {
                    _ = tick.tick() => false,
                    () = fleet.changed.notified() => true,
                    _ = shutdown.changed() => return,
                };
                let due = changed || models_at.is_none_or(|t| t.elapsed() >= models_every);
                tokio::select! {
                    () = fleet.refresh(due) => {}
                    _ = shutdown.changed() => return,
                }
                if due {
                    models_at = Some(Instant::now());
                }
            }
        })
    }
}

async fn refresh_one(member: &Member, client: &Upstream, models: bool) {
    let outcome = probe(client).await;
    record(member, &outcome);
    if outcome.is_err() {
        return;
    }
    super::loaded::read(member, client).await;
    if models {
        match get_json(client, "/api/tags").await {
            Ok(listing) => member.set_models(names(&listing)),
            Err(e) => {
                tracing::debug!(upstream = member.name(), error = %e, "reading models failed")
            }
        }
    }
}

fn record(member: &Member, outcome: &Result<(), String>) {
    match outcome {
        Ok(()) => member.answered(),
        Err(e) => member.failed(e),
    }
}

/// `GET /api/version` answered with a success.
async fn probe(client: &Upstream) -> Result<(), String> {
    get_json(client, "/api/version").await.map(|_| ())
}

/// The normalized names of a `/api/tags` or `/api/ps` listing (`name`
/// and `model` of each entry).
pub(super) fn names(listing: &Value) -> HashSet<String> {
    listing
        .get("models")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .take(MAX_NAMES)
        .flat_map(|entry| {
            ["name", "model"]
                .into_iter()
                .filter_map(|k| entry.get(k).and_then(Value::as_str))
        })
        .map(crate::wire::normalize_model_name)
        .collect()
}
