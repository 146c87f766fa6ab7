//! Kept-alive HTTP/1.1 connections to the upstream, each driven by the
//! request that is using it.
//!
//! A hyper client connection is a future that performs the connection's
//! I/O. hyper-util's pooled client spawns that future as a task of its own
//! and hands the response to the request through a one-slot channel, so
//! each chunk of an NDJSON stream costs a task hand-off and its own write
//! to the client. Here the request's task polls the connection itself:
//! while the request is sent, while the response head is awaited, and from
//! the response body. Chunks that reach augur together leave together, in
//! one write, and every chunk is still flushed as soon as nothing more has
//! arrived, as a line-by-line stream needs.
//!
//! A connection goes back to the pool only once its response has ended
//! cleanly. A response dropped early (the client went away) closes its
//! connection, which is what tells Ollama to stop generating.

mod ahead;
mod checkout;
mod dial;
mod lease;
mod state;

pub(crate) use ahead::Ahead;
pub(crate) use dial::{Placed, SlotAddr};
pub(crate) use lease::DrivenBody;
pub(crate) use state::{Pool, SendError};

#[cfg(test)]
mod tests;
