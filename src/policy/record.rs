//! The `record:` block compiled: every exchange of a model appended as one
//! JSON line to `path` (see `docs/replay.md`). The file rotates at
//! `max_bytes` (from [`MIN_BYTES`] to [`MAX_BYTES`], default
//! [`DEFAULT_BYTES`]) into `path.1` … `path.<keep>` (at most [`MAX_KEEP`],
//! default 3); the values of the JSON fields named in `redact` are written
//! as `"[redacted]"`.

use std::path::PathBuf;

use super::{error::PolicyError, raw::RawRecord};

/// Default `record.max_bytes`: 64 MiB.
pub(crate) const DEFAULT_BYTES: u64 = 64 << 20;
/// Smallest `record.max_bytes`.
pub(crate) const MIN_BYTES: u64 = 1024;
/// Largest `record.max_bytes`: 64 GiB.
pub(crate) const MAX_BYTES: u64 = 64 << 30;
/// Default `record.keep`.
const DEFAULT_KEEP: u32 = 3;
/// Most rotated files `record.keep` may ask for.
pub(crate) const MAX_KEEP: u32 = 100;
/// Most field names in `record.redact`.
const MAX_REDACT: usize = 64;

/// `record:` block: exchanges written to a file for replay.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RecordPolicy {
    /// The file exchanges are appended to.
    pub path: PathBuf,
    /// The size past which the file rotates.
    pub max_bytes: u64,
    /// Rotated files kept (`path.1` is the newest).
    pub keep: u32,
    /// JSON field names whose values are never written.
    pub redact: Vec<String>,
}

/// Compile the block at `at` of `file`.
pub(super) fn compile(file: &str, at: &str, r: &RawRecord) -> Result<RecordPolicy, PolicyError> {
    let at = format!("{at}.record");
    let bad =
        |key: &str, message: String| PolicyError::invalid(file, format!("{at}.{key}"), message);
    if r.path.trim().is_empty() || r.path.chars().any(char::is_control) {
        return Err(bad("path", "a file path".into()));
    }
    let max_bytes = r.max_bytes.unwrap_or(DEFAULT_BYTES);
    if !(MIN_BYTES..=MAX_BYTES).contains(&max_bytes) {
        return Err(bad(
            "max_bytes",
            format!("from {MIN_BYTES} to {MAX_BYTES} bytes"),
        ));
    }
    let keep = r.keep.unwrap_or(DEFAULT_KEEP);
    if keep > MAX_KEEP {
        return Err(bad("keep", format!("from 0 to {MAX_KEEP} files")));
    }
    if r.redact.len() > MAX_REDACT || r.redact.iter().any(|f| f.is_empty()) {
        return Err(bad(
            "redact",
            format!("at most {MAX_REDACT} non-empty field names"),
        ));
    }
    Ok(RecordPolicy {
        path: PathBuf::from(&r.path),
        max_bytes,
        keep,
        redact: r.redact.clone(),
    })
}

#[cfg(test)]
#[path = "record_tests.rs"]
mod tests;
