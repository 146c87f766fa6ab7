//! Surfaces: the wire shapes clients speak, as the edge of the request
//! path. Each generation surface translates its request into the
//! pipeline's Ollama-shaped [`Exchange`], runs [`pipeline::run`] and
//! renders the outcome in its own shape (JSON, NDJSON or SSE events), with
//! errors in its own error shape; when nothing applies, the client's own
//! bytes go upstream unchanged. Admission has run before any handler here.
//!
//! | Surface | Routes | Module |
//! |---|---|---|
//! | Ollama | `/api/chat`, `/api/generate` | [`ollama`] |
//! | OpenAI chat | `/v1/chat/completions` | [`openai`] |
//! | OpenAI Responses | `/v1/responses` | [`responses`] |
//! | Anthropic Messages | `/v1/messages` | [`anthropic`] |
//! | capabilities | `/api/show`, `/api/tags` | [`advertise`] |
//! | listings of several upstreams | `/api/ps`, `/v1/models` | [`listing`] |
//! | everything else | | [`passthrough`] |

mod adapter;
pub(crate) mod advertise;
pub(crate) mod anthropic;
mod cached;
pub(crate) mod dropped;
pub(crate) mod frames;
pub(crate) mod listing;
pub(crate) mod ollama;
pub(crate) mod openai;
pub(crate) mod passthrough;
mod recorded;
mod render;
pub(crate) mod responses;
mod serve;
