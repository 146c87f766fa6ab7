//! A tool call as augur hands it on: a declared tool's name and its
//! arguments, whichever way the model wrote it (envelope JSON, text forms,
//! native `tool_calls`).

use serde_json::Value;

/// One tool call: a declared tool's name and its arguments (a JSON object
/// in practice; key order as the model produced it).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub name: String,
    pub arguments: Value,
}
