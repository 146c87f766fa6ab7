//! Matching text that may still be arriving: a literal is matched, not
//! matched, or not decided until more text comes.

/// Whether text matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum M {
    /// Matched: the match is `n` bytes long.
    Yes(usize),
    /// Not decided until more text arrives.
    Maybe,
    /// Not matched.
    No,
}

/// Whether `s` starts with `lit`, or may still once more text arrives.
pub(super) fn literal(s: &str, lit: &str) -> M {
    if s.starts_with(lit) {
        M::Yes(lit.len())
    } else if lit.starts_with(s) {
        M::Maybe
    } else {
        M::No
    }
}

/// A character of a tool name.
pub(super) fn is_name_char(c: char) -> bool {
    c == '_' || c == '.' || c.is_alphanumeric()
}
