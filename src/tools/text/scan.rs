//! The scanner: text in, [`TextEvent`]s out, holding back only what may
//! still become a call. Every decision is taken on the text alone (never
//! on where a piece ended): an opening is decided once enough of it has
//! arrived, a block ends at its closing marker or bracket within
//! [`MAX_BLOCK`] bytes of its start, and the end of the input decides
//! whatever is still open.

use super::convert::{body_calls, python_calls};
use super::event::{MAX_BLOCK, MAX_CALLS, TextError, TextEvent};
use super::frame::{Frame, FrameEnd, Opening, opening};
use super::framed::{Head, JsonKind, Tail, framed_calls, head, tail};
use super::python;
use crate::tools::call::ToolCall;
use crate::tools::spec::ToolSet;

/// The block being read; the held text starts with it.
#[derive(Debug)]
enum Block {
    /// Between markers: the body starts `open` bytes in; `searched`
    /// bytes of it hold no `close`; `tail`: an orphan `</tool_call>`
    /// after `close` belongs to the block.
    Marked {
        open: usize,
        close: &'static str,
        tail: bool,
        searched: usize,
    },
    /// Python, framed by its brackets.
    Python(Frame),
    /// JSON framed by its brackets.
    Json(JsonBlock),
}

#[derive(Debug)]
struct JsonBlock {
    kind: JsonKind,
    /// Bytes of the marker.
    open: usize,
    /// Where the JSON starts and the name written before it, once read.
    head: Option<(usize, Option<(usize, usize)>)>,
    frame: Frame,
    /// Bare, after nothing but whitespace: it may be the whole answer.
    whole: bool,
    /// A bare call's JSON ended here and reads as these calls: what
    /// follows it decides; so many bytes of whitespace follow so far.
    framed: Option<(usize, Vec<ToolCall>, usize)>,
}

/// How a block ended.
enum End {
    /// It is the first `n` bytes.
    Block(usize, Result<Vec<ToolCall>, TextError>),
    /// A bare call that is not one: text, where no bare call opens in
    /// the first `n` bytes.
    Text(usize),
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
    /// Nothing but whitespace went out yet.
    answer_start: bool,
    /// No bare call opens in the first `bare_from` held bytes.
    bare_from: usize,
    calls: usize,
}

impl Scanner {
    pub(super) fn new(set: &ToolSet) -> Scanner {
        Scanner {
            set: set.clone(),
            held: String::new(),
            block: None,
            line_start: true,
            answer_start: true,
            bare_from: 0,
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
        let mut blank = self.answer_start;
        while i < self.held.len() {
            let line_start = if i == 0 {
                self.line_start
            } else {
                self.held[..i].ends_with('\n')
            };
            let rest = &self.held[i..];
            let c = rest.chars().next().unwrap_or(' ');
            let candidate = line_start || rest.starts_with(['<', '[', '`', '{']);
            let bare = i >= self.bare_from;
            let found = if candidate {
                opening(rest, line_start, bare, &self.set, eof)
            } else {
                Opening::No
            };
            let block = match found {
                Opening::No => {
                    blank &= c.is_whitespace();
                    i += c.len_utf8();
                    continue;
                }
                Opening::Maybe => {
                    self.emit_text(i, out);
                    return false;
                }
                Opening::Marked { open, close, tail } => Block::Marked {
                    open,
                    close,
                    tail,
                    searched: 0,
                },
                Opening::Python => Block::Python(Frame::default()),
                Opening::Json { kind, open } => Block::Json(JsonBlock {
                    kind,
                    open,
                    head: None,
                    frame: Frame::default(),
                    whole: blank && kind == JsonKind::Bare,
                    framed: None,
                }),
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
        self.answer_start &= text.trim().is_empty();
        self.bare_from = self.bare_from.saturating_sub(n);
        out.push(TextEvent::Text(text));
    }

    /// Go on reading `block`; true when it ended.
    fn read_block(&mut self, mut block: Block, eof: bool, out: &mut Vec<TextEvent>) -> bool {
        // A block ends within MAX_BLOCK bytes of its start, or not at all.
        let window = floor_char(&self.held, MAX_BLOCK);
        let ended = match &mut block {
            Block::Marked {
                open,
                close,
                tail,
                searched,
            } => self.read_marked((*open, *close, *tail), searched, window, eof),
            Block::Python(frame) => self.read_python(frame, window, eof),
            Block::Json(json) => self.read_json(json, window, eof),
        };
        let (end, result) = match ended {
            None => {
                self.block = Some(block);
                return false;
            }
            Some(End::Text(n)) => {
                self.bare_from = n;
                return true;
            }
            Some(End::Block(end, result)) => (end, result),
        };
        let result = result.and_then(|calls| self.count(calls));
        let raw: String = self.held.drain(..end).collect();
        self.bare_from = self.bare_from.saturating_sub(end);
        self.answer_start = false;
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

    fn read_marked(
        &self,
        (open, close, with_tail): (usize, &'static str, bool),
        searched: &mut usize,
        window: usize,
        eof: bool,
    ) -> Option<End> {
        let full = self.held.len() >= MAX_BLOCK;
        let body = &self.held[open.min(window)..window];
        let from = floor_char(body, searched.saturating_sub(close.len()));
        match body[from..].find(close) {
            Some(at) => {
                let body_end = open + from + at;
                let mut end = body_end + close.len();
                if with_tail {
                    match tail(&self.held[end..window], 0, eof, false).0 {
                        Tail::Close(n) => end += n,
                        Tail::Need if !full => {
                            *searched = from + at;
                            return None;
                        }
                        _ => {}
                    }
                }
                let parsed = body_calls(&self.held[open..body_end], &self.set);
                Some(End::Block(end, parsed))
            }
            None if full => Some(End::Block(window, Err(TextError::TooLong))),
            None if eof => {
                // A model that stops where the closing tag would be.
                let parsed = body_calls(&self.held[open.min(window)..], &self.set)
                    .map_err(|_| TextError::Unterminated);
                Some(End::Block(self.held.len(), parsed))
            }
            None => {
                *searched = body.len();
                None
            }
        }
    }

    fn read_python(&self, frame: &mut Frame, window: usize, eof: bool) -> Option<End> {
        let full = self.held.len() >= MAX_BLOCK;
        let (end, result) = match frame.advance(&self.held[..window], eof || full) {
            FrameEnd::At(n) => {
                let parsed =
                    python::calls(&self.held[..n]).and_then(|calls| python_calls(calls, &self.set));
                (n, parsed)
            }
            FrameEnd::Broken(n) => (n, Err(broken(n))),
            FrameEnd::Need if full => (window, Err(TextError::TooLong)),
            FrameEnd::Need if eof => (self.held.len(), Err(TextError::Unterminated)),
            FrameEnd::Need => return None,
        };
        Some(End::Block(end, result))
    }

    /// A framed JSON block: its head, its brackets, and for a bare call
    /// what follows.
    fn read_json(&self, b: &mut JsonBlock, window: usize, eof: bool) -> Option<End> {
        let full = self.held.len() >= MAX_BLOCK;
        let bare = b.kind == JsonKind::Bare;
        if b.framed.is_some() {
            return self.bare_tail(b, window, eof);
        }
        let (json, name) = match b.head {
            Some(h) => h,
            None => match head(b.kind, &self.held[b.open.min(window)..window]) {
                Head::At { json, name } => {
                    let h = (b.open + json, name.map(|(s, e)| (b.open + s, b.open + e)));
                    b.head = Some(h);
                    b.frame = Frame::at(h.0);
                    h
                }
                Head::Need if !eof && !full => return None,
                Head::Need => return Some(End::Block(b.open, Err(TextError::Unterminated))),
                Head::Bad => {
                    let why = "a call marker without a call after it".into();
                    return Some(End::Block(b.open, Err(TextError::NotACall(why))));
                }
            },
        };
        let (end, result) = match b.frame.advance(&self.held[..window], eof || full) {
            FrameEnd::At(n) => {
                let name = name.map(|(s, e)| &self.held[s..e]);
                let parsed = framed_calls(&self.held[json..n], name, &self.set);
                match parsed {
                    Ok(calls) if bare => {
                        b.framed = Some((n, calls, 0));
                        return self.bare_tail(b, window, eof);
                    }
                    parsed => (n, parsed),
                }
            }
            FrameEnd::Broken(n) => (n, Err(broken(n))),
            FrameEnd::Need if full => (window, Err(TextError::TooLong)),
            FrameEnd::Need if eof => (self.held.len(), Err(TextError::Unterminated)),
            FrameEnd::Need => return None,
        };
        // A bare call that is not one is text.
        Some(if bare {
            End::Text(end)
        } else {
            End::Block(end, result)
        })
    }

    /// A bare call is one when the answer ends after it, if it started
    /// the answer, or when a `</tool_call>` follows it.
    fn bare_tail(&self, b: &mut JsonBlock, window: usize, eof: bool) -> Option<End> {
        let full = self.held.len() >= MAX_BLOCK;
        let (n, calls, known) = b.framed.take()?;
        let (tail, ws) = tail(&self.held[n..window], known, eof, b.whole);
        match tail {
            Tail::Close(k) => Some(End::Block(n + k, Ok(calls))),
            Tail::Blank if b.whole && !full => Some(End::Block(n, Ok(calls))),
            Tail::Need if !full => {
                b.framed = Some((n, calls, ws));
                None
            }
            _ => Some(End::Text(n)),
        }
    }

    /// Count `calls` against [`MAX_CALLS`].
    fn count(&mut self, calls: Vec<ToolCall>) -> Result<Vec<ToolCall>, TextError> {
        if self.calls + calls.len() > MAX_CALLS {
            return Err(TextError::TooManyCalls);
        }
        self.calls += calls.len();
        Ok(calls)
    }
}

fn broken(n: usize) -> TextError {
    TextError::Syntax {
        at: n.saturating_sub(1),
        what: "unbalanced brackets or quotes".into(),
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
