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
//!   cache        surface::cached,    a deterministic repeat answered from memory
//!                cache               (models whose policy sets `cache:`)
//!                surface             each protocol translated into one exchange
//! 4 normalize    pipeline::plan,     `format` values fixed, schemas made grammar-safe
//!                format, schema
//! 5 emulate      pipeline::prepare,  `tools` -> constrained `format` + instruction
//!                tools
//! 6 forward      pipeline::call,     hyper HTTP/1.1 client, bytes untouched
//!                upstream
//! 7 validate     pipeline::attempt,  jsonschema check, repair, bounded retry,
//!                validate            fallback models; native calls: pipeline::native
//! 8 synthesize   pipeline::chunk,    model JSON -> `message.tool_calls`, Ollama chunks
//!                tools::synthesize
//!                pipeline::tool_guard `tools.guard`: calls withheld or flagged
//! 9 deliver      pipeline::deliver,  whole, buffered or streamed; each surface
//!                surface             renders (NDJSON, SSE, JSON), a frame at a time
//! ```
//!
//! Stages 1-3 run in one layer ([`ingress`]) in front of every route, so
//! no handler can skip them. Routes that need none of stages 4-8 are
//! forwarded byte for byte by [`surface::passthrough`].

pub mod admin;
pub mod app;
pub(crate) mod cache;
pub mod client;
pub(crate) mod confidence;
pub mod config;
pub mod ending;
pub mod error;
pub(crate) mod format;
pub mod guard;
pub mod ingress;
pub(crate) mod limits;
pub mod pipeline;
pub mod policy;
pub(crate) mod reload;
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
