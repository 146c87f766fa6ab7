//! Anthropic's Messages API (`POST /v1/messages`), as Ollama serves it.
//!
//! [`request::translate`] turns a `MessagesRequest` into an Ollama
//! `/api/chat` body the way Ollama's Anthropic layer does (with the
//! `tool_choice` augur's tool emulation reads), and [`response::render`]
//! writes the pipeline's Ollama-shaped output back as an Anthropic
//! `message` or as SSE events, byte-compatible with Ollama's own writer.
//! Pure functions: the route owns the I/O.

mod decode;
mod estimate;
mod go;
pub mod request;
pub mod response;
pub mod stream;

#[cfg(test)]
mod tests;

pub use request::{Translated, relax_think, translate};
pub use response::{Meta, render};
