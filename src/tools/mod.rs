//! Tool-call emulation for models without the "tools" capability.
//!
//! Ollama answers `400 … does not support tools` when a request carries
//! `tools` for a model whose template has no tool support (stock gemma3).
//! augur instead sends the request without `tools`, constrained by a
//! `format` schema (the *envelope*) that admits either tool calls or a plain
//! answer, with a short instruction describing the tools added to the system
//! prompt; the model's JSON is then turned back into real
//! `message.tool_calls`. This module is the pure, request-independent core.
//!
//! TODO: full API documentation.

use serde_json::Value;

pub mod args;
pub mod choice;
pub mod envelope;
pub mod history;
pub mod parse;
pub mod prompt;
pub mod spec;
pub mod stream;
pub mod synthesize;
#[cfg(test)]
pub(crate) mod testutil;

pub use args::{Violation, repair_arguments, repair_calls, validate_calls, validate_calls_with};
pub use choice::ToolChoice;
pub use envelope::{
    KEY_CALL, KEY_CALLS, KEY_RESPONSE, MAX_PARALLEL_CALLS, answer_is_structured, build_format,
};
pub use history::rewrite_messages;
pub use parse::{ModelOutput, ParseError, answer_content, parse_output};
pub use prompt::instruction;
pub use spec::{Tool, ToolSet};
pub use stream::{Branch, StreamEvent, StreamExtractor};
pub use synthesize::{
    new_call_id, ollama_call_chunk, ollama_call_message, ollama_tool_calls, openai_tool_calls,
};

/// A request-level problem with `tools` or `tool_choice`. Every variant is a
/// client error: answer HTTP 400 with its message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// `tools[index]` cannot be used.
    #[error("invalid tool at index {index}: {reason}")]
    InvalidTool { index: usize, reason: String },
    /// Two tools share a name.
    #[error("duplicate tool name {0:?}")]
    DuplicateName(String),
    /// `tool_choice` has a value that is not understood.
    #[error("invalid tool_choice: {0}")]
    InvalidToolChoice(String),
    /// `tool_choice` names a tool that is not declared.
    #[error("tool_choice names unknown tool {0:?}")]
    UnknownToolChoice(String),
}

/// One tool call: a declared tool's name and its arguments (a JSON object
/// in practice; key order as the model produced it).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub name: String,
    pub arguments: Value,
}
