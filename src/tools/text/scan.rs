//! The scanner: text in, [`TextEvent`]s out, holding back only what may
//! still become a call. Every decision is taken on the text alone (never
//! on where a piece ended): an opening is decided once enough of it has
//! arrived, a block ends at its closing marker or bracket within
//! [`MAX_BLOCK`] bytes of its start, and the end of the input decides
//! whatever is still open.

use super::convert::{body_calls, python_calls};
use super::frame::{Frame, FrameEnd, Opening, opening};
use super::{MAX_BLOCK, MAX_CALLS, TextError, TextEvent, python};
use crate::tools::ToolSet;

/// The block being read; the held text starts with it.
#[derive(Debug)]
enum Block {
    /// Between markers: the body starts `open` bytes in; `searched`
    /// bytes of it hold no `close`.
    Marked {
        open: usize,
        close: &'static str,
        searched: usize,
    },
    /// Python, framed by its brackets.
    Python(Frame),
}

/// See the module docs.
#[derive(Debug)]
pub(super) struct Scanner {
    set: ToolSet,
    /// Text not decided yet.
    held: String,
    block: Option<Block>,
    /// `held` starts a line (or follows a Python block).
    line_start: bool,
    calls: usize,
}

impl Scanner {
    pub(super) fn new(set: &ToolSet) -> Scanner {
        Scanner {
            set: set.clone(),
            held: String::new(),
            block: None,
            line_start: true,
            calls: 0,
        }
    }

    /// Scan one more piece of text.
    pub(super) fn feed(&mut self, text: &str, out: &mut Vec<TextEvent>) {
        self.held.push_str(text);
        self.drain(false, out);
    }

    /// The input has ended: decide everything still held.
    pub(super) fn finish(&mut self, out: &mut Vec<TextEvent>) {
        self.drain(true, out);
    }

    fn drain(&mut self, eof: bool, out: &mut Vec<TextEvent>) {
        loop {
            let progressed = match self.block.take() {
                Some(block) => self.read_block(block, eof, out),
                None => self.read_text(eof, out),
            };
            if !progressed {
                return;
            }
        }
    }

    /// Emit text up to the next opening; true when a block opened.
    fn read_text(&mut self, eof: bool, out: &mut Vec<TextEvent>) -> bool {
        let mut i = 0;
        while i < self.held.len() {
            let line_start = if i == 0 {
                self.line_start
            } else {
                self.held[..i].ends_with('\n')
            };
            let rest = &self.held[i..];
            let c = rest.chars().next().map_or(1, char::len_utf8);
            let candidate = line_start || rest.starts_with(['<', '[', '`']);
            let found = if candidate {
                opening(rest, line_start, &self.set, eof)
            } else {
                Opening::No
            };
            let block = match found {
                Opening::No => {
                    i += c;
                    continue;
                }
                Opening::Maybe => {
                    self.emit_text(i, out);
                    return false;
                }
                Opening::Marked { open, close } => Block::Marked {
                    open,
                    close,
                    searched: 0,
                },
                Opening::Python => Block::Python(Frame::default()),
            };
            self.emit_text(i, out);
            self.block = Some(block);
            return true;
        }
        let all = self.held.len();
        self.emit_text(all, out);
        false
    }

    /// Emit the first `n` held bytes as text.
    fn emit_text(&mut self, n: usize, out: &mut Vec<TextEvent>) {
        if n == 0 {
            return;
        }
        let text: String = self.held.drain(..n).collect();
        self.line_start = text.ends_with('\n');
        out.push(TextEvent::Text(text));
    }

    /// Go on reading `block`; true when it ended.
    fn read_block(&mut self, mut block: Block, eof: bool, out: &mut Vec<TextEvent>) -> bool {
        // A block ends within MAX_BLOCK bytes of its start, or not at all.
        let window = floor_char(&self.held, MAX_BLOCK);
        let full = self.held.len() >= MAX_BLOCK;
        let ended = match &mut block {
            Block::Marked {
                open,
                close,
                searched,
            } => {
                let (open, close) = (*open, *close);
                let body = &self.held[open.min(window)..window];
                let from = searched.saturating_sub(close.len());
                match body[floor_char(body, from)..].find(close) {
                    Some(at) => {
                        let body_end = open + floor_char(body, from) + at;
                        let events =
                            self.calls_of(body_calls(&self.held[open..body_end], &self.set));
                        Some((body_end + close.len(), events))
                    }
                    None if full => Some((window, Err(TextError::TooLong))),
                    None if eof => {
                        // A model that stops where the closing tag would be.
                        let events = self.calls_of(
                            body_calls(&self.held[open.min(window)..], &self.set)
                                .map_err(|_| TextError::Unterminated),
                        );
                        Some((self.held.len(), events))
                    }
                    None => {
                        *searched = body.len();
                        None
                    }
                }
            }
            Block::Python(frame) => match frame.advance(&self.held[..window], eof || full) {
                FrameEnd::At(n) => {
                    let parsed = python::calls(&self.held[..n])
                        .and_then(|calls| python_calls(calls, &self.set));
                    Some((n, self.calls_of(parsed)))
                }
                FrameEnd::Broken(n) => Some((
                    n,
                    Err(TextError::Syntax {
                        at: n.saturating_sub(1),
                        what: "unbalanced brackets or quotes".into(),
                    }),
                )),
                FrameEnd::Need if full => Some((window, Err(TextError::TooLong))),
                FrameEnd::Need if eof => Some((self.held.len(), Err(TextError::Unterminated))),
                FrameEnd::Need => None,
            },
        };
        let Some((end, result)) = ended else {
            self.block = Some(block);
            return false;
        };
        let raw: String = self.held.drain(..end).collect();
        let python = matches!(block, Block::Python(_));
        match result {
            Ok(calls) => {
                // Another call may follow on the same line.
                self.line_start = python || raw.ends_with('\n');
                out.push(TextEvent::Calls { calls, raw });
            }
            Err(error) => {
                self.line_start = raw.ends_with('\n');
                out.push(TextEvent::Unparsed { raw, error });
            }
        }
        true
    }

    /// Count `parsed`'s calls against [`MAX_CALLS`].
    fn calls_of(
        &mut self,
        parsed: Result<Vec<crate::tools::ToolCall>, TextError>,
    ) -> Result<Vec<crate::tools::ToolCall>, TextError> {
        let calls = parsed?;
        if self.calls + calls.len() > MAX_CALLS {
            return Err(TextError::TooManyCalls);
        }
        self.calls += calls.len();
        Ok(calls)
    }
}

/// The largest char boundary of `s` at or below `n`.
fn floor_char(s: &str, n: usize) -> usize {
    let mut n = n.min(s.len());
    while !s.is_char_boundary(n) {
        n -= 1;
    }
    n
}
