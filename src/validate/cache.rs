//! [`Validators`]: compiled schemas cached by content and weighed by the
//! memory they hold ([`super::weight()`]), under one memory budget shared
//! with the tool-set cache.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::compiled::{self, Compiled, SchemaRejected};
use super::violation::Checked;
use crate::schema::budget::{self, Limits};

/// Memory for compiled schemas and parsed tool sets together, in bytes
/// (`server.schema_cache_bytes`).
static BUDGET: AtomicU64 = AtomicU64::new(DEFAULT_BUDGET);

/// Default of [`set_cache_budget`]: 32 MiB.
pub(super) const DEFAULT_BUDGET: u64 = 32 * 1024 * 1024;

/// Set the memory budget of the process-wide caches (compiled schemas get
/// half, tool sets the other half). Takes effect for caches created after
/// the call: call it at start, before the first request.
pub fn set_cache_budget(bytes: u64) {
    BUDGET.store(bytes, Ordering::Relaxed);
}

/// The budget [`set_cache_budget`] set.
pub(crate) fn cache_budget() -> u64 {
    BUDGET.load(Ordering::Relaxed)
}

type Entry = Result<Arc<Compiled>, SchemaRejected>;

/// Cache of compiled validators, keyed by schema, weighed by the memory
/// each holds.
#[derive(Clone)]
pub struct Validators {
    cache: moka::sync::Cache<[u8; 32], Entry>,
    max_bytes: u64,
    compilations: Arc<AtomicU64>,
}

impl Default for Validators {
    fn default() -> Self {
        Self::new(cache_budget() / 2)
    }
}

impl std::fmt::Debug for Validators {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Validators")
            .field("entries", &self.cache.entry_count())
            .field("bytes", &self.cache.weighted_size())
            .field("compilations", &self.compilations())
            .finish()
    }
}

impl Validators {
    /// Validators holding up to about `max_bytes` of compiled schemas (as
    /// estimated by [`super::weight()`], which is above what was measured).
    pub fn new(max_bytes: u64) -> Self {
        let max_bytes = max_bytes.max(1);
        let cache = moka::sync::Cache::builder()
            .max_capacity(max_bytes)
            .weigher(|_key, entry: &Entry| weight(entry))
            .build();
        Self {
            cache,
            max_bytes,
            compilations: Arc::new(AtomicU64::new(0)),
        }
    }

    /// How many schemas have been compiled so far (cache misses).
    pub fn compilations(&self) -> u64 {
        self.compilations.load(Ordering::Relaxed)
    }

    /// Estimated bytes held now.
    pub fn weighted_size(&self) -> u64 {
        self.cache.run_pending_tasks();
        self.cache.weighted_size()
    }

    /// The process-wide cache, with half of [`cache_budget`].
    pub fn shared() -> &'static Validators {
        static SHARED: std::sync::OnceLock<Validators> = std::sync::OnceLock::new();
        SHARED.get_or_init(Validators::default)
    }

    /// The compiled schema: checked against the budget and compiled on
    /// first use ([`compiled::compile`]); a refusal is remembered too. Its
    /// raw size is checked every time, before it is hashed (a cheaper pass
    /// that stops early on a schema far over the budget).
    ///
    /// A compiled schema heavier than the whole budget is returned but not
    /// kept, and one that is kept evicts what it displaces at once, so the
    /// cache holds no more than its budget between two requests.
    pub fn compile(&self, schema: &Value) -> Result<Arc<Compiled>, SchemaRejected> {
        budget::check_size([schema], &Limits::default())?;
        let key = schema_key(schema);
        let mut unkept = None;
        let kept = self.cache.optionally_get_with(key, || {
            self.compilations.fetch_add(1, Ordering::Relaxed);
            let entry = compiled::compile(schema).map(Arc::new);
            if u64::from(weight(&entry)) <= self.max_bytes {
                Some(entry)
            } else {
                unkept = Some(entry);
                None
            }
        });
        match (kept, unkept) {
            (_, Some(entry)) => entry,
            (Some(entry), None) => {
                settle(&self.cache);
                entry
            }
            // Another request's compilation was too heavy to keep.
            (None, None) => {
                self.compilations.fetch_add(1, Ordering::Relaxed);
                compiled::compile(schema).map(Arc::new)
            }
        }
    }

    /// The schema's compilation when it is cached already (after the raw
    /// size check, which refuses at once), without compiling it.
    pub fn cached(&self, schema: &Value) -> Option<Result<Arc<Compiled>, SchemaRejected>> {
        if let Err(e) = budget::check_size([schema], &Limits::default()) {
            return Some(Err(e.into()));
        }
        self.cache.get(&schema_key(schema))
    }

    /// Validate `instance` against `schema` with bounded work. A schema
    /// that cannot be compiled leaves the instance unchecked, never valid.
    pub fn validate(&self, schema: &Value, instance: &Value) -> Checked {
        match self.compile(schema) {
            Ok(c) => c.check(instance),
            Err(e) => Checked::unchecked(format!("the schema cannot be used: {e}")),
        }
    }
}

/// The memory an entry holds, as [`super::weight()`] estimates it.
fn weight(entry: &Entry) -> u32 {
    match entry {
        Ok(c) => c.weight,
        // The entry and the message (a few hundred bytes at most).
        Err(e) => u32::try_from(1024 + e.to_string().len()).unwrap_or(u32::MAX),
    }
}

/// Evict now what the last insertions displaced: `moka` otherwise defers
/// its eviction to later operations (up to dozens of insertions later),
/// and a burst of distinct megabyte schemas would be held meanwhile.
pub(crate) fn settle<V: Clone + Send + Sync + 'static>(cache: &moka::sync::Cache<[u8; 32], V>) {
    cache.run_pending_tasks();
}

/// [`schema_key`] of a JSON array of `values`, without building the array.
pub(crate) fn values_key(values: &[Value]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"[");
    h.update((values.len() as u64).to_le_bytes());
    for v in values {
        canonical(v, &mut h, 0);
    }
    h.finalize().into()
}

/// SHA-256 of the canonical (sorted-key) JSON of `schema`.
pub(crate) fn schema_key(schema: &Value) -> [u8; 32] {
    let mut h = Sha256::new();
    canonical(schema, &mut h, 0);
    h.finalize().into()
}

/// Deeper than this, values are hashed as a marker only; such schemas
/// fail the budget anyway (and the recursion stays shallow).
const MAX_KEY_DEPTH: usize = 200;

fn canonical(v: &Value, h: &mut Sha256, depth: usize) {
    // Length-prefixed, sorted-key encoding: unambiguous, no allocation per
    // scalar (this runs for every tool schema of every request).
    fn bytes(h: &mut Sha256, tag: u8, b: &[u8]) {
        h.update([tag]);
        h.update((b.len() as u64).to_le_bytes());
        h.update(b);
    }
    if depth > MAX_KEY_DEPTH {
        h.update(b"deep");
        return;
    }
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            h.update(b"{");
            h.update((keys.len() as u64).to_le_bytes());
            for k in keys {
                bytes(h, b'k', k.as_bytes());
                if let Some(x) = m.get(k) {
                    canonical(x, h, depth + 1);
                }
            }
        }
        Value::Array(xs) => {
            h.update(b"[");
            h.update((xs.len() as u64).to_le_bytes());
            for x in xs {
                canonical(x, h, depth + 1);
            }
        }
        Value::String(s) => bytes(h, b's', s.as_bytes()),
        Value::Bool(b) => h.update(if *b { b"t" } else { b"f" }),
        Value::Null => h.update(b"n"),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                bytes(h, b'i', &i.to_le_bytes());
            } else if let Some(u) = n.as_u64() {
                bytes(h, b'u', &u.to_le_bytes());
            } else {
                bytes(h, b'f', &n.as_f64().unwrap_or(0.0).to_bits().to_le_bytes());
            }
        }
    }
}

/// [`Validators::compile`] on the process-wide cache, for every schema a
/// client or a policy names: the budget check, then the compilation.
pub(crate) fn admit(schema: &Value) -> Result<Arc<Compiled>, SchemaRejected> {
    Validators::shared().compile(schema)
}
