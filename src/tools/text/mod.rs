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
mod event;
mod format;
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
mod tests;

pub use event::TextEvent;
#[cfg(test)]
pub(crate) use event::{MAX_BLOCK, MAX_CALLS, TextError};
pub use format::TextFormat;
pub(crate) use prompt::instruction;
pub(crate) use render::render_calls;
#[cfg(test)]
pub(crate) use render::shape_of;
#[cfg(test)]
pub(crate) use stream::Extracted;
pub use stream::{TextStream, extract};
