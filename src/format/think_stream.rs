//! [`ThinkStream`]: the emulated-thinking envelope
//! `{"reasoning": "...", "answer": ...}` read as the model streams it, so
//! the thinking reaches the client as it is produced.
//!
//! A character-level state machine: the reasoning string is unescaped as
//! it arrives ([`ThinkEvent::Thinking`]); then a string answer is
//! unescaped too ([`ThinkEvent::AnswerText`]) and any other answer value
//! (a client schema's object, a tool envelope) is passed on as raw JSON
//! text ([`ThinkEvent::AnswerRaw`]). Output in another shape (keys in
//! another order, say) stops the events; [`ThinkStream::finish`] then
//! parses everything received as a whole. Events never depend on how the
//! text was split into deltas (adjacent deltas of one kind aside).

use serde_json::Value;

use super::think::{ANSWER_FIELD, REASONING_FIELD, split_think};
use crate::wire::json_scan::{RawScan, Unescaper};

/// Something to pass on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ThinkEvent {
    /// More thinking text.
    Thinking(String),
    /// More of a string answer, decoded.
    AnswerText(String),
    /// More of a non-string answer, as raw JSON text.
    AnswerRaw(String),
}

/// What the whole output was, once it ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Finished {
    /// The whole thinking text.
    pub thinking: String,
    /// The answer value.
    pub answer: Value,
    /// Whether the events followed the output to its end (otherwise the
    /// caller should use `thinking` and `answer` for what it did not send).
    pub streamed: bool,
}

/// Why the output is not the envelope.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the model's answer is not the reasoning-then-answer object: {0}")]
pub(crate) struct NotEnvelope(String);

#[derive(Debug)]
enum State {
    Open,
    Key {
        want: &'static str,
        text: String,
    },
    Colon(&'static str),
    Value(&'static str),
    Reasoning(Unescaper),
    AfterReasoning,
    Text(Unescaper),
    Raw(RawScan),
    Close,
    Done,
    /// Not the expected shape: only buffered from here on.
    Lost,
}

/// Incremental reader of the thinking envelope; see the module docs.
#[derive(Debug)]
pub(crate) struct ThinkStream {
    state: State,
    /// Everything received, for [`ThinkStream::finish`].
    raw: String,
}

impl Default for ThinkStream {
    fn default() -> Self {
        Self::new()
    }
}

impl ThinkStream {
    /// A reader at the start of the output.
    pub(crate) fn new() -> Self {
        Self {
            state: State::Open,
            raw: String::new(),
        }
    }

    /// Feed the next piece of output; the events it completes.
    pub(crate) fn feed(&mut self, delta: &str) -> Vec<ThinkEvent> {
        self.raw.push_str(delta);
        let mut events = Vec::new();
        let mut thinking = String::new();
        let mut text = String::new();
        let mut raw = String::new();
        for c in delta.chars() {
            self.step(c, &mut thinking, &mut text, &mut raw);
        }
        if !thinking.is_empty() {
            events.push(ThinkEvent::Thinking(thinking));
        }
        if !text.is_empty() {
            events.push(ThinkEvent::AnswerText(text));
        }
        if !raw.is_empty() {
            events.push(ThinkEvent::AnswerRaw(raw));
        }
        events
    }

    fn step(&mut self, c: char, thinking: &mut String, text: &mut String, raw: &mut String) {
        let state = std::mem::replace(&mut self.state, State::Lost);
        self.state = match state {
            State::Open if c.is_whitespace() => State::Open,
            State::Open if c == '{' => State::Key {
                want: REASONING_FIELD,
                text: String::new(),
            },
            State::Key { want, text: key } if key.is_empty() && c.is_whitespace() => {
                State::Key { want, text: key }
            }
            State::Key { want, mut text } => {
                if text.is_empty() && c != '"' {
                    State::Lost
                } else if c == '"' && text.len() > 1 {
                    // The key's closing quote.
                    if text[1..] == *want {
                        State::Colon(want)
                    } else {
                        State::Lost
                    }
                } else if c == '\\' || text.len() > want.len() + 1 {
                    State::Lost
                } else {
                    text.push(c);
                    State::Key { want, text }
                }
            }
            State::Colon(key) if c.is_whitespace() => State::Colon(key),
            State::Colon(key) if c == ':' => State::Value(key),
            State::Value(key) if c.is_whitespace() => State::Value(key),
            State::Value(REASONING_FIELD) if c == '"' => State::Reasoning(Unescaper::default()),
            State::Value(_) if c == '"' => State::Text(Unescaper::default()),
            State::Value(REASONING_FIELD) => State::Lost,
            State::Value(_) => {
                let mut scan = RawScan::default();
                if scan.push(c, raw) {
                    State::Close
                } else {
                    State::Raw(scan)
                }
            }
            State::Reasoning(mut u) => {
                if u.push(c, thinking) {
                    State::AfterReasoning
                } else {
                    State::Reasoning(u)
                }
            }
            State::AfterReasoning if c.is_whitespace() => State::AfterReasoning,
            State::AfterReasoning if c == ',' => State::Key {
                want: ANSWER_FIELD,
                text: String::new(),
            },
            State::Text(mut u) => {
                if u.push(c, text) {
                    State::Close
                } else {
                    State::Text(u)
                }
            }
            State::Raw(mut scan) => {
                if scan.push(c, raw) {
                    // A bare scalar ends at the character after it.
                    if scan.complete_at_eof() && c == '}' {
                        State::Done
                    } else {
                        State::Close
                    }
                } else {
                    State::Raw(scan)
                }
            }
            State::Close if c.is_whitespace() => State::Close,
            State::Close if c == '}' => State::Done,
            State::Done if c.is_whitespace() => State::Done,
            _ => State::Lost,
        };
    }

    /// The whole output, parsed, once it has ended.
    pub(crate) fn finish(self) -> Result<Finished, NotEnvelope> {
        let streamed = matches!(self.state, State::Done);
        let value: Value =
            serde_json::from_str(self.raw.trim()).map_err(|e| NotEnvelope(e.to_string()))?;
        let (thinking, answer) =
            split_think(&value).ok_or_else(|| NotEnvelope("a field is missing".into()))?;
        Ok(Finished {
            thinking,
            answer,
            streamed,
        })
    }
}

#[cfg(test)]
#[path = "think_stream_tests.rs"]
mod tests;
