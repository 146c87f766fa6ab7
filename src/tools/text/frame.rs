//! Where a call block starts and where it ends, decided on as little text
//! as possible: openers are matched against what has arrived (a prefix
//! of an opener is "not decided yet"), and a Python block is framed by
//! its brackets, with strings skipped, in one linear pass that resumes
//! where it stopped. Framing first and parsing the framed block once
//! keeps a streamed block linear: [`winnow`] would re-parse partial input
//! from its start on every piece.

use super::framed::{JsonKind, MARKERS, bare_opener};
use super::partial::{M, is_name_char, literal};
use super::xml::FUNCTION;
use crate::tools::spec::ToolSet;

/// Blocks between two markers, and whether the body must be calls (an
/// unreadable body is then reported) — all of them.
pub(super) const TAGS: &[(&str, &str)] = &[
    ("<tool_call>", "</tool_call>"),
    ("<tool_code>", "</tool_code>"),
    ("[TOOL_REQUEST]", "[END_TOOL_REQUEST]"),
    ("```tool_code", "```"),
    ("```tool_call", "```"),
];
/// qwen3-coder's call without its `<tool_call>`: the block starts at
/// the tag itself and may be followed by an orphan `</tool_call>`.
const FUNCTION_CLOSE: &str = "</function>";
/// Fences whose body is a block only when it starts with a call.
const CODE_FENCES: &[&str] = &["```python", "```py"];
/// Most whitespace read while deciding an opener.
const MAX_WS: usize = 64;
/// Gemini's tool code prefix.
const DEFAULT_API: &str = "default_api.";

/// What the text at a position is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Opening {
    /// Not the start of a call.
    No,
    /// Not decided until more text arrives.
    Maybe,
    /// A block between markers: its body starts `open` bytes in and ends
    /// before `close`, and an orphan `</tool_call>` after it belongs to
    /// it when `tail`.
    Marked {
        open: usize,
        close: &'static str,
        tail: bool,
    },
    /// JSON framed by its brackets, after a marker `open` bytes long.
    Json { kind: JsonKind, open: usize },
    /// A Python block, framed by its brackets from this position.
    Python,
}

/// Leading whitespace of `s`, if at most [`MAX_WS`] bytes (read no
/// further than that).
fn ws_len(s: &str) -> Option<usize> {
    let mut n = 0;
    for c in s.chars() {
        if !c.is_whitespace() {
            break;
        }
        n += c.len_utf8();
        if n > MAX_WS {
            return None;
        }
    }
    Some(n)
}

/// The opening at the start of `s`; `line_start`: `s` starts a line (or
/// follows a Python block); `bare`: a bare JSON call may open here.
/// `eof`: no more text will come.
pub(super) fn opening(s: &str, line_start: bool, bare: bool, set: &ToolSet, eof: bool) -> Opening {
    let decided = |o: Opening| match o {
        Opening::Maybe if eof => Opening::No,
        o => o,
    };
    let mut maybe = false;
    for (open, close) in TAGS {
        match literal(s, open) {
            M::Yes(n) => {
                return Opening::Marked {
                    open: n,
                    close,
                    tail: false,
                };
            }
            M::Maybe => maybe = true,
            M::No => {}
        }
    }
    for (marker, kind) in MARKERS {
        match literal(s, marker) {
            M::Yes(open) => return Opening::Json { kind: *kind, open },
            M::Maybe => maybe = true,
            M::No => {}
        }
    }
    match literal(s, FUNCTION) {
        M::Yes(_) => {
            return Opening::Marked {
                open: 0,
                close: FUNCTION_CLOSE,
                tail: true,
            };
        }
        M::Maybe => maybe = true,
        M::No => {}
    }
    if bare {
        match bare_opener(s) {
            M::Yes(_) => {
                return Opening::Json {
                    kind: JsonKind::Bare,
                    open: 0,
                };
            }
            M::Maybe => maybe = true,
            M::No => {}
        }
    }
    for fence in CODE_FENCES {
        match fenced_call(s, fence, set) {
            M::Yes(n) => {
                return Opening::Marked {
                    open: n,
                    close: "```",
                    tail: false,
                };
            }
            M::Maybe => maybe = true,
            M::No => {}
        }
    }
    let python = match s.chars().next() {
        Some('[') => list_opener(s, set),
        _ if line_start => {
            let lead = s.strip_prefix([',', ';']).unwrap_or(s);
            let skipped = s.len() - lead.len();
            match call_opener(lead, set, true) {
                M::Yes(n) => M::Yes(n + skipped),
                m => m,
            }
        }
        _ => M::No,
    };
    match python {
        M::Yes(_) => Opening::Python,
        M::Maybe => decided(Opening::Maybe),
        M::No if maybe => decided(Opening::Maybe),
        M::No => Opening::No,
    }
}

/// ```` ```python ```` then a line break, then a call.
fn fenced_call(s: &str, fence: &str, set: &ToolSet) -> M {
    let n = match literal(s, fence) {
        M::Yes(n) => n,
        other => return other,
    };
    let rest = &s[n..];
    let line = rest.trim_start_matches([' ', '\t']);
    if line.is_empty() {
        return M::Maybe;
    }
    let Some(body) = line.strip_prefix('\n') else {
        return M::No;
    };
    match call_or_list(body, set) {
        M::Yes(_) => M::Yes(n),
        other => other,
    }
}

fn call_or_list(s: &str, set: &ToolSet) -> M {
    let Some(ws) = ws_len(s) else { return M::No };
    let rest = &s[ws..];
    match rest.chars().next() {
        None => M::Maybe,
        Some('[') => list_opener(rest, set),
        Some(_) => call_opener(rest, set, true),
    }
}

/// `[` then a call.
fn list_opener(s: &str, set: &ToolSet) -> M {
    match call_or_list_inner(&s[1..], set) {
        M::Yes(n) => M::Yes(n + 1),
        other => other,
    }
}

fn call_or_list_inner(s: &str, set: &ToolSet) -> M {
    let Some(ws) = ws_len(s) else { return M::No };
    match call_opener(&s[ws..], set, false) {
        M::Yes(n) => M::Yes(n + ws),
        other => other,
    }
}

/// A declared tool's name (maybe `default_api.`-prefixed), then `(`;
/// with `wrapper`, also `print(` around a call or a list of calls.
fn call_opener(s: &str, set: &ToolSet, wrapper: bool) -> M {
    let Some(ws) = ws_len(s) else { return M::No };
    let rest = &s[ws..];
    let end = rest.find(|c| !is_name_char(c)).unwrap_or(rest.len());
    let word = &rest[..end];
    if end == rest.len() {
        return if could_be_name(word, set, wrapper) {
            M::Maybe
        } else {
            M::No
        };
    }
    let after = &rest[end..];
    let Some(gap) = ws_len(after) else {
        return M::No;
    };
    let after = &after[gap..];
    let name = word.strip_prefix(DEFAULT_API).unwrap_or(word);
    let known = set.get(name).is_some();
    if after.is_empty() {
        return if known || (wrapper && word == "print") {
            M::Maybe
        } else {
            M::No
        };
    }
    if !after.starts_with('(') {
        return M::No;
    }
    let head = ws + end + gap + 1;
    if wrapper && word == "print" {
        match call_or_list(&after[1..], set) {
            M::Yes(n) => return M::Yes(head + n),
            M::Maybe => return M::Maybe,
            M::No => {}
        }
    }
    if known { M::Yes(head) } else { M::No }
}

/// Whether `word` may still grow into a declared name (or `print`).
fn could_be_name(word: &str, set: &ToolSet, wrapper: bool) -> bool {
    if wrapper && "print".starts_with(word) {
        return true;
    }
    let bare = if DEFAULT_API.starts_with(word) {
        return true;
    } else {
        word.strip_prefix(DEFAULT_API).unwrap_or(word)
    };
    set.tools().iter().any(|t| t.name.starts_with(bare))
}

/// The end of a Python block, found by its brackets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FrameEnd {
    /// The block is the first `n` bytes.
    At(usize),
    /// More text is needed.
    Need,
    /// A closing bracket with nothing open, or a line break inside a
    /// one-line string, after `n` bytes.
    Broken(usize),
}

/// Bracket framing state of one Python block.
#[derive(Debug, Default)]
pub(super) struct Frame {
    pos: usize,
    depth: usize,
    opened: bool,
    /// The open string's quote and whether it is triple-quoted.
    string: Option<(char, bool)>,
}

impl Frame {
    /// A frame whose first bracket is at `pos`.
    pub(super) fn at(pos: usize) -> Frame {
        Frame {
            pos,
            ..Frame::default()
        }
    }

    /// Go on framing `s` (the block so far, from its start).
    pub(super) fn advance(&mut self, s: &str, eof: bool) -> FrameEnd {
        let bytes = s.as_bytes();
        while self.pos < s.len() {
            let i = self.pos;
            let c = bytes[i];
            // Lookahead a string needs: 3 bytes for quotes, 2 for escapes.
            let need = |n: usize| i + n > s.len() && !eof;
            let triple = bytes[i..].starts_with(&[c, c, c]);
            match self.string {
                Some(_) if c == b'\\' => {
                    if need(2) {
                        return FrameEnd::Need;
                    }
                    // The backslash and the character it escapes.
                    self.pos = next_char(s, (i + 2).min(s.len()));
                    continue;
                }
                Some((q, long)) if c == q as u8 => {
                    if !long {
                        self.string = None;
                    } else if need(3) {
                        return FrameEnd::Need;
                    } else if triple {
                        self.string = None;
                        self.pos = i + 3;
                        continue;
                    }
                }
                Some((_, false)) if c == b'\n' => return FrameEnd::Broken(i + 1),
                Some(_) => {}
                None => match c {
                    b'"' | b'\'' => {
                        if need(3) {
                            return FrameEnd::Need;
                        }
                        self.string = Some((char::from(c), triple));
                        self.pos = i + if triple { 3 } else { 1 };
                        continue;
                    }
                    b'(' | b'[' | b'{' => {
                        self.depth += 1;
                        self.opened = true;
                    }
                    b')' | b']' | b'}' => {
                        if self.depth == 0 {
                            return FrameEnd::Broken(i + 1);
                        }
                        self.depth -= 1;
                        if self.depth == 0 && self.opened {
                            return FrameEnd::At(i + 1);
                        }
                    }
                    _ => {}
                },
            }
            self.pos = next_char(s, i + 1);
        }
        FrameEnd::Need
    }
}

/// The next char boundary at or after `i`.
fn next_char(s: &str, mut i: usize) -> usize {
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i
}
