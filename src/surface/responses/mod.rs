//! OpenAI's Responses API (`POST /v1/responses`), as Ollama serves it.
//!
//! [`request::translate`] turns a Responses request into the Ollama
//! `/api/chat` body the pipeline runs (tools, `tool_choice`, `text.format`
//! and history in the forms augur's tool emulation and format repair
//! read); [`response::render`] turns the pipeline's Ollama-shaped output
//! back into a `response` object or its SSE events. Both follow Ollama's
//! own Responses layer wherever a client could tell the difference.
//! Errors before an answer starts take OpenAI's error shape
//! ([`crate::error::Flavor::OpenAi`]); a stream that fails part-way ends
//! with `response.failed`.

mod echo;
mod go;
pub mod request;
pub mod response;
mod stream;

pub use echo::Echo;
pub use request::{Translated, translate};
pub use response::{Meta, render};
