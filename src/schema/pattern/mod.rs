//! `pattern` rewriting for llama.cpp's regex-to-grammar translation.
//!
//! The converter only understands anchored patterns (`^…$`) built from
//! literals, `.`, groups, `|`, character classes and `* + ? {n,m}`. It copies
//! escapes verbatim into GBNF, whose parser only knows `\x \u \U \t \r \n \\ \"
//! \[ \]`, and it applies a quantifier to a whole run of merged literal
//! characters when the last one is an escape. [`to_grammar_pattern`] rewrites
//! an ECMA-262 pattern into that subset with the same language, or says why it
//! cannot.

mod class;
mod rewrite;
mod translator;

pub(crate) use rewrite::to_grammar_pattern;

#[cfg(test)]
mod tests;
