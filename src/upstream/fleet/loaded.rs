//! Reading each upstream's `GET /api/ps` (see [`super::ps`] for what is
//! kept): with one upstream a poller reads it every [`LOADED_POLL_EVERY`];
//! with several, the monitor reads it on each of its rounds (see
//! [`super::monitor`]). When a model is loaded, `GET /api/tags` is read
//! too, for the other names it answers to (see [`super::ps`]). Each read
//! is bounded in time and size, like the monitor's.

use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use tokio::sync::watch;

use super::{
    get::get_json,
    member::Member,
    ps::{Loaded, also_named, cut, parse},
    state::Fleet,
};
use crate::upstream::client::Upstream;

/// How often the poller reads `/api/ps`.
pub(crate) const LOADED_POLL_EVERY: Duration = Duration::from_secs(10);

/// Read `member`'s `/api/ps` through `client`, and keep what it says
/// (also the names the choice of upstream uses).
pub(super) async fn read(member: &Member, client: &Upstream) {
    match get_json(client, "/api/ps").await {
        Ok(listing) => {
            let mut models = parse(&listing);
            if models.iter().any(|m| m.digest.is_some()) {
                match get_json(client, "/api/tags").await {
                    Ok(tags) => also_named(&mut models, &tags),
                    Err(e) => {
                        tracing::debug!(upstream = member.name(), error = %e, "reading models failed")
                    }
                }
            }
            // A copy of a loaded model is loaded too.
            let names = models
                .iter()
                .flat_map(|m| std::iter::once(&m.name).chain(&m.aliases))
                .cloned()
                .collect();
            member.set_loaded(names);
            member.gauges.set(member.name(), &models);
            member.set_loaded_detail(Loaded {
                models,
                read_at: Some(SystemTime::now()),
                error: None,
            });
        }
        Err(e) => {
            tracing::debug!(upstream = member.name(), error = %e, "reading loaded models failed");
            member.loaded_failed(cut(&e));
        }
    }
}

impl Fleet {
    /// The task reading every upstream's `/api/ps` every `every` until
    /// `shutdown`; `None` with several upstreams, whose monitor reads them
    /// (see [`Fleet::monitoring`]).
    pub fn polling_loaded(
        &self,
        every: Duration,
        mut shutdown: watch::Receiver<bool>,
    ) -> Option<impl std::future::Future<Output = ()> + Send + 'static> {
        if !self.is_single() {
            return None;
        }
        let fleet = self.clone();
        Some(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = shutdown.changed() => return,
                }
                let reads = fleet
                    .open()
                    .map(|(member, client)| async move { read(&member, client).await });
                tokio::select! {
                    _ = futures_util::future::join_all(reads) => {}
                    _ = shutdown.changed() => return,
                }
            }
        })
    }

    /// The digest of the model named `model` (normalized) as the
    /// upstreams' last `/api/ps` reads list it loaded (under that name or
    /// another of its names): `None` when none lists it with a digest, or
    /// when two list different builds (nothing is read now).
    pub fn digest_of(&self, model: &str) -> Option<String> {
        let mut found: Option<String> = None;
        for member in self.seats.iter().filter_map(super::seat::Seat::member) {
            let loaded = member.loaded_detail();
            let digests = loaded
                .models
                .iter()
                .filter(|l| l.name == model || l.aliases.iter().any(|a| a == model))
                .filter_map(|l| l.digest.as_deref());
            for digest in digests {
                match &found {
                    Some(seen) if seen != digest => return None,
                    Some(_) => {}
                    None => found = Some(digest.to_string()),
                }
            }
        }
        found
    }

    /// Each upstream's health, load and loaded models, as the status page
    /// shows them (nothing is read now).
    pub fn loaded_json(&self) -> Value {
        let upstreams: Vec<Value> = self
            .seats
            .iter()
            .filter_map(super::seat::Seat::member)
            .map(|m| {
                let loaded = m.loaded_detail();
                let models: Vec<Value> = loaded
                    .models
                    .iter()
                    .map(|l| {
                        let names: Vec<&String> =
                            std::iter::once(&l.name).chain(&l.aliases).collect();
                        json!({
                            "name": l.name,
                            "names": names,
                            "size": l.size,
                            "size_vram": l.size_vram,
                            "expires_at": l.expires_at,
                        })
                    })
                    .collect();
                json!({
                    "name": m.name(),
                    "url": m.spec.url.to_string(),
                    "healthy": m.healthy(),
                    "stalled": m.is_stalled(),
                    "in_flight": m.in_flight(),
                    "loaded": models,
                    "loaded_read_at": loaded.read_at.map(crate::telemetry::rfc3339),
                    "loaded_error": loaded.error,
                    "last_error": m.last_error().map(|(message, at)| json!({
                        "message": message,
                        "at": crate::telemetry::rfc3339(at),
                    })),
                })
            })
            .collect();
        Value::Array(upstreams)
    }
}
