//! What the cache's modules share: the key, an entry as it was delivered,
//! what became of a request (the `X-Augur-Cache` header) and the bounds.
//! Imports nothing else from the folder.

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue};

use crate::telemetry::genai::Counts;

/// Answers `hit`, `miss` or `bypass` on requests whose model has a cache.
pub(crate) const X_AUGUR_CACHE: HeaderName = HeaderName::from_static("x-augur-cache");

/// The most bytes one entry may take, whatever `max_bytes` says (the
/// cache weighs entries in `u32`; a bigger answer is simply not kept).
pub(crate) const MAX_ENTRY_BYTES: u64 = 64 << 20;

/// The SHA-256 of everything that makes two requests the same (see
/// [`super::key`]).
pub(crate) type Key = [u8; 32];

/// What became of a request whose model has a cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lookup {
    /// Answered from the cache.
    Hit = 0,
    /// Not in the cache: answered upstream, kept when clean.
    Miss = 1,
    /// Not looked up: not deterministic, the client said `no-cache`, or
    /// the model build is unknown.
    Bypass = 2,
}

impl Lookup {
    /// The `result` label and the `X-Augur-Cache` value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Lookup::Hit => "hit",
            Lookup::Miss => "miss",
            Lookup::Bypass => "bypass",
        }
    }

    pub(crate) fn header(self) -> HeaderValue {
        HeaderValue::from_static(self.as_str())
    }
}

/// One kept answer: the headers a client needs and the body's chunks,
/// exactly as they were delivered.
#[derive(Debug)]
pub(crate) struct Entry {
    /// `content-type`, `cache-control` and augur's `X-Augur-*` headers.
    pub headers: HeaderMap,
    pub chunks: Vec<Bytes>,
    /// The tokens the answer cost, as reported (charged again on a hit
    /// under `charge_hits`, and counted as saved).
    pub counts: Option<Counts>,
    /// How long it lives from when it is stored.
    pub ttl: Duration,
    /// Its weight: body, headers and a fixed overhead.
    pub bytes: u32,
}

/// What an entry weighs beyond its body: the headers and bookkeeping.
pub(crate) fn overhead(headers: &HeaderMap, chunks: usize) -> u64 {
    let headers: usize = headers
        .iter()
        .map(|(k, v)| k.as_str().len() + v.len() + 16)
        .sum();
    (headers + chunks * std::mem::size_of::<Bytes>() + 256) as u64
}
