//! Where a JSON answer was cut off: the path from the root to the
//! innermost value left open, and whether one array or string inside it
//! ran away (took most of the answer, repeating itself) rather than the
//! answer being long but healthy.
//!
//! The scan is one pass over the text with a stack bounded by
//! [`MAX_DEPTH`]; sibling string values are remembered (bounded) so that a
//! grammar's alternatives can later be told apart (`"name": "get_weather"`).

use crate::wire::json_scan::unescaped;

/// Deepest nesting followed; deeper text is scanned but not tracked.
pub(crate) const MAX_DEPTH: usize = 64;
/// Sibling string values remembered per open object.
const MAX_SIBLINGS: usize = 16;
/// Longest sibling string value remembered, in bytes.
const MAX_SIBLING_LEN: usize = 256;
/// Smallest span, in bytes, a runaway part can have.
const RUNAWAY_MIN: usize = 256;
/// Bytes at the end of a part looked at for repetition.
const REPEAT_WINDOW: usize = 2048;
/// Length of the shingles counted for repetition.
const SHINGLE: usize = 8;
/// Repeats of one unit that make a run ([`ends_in_a_run`]): Ollama ends
/// an answer after 30 repeats of one token.
const RUN_REPEATS: usize = 30;
/// Longest unit of a run, in bytes.
const MAX_RUN_UNIT: usize = 8;
/// An array this long, taking most of the answer, ran away whatever its
/// items look like.
const MANY_ITEMS: usize = 64;

/// One step from a value into one of its children.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Step {
    /// An object member, with the string members of that object seen
    /// before the cut (`(key, value)`).
    Key {
        key: String,
        siblings: Vec<(String, String)>,
    },
    /// An array element.
    Index(usize),
}

/// What ran away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    /// An array, with its complete items before the cut.
    Array { items: usize },
    /// A string, with its characters before the cut.
    Text { chars: usize },
}

/// The part of a cut answer that used up the token budget.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Runaway {
    /// The path to it (a prefix of [`Cut::path`]).
    pub path: Vec<Step>,
    pub part: Part,
}

impl Runaway {
    /// The path as a JSON pointer (`/tool_call/arguments/tags`).
    pub(crate) fn pointer(&self) -> String {
        pointer(&self.path)
    }
}

/// Where an answer was cut.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Cut {
    /// The path to the innermost value left open.
    pub path: Vec<Step>,
    /// The innermost value left open is a string (not a key).
    pub in_string: bool,
    /// The array or string that ran away, if one did.
    pub runaway: Option<Runaway>,
}

/// `path` as a JSON pointer.
pub(crate) fn pointer(path: &[Step]) -> String {
    let mut out = String::new();
    for step in path {
        out.push('/');
        match step {
            Step::Key { key, .. } => out.push_str(&key.replace('~', "~0").replace('/', "~1")),
            Step::Index(i) => out.push_str(&i.to_string()),
        }
    }
    out
}

#[derive(Debug)]
enum Frame {
    Object {
        /// The member being read (after its key).
        key: Option<String>,
        siblings: Vec<(String, String)>,
    },
    Array {
        start: usize,
        /// Index of the element being read (= complete elements before it).
        index: usize,
    },
}

#[derive(Debug)]
struct OpenString {
    start: usize,
    is_key: bool,
    chars: usize,
    /// The decoded text, while short enough to be worth keeping.
    text: String,
    escape: bool,
}

/// Scan `text`, a JSON answer cut off before its end. `None` when no JSON
/// value starts in it, or the value is complete.
pub(crate) fn analyze(text: &str) -> Option<Cut> {
    let begin = text.find(['{', '['])?;
    let mut stack: Vec<Frame> = Vec::new();
    let mut string: Option<OpenString> = None;
    // Nesting beyond MAX_DEPTH: counted, not tracked.
    let mut hidden = 0usize;
    for (i, c) in text[begin..].char_indices() {
        let at = begin + i;
        if let Some(s) = string.as_mut() {
            if s.escape {
                s.escape = false;
                s.chars += 1;
                // `\u` escapes are kept as their letter: remembered values
                // only need to compare equal.
                keep(&mut s.text, unescaped(c));
            } else if c == '\\' {
                s.escape = true;
            } else if c == '"' {
                if let Some(done) = string.take()
                    && hidden == 0
                {
                    close_string(&mut stack, done);
                }
            } else {
                s.chars += 1;
                keep(&mut s.text, c);
            }
            continue;
        }
        match c {
            '"' => {
                let is_key = matches!(stack.last(), Some(Frame::Object { key: None, .. }));
                string = Some(OpenString {
                    start: at,
                    is_key: is_key && hidden == 0,
                    chars: 0,
                    text: String::new(),
                    escape: false,
                });
            }
            '{' | '[' if hidden > 0 || stack.len() >= MAX_DEPTH => hidden += 1,
            '{' => stack.push(Frame::Object {
                key: None,
                siblings: Vec::new(),
            }),
            '[' => stack.push(Frame::Array {
                start: at,
                index: 0,
            }),
            '}' | ']' if hidden > 0 => hidden -= 1,
            '}' | ']' => {
                stack.pop();
                if stack.is_empty() {
                    return None;
                }
            }
            ',' if hidden == 0 => match stack.last_mut() {
                Some(Frame::Object { key, .. }) => *key = None,
                Some(Frame::Array { index, .. }) => *index += 1,
                None => {}
            },
            _ => {}
        }
    }
    if stack.is_empty() {
        return None;
    }
    Some(finish(text, begin, &stack, string, hidden))
}

/// Keep `c` in a remembered string while it is short.
fn keep(text: &mut String, c: char) {
    if text.len() < MAX_SIBLING_LEN {
        text.push(c);
    }
}

fn close_string(stack: &mut [Frame], done: OpenString) {
    let Some(Frame::Object { key, siblings, .. }) = stack.last_mut() else {
        return;
    };
    if done.is_key {
        *key = Some(done.text);
    } else if let Some(k) = key.clone()
        && siblings.len() < MAX_SIBLINGS
        && done.text.len() < MAX_SIBLING_LEN
    {
        siblings.push((k, done.text));
    }
}

fn finish(
    text: &str,
    begin: usize,
    stack: &[Frame],
    string: Option<OpenString>,
    hidden: usize,
) -> Cut {
    let end = text.len();
    let total = end - begin;
    let mut path = Vec::new();
    let mut runaway = None;
    let string = string.filter(|s| !s.is_key);
    for (depth, frame) in stack.iter().enumerate() {
        let innermost = depth + 1 == stack.len();
        let step = match frame {
            Frame::Object { key, siblings, .. } => key.clone().map(|key| Step::Key {
                key,
                siblings: siblings.clone(),
            }),
            Frame::Array { index, .. } => Some(Step::Index(*index)),
        };
        if let Frame::Array { start, index } = frame
            && runs_away(&text[*start..], total, *index)
        {
            runaway = Some(Runaway {
                path: path.clone(),
                part: Part::Array { items: *index },
            });
        }
        // The last frame's child step leads to an open string, if any.
        if innermost && (string.is_none() || hidden > 0) {
            break;
        }
        match step {
            Some(step) => path.push(step),
            None => break,
        }
    }
    let in_string = string.is_some() && hidden == 0 && path.len() == stack.len();
    if let Some(s) = string.as_ref().filter(|_| in_string)
        && (runs_away(&text[s.start..], total, 0) || ends_in_a_run(&text[s.start..]))
    {
        runaway = Some(Runaway {
            path: path.clone(),
            part: Part::Text { chars: s.chars },
        });
    }
    Cut {
        path,
        in_string,
        runaway,
    }
}

/// Whether a part spanning `part` (to the end of the answer) of an
/// answer of `total` bytes ran away: it takes most of the answer and
/// repeats itself, or is an array of very many items.
fn runs_away(part: &str, total: usize, items: usize) -> bool {
    let span = part.len();
    if span < RUNAWAY_MIN || span * 2 < total {
        return false;
    }
    items >= MANY_ITEMS || repetitive(part)
}

/// Whether `part` ends with one short unit written [`RUN_REPEATS`] times
/// or more in a row (`"1000000000000000000000000000000000`): what is left
/// when Ollama ends an answer because the model repeated one token too
/// often, however short the part.
pub(crate) fn ends_in_a_run(part: &str) -> bool {
    let bytes = part.as_bytes();
    (1..=MAX_RUN_UNIT).any(|unit| {
        let span = unit * RUN_REPEATS;
        span <= bytes.len() && {
            let tail = &bytes[bytes.len() - span..];
            tail.chunks(unit).all(|c| c == &tail[..unit])
        }
    })
}

/// Whether the end of `part` repeats itself: few distinct shingles among
/// the last [`REPEAT_WINDOW`] bytes. Natural text and code have nearly all
/// their 8-byte shingles distinct; a loop has about one per byte of its
/// period.
pub(crate) fn repetitive(part: &str) -> bool {
    let bytes = part.as_bytes();
    let tail = &bytes[bytes.len().saturating_sub(REPEAT_WINDOW)..];
    if tail.len() < RUNAWAY_MIN {
        return false;
    }
    let shingles: Vec<&[u8]> = tail.windows(SHINGLE).collect();
    let mut distinct: Vec<&[u8]> = shingles.clone();
    distinct.sort_unstable();
    distinct.dedup();
    distinct.len() * 2 < shingles.len()
}
