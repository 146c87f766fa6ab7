//! An excerpt of a failed answer for retry feedback: the answer itself
//! when short, else its start and the part around the problem (the end
//! of a cut answer, the member a violation names), never more than a
//! bound, so a runaway answer is not sent back whole.

/// Most bytes of a failed answer a retry carries.
pub(crate) const EXCERPT_MAX: usize = 1024;
/// Bytes of the answer's start kept before a gap.
const HEAD: usize = 160;
/// What stands for the bytes left out.
const GAP: &str = " … ";

/// Where in the answer the problem is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Problem {
    /// The answer was cut off: its end.
    End,
    /// At this byte offset.
    At(usize),
}

/// At most `max` bytes of `text` around `problem`.
pub(crate) fn excerpt(text: &str, problem: Problem, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let at = match problem {
        Problem::End => text.len(),
        Problem::At(at) => at.min(text.len()),
    };
    let head_len = HEAD.min(max / 4);
    let room = max.saturating_sub(head_len + 2 * GAP.len());
    // The window: mostly before the problem, some after.
    let after = room / 4;
    let mut end = floor(text, (at + after).min(text.len()));
    let mut start = ceil(text, end.saturating_sub(room));
    if start <= head_len + GAP.len() {
        // The window reaches the start: one piece from there.
        start = 0;
        end = floor(text, max.saturating_sub(GAP.len()));
    }
    let mut out = String::with_capacity(max);
    if start > 0 {
        out.push_str(&text[..floor(text, head_len)]);
        out.push_str(GAP);
    }
    out.push_str(&text[start..end.max(start)]);
    if end < text.len() {
        out.push_str(GAP);
    }
    out
}

/// Where a violation at `pointer` is likely to be in `text`: the first
/// occurrence of its last member name as a key; the start when there is
/// none.
pub(crate) fn locate(text: &str, pointer: &str) -> Problem {
    let last = pointer
        .rsplit('/')
        .find(|s| !s.is_empty() && s.parse::<usize>().is_err());
    match last.and_then(|k| text.find(&format!("\"{k}\""))) {
        Some(at) => Problem::At(at),
        None => Problem::At(0),
    }
}

/// The largest character boundary at or below `i`.
fn floor(text: &str, mut i: usize) -> usize {
    i = i.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The smallest character boundary at or above `i`.
fn ceil(text: &str, mut i: usize) -> usize {
    while i < text.len() && !text.is_char_boundary(i) {
        i += 1;
    }
    i
}
