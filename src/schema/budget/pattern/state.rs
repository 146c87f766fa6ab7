//! The scan's state: a cost under both readings of a pattern ([`Cost`]),
//! the open groups ([`Frame`]) and their flags, the characters read through
//! a counter ([`Cursor`]), and the sizes every part of the scan weighs by.

/// The largest Unicode property (`Grapheme_Base`, 343 states), the weight
/// of a property the table does not know.
pub(super) const MAX_PROPERTY: u64 = 360;
/// What a negation adds: the complement of a set is about its size plus
/// that of `.` (8 states).
pub(super) const NEGATION: u64 = 8;
/// `.`: any character but `\n`, over UTF-8.
pub(super) const DOT: u64 = 8;
/// Groups nested deeper than this are refused by both parsers the
/// validator uses (`regex-syntax` nests 250 deep, `fancy-regex` 64): such
/// a pattern is priced as too costly without reading further.
pub(super) const MAX_NESTING: usize = 250;

/// A cost under both readings of a pattern: translated from ECMA-262 (the
/// usual case, `\d` and `\w` are ASCII) and as written (Unicode).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Cost {
    pub(super) ecma: u64,
    pub(super) unicode: u64,
}

impl Cost {
    pub(super) const fn both(n: u64) -> Cost {
        Cost {
            ecma: n,
            unicode: n,
        }
    }

    pub(super) fn plus(self, o: Cost) -> Cost {
        Cost {
            ecma: self.ecma.saturating_add(o.ecma),
            unicode: self.unicode.saturating_add(o.unicode),
        }
    }

    pub(super) fn minus(self, o: Cost) -> Cost {
        Cost {
            ecma: self.ecma.saturating_sub(o.ecma),
            unicode: self.unicode.saturating_sub(o.unicode),
        }
    }

    pub(super) fn add(self, n: u64) -> Cost {
        self.plus(Cost::both(n))
    }

    pub(super) fn times(self, n: u64) -> Cost {
        Cost {
            ecma: self.ecma.saturating_mul(n),
            unicode: self.unicode.saturating_mul(n),
        }
    }

    /// Under `(?i)`: the class and its case variants.
    pub(super) fn folded(self, case_insensitive: bool) -> Cost {
        if case_insensitive {
            self.times(2).add(4)
        } else {
            self
        }
    }
}

#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Flags {
    pub(super) case_insensitive: bool,
    pub(super) verbose: bool,
}

/// One open group.
#[derive(Debug, Default)]
pub(super) struct Frame {
    /// Finished alternatives (and their branch states).
    pub(super) alts: Cost,
    /// The current sequence.
    pub(super) seq: Cost,
    /// Its last item, which a repetition copies.
    pub(super) last: Cost,
    pub(super) flags: Flags,
    /// A capturing group adds its two capture states.
    pub(super) capture: bool,
}

impl Frame {
    pub(super) fn total(&self) -> Cost {
        self.alts.plus(self.seq)
    }
}

/// The pattern's characters, read through a counter of reads.
pub(super) struct Cursor {
    pub(super) chars: Vec<char>,
    pub(super) pos: usize,
    pub(super) reads: usize,
}

impl Cursor {
    pub(super) fn new(chars: Vec<char>) -> Cursor {
        Cursor {
            chars,
            pos: 0,
            reads: 0,
        }
    }

    pub(super) fn peek(&mut self) -> Option<char> {
        self.reads += 1;
        self.chars.get(self.pos).copied()
    }

    pub(super) fn next(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += 1;
        Some(c)
    }

    pub(super) fn eat(&mut self, c: char) -> bool {
        let hit = self.peek() == Some(c);
        if hit {
            self.pos += 1;
        }
        hit
    }

    /// Consume up to and including `end` (or to the end of the pattern);
    /// what was read before it, at most `keep` characters of it kept.
    pub(super) fn until(&mut self, end: char, keep: usize) -> String {
        let mut out = String::new();
        while let Some(c) = self.next() {
            if c == end {
                break;
            }
            if out.len() < keep {
                out.push(c);
            }
        }
        out
    }
}

/// `pattern` as the validator compiles it: `jsonschema` escapes every `[`
/// inside a class (ECMA-262 has no nested classes). Its notion of a class
/// ends at the first `]`, even one the `regex` crate reads as a literal
/// (`[]…`), so nested classes can still reach the compiler.
pub(super) fn ecma_escaped(pattern: &str) -> Vec<char> {
    let mut out = Vec::with_capacity(pattern.len());
    let (mut in_class, mut escaped) = (false, false);
    for c in pattern.chars() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == '[' {
            if in_class {
                out.push('\\');
            }
            in_class = true;
        } else if c == ']' {
            in_class = false;
        }
        out.push(c);
    }
    out
}
