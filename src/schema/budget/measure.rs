//! [`check`]: a schema measured against [`Limits`], stage by stage (the
//! raw document, the graph of its references, its expansion, its
//! recursion); [`check_size`]: the raw measures alone.

use serde_json::Value;

use super::limits::{BudgetError, Limits, Report};
use super::{graph, recursion, scan};

/// Measure `schema` against `limits`: the [`Report`] when it fits, else the
/// first limit found exceeded.
pub fn check(schema: &Value, limits: &Limits) -> Result<Report, BudgetError> {
    let raw = scan::scan(schema, limits)?;
    let g = graph::Graph::build(schema, &raw, limits)?;
    let (expanded, depth) = g.expand(limits)?;
    let recursive = recursion::check(&g)?;
    Ok(Report {
        nodes: raw.nodes,
        bytes: raw.bytes,
        depth,
        expanded,
        patterns: g.patterns,
        pattern_cost: g.pattern_cost,
        recursive,
    })
}

/// Only the raw measures of [`check`] (values, bytes, JSON nesting) for
/// `schemas` taken together: cheap, and stopping as soon as a limit is
/// passed, to run before anything copies or hashes a schema.
pub fn check_size<'a>(
    schemas: impl IntoIterator<Item = &'a Value>,
    limits: &Limits,
) -> Result<(), BudgetError> {
    let mut left = *limits;
    for schema in schemas {
        let raw = scan::scan(schema, &left)?;
        left.max_nodes -= raw.nodes;
        left.max_bytes -= raw.bytes;
    }
    Ok(())
}
