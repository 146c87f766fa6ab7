//! What reading text for calls yields: the events of the scanner, why a
//! block that opens like a call is not one, and the bounds every reader
//! keeps.

use crate::tools::call::ToolCall;

/// Longest block, from its opening marker to its end, in bytes.
pub(crate) const MAX_BLOCK: usize = 64 * 1024;
/// Deepest nesting of literal containers.
pub(crate) const MAX_DEPTH: usize = 32;
/// Most calls read from one answer.
pub(crate) const MAX_CALLS: usize = 16;

/// Why a block that opens like a call is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TextError {
    #[error("{what} at byte {at}")]
    Syntax { at: usize, what: String },
    #[error("`{0}` is not a literal (argument values must be literals)")]
    NotLiteral(String),
    #[error("call to undeclared tool {0:?}")]
    UndeclaredTool(String),
    #[error("{0}")]
    Arguments(String),
    #[error("not a tool call: {0}")]
    NotACall(String),
    #[error("literals nested deeper than {MAX_DEPTH}")]
    TooDeep,
    #[error("a call block longer than {MAX_BLOCK} bytes")]
    TooLong,
    #[error("more than {MAX_CALLS} tool calls")]
    TooManyCalls,
    #[error("the call was cut off before its end")]
    Unterminated,
}

/// What the scanner made of the text so far.
#[derive(Debug, Clone, PartialEq)]
pub enum TextEvent {
    /// Ordinary text.
    Text(String),
    /// The calls of one block, all to declared tools, and the block as
    /// written (for a caller that decides not to use them).
    Calls { calls: Vec<ToolCall>, raw: String },
    /// A block that opens like a call but cannot be read as calls to
    /// declared tools: its text as written, and why.
    Unparsed { raw: String, error: TextError },
}
