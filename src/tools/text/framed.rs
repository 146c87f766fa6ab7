//! JSON calls framed by their brackets rather than by a closing marker:
//! after Mistral's `[TOOL_CALLS]` (a list, or `name[ARGS]{…}`), after
//! Llama's `<|python_tag|>`, and bare (no opening marker at all), where
//! the object counts only as the whole answer or just before an orphan
//! `</tool_call>`. Each step is decided on as little text as possible,
//! like [`super::frame`]'s openers.

use serde_json::Value;

use super::convert::{body_calls, json_call};
use super::event::TextError;
use super::partial::{M, is_name_char, literal};
use crate::tools::call::ToolCall;
use crate::tools::spec::ToolSet;

/// What opened a framed JSON block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum JsonKind {
    /// `{"name": …}` (or a list of them) with no marker.
    Bare,
    /// `[TOOL_CALLS]`.
    Mistral,
    /// `<|python_tag|>`.
    PythonTag,
}

/// Markers followed by JSON framed by its brackets.
pub(super) const MARKERS: &[(&str, JsonKind)] = &[
    ("[TOOL_CALLS]", JsonKind::Mistral),
    ("<|python_tag|>", JsonKind::PythonTag),
];

/// The closing tag a bare call may end with (its opening missing).
pub(super) const ORPHAN_CLOSE: &str = "</tool_call>";

/// The first key of a bare call object, with its quotes.
const CALL_KEYS: &[&str] = &[
    "\"name\"",
    "\"tool_name\"",
    "\"function\"",
    "\"arguments\"",
    "\"args\"",
    "\"parameters\"",
];
/// Most whitespace read between the parts of a head or a tail.
const MAX_WS: usize = 64;
/// Longest tool name (and call id) read after `[TOOL_CALLS]`.
const MAX_NAME: usize = 256;

/// Leading whitespace of `s` in bytes, read up to `MAX_WS + 1`
/// characters: more than [`MAX_WS`] is too much anyway.
fn ws(s: &str) -> usize {
    let mut n = 0;
    for c in s.chars().take(MAX_WS + 1) {
        if !c.is_whitespace() {
            return n;
        }
        n += c.len_utf8();
    }
    n
}

/// `{` then a call key, or `[` then that; at the start of `s`.
pub(super) fn bare_opener(s: &str) -> M {
    let mut rest = s;
    if let Some(r) = rest.strip_prefix('[') {
        rest = r;
        let n = ws(rest);
        if n > MAX_WS {
            return M::No;
        }
        rest = &rest[n..];
        if rest.is_empty() {
            return M::Maybe;
        }
    }
    let Some(r) = rest.strip_prefix('{') else {
        return M::No;
    };
    let n = ws(r);
    if n > MAX_WS {
        return M::No;
    }
    let key = &r[n..];
    let mut maybe = false;
    for k in CALL_KEYS {
        match literal(key, k) {
            M::Yes(_) => return M::Yes(0),
            M::Maybe => maybe = true,
            M::No => {}
        }
    }
    if maybe { M::Maybe } else { M::No }
}

/// Where a block's JSON starts, relative to the end of its marker, and
/// the tool's name when written before it (`name[ARGS]{…}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Head {
    At {
        json: usize,
        name: Option<(usize, usize)>,
    },
    Need,
    /// Not a call after the marker.
    Bad,
}

/// The head of a `kind` block: `s` is the text after its marker.
pub(super) fn head(kind: JsonKind, s: &str) -> Head {
    match kind {
        JsonKind::Bare => Head::At {
            json: 0,
            name: None,
        },
        JsonKind::PythonTag => json_start(s, 0, false),
        JsonKind::Mistral => match json_start(s, 0, false) {
            Head::Bad => named(s),
            other => other,
        },
    }
}

/// Whitespace, then `{` (or `[` unless `object`), from `at`.
fn json_start(s: &str, at: usize, object: bool) -> Head {
    let n = ws(&s[at..]);
    if n > MAX_WS {
        return Head::Bad;
    }
    let json = at + n;
    match s[json..].chars().next() {
        None => Head::Need,
        Some('{') => Head::At { json, name: None },
        Some('[') if !object => Head::At { json, name: None },
        Some(_) => Head::Bad,
    }
}

/// `name[ARGS]{…}`, maybe `name[CALL_ID]id[ARGS]{…}`.
fn named(s: &str) -> Head {
    let start = ws(s);
    if start > MAX_WS {
        return Head::Bad;
    }
    let name_len = prefix_len(&s[start..], is_name_char);
    if name_len == 0 || name_len > MAX_NAME {
        return Head::Bad;
    }
    let mut at = start + name_len;
    if at == s.len() {
        return Head::Need;
    }
    match literal(&s[at..], "[CALL_ID]") {
        M::Yes(n) => {
            at += n;
            let id = prefix_len(&s[at..], |c| c.is_ascii_alphanumeric());
            if id > MAX_NAME {
                return Head::Bad;
            }
            at += id;
        }
        M::Maybe => return Head::Need,
        M::No => {}
    }
    match literal(&s[at..], "[ARGS]") {
        M::Yes(n) => match json_start(s, at + n, true) {
            Head::At { json, .. } => Head::At {
                json,
                name: Some((start, start + name_len)),
            },
            other => other,
        },
        M::Maybe => Head::Need,
        M::No => Head::Bad,
    }
}

/// Bytes of the leading characters of `s` that are `ok`, read up to
/// `MAX_NAME + 1` characters.
fn prefix_len(s: &str, ok: impl Fn(char) -> bool) -> usize {
    let mut n = 0;
    for c in s.chars().take(MAX_NAME + 1) {
        if !ok(c) {
            return n;
        }
        n += c.len_utf8();
    }
    n
}

/// The calls of a framed block: `json` is its framed JSON, `name` the
/// name written before it, if any.
pub(super) fn framed_calls(
    json: &str,
    name: Option<&str>,
    set: &ToolSet,
) -> Result<Vec<ToolCall>, TextError> {
    let Some(name) = name else {
        return body_calls(json, set);
    };
    let arguments: Value = serde_json::from_str(json).map_err(|e| TextError::Syntax {
        at: 0,
        what: format!("invalid JSON ({e})"),
    })?;
    let call = serde_json::json!({"name": name, "arguments": arguments});
    Ok(vec![json_call(&call, set)?])
}

/// What follows a bare call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tail {
    /// Whitespace and [`ORPHAN_CLOSE`]: `n` bytes.
    Close(usize),
    /// Whitespace to the end of the answer.
    Blank,
    Need,
    No,
}

/// The tail in `s`, and the bytes of whitespace it starts with (of
/// which the first `known` were read before). Whitespace before the
/// closing tag is at most [`MAX_WS`] bytes unless the call may be the
/// whole answer (`whole`).
pub(super) fn tail(s: &str, known: usize, eof: bool, whole: bool) -> (Tail, usize) {
    let n = if whole {
        let known = known.min(s.len());
        let rest = &s[known..];
        known + rest.len() - rest.trim_start().len()
    } else {
        ws(s)
    };
    let rest = &s[n..];
    let tail = if !whole && n > MAX_WS {
        Tail::No
    } else if rest.starts_with(ORPHAN_CLOSE) {
        Tail::Close(n + ORPHAN_CLOSE.len())
    } else if rest.is_empty() {
        if eof { Tail::Blank } else { Tail::Need }
    } else if !eof && ORPHAN_CLOSE.starts_with(rest) {
        Tail::Need
    } else {
        Tail::No
    };
    (tail, n)
}
