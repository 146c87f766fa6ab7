//! Rate limits and token budgets shared by every replica, in Redis or
//! Valkey (`[limits] store = "redis://host:port/db"`).
//!
//! Each admission is one call: [`SharedStore::admit`] runs `admit.lua`,
//! which checks every bucket that applies to the request on the server's
//! clock and consumes them all or none. The answer's tokens are charged
//! afterwards by one more call ([`SharedStore::charge`], `charge.lua`).
//! Scripts are sent by digest (`EVALSHA`), loaded once per connection and
//! again whenever the server has lost them.
//!
//! Each worker thread has its own multiplexed connection, opened on its own
//! event loop before it serves (so a call never hops threads), and the
//! admin listener one more, whose health `/-/ready` shows. A supervisor
//! task per connection opens it, and opens it again with exponential
//! backoff (50 ms to 2 s) after the server went away; an open connection is
//! checked with `PING` every second. A call never waits for a connection: while
//! there is none, or when the server does not answer within
//! `store_timeout_ms`, the call fails at once with a [`StoreError`] and the
//! policy's `limits.on_store_error` decides. Three timeouts in a row, with
//! no reply to any call of the connection meanwhile, count as a lost
//! connection: a slow reply while others keep arriving (a loaded replica's
//! own scheduling delay) is a timeout, not an outage.
//!
//! An admission carries its deadline on the store's clock (read when the
//! connection opened): a script that runs after it, because the caller gave
//! up waiting, consumes nothing.

pub(crate) mod admission;
mod connection;
pub(super) mod keys;
mod scripts;
mod state;
mod store;
#[cfg(test)]
pub(crate) mod tests;

pub(crate) use state::Health;
pub(crate) use store::SharedStore;
