//! The process's one cache: a `moka` cache weighed by bytes, each entry
//! living for its own policy's `ttl`.
//!
//! `max_bytes` is set per model, but the memory is one: the cache holds
//! no more than the smallest `max_bytes` any `cache:` block of the policy
//! in force sets, and an entry is kept only when it fits its own policy's
//! `max_bytes` (and [`MAX_ENTRY_BYTES`]). A reload that changes that bound
//! starts an empty cache of the new size (the old entries go with the
//! old policy's version anyway, the key names it).
//!
//! The cache is `moka`'s synchronous one: a recording ends inside its
//! body's last poll, where the insert must be visible at once to the
//! client's next request without a task of its own; a lookup or an
//! insert takes microseconds and never waits on I/O.

use std::sync::{
    Arc, Mutex,
    atomic::{AtomicU64, Ordering},
};
use std::time::{Duration, Instant};

use arc_swap::ArcSwapOption;
use moka::{Expiry, notification::RemovalCause, sync::Cache};

use serde_json::{Value, json};

use super::{
    entry::{Entry, Key, Lookup, MAX_ENTRY_BYTES},
    stats::Stats,
};
use crate::policy::{Policy, raw::Tri};

/// The cache of the process, shared by every worker.
#[derive(Default)]
pub(crate) struct Store {
    /// Read without a lock on every lookup.
    sized: ArcSwapOption<Sized>,
    /// Held only to build a cache of a new size.
    resizing: Mutex<()>,
    stats: Stats,
}

/// A cache built for one bound, and the bytes it holds.
struct Sized {
    capacity: u64,
    cache: Cache<Key, Arc<Entry>>,
    bytes: Arc<AtomicU64>,
}

/// Each entry lives for its own `ttl`, counted from when it was stored.
struct OwnTtl;

impl Expiry<Key, Arc<Entry>> for OwnTtl {
    fn expire_after_create(&self, _: &Key, entry: &Arc<Entry>, _: Instant) -> Option<Duration> {
        Some(entry.ttl)
    }

    fn expire_after_update(
        &self,
        _: &Key,
        entry: &Arc<Entry>,
        _: Instant,
        _: Option<Duration>,
    ) -> Option<Duration> {
        Some(entry.ttl)
    }
}

impl Sized {
    fn new(capacity: u64) -> Self {
        let bytes = Arc::new(AtomicU64::new(0));
        let held = bytes.clone();
        let cache = Cache::builder()
            .max_capacity(capacity)
            .weigher(|_: &Key, e: &Arc<Entry>| e.bytes)
            .expire_after(OwnTtl)
            // Expired, evicted for room or replaced: the bytes are gone.
            .eviction_listener(move |_, e: Arc<Entry>, _: RemovalCause| {
                held.fetch_sub(u64::from(e.bytes), Ordering::Relaxed);
            })
            .build();
        Self {
            capacity,
            cache,
            bytes,
        }
    }
}

impl Store {
    /// The cache sized for `capacity` bytes (a new, empty one when the
    /// bound changed).
    fn sized(&self, capacity: u64) -> Arc<Sized> {
        if let Some(s) = self.sized.load_full().filter(|s| s.capacity == capacity) {
            return s;
        }
        let _one = self.resizing.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = self.sized.load_full().filter(|s| s.capacity == capacity) {
            return s;
        }
        let s = Arc::new(Sized::new(capacity));
        self.sized.store(Some(s.clone()));
        super::meter::bytes(0);
        s
    }

    /// The live entry under `key`, in a cache of `capacity` bytes.
    pub(crate) fn get(&self, key: &Key, capacity: u64) -> Option<Arc<Entry>> {
        let s = self.sized(capacity);
        let entry = s.cache.get(key);
        // Expired entries leave as lookups run the cache's upkeep.
        super::meter::bytes(s.bytes.load(Ordering::Relaxed));
        entry
    }

    /// Count one request of `principal` for `model` (metrics and the
    /// status page).
    pub(crate) fn count(&self, principal: &str, model: &str, lookup: Lookup) {
        super::meter::request(model, lookup);
        self.stats.count(principal, lookup);
    }

    /// `/-/status.json`'s `cache`: `{bytes, entries, principals}`.
    pub(crate) fn status_json(&self) -> Value {
        let (bytes, entries) = self.sized.load_full().map_or((0, 0), |s| {
            (s.bytes.load(Ordering::Relaxed), s.cache.entry_count())
        });
        json!({"bytes": bytes, "entries": entries, "principals": self.stats.json()})
    }

    /// Keep `entry` under `key`, in a cache of `capacity` bytes.
    pub(crate) fn insert(&self, key: Key, entry: Entry, capacity: u64) {
        let s = self.sized(capacity);
        let bytes = u64::from(entry.bytes);
        s.bytes.fetch_add(bytes, Ordering::Relaxed);
        s.cache.insert(key, Arc::new(entry));
        // Evictions the insert caused are counted before the gauge is set.
        s.cache.run_pending_tasks();
        super::meter::bytes(s.bytes.load(Ordering::Relaxed));
    }
}

/// The bound of the whole cache under `policy`: the smallest `max_bytes`
/// of its `cache:` blocks (defaults and every `models:` entry).
pub(crate) fn capacity(policy: &Policy) -> Option<u64> {
    let defaults = policy.models.defaults().cache.as_ref().map(|c| c.max_bytes);
    let entries = policy
        .models
        .entries()
        .iter()
        .filter_map(|(_, o)| match &o.cache {
            Tri::Set(c) => Some(c.max_bytes),
            Tri::Absent | Tri::Null => None,
        });
    defaults.into_iter().chain(entries).min()
}

/// The most bytes one entry of a policy with `max_bytes` may take in a
/// cache of `capacity`.
pub(crate) fn entry_cap(max_bytes: u64, capacity: u64) -> u64 {
    max_bytes.min(capacity).min(MAX_ENTRY_BYTES)
}
