//! Exchanges recorded for replay, off unless a model's policy sets
//! `record:` (see `docs/replay.md`).
//!
//! A recorded request carries a [`Tap`] in its extensions from the
//! surface to the fleet: each upstream call it makes is noted there
//! (path, body, status, each answer line with its offset), and the answer
//! the client gets is copied as it goes out ([`answer`]). When that body
//! ends, or the client leaves, the exchange becomes one JSON line
//! ([`exchange`]), redacted ([`redact`]) and bounded, handed to the file's
//! writer thread through a bounded channel ([`writer`]): a full channel
//! drops the line (counted), never the request.

mod answer;
mod exchange;
mod redact;
mod tap;
mod writer;

pub(crate) use answer::answer;
pub(crate) use exchange::{Meta, done_fields};
pub(crate) use tap::Tap;
pub(crate) use writer::Sinks;
