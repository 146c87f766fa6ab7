//! [`StreamExtractor`]: incremental extraction of answer text and tool calls
//! from the envelope JSON as the model streams it.
//!
//! A character-level state machine over the envelope: the first key picks
//! the branch; a text `response` is JSON-unescaped as it arrives (escapes
//! and `\uXXXX` surrogate pairs may be split across deltas); a structured
//! answer is passed through as raw JSON text (whitespace outside strings
//! dropped); each call object is captured up to its balanced closing brace,
//! parsed and emitted at once. Output it does not recognise is buffered and
//! parsed as a whole by [`StreamExtractor::finish`]. Events never depend on
//! how the text was split into deltas (adjacent `AnswerDelta`s aside).

use super::call::ToolCall;
use super::envelope::{KEY_CALL, KEY_CALLS, KEY_RESPONSE};
use super::parse::{ModelOutput, ParseError, answer_content, call_from_value, parse_output};
use super::spec::ToolSet;
use crate::wire::json_scan::{Capture, RawScan, Unescaper};

/// Something the caller can forward to the client.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// More answer content: decoded text for a text answer, raw JSON text
    /// for a structured one.
    AnswerDelta(String),
    /// One complete call to a declared tool.
    Call(ToolCall),
}

/// Which envelope branch the output took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Branch {
    Calls,
    Answer,
}

#[derive(Debug)]
enum State {
    Start,
    Key { text: String, escaped: bool },
    BeforeKey,
    Colon(Target),
    Value(Target),
    Text(Unescaper),
    Raw(RawScan),
    Call { capture: Capture, in_array: bool },
    Items,
    Done,
    Fallback,
    Failed(ParseError),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Target {
    Answer,
    Calls,
}

/// Incremental envelope parser; see the module docs.
#[derive(Debug)]
pub struct StreamExtractor {
    set: ToolSet,
    structured: bool,
    state: State,
    buf: String,
    branch: Option<Branch>,
}

impl StreamExtractor {
    /// An extractor for output generated under [`super::envelope::build_format`] with
    /// these tools. `structured_answer`: the client sent a `format` (see
    /// [`super::envelope::answer_is_structured`]), so the answer is JSON, not text.
    pub fn new(set: &ToolSet, structured_answer: bool) -> StreamExtractor {
        StreamExtractor {
            set: set.clone(),
            structured: structured_answer,
            state: State::Start,
            buf: String::new(),
            branch: None,
        }
    }

    /// The branch, once the envelope key has been read.
    pub fn branch(&self) -> Option<Branch> {
        self.branch
    }

    /// The error that stopped extraction, if any (also returned by
    /// [`StreamExtractor::finish`]); later deltas are ignored.
    pub fn error(&self) -> Option<&ParseError> {
        match &self.state {
            State::Failed(e) => Some(e),
            _ => None,
        }
    }

    /// Consume the next piece of model output.
    pub fn feed(&mut self, delta: &str) -> Vec<StreamEvent> {
        self.buf.push_str(delta);
        let mut events = Vec::new();
        let mut text = String::new();
        for c in delta.chars() {
            self.step(c, &mut text, &mut events);
        }
        if !text.is_empty() {
            events.push(StreamEvent::AnswerDelta(text));
        }
        events
    }

    /// End of output: the remaining events, or why the output is unusable.
    /// [`ParseError::Truncated`] when it stopped mid-envelope.
    pub fn finish(self) -> Result<Vec<StreamEvent>, ParseError> {
        match self.state {
            State::Done => Ok(Vec::new()),
            State::Raw(scan) if scan.complete_at_eof() => Ok(Vec::new()),
            State::Failed(e) => Err(e),
            State::Fallback => Ok(match parse_output(&self.buf, &self.set)? {
                ModelOutput::Calls(calls) => calls.into_iter().map(StreamEvent::Call).collect(),
                ModelOutput::Answer(v) => {
                    vec![StreamEvent::AnswerDelta(answer_content(
                        &v,
                        self.structured,
                    ))]
                }
            }),
            State::Start if !self.buf.trim().is_empty() => Err(ParseError::InvalidJson(
                self.buf.chars().take(200).collect(),
            )),
            _ => Err(ParseError::Truncated),
        }
    }

    fn step(&mut self, c: char, text: &mut String, events: &mut Vec<StreamEvent>) {
        let state = std::mem::replace(&mut self.state, State::Done);
        self.state = match state {
            State::Start if c.is_whitespace() => State::Start,
            State::Start if c == '{' => State::BeforeKey,
            State::Start => State::Fallback,
            State::BeforeKey if c.is_whitespace() => State::BeforeKey,
            State::BeforeKey if c == '"' => State::Key {
                text: String::new(),
                escaped: false,
            },
            State::BeforeKey => State::Fallback,
            State::Key { mut text, escaped } => match (c, escaped) {
                ('"', false) => match text.as_str() {
                    KEY_RESPONSE => State::Colon(Target::Answer),
                    KEY_CALL | KEY_CALLS => State::Colon(Target::Calls),
                    _ => State::Fallback,
                },
                ('\\', false) => State::Key {
                    text,
                    escaped: true,
                },
                _ => {
                    text.push(c);
                    State::Key {
                        text,
                        escaped: false,
                    }
                }
            },
            State::Colon(t) if c.is_whitespace() => State::Colon(t),
            State::Colon(t) if c == ':' => {
                self.branch = Some(match t {
                    Target::Answer => Branch::Answer,
                    Target::Calls => Branch::Calls,
                });
                State::Value(t)
            }
            State::Colon(_) => State::Fallback,
            State::Value(t) if c.is_whitespace() => State::Value(t),
            State::Value(Target::Answer) if c == '"' && !self.structured => {
                State::Text(Unescaper::default())
            }
            State::Value(Target::Answer) => {
                let mut scan = RawScan::default();
                scan.push(c, text);
                State::Raw(scan)
            }
            State::Value(Target::Calls) => match c {
                '[' => State::Items,
                '{' => State::Call {
                    capture: Capture::start(),
                    in_array: false,
                },
                _ => State::Fallback,
            },
            State::Text(mut u) => {
                if u.push(c, text) {
                    State::Done
                } else {
                    State::Text(u)
                }
            }
            State::Raw(mut scan) => {
                if scan.push(c, text) {
                    State::Done
                } else {
                    State::Raw(scan)
                }
            }
            State::Items => match c {
                c if c.is_whitespace() || c == ',' => State::Items,
                ']' => State::Done,
                '{' => State::Call {
                    capture: Capture::start(),
                    in_array: true,
                },
                _ => State::Failed(ParseError::InvalidCall(format!(
                    "unexpected {c:?} in tool_calls"
                ))),
            },
            State::Call {
                mut capture,
                in_array,
            } => {
                if !capture.push(c) {
                    State::Call { capture, in_array }
                } else {
                    match self.complete_call(&capture.text) {
                        Ok(call) => {
                            events.push(StreamEvent::Call(call));
                            if in_array { State::Items } else { State::Done }
                        }
                        Err(e) => State::Failed(e),
                    }
                }
            }
            s @ (State::Done | State::Fallback | State::Failed(_)) => s,
        };
    }

    fn complete_call(&self, text: &str) -> Result<ToolCall, ParseError> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| ParseError::InvalidJson(e.to_string()))?;
        call_from_value(&value, &self.set)
    }
}

#[cfg(test)]
#[path = "stream_tests.rs"]
mod tests;
