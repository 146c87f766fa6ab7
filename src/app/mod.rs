//! The application: its state, the router, the listeners, and the
//! process's life from start to drain ([`run`]), with every background
//! task in one set ([`tasks`]).
//!
//! A proxied request meets, outermost first:
//!
//! 1. the connection: at most `max_connections` at once, the first byte
//!    within `client_header_timeout`, then, on a TLS listener, the
//!    handshake (see [`crate::tls`]); its [`crate::client::ClientInfo`]
//!    goes into every request's extensions;
//! 2. [`crate::telemetry::Telemetry`]: request id, timing, access log,
//!    metrics; adds `Arc<Timing>` to the request extensions;
//! 3. [`crate::ingress::Ingress`]: canonical path, route class, auth,
//!    bounded body, allow-lists and limits; adds
//!    [`crate::ingress::Admitted`], holds the admission until the response
//!    body ends;
//! 4. the routes: the body-aware pipeline for chat/generate/show/tags,
//!    merged listings of several upstreams, and
//!    [`crate::surface::passthrough::handle`] for everything else.
//!
//! Each worker thread runs its own single-threaded event loop with its own
//! listener (`SO_REUSEPORT`) and its own upstream connections.

mod run;
mod serve;
mod tasks;

pub use crate::state::AppState;
pub use run::{Tls, run};
pub use serve::{Accept, Proxy, router, serve, serve_workers, serve_workers_ready};
