//! augur: a reverse proxy for Ollama.
//!
//! Clients point their Ollama (or OpenAI-compatible) base URL at augur. Every
//! request flows through the same stages:
//!
//! ```text
//! 1 receive      app, telemetry      request id, access log, metrics
//!                ingress             canonical path, route class, bounded body
//! 2 authenticate ingress, limits     API key -> principal (policy snapshot)
//! 3 rate limit   ingress, limits     allow-list, per principal / model / tokens / concurrency
//! 4 normalize    format, schema      `format` values fixed, schemas made grammar-safe
//! 5 emulate      tools               `tools` -> constrained `format` + instruction
//! 6 forward      upstream            hyper HTTP/1.1 client, bytes untouched
//! 7 validate     validate            jsonschema check, repair, bounded retry
//! 8 synthesize   tools::synthesize   model JSON -> `message.tool_calls`
//!                guard               `tools.guard`: calls withheld or flagged
//! 9 deliver      pipeline::output,   NDJSON here, SSE and JSON in each
//!                surface             surface, one line flushed at a time
//! ```
//!
//! Stages 1-3 run in one layer ([`ingress`]) in front of every route, so
//! no handler can skip them. Routes that need none of stages 4-8 are
//! forwarded byte for byte by [`surface::passthrough`].

pub mod admin;
pub mod app;
pub mod client_io;
pub mod config;
pub mod error;
pub(crate) mod format;
pub mod guard;
pub mod ingress;
pub(crate) mod limits;
pub mod pipeline;
pub mod policy;
pub mod schema;
pub mod shutdown;
pub(crate) mod state;
pub mod surface;
pub mod telemetry;
pub mod tls;
pub mod tools;
pub mod upstream;
pub mod validate;
pub mod wire;
