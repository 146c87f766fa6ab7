//! How deeply a YAML text nests, found by a cheap pass before the YAML
//! parser sees it.
//!
//! The parser's cost grows with the square of the nesting depth (each flow
//! level adds to the work done per token), so a small file nested 100,000
//! deep takes it minutes to reject. This pass reads the text once, in
//! linear time, and follows the parser's own tokenizer rules as far as
//! nesting is concerned: flow brackets, block indentation (the columns of
//! `- `, `? ` and `key:`), quoted scalars, plain scalars spanning lines,
//! block scalars (`|`, `>`) and comments. Brackets inside scalars and
//! comments do not count, so they cannot hide real nesting either.
//!
//! Where the tokenizer would fail, this pass fails too (the file is not
//! valid YAML anyway), so it never hands on text it has not measured. YAML
//! tags (`!tag`) are refused: policy files have no use for them.

mod depth;
mod scan;
mod text;

pub(crate) use depth::check;
pub(crate) use scan::Refusal;

#[cfg(test)]
mod tests;
