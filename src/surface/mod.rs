//! Surfaces: the wire shapes clients speak. Each surface translates its
//! request into the pipeline's Ollama-shaped exchange and renders the
//! pipeline's output in its own shape (JSON, NDJSON or SSE events), with
//! errors in its own error shape.

pub mod anthropic;
pub mod responses;
