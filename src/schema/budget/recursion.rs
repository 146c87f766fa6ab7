//! Recursive schemas that make validation exponential.
//!
//! A validator follows every applicator, so the work at one part of the
//! value is the number of schema paths that reach it. Inside a `$ref`
//! cycle that number doubles on every turn when two applicators of one
//! sub-schema both recurse into the same part of the value (e.g. an `anyOf`
//! of two `$ref`s to the parent under one property): refused here. A cycle
//! that never descends into the value is refused too. Cycles whose
//! alternatives recurse into different parts (a tree's `left` and `right`,
//! an array's items and an object's values) stay linear and are accepted.

use std::collections::HashMap;

use super::graph::{Graph, Kind, Label};
use super::limits::BudgetError;

/// Most labels remembered per sub-schema before they are widened to "any
/// property" / "any position" (which can only find more overlaps).
const MAX_LABELS: usize = 32;

/// Refuse the shapes above; `Ok(true)` when the schema is recursive.
pub(super) fn check(g: &Graph<'_>) -> Result<bool, BudgetError> {
    let n = g.nodes.len();
    let all = components(g, n, |_| true);
    let in_place = components(g, n, |k| k == Kind::InPlace);
    // A cycle of in-place edges alone: a component of two or more nodes, or
    // a node applying itself.
    let mut size = vec![0usize; n];
    for &c in &in_place {
        size[c] += 1;
    }
    for (id, node) in g.nodes.iter().enumerate() {
        let self_loop = node
            .edges
            .iter()
            .any(|e| e.target == id && e.kind == Kind::InPlace);
        if size[in_place[id]] > 1 || self_loop {
            return Err(BudgetError::EmptyCycle { at: g.pointer(id) });
        }
    }
    let mut comp_size = vec![0usize; n];
    for &c in &all {
        comp_size[c] += 1;
    }
    let cyclic =
        |id: usize| comp_size[all[id]] > 1 || g.nodes[id].edges.iter().any(|e| e.target == id);
    let mut recursive = false;
    let mut firsts: HashMap<usize, Vec<Label<'_>>> = HashMap::new();
    for id in 0..n {
        if !cyclic(id) {
            continue;
        }
        recursive = true;
        let comp = all[id];
        let mut per_edge: Vec<(usize, Vec<Label<'_>>)> = Vec::new();
        for (i, e) in g.nodes[id].edges.iter().enumerate() {
            if all[e.target] != comp {
                continue;
            }
            let labels = match e.kind {
                Kind::Child(l) => vec![l],
                Kind::InPlace => first_labels(g, &all, comp, e.target, &mut firsts),
            };
            per_edge.push((i, labels));
        }
        if overlap(g, &per_edge) {
            return Err(BudgetError::OverlappingRecursion { at: g.pointer(id) });
        }
    }
    Ok(recursive)
}

/// The labels of the first descents into the value, within component
/// `comp`, reachable from `start` through in-place edges only (which form
/// no cycle by now). Memoized in `memo`; computed without recursion.
fn first_labels<'a>(
    g: &Graph<'a>,
    all: &[usize],
    comp: usize,
    start: usize,
    memo: &mut HashMap<usize, Vec<Label<'a>>>,
) -> Vec<Label<'a>> {
    let mut stack = vec![(start, false)];
    while let Some((id, done)) = stack.pop() {
        if memo.contains_key(&id) {
            continue;
        }
        let inside = g.nodes[id].edges.iter().filter(|e| all[e.target] == comp);
        if !done {
            stack.push((id, true));
            for e in inside {
                if e.kind == Kind::InPlace && !memo.contains_key(&e.target) {
                    stack.push((e.target, false));
                }
            }
            continue;
        }
        let mut labels: Vec<Label<'a>> = Vec::new();
        for e in inside {
            match e.kind {
                Kind::Child(l) => labels.push(l),
                Kind::InPlace => {
                    if let Some(more) = memo.get(&e.target) {
                        labels.extend(more.iter().copied());
                    }
                }
            }
        }
        memo.insert(id, widen(labels));
    }
    memo.get(&start).cloned().unwrap_or_default()
}

/// Deduplicated labels, widened when there are too many.
fn widen(mut labels: Vec<Label<'_>>) -> Vec<Label<'_>> {
    labels.sort_unstable();
    labels.dedup();
    if labels.len() <= MAX_LABELS {
        return labels;
    }
    let mut out = Vec::new();
    if labels.iter().any(is_key) {
        out.push(Label::AnyKey);
    }
    if labels.iter().any(|l| !is_key(l)) {
        out.push(Label::IndexFrom(0));
    }
    out
}

fn is_key(l: &Label<'_>) -> bool {
    matches!(l, Label::Key(_) | Label::AnyKey | Label::KeyExcept(_))
}

/// Whether two different edges' labels can name the same part of a value.
fn overlap(g: &Graph<'_>, per_edge: &[(usize, Vec<Label<'_>>)]) -> bool {
    let mut keys: HashMap<&str, usize> = HashMap::new();
    let mut indexes: HashMap<usize, usize> = HashMap::new();
    // (edge, label) for labels naming many parts.
    let mut wide: Vec<(usize, Label<'_>)> = Vec::new();
    for (edge, labels) in per_edge {
        for &l in labels {
            match l {
                Label::Key(k) => {
                    if keys.insert(k, *edge).is_some_and(|e| e != *edge) {
                        return true;
                    }
                }
                Label::Index(i) => {
                    if indexes.insert(i, *edge).is_some_and(|e| e != *edge) {
                        return true;
                    }
                }
                _ => wide.push((*edge, l)),
            }
        }
    }
    for (i, (edge, l)) in wide.iter().enumerate() {
        if wide[i + 1..]
            .iter()
            .any(|(e, m)| e != edge && is_key(l) == is_key(m))
        {
            return true;
        }
        let hit = match *l {
            Label::AnyKey => keys.values().any(|e| e != edge),
            Label::KeyExcept(holder) => keys.iter().any(|(k, e)| e != edge && !names(g, holder, k)),
            Label::IndexFrom(from) => indexes.iter().any(|(i, e)| e != edge && *i >= from),
            _ => false,
        };
        if hit {
            return true;
        }
    }
    false
}

/// Whether node `holder`'s `properties` names `key`.
fn names(g: &Graph<'_>, holder: usize, key: &str) -> bool {
    g.nodes[holder]
        .value
        .get("properties")
        .and_then(|p| p.as_object())
        .is_some_and(|p| p.contains_key(key))
}

/// Strongly connected components over the edges `keep` admits: the
/// component number of each node (iterative Tarjan).
fn components(g: &Graph<'_>, n: usize, keep: impl Fn(Kind<'_>) -> bool) -> Vec<usize> {
    const UNSEEN: usize = usize::MAX;
    let mut index = vec![UNSEEN; n];
    let mut low = vec![0usize; n];
    let mut on_stack = vec![false; n];
    let mut comp = vec![UNSEEN; n];
    let mut stack: Vec<usize> = Vec::new();
    let mut next_index = 0;
    let mut next_comp = 0;
    for start in 0..n {
        if index[start] != UNSEEN {
            continue;
        }
        let mut work: Vec<(usize, usize)> = vec![(start, 0)];
        while let Some(top) = work.last_mut() {
            let (v, i) = *top;
            if i == 0 && index[v] == UNSEEN {
                index[v] = next_index;
                low[v] = next_index;
                next_index += 1;
                stack.push(v);
                on_stack[v] = true;
            }
            let edges = &g.nodes[v].edges;
            if let Some(e) = edges.get(i) {
                top.1 += 1;
                if !keep(e.kind) {
                    continue;
                }
                let w = e.target;
                if index[w] == UNSEEN {
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    comp[w] = next_comp;
                    if w == v {
                        break;
                    }
                }
                next_comp += 1;
            }
        }
    }
    comp
}
