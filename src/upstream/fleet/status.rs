//! What `GET /-/upstreams` shows: each upstream's name, URL, weight,
//! health, whether it is stalled, requests in flight, models (and where they were learned),
//! loaded models and last failure.

use std::time::SystemTime;

use serde_json::{Value, json};

use super::state::Fleet;

/// Most model names shown per upstream (the count is always shown).
const MAX_SHOWN: usize = 1000;

impl Fleet {
    /// Every upstream's state, in the configured order.
    pub fn status_json(&self) -> Value {
        let upstreams: Vec<Value> = self
            .seats
            .iter()
            .filter_map(super::seat::Seat::member)
            .map(|m| {
                let catalog = m.catalog();
                let source = match (&m.spec.models, catalog.known) {
                    (Some(_), _) => "static",
                    (None, true) => "tags",
                    (None, false) => "unknown",
                };
                let mut shown = json!({
                    "name": m.name(),
                    "url": m.spec.url.to_string(),
                    "weight": m.spec.weight,
                    "healthy": m.healthy(),
                    "stalled": m.is_stalled(),
                    "in_flight": m.in_flight(),
                    "models_source": source,
                    "model_count": catalog.models.len(),
                    "models": sorted(catalog.models.iter()),
                    "models_read_at": catalog.models_at.map(rfc3339),
                    "loaded": sorted(catalog.loaded.iter()),
                    "loaded_read_at": catalog.loaded_at.map(rfc3339),
                    "last_error": m.last_error().map(|(message, at)| json!({
                        "message": message,
                        "at": rfc3339(at),
                    })),
                });
                if m.generation() != 0 {
                    shown["found_by_dns"] = json!(true);
                    shown["draining"] = json!(m.is_draining());
                }
                shown
            })
            .collect();
        json!({ "upstreams": upstreams })
    }
}

fn sorted<'a>(names: impl Iterator<Item = &'a String>) -> Vec<&'a String> {
    let mut names: Vec<&String> = names.collect();
    names.sort_unstable();
    names.truncate(MAX_SHOWN);
    names
}

fn rfc3339(t: SystemTime) -> String {
    time::OffsetDateTime::from(t)
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}
