//! Text mode (policy `tools: {mode: text}`): tool emulation without a
//! `format`. The instruction asks for the model's natural call form
//! (`tools.text_format`, [`crate::tools::text`]); the answer is read for
//! calls, which are validated, repaired and retried exactly as in grammar
//! mode. An answer that cannot be read as calls the request allows (a
//! block that is no call, no call where one is required, another tool
//! than the named one) is asked again once in grammar mode, whose body
//! [`prepare`](crate::pipeline::prepare) builds beside the text-mode one.
//!
//! Text mode applies to requests whose answer is text: with a client
//! `format` or emulated thinking the answer is JSON, and grammar mode is
//! used.

use serde_json::{Map, Value};

use crate::{
    tools::{
        ParseError, StreamEvent, ToolChoice, ToolSet,
        text::{TextEvent, TextStream, extract},
    },
    validate::Violation,
};

use super::super::{
    checks::check_calls,
    job::{Expect, Interp, TextMode},
    screen::CallScreen,
};

/// Interpret a text-mode answer.
pub(crate) fn interpret_text_mode(
    text: &str,
    set: &ToolSet,
    screen: &CallScreen,
    mode: &TextMode,
    repair: bool,
) -> Interp {
    let read = extract(text, set);
    let mut interp = Interp::default();
    let unreadable = |message: String| Interp {
        content: text.to_string(),
        violations: vec![Violation {
            pointer: String::new(),
            message,
        }],
        unparsed: true,
        ..Interp::default()
    };
    if let Some(e) = read.failures.first() {
        return unreadable(format!("a tool call could not be read: {e}"));
    }
    if read.calls.is_empty() {
        if !mode.choice.allows_answer() {
            return unreadable("a tool call is required, and the answer has none".into());
        }
        interp.content = text.to_string();
        return interp;
    }
    if let ToolChoice::Named(name) = &mode.choice
        && let Some(other) = read.calls.iter().find(|c| &c.name != name)
    {
        return unreadable(format!("only {name} may be called, not {}", other.name));
    }
    check_calls(&mut interp, read.calls, set, screen, repair);
    interp.content = read.text.trim().to_string();
    interp
}

/// The grammar-mode request and expectation for a text-mode `expect`.
pub(crate) fn grammar_fallback(expect: &Expect) -> Option<(Map<String, Value>, Expect)> {
    let Expect::Tools {
        set,
        answer_schema,
        json_answer,
        think,
        screen,
        text: Some(mode),
    } = expect
    else {
        return None;
    };
    let grammar = Expect::Tools {
        set: set.clone(),
        answer_schema: answer_schema.clone(),
        json_answer: *json_answer,
        think: *think,
        screen: screen.clone(),
        text: None,
    };
    Some((mode.grammar.clone(), grammar))
}

/// A streamed text-mode answer as the emulation stream's events: text as
/// answer deltas (none when the choice requires a call), each call as it
/// completes. After what cannot be read (a block that is no call, another
/// tool than the named one, no call where one is required) nothing more
/// comes out and [`TextExtractor::finish`] fails, so an answer nothing of
/// which was sent yet goes the whole-answer way (and its grammar-mode
/// attempt).
#[derive(Debug)]
pub(crate) struct TextExtractor {
    stream: TextStream,
    choice: ToolChoice,
    calls: usize,
    failed: Option<String>,
}

impl TextExtractor {
    pub(crate) fn new(set: &ToolSet, choice: &ToolChoice) -> TextExtractor {
        TextExtractor {
            stream: TextStream::new(set),
            choice: choice.clone(),
            calls: 0,
            failed: None,
        }
    }

    pub(crate) fn feed(&mut self, text: &str) -> Vec<StreamEvent> {
        let events = self.stream.feed(text);
        self.convert(events)
    }

    pub(crate) fn finish(mut self) -> Result<Vec<StreamEvent>, ParseError> {
        let events = self.stream.finish();
        let out = self.convert(events);
        if self.calls == 0 && !self.choice.allows_answer() && self.failed.is_none() {
            self.failed = Some("a tool call is required, and the answer has none".into());
        }
        match self.failed {
            Some(why) => Err(ParseError::InvalidCall(why)),
            None => Ok(out),
        }
    }

    fn convert(&mut self, events: Vec<TextEvent>) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        for event in events {
            if self.failed.is_some() {
                break;
            }
            match event {
                TextEvent::Text(t) if self.choice.allows_answer() => {
                    out.push(StreamEvent::AnswerDelta(t));
                }
                TextEvent::Text(_) => {}
                TextEvent::Calls { calls, .. } => {
                    if let ToolChoice::Named(name) = &self.choice
                        && let Some(other) = calls.iter().find(|c| &c.name != name)
                    {
                        self.failed =
                            Some(format!("only {name} may be called, not {}", other.name));
                        break;
                    }
                    self.calls += calls.len();
                    out.extend(calls.into_iter().map(StreamEvent::Call));
                }
                TextEvent::Unparsed { error, .. } => self.failed = Some(error.to_string()),
            }
        }
        out
    }
}

/// The emulation stream's reader: the envelope JSON, or calls as text.
#[derive(Debug)]
pub(crate) enum Extractor {
    Envelope(crate::tools::StreamExtractor),
    Text(TextExtractor),
}

impl Extractor {
    /// The reader for `expect`'s answers (`structured`: the answer is JSON).
    pub(crate) fn new(set: &ToolSet, structured: bool, text: Option<&TextMode>) -> Extractor {
        match text {
            Some(mode) => Extractor::Text(TextExtractor::new(set, &mode.choice)),
            None => Extractor::Envelope(crate::tools::StreamExtractor::new(set, structured)),
        }
    }

    pub(crate) fn feed(&mut self, text: &str) -> Vec<StreamEvent> {
        match self {
            Extractor::Envelope(x) => x.feed(text),
            Extractor::Text(x) => x.feed(text),
        }
    }

    pub(crate) fn finish(self) -> Result<Vec<StreamEvent>, ParseError> {
        match self {
            Extractor::Envelope(x) => x.finish(),
            Extractor::Text(x) => x.finish(),
        }
    }
}
