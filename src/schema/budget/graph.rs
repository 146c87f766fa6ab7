//! The schema as a graph: one node per sub-schema location, edges for the
//! keywords that apply a sub-schema (to the same value or to a part of it)
//! and for `$ref`s. Nodes are told apart by where their value sits in the
//! document, so no JSON pointer is built unless a message needs one.

use std::collections::HashMap;

use serde_json::Value;

use super::limits::{BudgetError, Limits, show_pointer};
use super::pattern::pattern_cost;
use super::scan::{Raw, escape, percent_decode, same_resource};

/// Which part of the value an applicator's sub-schema applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Label<'a> {
    /// One named property.
    Key(&'a str),
    /// Any property (`patternProperties`, `propertyNames`, …).
    AnyKey,
    /// Any property the node's own `properties` does not name.
    KeyExcept(usize),
    /// One array position.
    Index(usize),
    /// Every position from this one on.
    IndexFrom(usize),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind<'a> {
    /// Applies to the same value (`$ref`, `allOf`, `anyOf`, `not`, …).
    InPlace,
    /// Applies to a part of the value.
    Child(Label<'a>),
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Edge<'a> {
    pub target: usize,
    pub kind: Kind<'a>,
}

/// How a node was first reached, to spell its JSON pointer in messages.
enum Origin<'a> {
    Root,
    Child {
        parent: usize,
        keyword: &'a str,
        sub: Option<Seg<'a>>,
    },
    Ref {
        base: usize,
        pointer: String,
    },
}

#[derive(Clone, Copy)]
enum Seg<'a> {
    Key(&'a str),
    Index(usize),
}

pub(super) struct Node<'a> {
    pub value: &'a Value,
    pub edges: Vec<Edge<'a>>,
    /// The node holding the `$id` whose resource this node belongs to.
    base: usize,
    origin: Origin<'a>,
}

fn addr(v: &Value) -> usize {
    v as *const Value as usize
}

pub(super) struct Graph<'a> {
    pub nodes: Vec<Node<'a>>,
    pub patterns: usize,
    pub pattern_cost: u64,
    index: HashMap<usize, usize>,
    resources: Vec<(&'a str, &'a Value)>,
    anchors: Vec<(&'a str, &'a Value)>,
}

impl<'a> Graph<'a> {
    /// Every sub-schema reachable from the root, with its edges.
    pub(super) fn build(
        root: &'a Value,
        raw: &Raw<'a>,
        limits: &Limits,
    ) -> Result<Self, BudgetError> {
        let mut g = Graph {
            nodes: Vec::new(),
            patterns: 0,
            pattern_cost: 0,
            index: HashMap::new(),
            resources: raw.resources.clone(),
            anchors: raw.anchors.clone(),
        };
        g.intern(root, 0, Origin::Root);
        let mut next = 0;
        while next < g.nodes.len() {
            g.expand_node(next, limits)?;
            next += 1;
        }
        Ok(g)
    }

    /// The node for `value`, added (to be expanded later) if new.
    fn intern(&mut self, value: &'a Value, base: usize, origin: Origin<'a>) -> usize {
        if let Some(&id) = self.index.get(&addr(value)) {
            return id;
        }
        let id = self.nodes.len();
        let own = matches!(value.get("$id"), Some(Value::String(s)) if !s.starts_with('#'));
        self.nodes.push(Node {
            value,
            edges: Vec::new(),
            base: if own { id } else { base },
            origin,
        });
        self.index.insert(addr(value), id);
        id
    }

    fn expand_node(&mut self, id: usize, limits: &Limits) -> Result<(), BudgetError> {
        let Value::Object(m) = self.nodes[id].value else {
            return Ok(());
        };
        let mut edges = Vec::new();
        for (k, v) in m {
            let k = k.as_str();
            match k {
                "properties" => {
                    for (name, s) in v.as_object().into_iter().flatten() {
                        let sub = Some(Seg::Key(name));
                        edges.extend(self.child(id, k, sub, s, Label::Key(name)));
                    }
                }
                "patternProperties" => {
                    for (pattern, s) in v.as_object().into_iter().flatten() {
                        self.pattern(id, pattern, limits)?;
                        let sub = Some(Seg::Key(pattern));
                        edges.extend(self.child(id, k, sub, s, Label::AnyKey));
                    }
                }
                "additionalProperties" => {
                    edges.extend(self.child(id, k, None, v, Label::KeyExcept(id)));
                }
                "unevaluatedProperties" | "propertyNames" => {
                    edges.extend(self.child(id, k, None, v, Label::AnyKey));
                }
                "items" | "prefixItems" if v.is_array() => {
                    for (i, s) in v.as_array().into_iter().flatten().enumerate() {
                        let sub = Some(Seg::Index(i));
                        edges.extend(self.child(id, k, sub, s, Label::Index(i)));
                    }
                }
                "items" | "additionalItems" => {
                    let before = m
                        .get(if k == "items" { "prefixItems" } else { "items" })
                        .and_then(Value::as_array)
                        .map_or(0, Vec::len);
                    edges.extend(self.child(id, k, None, v, Label::IndexFrom(before)));
                }
                "contains" | "unevaluatedItems" => {
                    edges.extend(self.child(id, k, None, v, Label::IndexFrom(0)));
                }
                "allOf" | "anyOf" | "oneOf" => {
                    for (i, s) in v.as_array().into_iter().flatten().enumerate() {
                        edges.extend(self.in_place(id, k, Some(Seg::Index(i)), s));
                    }
                }
                "not" | "if" | "then" | "else" => edges.extend(self.in_place(id, k, None, v)),
                "dependentSchemas" | "dependencies" => {
                    for (name, s) in v.as_object().into_iter().flatten() {
                        edges.extend(self.in_place(id, k, Some(Seg::Key(name)), s));
                    }
                }
                "$ref" | "$dynamicRef" | "$recursiveRef" => {
                    if let Value::String(r) = v {
                        for target in self.resolve(id, k, r)? {
                            edges.push(Edge {
                                target,
                                kind: Kind::InPlace,
                            });
                        }
                    }
                }
                "pattern" => {
                    if let Value::String(p) = v {
                        self.pattern(id, p, limits)?;
                    }
                }
                _ => {}
            }
        }
        self.nodes[id].edges = edges;
        Ok(())
    }

    fn child(
        &mut self,
        parent: usize,
        keyword: &'a str,
        sub: Option<Seg<'a>>,
        value: &'a Value,
        label: Label<'a>,
    ) -> Option<Edge<'a>> {
        if !matches!(value, Value::Object(_) | Value::Bool(_)) {
            return None;
        }
        let base = self.nodes[parent].base;
        let origin = Origin::Child {
            parent,
            keyword,
            sub,
        };
        let target = self.intern(value, base, origin);
        Some(Edge {
            target,
            kind: Kind::Child(label),
        })
    }

    fn in_place(
        &mut self,
        parent: usize,
        keyword: &'a str,
        sub: Option<Seg<'a>>,
        value: &'a Value,
    ) -> Option<Edge<'a>> {
        let mut edge = self.child(parent, keyword, sub, value, Label::AnyKey)?;
        edge.kind = Kind::InPlace;
        Some(edge)
    }

    fn pattern(&mut self, at: usize, pattern: &str, limits: &Limits) -> Result<(), BudgetError> {
        let cost = pattern_cost(pattern);
        if cost > limits.max_pattern_cost {
            return Err(BudgetError::PatternTooCostly {
                limit: limits.max_pattern_cost,
                at: self.pointer(at),
            });
        }
        self.patterns += 1;
        self.pattern_cost = self.pattern_cost.saturating_add(cost);
        if self.pattern_cost > limits.max_patterns_cost {
            return Err(BudgetError::PatternsTooCostly {
                limit: limits.max_patterns_cost,
            });
        }
        Ok(())
    }

    /// Every node `reference` may name, seen from node `from`: more than
    /// one when embedded resources or anchors make it ambiguous (all are
    /// counted, which can only overestimate).
    fn resolve(
        &mut self,
        from: usize,
        keyword: &str,
        reference: &'a str,
    ) -> Result<Vec<usize>, BudgetError> {
        let (uri, fragment) = reference.split_once('#').unwrap_or((reference, ""));
        let fragment = percent_decode(fragment);
        let mut bases: Vec<usize> = Vec::new();
        if uri.is_empty() {
            bases.push(self.nodes[from].base);
        } else {
            let found: Vec<&'a Value> = self
                .resources
                .iter()
                .filter(|(id, _)| same_resource(id, uri))
                .map(|(_, v)| *v)
                .collect();
            for v in found {
                let origin = Origin::Ref {
                    base: from,
                    pointer: String::new(),
                };
                bases.push(self.intern(v, 0, origin));
            }
        }
        if keyword == "$recursiveRef" {
            bases.push(0);
        }
        let mut out = Vec::new();
        for base in bases {
            if fragment.is_empty() {
                out.push(base);
            } else if fragment.starts_with('/') {
                let Some(target) = self.nodes[base].value.pointer(&fragment) else {
                    continue;
                };
                if matches!(target, Value::Object(_) | Value::Bool(_)) {
                    let origin = Origin::Ref {
                        base,
                        pointer: fragment.clone(),
                    };
                    let own_base = self.nodes[base].base;
                    out.push(self.intern(target, own_base, origin));
                }
            } else {
                let named: Vec<&'a Value> = self
                    .anchors
                    .iter()
                    .filter(|(name, _)| *name == fragment)
                    .map(|(_, v)| *v)
                    .collect();
                for v in named {
                    let origin = Origin::Ref {
                        base: from,
                        pointer: format!("#{fragment}"),
                    };
                    out.push(self.intern(v, 0, origin));
                }
            }
        }
        out.sort_unstable();
        out.dedup();
        if out.is_empty() {
            return Err(BudgetError::Unresolvable {
                reference: reference.to_string(),
                at: self.pointer(from),
            });
        }
        Ok(out)
    }

    /// The JSON pointer of node `id`, as first reached.
    pub(super) fn pointer(&self, id: usize) -> String {
        let mut parts: Vec<String> = Vec::new();
        let mut at = id;
        let mut hops = 0;
        loop {
            hops += 1;
            if hops > self.nodes.len() + 1 {
                break;
            }
            match &self.nodes[at].origin {
                Origin::Root => break,
                Origin::Child {
                    parent,
                    keyword,
                    sub,
                } => {
                    if let Some(sub) = sub {
                        parts.push(match sub {
                            Seg::Key(k) => escape(k),
                            Seg::Index(i) => i.to_string(),
                        });
                    }
                    parts.push(escape(keyword));
                    at = *parent;
                }
                Origin::Ref { base, pointer } => {
                    parts.push(pointer.trim_start_matches('/').to_string());
                    at = *base;
                }
            }
        }
        let joined: String = parts
            .iter()
            .rev()
            .filter(|p| !p.is_empty())
            .map(|p| format!("/{p}"))
            .collect();
        show_pointer(&joined)
    }
}
