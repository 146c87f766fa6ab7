//! The resource budget every client schema must fit before augur does any
//! work with it: [`check`] measures a schema against [`Limits`] and says
//! which limit it exceeds.
//!
//! Measured: the raw document (JSON values, bytes of text, nesting), the
//! sub-schemas it expands to once every `$ref` is followed (a reference back
//! into the current expansion path counts once), the nesting of sub-schemas
//! through references, and the cost of its regular expressions. Recursive
//! schemas are also checked for shapes that make validation exponential: a
//! `$ref` cycle that never descends into the value, and recursion reached
//! through two overlapping alternatives (two applicators of one sub-schema
//! that recurse into the same part of the value).
//!
//! Everything here is pure and bounded by the limits it checks: work stops
//! as soon as a limit is passed, and nothing recurses on the call stack.

mod expand;
mod graph;
mod limits;
mod measure;
mod pattern;
mod recursion;
mod scan;

#[cfg(test)]
pub(crate) mod tests;

pub use limits::{BudgetError, Limits, Report};
pub use measure::{check, check_size};
pub use pattern::pattern_cost;
