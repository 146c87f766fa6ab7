//! Forwarding to Ollama with hyper's HTTP/1.1 client: bytes through
//! untouched (no redirects, no decompression, no header rewriting beyond
//! what a reverse proxy must do). Connections are kept alive in a
//! pool (`pool.rs`) and driven by the request using them.
//!
//! What this module changes on the way up: `Host` becomes the upstream's
//! (Ollama answers 403 to a non-local Host when it listens on loopback),
//! `X-Forwarded-For` / `X-Forwarded-Proto` are added, hop-by-hop headers are
//! dropped. On the way down only hop-by-hop headers are dropped. Timeouts
//! for connect and first byte become 502/504. An upstream body that fails
//! mid-way ends the client's stream with an `{"error": ...}` line instead
//! of a silent truncation; a whole (non-stream) body that fails is a 502
//! when nothing of it was sent yet, and an aborted connection otherwise
//! (see `relay.rs`).
//!
//! [`Upstream`] is one upstream's client; [`fleet`] chooses among several
//! (model-aware routing, health, failover) and owns their clients.

pub(crate) mod capabilities;
mod client;
mod failure;
pub(crate) mod fleet;
mod headers;
mod load;
mod pool;
mod relay;
mod replay;
mod resend;
mod socket;
mod terminator;

pub use client::Upstream;
pub(crate) use client::WARM_WITHIN;
pub(crate) use fleet::{Fleet, LOADED_POLL_EVERY, Target};
pub(crate) use relay::stalled;
pub(crate) use replay::Replay;
