//! The translator's state (the pattern's characters, where it reads, what
//! it wrote), the class shorthands' members and how a character is
//! written inside a GBNF class: what [`super::rewrite`] and [`super::class`]
//! share.

pub(super) const DIGIT: &str = "0-9";
pub(super) const WORD: &str = "a-zA-Z0-9_";
pub(super) const SPACE: &str = r" \t\n\r";

/// Rewrites one pattern body, left to right.
pub(super) struct Translator {
    pub(super) chars: Vec<char>,
    pub(super) pos: usize,
    pub(super) out: String,
}

impl Translator {
    pub(super) fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }
}

/// Append `c` as a GBNF character-class member.
pub(super) fn push_class_char(out: &mut String, c: char, in_class: bool) {
    match c {
        '\\' => out.push_str("\\\\"),
        ']' => out.push_str("\\]"),
        '[' => out.push_str("\\["),
        '\n' => out.push_str("\\n"),
        '\t' => out.push_str("\\t"),
        '\r' => out.push_str("\\r"),
        '-' => out.push_str("\\x2D"),
        '^' if in_class => out.push_str("\\x5E"),
        c if c.is_ascii_control() => out.push_str(&format!("\\x{:02X}", c as u32)),
        c => out.push(c),
    }
}
