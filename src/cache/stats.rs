//! What each principal got from the cache, for the status page
//! (`/-/status.json`'s `cache.principals`): hits, misses and bypasses per
//! principal label (the key id, or `anonymous`), at most
//! [`MAX_PRINCIPALS`] labels, the rest counted under `other`.

use std::{collections::BTreeMap, sync::Mutex};

use serde_json::{Value, json};

use super::entry::Lookup;

/// Most principal labels counted apart.
const MAX_PRINCIPALS: usize = 256;

/// Lookups per principal since the process started.
#[derive(Default)]
pub(crate) struct Stats {
    by: Mutex<BTreeMap<String, [u64; 3]>>,
}

impl Stats {
    /// Count one lookup of `principal`.
    pub(crate) fn count(&self, principal: &str, lookup: Lookup) {
        let mut by = self.by.lock().unwrap_or_else(|p| p.into_inner());
        let label = if by.contains_key(principal) || by.len() < MAX_PRINCIPALS {
            principal
        } else {
            "other"
        };
        let counts = by.entry(label.to_string()).or_default();
        counts[lookup as usize] += 1;
    }

    /// `[{principal, hit, miss, bypass}]`, by label.
    pub(crate) fn json(&self) -> Value {
        let by = self.by.lock().unwrap_or_else(|p| p.into_inner());
        let rows: Vec<Value> = by
            .iter()
            .map(|(principal, c)| {
                json!({"principal": principal, "hit": c[0], "miss": c[1], "bypass": c[2]})
            })
            .collect();
        Value::Array(rows)
    }
}

#[cfg(test)]
#[path = "stats_tests.rs"]
mod tests;
