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
//! Nothing here does I/O; every function is deterministic apart from call ids.
//!
//! # Flow for one `/api/chat` (or `/v1/chat/completions`) request
//!
//! ```text
//! set    = ToolSet::from_request(tools)?                  // ToolError => 400
//! choice = ToolChoice::from_request(tool_choice, &set)?   // "none" => forward without tools
//! upstream body: tools removed,
//!   "format":   build_format(&set, &choice, parallel, answer_schema)
//!   "messages": rewrite_messages(&messages, &instruction(&set, &choice, parallel, question), parallel)
//! non-stream:  parse_output(&content, &set)   -> ModelOutput::{Calls, Answer}
//!              repair_calls / validate_calls  (retry or report on violations)
//!              ollama_tool_calls / openai_tool_calls, or answer_content(&answer)
//! stream:      let mut x = StreamExtractor::new(&set, structured);
//!              per upstream chunk: x.feed(&chunk.message.content) -> Vec<StreamEvent>
//!                AnswerDelta(text) => a content chunk
//!                Call(call)        => a call chunk of ollama_tool_calls(&[call], n) (n = calls sent so far)
//!              at the done chunk: x.finish()  (Err(Truncated) goes with done_reason "length")
//! ```
//!
//! # Public API
//!
//! Declared tools and choice ([`spec`], [`choice`]):
//! - [`ToolSet::from_request`]`(&[Value]) -> Result<ToolSet, ToolError>` —
//!   Ollama/OpenAI function tools; keeps each tool's original `parameters`
//!   (validation) and a grammar-safe copy ([`Tool::grammar`], via
//!   [`crate::schema::sanitize`]; anything unusable becomes
//!   `{"type":"object"}`, so an odd schema never fails the request). Missing
//!   parameters ⇒ `{"type":"object","properties":{}}`; duplicate names ⇒ error.
//! - [`ToolChoice::from_request`]`(Option<&Value>, &ToolSet) -> Result<ToolChoice, ToolError>` —
//!   `auto` (default) / `none` / `required` / named; an undeclared name ⇒ error.
//!
//! Request side ([`envelope`], [`prompt`], [`history`]):
//! - [`build_format`]`(&ToolSet, &ToolChoice, parallel, answer_schema: Option<&Value>) -> Value` —
//!   the envelope schema (below).
//! - [`instruction`]`(&ToolSet, &ToolChoice, parallel) -> String` — short tool
//!   list, reply shape and the shape of one call (types, never values a
//!   model could copy).
//! - [`rewrite_messages`]`(&[Value], instruction: &str, parallel) -> Vec<Value>` —
//!   instruction appended to the system prompt (gemma3-safe placement), past
//!   calls as envelope JSON, tool results as user text.
//! - [`answer_is_structured`]`(Option<&Value>) -> bool` — the client `format`
//!   makes the answer JSON rather than text.
//!
//! Response side ([`parse`], [`stream`], [`args`], [`synthesize`]):
//! - [`parse_output`]`(&str, &ToolSet) -> Result<ModelOutput, ParseError>` —
//!   calls (declared tools only) or the answer value.
//! - [`answer_content`]`(&Value, structured) -> String` — answer as `content`.
//! - [`StreamExtractor::new`]`(&ToolSet, structured)`, `.feed(&str) -> Vec<StreamEvent>`,
//!   `.finish() -> Result<Vec<StreamEvent>, ParseError>`, `.branch()`, `.error()` —
//!   incremental: decoded answer text as it arrives, each call as soon as its
//!   object closes; split-independent.
//! - [`placeholder_violations`]`(&ToolCall, &ToolSet, mentioned)` — template
//!   tokens copied into arguments (`<city>`, `{city}`, `"string"`, …) as
//!   violations, so they are retried like any invalid argument.
//! - [`Grounding::from_messages`], [`drop_ungrounded`] — calls after the
//!   first that only continue an earlier call's pattern with values found
//!   nowhere in the conversation.
//! - [`answered_calls`]`(&[Value])`, [`repeats_answered`] — calls the history
//!   already holds a result for, and whether a new call repeats one.
//! - [`validate_calls`]`(&[ToolCall], &ToolSet) -> Vec<Vec<Violation>>` — per
//!   call `(pointer, message)` against the original schema (compiled once per
//!   set); [`validate_calls_with`] takes any validator instead.
//! - [`repair_arguments`]`(&mut Value, schema) -> Vec<&'static str>` and
//!   [`repair_calls`] — coercions the schema implies, forbidden keys dropped.
//! - [`text`]: calls written as text (`<tool_call>`, `<tool_code>`,
//!   `[TOOL_REQUEST]`, Python calls and lists, `tool_code` fences), whole
//!   ([`text::extract`]) or streamed ([`text::TextStream`]), and calls
//!   rendered in those forms.
//! - [`ollama_tool_calls`]`(&[ToolCall], start_index) -> Value`,
//!   [`openai_tool_calls`]`(&[ToolCall], start_index) -> Value`,
//!   [`ollama_call_message`],
//!   [`new_call_id`] — exact client shapes (serialise with U+2028/U+2029
//!   escaped, as for every NDJSON line).
//!
//! # The envelope
//!
//! ```text
//! auto, single:   {"anyOf":[{"tool_call":{"name":<const>,"arguments":<params>}}, {"response":<answer>}]}
//! auto, parallel: {"anyOf":[{"tool_calls":[call, …] (1..=4)},                    {"response":<answer>}]}
//! required:       the calls branch alone;  named: the same with only that tool
//! ```
//!
//! (each `{…}` above is an object schema with that one property required).
//! It follows llama.cpp's generic tool-call format, with these choices for
//! small base models, which rarely close a JSON array and run on until the
//! token limit:
//! - **A single call is the common path**: without `parallel` the calls
//!   branch is one `tool_call` object — no array to close. Parallel mode is
//!   opt-in (suggested: only when the client sends `parallel_tool_calls:
//!   true`) and its array is bounded by [`MAX_PARALLEL_CALLS`] so the grammar
//!   closes it.
//! - Tool names are `const`s, so the grammar can only produce declared
//!   tools; the per-tool object puts `name` before `arguments`.
//! - Each branch has exactly one property, so the envelope key is the first
//!   token and a stream knows its branch immediately; the calls branch comes
//!   first in the `anyOf`.
//! - `additionalProperties` is left implicit (the converter admits no extra
//!   keys) and ids are not generated by the model (augur makes them).
//! - The client's `format`, if any, is the `response` schema; otherwise a
//!   string.
//!
//! Output is validated after generation even though it was constrained:
//! grammars are looser than validators (e.g. `required` without
//! `properties`).
//!
//! # Prompt placement
//!
//! Ollama's gemma3 template has no system role: it renders the system text
//! at the top of the first user turn and drops `tool` messages. The
//! instruction is therefore appended to the leading system message (or a new
//! one at index 0), a user turn is guaranteed right after it, and tool
//! results become user text `Tool result for <name>: …`.

pub(crate) mod args;
pub(crate) mod call;
pub(crate) mod choice;
pub(crate) mod envelope;
pub(crate) mod error;
pub(crate) mod grounding;
pub(crate) mod history;
pub(crate) mod leaves;
pub(crate) mod numbers;
pub(crate) mod offers;
pub(crate) mod parse;
pub(crate) mod placeholder;
pub(crate) mod prompt;
pub(crate) mod relevance;
pub(crate) mod repeats;
pub(crate) mod results;
pub(crate) mod spec;
pub(crate) mod stream;
pub(crate) mod synthesize;
#[cfg(test)]
pub(crate) mod testutil;
pub(crate) mod text;

pub(crate) use args::repair_arguments;
pub use args::{repair_calls, validate_calls};
pub(crate) use call::ToolCall;
pub use choice::ToolChoice;
pub use envelope::build_format;
pub(crate) use grounding::{Grounding, invents_every_value, is_ungrounded};
pub use history::rewrite_messages;
pub(crate) use history::{CallStyle, rewrite_messages_as};
pub use parse::{ModelOutput, parse_output};
pub(crate) use parse::{ParseError, answer_content};
pub(crate) use placeholder::placeholder_violations;
pub use prompt::instruction;
pub(crate) use repeats::repeats_answered;
pub(crate) use results::answered_calls;
pub use spec::ToolSet;
pub use stream::StreamExtractor;
pub(crate) use stream::{Branch, StreamEvent};
pub use synthesize::ollama_tool_calls;
