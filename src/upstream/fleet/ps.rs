//! What an upstream's `GET /api/ps` says it has loaded: name, size, size
//! in VRAM and when it unloads (bounded: at most [`MAX_MODELS`] models,
//! names cut to [`MAX_TEXT`] characters), the other names each answers to,
//! and its gauges.
//!
//! Ollama runs one runner per model and lists it once, under the name it
//! was loaded by: a copy of it (`ollama cp`, the same manifest digest)
//! is served by the same runner, yet not listed. Its other names are the
//! ones `GET /api/tags` gives the same digest ([`also_named`]).
//!
//! The gauges:
//!
//! * `augur_upstream_models_loaded{upstream}`: how many are loaded;
//! * `augur_upstream_model_vram_bytes{upstream,model}`: each one's VRAM,
//!   set to 0 once it is unloaded. At most [`MAX_VRAM_SERIES`] model names
//!   per upstream get a series (the names come from the upstream).

use std::{sync::Mutex, time::SystemTime};

use serde_json::Value;

/// Most loaded models kept per upstream.
const MAX_MODELS: usize = 256;
/// Most model names with a VRAM series, per upstream.
pub(crate) const MAX_VRAM_SERIES: usize = 64;
/// Longest model name or time kept, in characters.
const MAX_TEXT: usize = 200;
/// Most other names kept per loaded model.
pub(crate) const MAX_ALIASES: usize = 16;

/// One loaded model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LoadedModel {
    pub name: String,
    /// The other names it answers to (the same digest), sorted.
    pub aliases: Vec<String>,
    /// Its manifest digest, as the listing gave it.
    pub digest: Option<String>,
    pub size: u64,
    pub size_vram: u64,
    pub expires_at: Option<String>,
}

/// The last `/api/ps` read of one upstream.
#[derive(Debug, Default)]
pub(crate) struct Loaded {
    /// The models of the last successful read.
    pub models: Vec<LoadedModel>,
    pub read_at: Option<SystemTime>,
    /// Why the newest read failed; `None` once one succeeds.
    pub error: Option<String>,
}

/// The gauges of one upstream, and the model names that have a series.
pub(crate) struct Gauges {
    count: metrics::Gauge,
    labelled: Mutex<Vec<String>>,
}

impl Gauges {
    pub(super) fn new(upstream: &str) -> Self {
        Self {
            count: metrics::gauge!("augur_upstream_models_loaded", "upstream" => upstream.to_string()),
            labelled: Mutex::new(Vec::new()),
        }
    }

    /// Set every series to `models`: the ones no longer listed to 0.
    pub(super) fn set(&self, upstream: &str, models: &[LoadedModel]) {
        self.count.set(models.len() as f64);
        let mut labelled = self.labelled.lock().unwrap_or_else(|p| p.into_inner());
        for name in labelled.iter() {
            if !models.iter().any(|m| &m.name == name) {
                vram(upstream, name).set(0.0);
            }
        }
        for m in models {
            if !labelled.contains(&m.name) {
                if labelled.len() >= MAX_VRAM_SERIES {
                    continue;
                }
                labelled.push(m.name.clone());
            }
            vram(upstream, &m.name).set(m.size_vram as f64);
        }
    }
}

fn vram(upstream: &str, model: &str) -> metrics::Gauge {
    metrics::gauge!("augur_upstream_model_vram_bytes",
        "upstream" => upstream.to_string(), "model" => model.to_string())
}

pub(super) fn cut(text: &str) -> String {
    text.chars().take(MAX_TEXT).collect()
}

/// The loaded models of a `/api/ps` answer; entries without a name are
/// skipped, sizes that are not counts read as 0.
pub(crate) fn parse(listing: &Value) -> Vec<LoadedModel> {
    listing
        .get("models")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|entry| {
            let name = ["name", "model"]
                .into_iter()
                .find_map(|k| entry.get(k).and_then(Value::as_str))?;
            let count = |k: &str| entry.get(k).and_then(Value::as_u64).unwrap_or(0);
            Some(LoadedModel {
                name: cut(&crate::wire::normalize_model_name(name)),
                aliases: Vec::new(),
                digest: digest(entry),
                size: count("size"),
                size_vram: count("size_vram"),
                expires_at: entry.get("expires_at").and_then(Value::as_str).map(cut),
            })
        })
        .take(MAX_MODELS)
        .collect()
}

/// The digest of a listing entry, if it has one.
fn digest(entry: &Value) -> Option<String> {
    entry
        .get("digest")
        .and_then(Value::as_str)
        .filter(|d| !d.is_empty())
        .map(cut)
}

/// Give each of `models` the other names `tags` (a `/api/tags` listing)
/// lists with its digest.
pub(crate) fn also_named(models: &mut [LoadedModel], tags: &Value) {
    let entries = tags
        .get("models")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for model in models.iter_mut() {
        let Some(own) = model.digest.as_deref() else {
            continue;
        };
        let mut aliases: Vec<String> = entries
            .iter()
            .filter(|entry| digest(entry).as_deref() == Some(own))
            .filter_map(|entry| entry.get("name").and_then(Value::as_str))
            .map(|name| cut(&crate::wire::normalize_model_name(name)))
            .filter(|name| *name != model.name)
            .take(MAX_ALIASES * 4)
            .collect();
        aliases.sort();
        aliases.dedup();
        aliases.truncate(MAX_ALIASES);
        model.aliases = aliases;
    }
}

#[cfg(test)]
#[path = "ps_tests.rs"]
mod tests;
