//! What a compiled schema holds in memory, estimated from the schema: the
//! cache weighs its entries by it, so that `schema_cache_bytes` bounds the
//! memory the entries hold, not the length of their JSON text.
//!
//! The constants come from measurements (jsonschema 0.60.2 with
//! fancy-regex 0.19 over regex-automata, glibc malloc): a scratch program
//! with a counting global allocator (each allocation counted as its malloc
//! chunk, its size plus 8 rounded up to 16, at least 32; the allocator
//! cannot live in this crate, which forbids unsafe code) compiled 20
//! distinct schemas of each of 19 shapes of 1 to 20 KB (flat, typed,
//! described, enums, nested objects, `anyOf`, arrays, formats, `$defs` and
//! `$ref`s, patterns, 60-deep nesting with short and 130-byte names, ...)
//! and 45 single patterns, and kept what `compile` left allocated:
//!
//! - A value of the schema costs 200 to 400 bytes once compiled, about 600
//!   an object member (each keyword is a boxed validator that keeps its
//!   location, and annotations such as `description` are kept too), plus
//!   about 1.3 bytes per byte of its JSON pointer (every location is a full
//!   `Arc<str>`: deep schemas with long names grow quadratically; 60 levels
//!   of 130-byte names made 19 KB of text hold 2.4 MB). An 11 KB schema of
//!   plain properties holds about 250 KB, 22 bytes per byte of text.
//! - A pattern holds 8 to 22 KiB plus, per copy of each atom (`{n,m}`
//!   copies its operand m times): about 90 bytes an ASCII character or
//!   class (`\d` and `\w` are ASCII in the ECMA-262 dialect), 1.0 to 1.2
//!   KiB a class that spans Unicode (`.`, `\s`, `\W`, `[^…]`), 11 to 51 KiB
//!   a Unicode property, also inside a class (`\p{L}` is the largest:
//!   `^[\p{L}' -]{1,30}$` holds 1.5 MB). A capturing group costs up to 7
//!   times its content more (a one-pass DFA, which regex-automata caps at
//!   1 MiB), `(?i)` about 5 times for ASCII, look-around a second engine.
//!   A schema compiles each distinct pattern once.
//! - Validation fills each pattern's lazy DFA, PikeVM and backtracker
//!   caches, one set per thread checking with it at the same time, kept
//!   for as long as the pattern lives: up to 0.42 times its compiled size
//!   per thread (8 threads at once, inputs up to 1,800 characters). The
//!   estimate counts one set per runtime worker.
//!
//! Every constant below is above what was measured: an estimate is 1.1 to
//! 3 times the measured bytes of the shapes above (up to 15 times for a
//! capturing group around a Unicode property), never below (see the
//! tests, which hold the measured figures).

use std::collections::HashSet;
use std::sync::OnceLock;

use serde_json::Value;

use pattern::pattern_bytes;

mod pattern;
#[cfg(test)]
mod tests;

/// Fixed bytes per entry: the compiled root, the `Compiled` around it, its
/// `Arc`, and the cache's own entry (key, links, hash slot).
const ENTRY: u64 = 2048;
/// Per value of the schema.
const PER_VALUE: u64 = 192;
/// Per object member, on top of its value.
const PER_MEMBER: u64 = 192;
/// Per byte of a value's JSON pointer (its location, kept per keyword).
const PER_POINTER_BYTE: u64 = 2;
/// The caches a pattern fills in one thread, as a divisor of its compiled
/// size (measured: up to 0.42 of it).
const CACHES_PER_THREAD_DIVISOR: u64 = 2;

/// The weight of a compiled `schema` in the cache: the bytes it holds
/// compiled (with its cache entry), the caches validation fills for its
/// patterns on every runtime worker included, estimated from the schema
/// (saturating). At least the measured bytes of every shape tried (see the
/// module documentation).
pub(crate) fn weight(schema: &Value) -> u32 {
    u32::try_from(estimate_for(schema, threads())).unwrap_or(u32::MAX)
}

/// Threads that may validate at once, each filling its own copy of a
/// pattern's caches: the runtime's workers (`TOKIO_WORKER_THREADS`, else
/// one per core), at least 2.
fn threads() -> u64 {
    static THREADS: OnceLock<u64> = OnceLock::new();
    *THREADS.get_or_init(|| {
        let workers = std::env::var("TOKIO_WORKER_THREADS")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .or_else(|| {
                std::thread::available_parallelism()
                    .ok()
                    .map(|n| n.get() as u64)
            });
        workers.unwrap_or(8).clamp(2, 1024)
    })
}

/// Estimated bytes a compiled `schema` holds, with `threads` validating
/// with it at once.
fn estimate_for(schema: &Value, threads: u64) -> u64 {
    let mut total = ENTRY;
    // A schema compiles each distinct pattern once.
    let mut patterns: HashSet<&str> = HashSet::new();
    // (value, length of its JSON pointer)
    let mut stack: Vec<(&Value, u64)> = vec![(schema, 0)];
    while let Some((v, pointer)) = stack.pop() {
        total = total
            .saturating_add(PER_VALUE)
            .saturating_add(pointer.saturating_mul(PER_POINTER_BYTE));
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    total = total.saturating_add(PER_MEMBER);
                    let at = pointer.saturating_add(1 + k.len() as u64);
                    match (k.as_str(), x) {
                        ("pattern", Value::String(p)) => {
                            patterns.insert(p);
                        }
                        ("patternProperties", Value::Object(ps)) => {
                            patterns.extend(ps.keys().map(String::as_str));
                        }
                        _ => {}
                    }
                    stack.push((x, at));
                }
            }
            Value::Array(xs) => {
                for (i, x) in xs.iter().enumerate() {
                    stack.push((x, pointer.saturating_add(1 + digits(i))));
                }
            }
            Value::String(s) => total = total.saturating_add(s.len() as u64),
            _ => {}
        }
    }
    patterns
        .into_iter()
        .fold(total, |t, p| t.saturating_add(with_caches(p, threads)))
}

/// A pattern compiled, and the caches validation fills for it in each of
/// `threads`.
fn with_caches(p: &str, threads: u64) -> u64 {
    let compiled = pattern_bytes(p);
    let per_thread = compiled / CACHES_PER_THREAD_DIVISOR;
    compiled.saturating_add(per_thread.saturating_mul(threads))
}

fn digits(i: usize) -> u64 {
    u64::from(i.checked_ilog10().unwrap_or(0)) + 1
}
