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
//!   record       surface::recorded,  the exchange copied for replay (models whose
//!                record              policy sets `record:`; `augur replay`: replay)
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

pub mod app;
pub mod config;
pub mod policy;

pub(crate) mod admin;
pub(crate) mod cache;
pub(crate) mod client;
pub(crate) mod confidence;
pub(crate) mod ending;
pub(crate) mod error;
pub(crate) mod format;
pub(crate) mod guard;
pub(crate) mod ingress;
pub(crate) mod limits;
pub(crate) mod pipeline;
pub(crate) mod record;
pub(crate) mod reload;
pub(crate) mod replay;
pub(crate) mod schema;
pub(crate) mod shutdown;
pub(crate) mod state;
pub(crate) mod surface;
pub(crate) mod telemetry;
pub(crate) mod tls;
pub(crate) mod tools;
pub(crate) mod upstream;
pub(crate) mod validate;
pub(crate) mod wire;

// The facade: the process ([`app`]), its configuration ([`config`]) and
// policies ([`policy`]), and what the binary, the integration tests, the
// benchmarks and the fuzz targets reach besides. Everything else is the
// crate's own.
pub use admin::router as admin_router;
pub use client::ClientInfo;
pub use error::{Flavor, ProxyError};
pub use ingress::{Admitted, Class, IngressLayer};
pub use pipeline::output::Output;
pub use replay::run as replay;
pub use telemetry::{
    events::CAPACITY as EVENTS_CAPACITY, install_metrics, log::layer as log_layer, otel,
};
pub use tls::ServerTls;
pub use upstream::Upstream;
pub use validate::set_cache_budget;
pub use wire::redact::without_userinfo;

/// What augur reads from untrusted input, each parser and transform as the
/// fuzz targets and benchmarks drive it.
pub mod inputs {
    pub use crate::guard::{Reach, classify_ip, classify_url};
    pub use crate::ingress::{multipart::parse as parse_multipart, names::read as read_names};
    pub use crate::pipeline::splitter::LineSplitter;
    pub use crate::schema::{FormatForms, budget, degrade, sanitize};
    pub use crate::tools::{
        ModelOutput, StreamExtractor, ToolChoice, ToolSet, build_format, instruction,
        ollama_tool_calls, parse_output, repair_calls, rewrite_messages,
        text::{TextEvent, TextStream, extract},
        validate_calls,
    };
    pub use crate::validate::{MAX_VIOLATIONS, Validators, coerce_to_schema, compile};
    pub use crate::wire::{
        normalize_model_name,
        path::{canonical, is_canonical},
    };
}
