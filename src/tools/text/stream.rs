//! [`TextStream`]: the scanner's events with the whitespace around calls
//! settled, and [`extract`] for a whole answer.
//!
//! Whitespace at the end of a text is held until more text follows: it
//! goes out then, and is dropped when a call follows instead (so a call
//! leaves no blank lines behind). Whitespace right after a call is dropped
//! when no text came before the call. An answer without calls keeps its
//! text exactly.

use super::event::{TextError, TextEvent};
use super::scan::Scanner;
use crate::tools::call::ToolCall;
use crate::tools::spec::ToolSet;

/// Most trailing whitespace held back; more goes out as text.
const MAX_HELD_SPACE: usize = 1024;

/// Incremental reading of calls written as text; see the module docs.
#[derive(Debug)]
pub struct TextStream {
    scanner: Scanner,
    /// Trailing whitespace not sent yet.
    space: String,
    /// Text went out.
    sent_text: bool,
    /// The last thing out was a call.
    after_call: bool,
    /// A call went out.
    any_call: bool,
    /// In a run of whitespace too long to hold: it goes out as it comes.
    spilling: bool,
}

impl TextStream {
    /// A stream reading calls to the tools of `set`.
    pub fn new(set: &ToolSet) -> TextStream {
        TextStream {
            scanner: Scanner::new(set),
            space: String::new(),
            sent_text: false,
            after_call: false,
            any_call: false,
            spilling: false,
        }
    }

    /// The events `text` decides.
    pub fn feed(&mut self, text: &str) -> Vec<TextEvent> {
        let mut raw = Vec::new();
        self.scanner.feed(text, &mut raw);
        self.settle(raw)
    }

    /// The events the end of the input decides.
    pub fn finish(&mut self) -> Vec<TextEvent> {
        let mut raw = Vec::new();
        self.scanner.finish(&mut raw);
        let mut out = self.settle(raw);
        let space = std::mem::take(&mut self.space);
        if !self.any_call && !space.is_empty() {
            push_text(&mut out, space);
        }
        out
    }

    fn settle(&mut self, raw: Vec<TextEvent>) -> Vec<TextEvent> {
        let mut out = Vec::with_capacity(raw.len());
        for event in raw {
            match event {
                TextEvent::Text(text) => self.text(&text, &mut out),
                TextEvent::Calls { calls, raw } => {
                    self.space.clear();
                    self.spilling = false;
                    self.after_call = true;
                    self.any_call = true;
                    out.push(TextEvent::Calls { calls, raw });
                }
                TextEvent::Unparsed { raw, error } => {
                    let space = std::mem::take(&mut self.space);
                    if !space.is_empty() {
                        push_text(&mut out, space);
                    }
                    self.sent_text = true;
                    self.after_call = false;
                    out.push(TextEvent::Unparsed { raw, error });
                }
            }
        }
        out
    }

    fn text(&mut self, text: &str, out: &mut Vec<TextEvent>) {
        let text = if self.after_call && !self.sent_text {
            text.trim_start()
        } else {
            text
        };
        let body = text.trim_end();
        if !body.is_empty() {
            let mut piece = std::mem::take(&mut self.space);
            piece.push_str(body);
            push_text(out, piece);
            self.space.push_str(&text[body.len()..]);
            self.sent_text = true;
            self.after_call = false;
            self.spilling = false;
        } else if self.spilling {
            push_text(out, text.to_string());
        } else {
            self.space.push_str(text);
        }
        if self.space.len() > MAX_HELD_SPACE {
            let space = std::mem::take(&mut self.space);
            push_text(out, space);
            self.sent_text = true;
            self.after_call = false;
            self.spilling = true;
        }
    }
}

/// Append text to `out`, joined with a text event before it.
fn push_text(out: &mut Vec<TextEvent>, text: String) {
    if let Some(TextEvent::Text(last)) = out.last_mut() {
        last.push_str(&text);
    } else {
        out.push(TextEvent::Text(text));
    }
}

/// A whole answer read for calls.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Extracted {
    /// The calls, in order.
    pub calls: Vec<ToolCall>,
    /// The text around them (blocks that were not calls included, as
    /// written).
    pub text: String,
    /// Blocks that open like calls but are not calls to declared tools.
    pub failures: Vec<TextError>,
}

/// Read a whole answer.
pub fn extract(text: &str, set: &ToolSet) -> Extracted {
    let mut stream = TextStream::new(set);
    let mut events = stream.feed(text);
    events.extend(stream.finish());
    let mut out = Extracted::default();
    for event in events {
        match event {
            TextEvent::Text(t) => out.text.push_str(&t),
            TextEvent::Calls { calls, .. } => out.calls.extend(calls),
            TextEvent::Unparsed { raw, error } => {
                out.text.push_str(&raw);
                out.failures.push(error);
            }
        }
    }
    out
}
