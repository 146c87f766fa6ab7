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
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_listing_is_read_within_bounds() {
        let long = "m".repeat(1000);
        let listing = json!({"models": [
            {"name": "gemma3", "size": 10, "size_vram": 7, "expires_at": "2026-01-01T00:00:00Z"},
            {"model": long, "size": "big", "size_vram": -1},
            {"size": 1},
            "not an object",
        ]});
        let models = parse(&listing);
        assert_eq!(models.len(), 2);
        assert_eq!(models[0].name, "gemma3:latest");
        assert_eq!((models[0].size, models[0].size_vram), (10, 7));
        assert_eq!(models[1].name.chars().count(), MAX_TEXT);
        assert_eq!((models[1].size, models[1].size_vram), (0, 0));
        let many: Vec<Value> = (0..1000)
            .map(|i| json!({"name": format!("m{i}")}))
            .collect();
        assert_eq!(parse(&json!({ "models": many })).len(), MAX_MODELS);
        assert!(parse(&json!([1, 2])).is_empty());
    }

    #[test]
    fn a_copy_of_a_loaded_model_is_one_of_its_names() {
        let ps = json!({"models": [
            {"name": "gemma3:latest", "digest": "abc", "size": 1},
            {"name": "qwen3:latest", "digest": "def", "size": 1},
            {"name": "nodigest", "size": 1},
        ]});
        let tags = json!({"models": [
            {"name": "team/gemma:latest", "digest": "abc"},
            {"name": "gemma3", "digest": "abc"},
            {"name": "a-copy", "digest": "abc"},
            {"name": "qwen3:latest", "digest": "def"},
            {"name": "other", "digest": "xyz"},
            {"name": "nodigest", "digest": ""},
        ]});
        let mut models = parse(&ps);
        also_named(&mut models, &tags);
        assert_eq!(models[0].aliases, ["a-copy:latest", "team/gemma:latest"]);
        assert!(models[1].aliases.is_empty());
        assert!(models[2].aliases.is_empty());
        let many: Vec<Value> = (0..1000)
            .map(|i| json!({"name": format!("c{i}"), "digest": "abc"}))
            .collect();
        also_named(&mut models, &json!({ "models": many }));
        assert_eq!(models[0].aliases.len(), MAX_ALIASES);
        also_named(&mut models, &json!([1, 2]));
        assert!(models[0].aliases.is_empty());
    }

    fn model(name: &str, size_vram: u64) -> LoadedModel {
        LoadedModel {
            name: name.to_string(),
            aliases: Vec::new(),
            digest: None,
            size: size_vram,
            size_vram,
            expires_at: None,
        }
    }

    #[test]
    fn unloaded_models_go_to_zero_and_series_are_capped() {
        use metrics_exporter_prometheus::PrometheusBuilder;
        let recorder = PrometheusBuilder::new().build_recorder();
        let handle = recorder.handle();
        metrics::with_local_recorder(&recorder, || {
            let gauges = Gauges::new("u");
            gauges.set("u", &[model("a:latest", 5), model("b:latest", 7)]);
            gauges.set("u", &[model("b:latest", 8)]);
            let many: Vec<LoadedModel> = (0..MAX_VRAM_SERIES + 10)
                .map(|i| model(&format!("m{i}:latest"), 1))
                .collect();
            let text = handle.render();
            let line = |m: &str| {
                text.lines()
                    .find(|l| l.starts_with("augur_upstream_model_vram_bytes") && l.contains(m))
                    .map(|l| l.rsplit(' ').next().unwrap_or_default().to_string())
            };
            assert_eq!(line("a:latest").as_deref(), Some("0"));
            assert_eq!(line("b:latest").as_deref(), Some("8"));
            assert!(text.contains("augur_upstream_models_loaded{upstream=\"u\"} 1"));
            gauges.set("u", &many);
            let series = handle
                .render()
                .lines()
                .filter(|l| l.starts_with("augur_upstream_model_vram_bytes{"))
                .count();
            assert_eq!(series, MAX_VRAM_SERIES);
        });
    }
}
