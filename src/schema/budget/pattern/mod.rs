//! What a regular expression costs once compiled, in states of the
//! Thompson NFA the `regex` crate builds for it (the validator compiles
//! every `pattern` so; its other engines grow with that NFA).
//!
//! Counted repetitions copy what they repeat (`[a-z]{1,500}` is 500 copies
//! of a class), so the size is about the product of nested bounds times the
//! atoms. What an atom compiles to is not what its text suggests: Unicode
//! classes are compiled to automata over UTF-8 bytes, and `\p{L}` is about
//! 300 states, `.` and `[^a]` 8, where `a` and `[a-z]` are one. Atoms here
//! are weighed by measuring what they compile to (`regex-automata` 0.4):
//! Unicode properties by a table of their measured sizes (any other by the
//! largest), a class by its items (ASCII items share one state, each other
//! lead byte, range or property adds its own), a negation adds the
//! complement of `.`, and under `(?i)` a class or property counts twice
//! (its case variants) and the letters `k` and `s` three times (`K`, `ſ`).
//!
//! The validator (`jsonschema`) first translates ECMA-262 syntax: `\d` and
//! `\w` become ASCII classes, and a `[` inside a class is escaped. A pattern
//! with a look-around or a back-reference is not translated (it goes to
//! `fancy-regex` as written), and there `\d` and `\w` are Unicode classes:
//! both readings are priced in the one pass and the one that applies kept.
//!
//! The scan reads each character a bounded number of times, so its work is
//! linear in the pattern's length; groups nest on a heap stack at most
//! [`MAX_NESTING`] deep.

mod atoms;
mod class;
mod scan;
mod state;

#[cfg(test)]
use scan::measure;
pub use scan::pattern_cost;
#[cfg(test)]
use state::MAX_NESTING;

#[cfg(test)]
mod tests;
