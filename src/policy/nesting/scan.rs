//! The pre-scan's state ([`Scan`]: where it reads, the open flow and
//! block collections, the deepest level) and why it refuses a text
//! ([`Refusal`]).

/// Why the pass refused a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Nested deeper than the limit at `line` (1-based).
    TooDeep { line: usize },
    /// Not valid YAML at `line` (1-based): `what` says why.
    Syntax { line: usize, what: &'static str },
}

pub(super) struct Scan<'a> {
    pub(super) b: &'a [u8],
    pub(super) pos: usize,
    /// 1-based line and 0-based column (in characters) of `pos`.
    pub(super) line: usize,
    pub(super) col: usize,
    /// Open flow collections; `true` for a sequence holding a `key: value`
    /// pair, which is a mapping one level deeper.
    pub(super) flow: Vec<Flow>,
    /// The open block collections.
    pub(super) indents: Vec<Block>,
    /// Levels that open without a bracket or a new column: pairs in flow
    /// sequences, and block sequences written at their key's column.
    pub(super) implicit: usize,
    /// Whether a simple key (`key:`) may start at the next token.
    pub(super) key_allowed: bool,
    /// Where the possible simple key of the block context started:
    /// (line, byte offset, column).
    pub(super) key: Option<(usize, usize, usize)>,
    pub(super) max: usize,
    pub(super) deepest: usize,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Flow {
    pub(super) sequence: bool,
    pub(super) pair: bool,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Block {
    pub(super) col: usize,
    pub(super) mapping: bool,
    /// A sequence at this mapping's own column (`key:` then `- item`).
    pub(super) indentless: bool,
}

/// Longest simple key the tokenizer accepts (bytes).
pub(super) const MAX_SIMPLE_KEY: usize = 1024;
