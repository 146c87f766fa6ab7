//! Tool calls written as text, in the forms models are trained on:
//!
//! | Form | Example |
//! |---|---|
//! | Python list of calls (Gemma 3's function-calling format) | `[get_weather(city="Paris"), get_time(timezone="CET")]` |
//! | Python call at the start of a line | `get_weather(city="Paris")` |
//! | fenced tool code (also ```` ```python ```` when it starts with a call) | ```` ```tool_code ```` `get_weather(city="Paris")` ```` ``` ```` |
//! | `<tool_code>` (JSON `tool_name` / `parameters`, or Python) | `<tool_code>{"tool_name": "get_weather", "parameters": {"city": "Paris"}}</tool_code>` |
//! | Hermes / Qwen (arguments also as `args` or `parameters`, or a JSON string) | `<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>` |
//! | LM Studio | `[TOOL_REQUEST]{"name": "get_weather", "arguments": {…}}[END_TOOL_REQUEST]` |
//! | qwen3-coder XML (also without `<tool_call>`) | `<tool_call><function=get_weather><parameter=city>Paris</parameter></function></tool_call>` |
//! | JSON call with its opening tag missing | `{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>` |
//! | bare JSON call, or a list of them, as the whole answer | `{"name": "get_weather", "args": {"city": "Paris"}}` |
//! | Mistral, a list | `[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}]` |
//! | Mistral, one call each (`[CALL_ID]id` may precede `[ARGS]`) | `[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}` |
//! | Llama 3.x | `<\|python_tag\|>{"name": "get_weather", "parameters": {"city": "Paris"}}` |
//!
//! These are the calls Ollama's per-model parsers leave in the content
//! when their parse fails: a different arguments key, a missing tag, a
//! template for another model.
//!
//! Only calls to declared tools count: a block naming anything else is
//! not a call ([`TextEvent::Unparsed`] for the tag and marker forms,
//! plain text for the Python and bare JSON forms). A bare JSON object
//! opens with a call key (`name`, `arguments`, …) and is a call only when
//! it is the whole answer or a `</tool_call>` follows it; any other JSON
//! text goes out once its brackets close. Python arguments are literals
//! only, never evaluated ([`python`]); positional arguments take the
//! tool's parameters in the order its schema declares them. qwen3-coder's
//! values are text, read as the type the schema declares (module `xml`).
//!
//! The same scanner reads a whole answer ([`extract`]) and a stream
//! ([`TextStream`]): text flows on as it comes, and only text that may be
//! the start of a call is held back until it is decided. The events do not
//! depend on how the text was split into pieces (adjacent texts aside).
//!
//! ```text
//! let mut s = TextStream::new(&set);
//! per delta: s.feed(delta) -> Vec<TextEvent>    // Text, Call, Unparsed
//! at the end: s.finish()   -> Vec<TextEvent>
//! whole answer: extract(text, &set) -> Extracted { calls, text, failures }
//! ```
//!
//! Bounds: a block (from its opening to its end) is at most
//! [`MAX_BLOCK`] bytes, literals nest at most [`MAX_DEPTH`] deep, an
//! answer holds at most [`MAX_CALLS`] calls.

mod convert;
mod frame;
mod framed;
mod literal;
mod partial;
mod prompt;
pub(crate) mod python;
mod render;
mod scan;
mod stream;
mod xml;

#[cfg(test)]
mod forms_tests;
#[cfg(test)]
mod stream_tests;
#[cfg(test)]
mod tests;

pub use prompt::instruction;
pub use render::{render_calls, shape_of};
pub use stream::{Extracted, TextStream, extract};

use super::ToolCall;

/// Longest block, from its opening marker to its end, in bytes.
pub const MAX_BLOCK: usize = 64 * 1024;
/// Deepest nesting of literal containers.
pub const MAX_DEPTH: usize = 32;
/// Most calls read from one answer.
pub const MAX_CALLS: usize = 16;

/// The text form augur asks a model to call tools in (policy
/// `tools.text_format`); every form is read whatever was asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TextFormat {
    /// `[get_weather(city="Paris")]`.
    #[default]
    Python,
    /// ```` ```tool_code ```` fence holding Python calls.
    ToolCode,
    /// `<tool_call>{"name": …, "arguments": {…}}</tool_call>`.
    ToolCall,
    /// `[TOOL_REQUEST]{"name": …, "arguments": {…}}[END_TOOL_REQUEST]`.
    ToolRequest,
}

impl TextFormat {
    /// Every format with its policy name.
    pub const ALL: [(&'static str, TextFormat); 4] = [
        ("python", TextFormat::Python),
        ("tool_code", TextFormat::ToolCode),
        ("tool_call", TextFormat::ToolCall),
        ("tool_request", TextFormat::ToolRequest),
    ];

    /// The policy name.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, f)| *f == self)
            .map_or("python", |(n, _)| n)
    }
}

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
