//! Output validation: compiled-once validators and JSON Schema violations.
//!
//! [`Validators`] compiles each distinct schema once (keyed by the SHA-256 of
//! its canonical JSON) and reports [`Violation`]s with JSON pointers into the
//! instance. Repair of model output lives in [`repair`] and [`coerce`].

pub mod coerce;
pub mod repair;
mod text;

#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;
use sha2::{Digest, Sha256};

pub use coerce::coerce_to_schema;
pub use repair::{RepairOutcome, parse_and_repair, retry_feedback};

/// One violation, with a JSON pointer into the instance.
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    pub pointer: String,
    pub message: String,
}

type Compiled = Result<Arc<jsonschema::Validator>, Arc<str>>;

/// Cache of compiled validators, keyed by schema.
#[derive(Clone)]
pub struct Validators {
    cache: moka::sync::Cache<[u8; 32], Compiled>,
    compilations: Arc<AtomicU64>,
}

impl Default for Validators {
    fn default() -> Self {
        Self::new(1024)
    }
}

impl std::fmt::Debug for Validators {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Validators")
            .field("entries", &self.cache.entry_count())
            .field("compilations", &self.compilations())
            .finish()
    }
}

/// [`schema_key`] of a JSON array of `values`, without building the array.
pub fn values_key(values: &[Value]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(b"[");
    h.update((values.len() as u64).to_le_bytes());
    for v in values {
        canonical(v, &mut h);
    }
    h.finalize().into()
}

/// SHA-256 of the canonical (sorted-key) JSON of `schema`.
pub fn schema_key(schema: &Value) -> [u8; 32] {
    let mut h = Sha256::new();
    canonical(schema, &mut h);
    h.finalize().into()
}

fn canonical(v: &Value, h: &mut Sha256) {
    // Length-prefixed, sorted-key encoding: unambiguous, no allocation per
    // scalar (this runs for every tool schema of every request).
    fn bytes(h: &mut Sha256, tag: u8, b: &[u8]) {
        h.update([tag]);
        h.update((b.len() as u64).to_le_bytes());
        h.update(b);
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
                    canonical(x, h);
                }
            }
        }
        Value::Array(xs) => {
            h.update(b"[");
            h.update((xs.len() as u64).to_le_bytes());
            for x in xs {
                canonical(x, h);
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

impl Validators {
    /// Validators for up to `capacity` distinct schemas.
    pub fn new(capacity: u64) -> Self {
        Self {
            cache: moka::sync::Cache::new(capacity.max(1)),
            compilations: Arc::new(AtomicU64::new(0)),
        }
    }

    /// How many schemas have been compiled so far (cache misses).
    pub fn compilations(&self) -> u64 {
        self.compilations.load(Ordering::Relaxed)
    }

    /// The process-wide cache, for code that has no `AppState` at hand
    /// (tool schemas are compiled once per distinct schema, not per request).
    pub fn shared() -> &'static Validators {
        static SHARED: std::sync::OnceLock<Validators> = std::sync::OnceLock::new();
        SHARED.get_or_init(|| Validators::new(4096))
    }

    /// The compiled validator for `schema`, compiling it on first use. A
    /// schema that cannot be compiled is remembered as such.
    pub fn compile(&self, schema: &Value) -> Result<Arc<jsonschema::Validator>, String> {
        let key = schema_key(schema);
        let compiled = self.cache.get_with(key, || {
            self.compilations.fetch_add(1, Ordering::Relaxed);
            jsonschema::options()
                .should_validate_formats(true)
                .build(schema)
                .map(Arc::new)
                .map_err(|e| Arc::from(e.to_string()))
        });
        compiled.map_err(|e| e.to_string())
    }

    /// Violations of `instance` against `schema` (empty = valid). A schema
    /// that cannot be compiled constrains nothing.
    pub fn validate(&self, schema: &Value, instance: &Value) -> Vec<Violation> {
        let Ok(v) = self.compile(schema) else {
            return Vec::new();
        };
        v.iter_errors(instance)
            .map(|e| {
                let mut pointer = e.instance_path().as_str().to_string();
                if let jsonschema::error::ValidationErrorKind::Required { property } = e.kind()
                    && let Some(name) = property.as_str()
                {
                    pointer.push('/');
                    pointer.push_str(&name.replace('~', "~0").replace('/', "~1"));
                }
                Violation {
                    pointer,
                    message: e.to_string(),
                }
            })
            .collect()
    }

    /// Whether `instance` satisfies `schema`.
    pub fn is_valid(&self, schema: &Value, instance: &Value) -> bool {
        match self.compile(schema) {
            Ok(v) => v.is_valid(instance),
            Err(_) => true,
        }
    }
}

/// The first `max` violations as one line, e.g.
/// `/age: "five" is not of type "integer"; /name: "name" is a required property`.
pub fn format_violations(violations: &[Violation], max: usize) -> String {
    let mut parts: Vec<String> = violations
        .iter()
        .take(max)
        .map(|v| {
            let at = if v.pointer.is_empty() {
                "/"
            } else {
                &v.pointer
            };
            format!("{at}: {}", shorten(&v.message, 200))
        })
        .collect();
    if violations.len() > max {
        parts.push(format!("and {} more", violations.len() - max));
    }
    parts.join("; ")
}

fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let cut: String = s.chars().take(max.saturating_sub(3)).collect();
    format!("{cut}...")
}
