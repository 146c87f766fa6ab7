//! Several upstreams: which one a request goes to, which ones are
//! healthy, and what each has.
//!
//! ```text
//! target = Model(name) | Any | First                 // from the route (surface)
//! pinned = X-Augur-Upstream: <name>                  // 400 for a name not configured
//! index  = pinned or pick::{for_model, any, first}   // see `pick`
//! attempt on clients[index]                           // this worker's pool for it
//! failed before any byte (refused, reset, 502)      → once more on another that has the model
//! no first byte within first_byte_timeout            → stalled; once more on another (body held)
//! 503 (Ollama's "server busy")                      → each other one that has the model, then 503
//! ```
//!
//! Every worker thread has its own clients (connection pools, each swept
//! and topped up in the background: see `pool/ahead.rs`) and shares the
//! rest: each upstream's health, load, models and metrics ([`member`]).
//! With several upstreams a monitor ([`monitor`]) probes each one and
//! reads its models; with one, nothing is chosen, and a poller of its
//! loaded models ([`loaded`], for the status page and metrics) runs
//! instead: the request path costs a branch and the in-flight count.
//! A `dns+http://` upstream reserves slots (its `max_members`) filled by
//! the addresses its name resolves to ([`dns`], [`seat`]); empty and
//! draining slots are never chosen. docs/upstreams.md lists all that runs
//! in the background.

mod choose;
mod dns;
mod get;
mod group;
mod listing;
mod loaded;
mod member;
mod monitor;
pub(crate) mod pick;
mod ps;
mod ring;
mod seat;
mod send;
mod slots;
mod state;
mod status;
mod target;

pub(crate) use listing::Listing;
pub(crate) use loaded::LOADED_POLL_EVERY;
pub(crate) use pick::Affinity;
pub(crate) use state::Fleet;
pub(crate) use target::Target;
pub(crate) use target::{X_AUGUR_SESSION, X_AUGUR_UPSTREAM};

#[cfg(test)]
mod tests;
