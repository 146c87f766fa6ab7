//! An exact response cache, off unless a model's policy sets `cache:`.
//!
//! A deterministic request (temperature 0 or a fixed seed) on a
//! generation route, whose client did not say `Cache-Control: no-cache`,
//! is looked up by a key ([`key`]) over who asks (the principal, or the
//! policy's `share` group), the route, the canonical body, the answer
//! mode, the model's digest and the policy version. A hit replays the
//! kept answer chunk for chunk ([`replay`]); a miss is answered upstream
//! and recorded as it goes out ([`record`]), kept only when clean
//! ([`verdict`]), in one bounded store per process ([`store`]).
//!
//! Identical requests that arrive together each go upstream (no single
//! flight): the last clean answer to end is the one kept.

mod entry;
mod key;
mod meter;
mod record;
mod replay;
mod request;
mod stats;
mod store;
mod verdict;

pub(crate) use entry::{Key, Lookup, X_AUGUR_CACHE};
pub(crate) use key::{Parts, Scope, key};
pub(crate) use meter::saved as count_saved;
pub(crate) use record::{Recorder, record};
pub(crate) use replay::replay;
pub(crate) use request::{GENERATION_ROUTES, declined, deterministic, streams};
pub(crate) use store::Store;
pub(crate) use store::{capacity, entry_cap};
