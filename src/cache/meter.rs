//! The cache's metrics: `augur_cache_requests_total{model,result}`,
//! `augur_cache_bytes` and `augur_cache_tokens_saved_total{model}`.

use super::entry::Lookup;

/// One request whose model has a cache, and what became of it.
pub(crate) fn request(model: &str, lookup: Lookup) {
    metrics::counter!("augur_cache_requests_total",
        "model" => model.to_string(), "result" => lookup.as_str())
    .increment(1);
}

/// The tokens a hit did not have the upstream generate again.
pub(crate) fn saved(model: &str, tokens: u64) {
    metrics::counter!("augur_cache_tokens_saved_total", "model" => model.to_string())
        .increment(tokens);
}

/// The bytes the cache holds.
pub(crate) fn bytes(held: u64) {
    metrics::gauge!("augur_cache_bytes").set(held as f64);
}
