//! The schema as it would be with every `$ref` expanded, walked without
//! building it: how many sub-schemas it holds and how deep they nest.

use super::graph::Graph;
use super::limits::{BudgetError, Limits};

impl Graph<'_> {
    /// Walk every path from the root with `$ref`s expanded, stopping at the
    /// limits: (sub-schemas counted, deepest nesting).
    pub(super) fn expand(&self, limits: &Limits) -> Result<(usize, usize), BudgetError> {
        let mut on_path = vec![false; self.nodes.len()];
        let mut stack: Vec<(usize, usize)> = vec![(0, 0)];
        on_path[0] = true;
        let mut count = 1;
        let mut deepest = 1;
        // Too deep is reported once the whole expansion is known to fit:
        // a fan-out that is both says how much it expands to.
        let mut too_deep: Option<usize> = None;
        while let Some(top) = stack.last_mut() {
            let (node, i) = *top;
            let Some(edge) = self.nodes[node].edges.get(i) else {
                on_path[node] = false;
                stack.pop();
                continue;
            };
            top.1 += 1;
            count += 1;
            if count > limits.max_expanded {
                return Err(BudgetError::TooExpanded {
                    limit: limits.max_expanded,
                });
            }
            if on_path[edge.target] {
                continue;
            }
            if stack.len() >= limits.max_depth && too_deep.is_none() {
                too_deep = Some(edge.target);
            }
            on_path[edge.target] = true;
            stack.push((edge.target, 0));
            deepest = deepest.max(stack.len());
        }
        if let Some(at) = too_deep {
            return Err(BudgetError::TooDeep {
                limit: limits.max_depth,
                at: self.pointer(at),
            });
        }
        Ok((count, deepest))
    }
}
