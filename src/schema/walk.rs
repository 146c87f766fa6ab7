//! The recursive rewrite behind [`super::sanitize`]: references, logic
//! keywords and type names. Per-type keyword rules live in `keywords.rs`.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::formats::FormatForms;
use super::merge::merge_into;
use super::types::{TypeName, any_value, is_any_value, keywords_for, map_type_name};

/// A `$ref` may be expanded this many times on one path (recursion bound).
const MAX_REF_REPEAT: usize = 2;
/// Total `$ref` expansions per schema before references become "any value".
const MAX_EXPANSIONS: usize = 400;
/// Deepest nesting followed before a sub-schema becomes "any value".
const MAX_DEPTH: usize = 48;
/// Change notes kept (they are for logs; the rest are counted only).
const MAX_NOTES: usize = 200;

/// Keywords carried over unchanged to every output node.
pub(super) const ANNOTATIONS: [&str; 2] = ["description", "title"];

/// Result of rewriting one sub-schema.
pub(super) enum Out {
    Schema(Value),
    /// The `false` schema: nothing is valid.
    Never,
}

pub(super) struct Walker<'a> {
    root: &'a Value,
    pub(super) changes: Vec<String>,
    ref_stack: Vec<String>,
    expansions: usize,
    noted_refs: HashSet<String>,
    /// Notes already made, to keep each once.
    seen_notes: HashSet<String>,
    /// What each `$ref` text resolved to, and how many values it holds.
    resolved: HashMap<String, Option<(&'a Value, usize)>>,
    /// Sub-schemas rewritten so far, and the most allowed.
    pub(super) visits: usize,
    max_visits: usize,
    /// Whether the cap on visits was reached.
    cut: bool,
    /// Which patterns stand for string formats.
    pub(super) forms: FormatForms,
}

impl<'a> Walker<'a> {
    pub(super) fn new(root: &'a Value, max_visits: usize) -> Self {
        Self {
            root,
            changes: Vec::new(),
            ref_stack: Vec::new(),
            expansions: 0,
            noted_refs: HashSet::new(),
            seen_notes: HashSet::new(),
            resolved: HashMap::new(),
            visits: 0,
            max_visits,
            cut: false,
            forms: FormatForms::Exact,
        }
    }

    pub(super) fn note(&mut self, path: &str, msg: impl std::fmt::Display) {
        let at = if path.is_empty() { "/" } else { path };
        if self.changes.len() >= MAX_NOTES {
            return;
        }
        let line = format!("{at}: {msg}");
        if self.seen_notes.insert(line.clone()) {
            self.changes.push(line);
        }
    }

    pub(super) fn walk(&mut self, s: &Value, path: &str, depth: usize) -> Out {
        self.visits += 1;
        if self.visits > self.max_visits {
            if !self.cut {
                self.cut = true;
                // Past the cap on notes too: this one must be seen.
                let at = if path.is_empty() { "/" } else { path };
                self.changes.push(format!(
                    "{at}: schema too large for a grammar; the rest -> any value"
                ));
            }
            return Out::Schema(any_value());
        }
        match s {
            Value::Bool(true) => {
                self.note(path, "schema true -> any value");
                Out::Schema(any_value())
            }
            Value::Bool(false) => Out::Never,
            Value::Object(m) => self.object(m, path, depth),
            other => {
                self.note(path, format!("non-schema {other} -> any value"));
                Out::Schema(any_value())
            }
        }
    }

    fn object(&mut self, m: &Map<String, Value>, path: &str, depth: usize) -> Out {
        if depth > MAX_DEPTH {
            self.note(path, "nested too deeply -> any value");
            return Out::Schema(any_value());
        }
        if let Some(r) = m.get("$ref") {
            return self.reference(r, m, path, depth);
        }
        let mut m = m.clone();
        m.remove("$defs");
        m.remove("definitions");
        for k in ["not", "if", "then", "else"] {
            if m.remove(k).is_some() {
                self.note(path, format!("dropped {k}"));
            }
        }
        let nullable = matches!(m.remove("nullable"), Some(Value::Bool(true)));
        if let Some(all) = m.remove("allOf") {
            self.flatten_all_of(&mut m, &all, path, depth);
        }
        let alts = match (m.remove("oneOf"), m.remove("anyOf")) {
            (Some(o), a) => {
                self.note(path, "oneOf -> anyOf");
                if a.is_some() {
                    self.note(path, "dropped anyOf next to oneOf");
                }
                Some(o)
            }
            (None, a) => a,
        };
        let out = match alts {
            Some(alts) => self.alternatives(m, &alts, path, depth),
            None => self.typed(m, path, depth),
        };
        match out {
            Out::Schema(v) if nullable => {
                self.note(path, "nullable -> anyOf with null");
                Out::Schema(add_null(v))
            }
            out => out,
        }
    }

    fn reference(&mut self, r: &Value, m: &Map<String, Value>, path: &str, depth: usize) -> Out {
        let mut siblings = m.clone();
        siblings.remove("$ref");
        siblings.remove("$defs");
        siblings.remove("definitions");
        let has_siblings = siblings
            .keys()
            .any(|k| !ANNOTATIONS.contains(&k.as_str()) && !k.starts_with('$'));
        let Some(r) = r.as_str() else {
            self.note(path, "dropped non-string $ref");
            return self.object(&siblings, path, depth);
        };
        if self.visits >= self.max_visits {
            return Out::Schema(any_value());
        }
        let target = match self.resolved.get(r) {
            Some(known) => *known,
            None => {
                let found = r
                    .strip_prefix('#')
                    .and_then(|p| self.resolve(p))
                    .map(|t| (t, count_values(t)));
                self.resolved.insert(r.to_string(), found);
                found
            }
        };
        let Some((target, size)) = target else {
            self.note(
                path,
                format!("unsupported or unresolvable $ref {r} -> any value"),
            );
            return if has_siblings {
                self.object(&siblings, path, depth)
            } else {
                Out::Schema(any_value())
            };
        };
        let repeats = self.ref_stack.iter().filter(|x| x.as_str() == r).count();
        if repeats >= MAX_REF_REPEAT || self.expansions >= MAX_EXPANSIONS {
            self.note(path, format!("recursive $ref {r} cut -> any value"));
            return Out::Schema(any_value());
        }
        self.expansions += 1;
        if self.noted_refs.insert(r.to_string()) {
            self.note(path, format!("inlined $ref {r}"));
        }
        let combined = match (target, has_siblings) {
            (Value::Object(t), true) => {
                // Copying the target is work too.
                self.visits += size;
                let mut t = t.clone();
                merge_into(&mut t, &siblings);
                Some(Value::Object(t))
            }
            (Value::Bool(true), true) => Some(Value::Object(siblings)),
            _ => None,
        };
        self.ref_stack.push(r.to_string());
        let out = self.walk(combined.as_ref().unwrap_or(target), path, depth + 1);
        self.ref_stack.pop();
        out
    }

    /// Resolve a JSON pointer fragment against the root; `#/$defs/X` also
    /// finds `X` in nested `$defs`/`definitions` (as newer llama.cpp does).
    fn resolve(&self, pointer: &str) -> Option<&'a Value> {
        if pointer.is_empty() {
            return Some(self.root);
        }
        let decoded = pointer.replace("%24", "$").replace("%25", "%");
        if let Some(v) = self.root.pointer(&decoded) {
            return Some(v);
        }
        let name = decoded
            .strip_prefix("/$defs/")
            .or_else(|| decoded.strip_prefix("/definitions/"))?;
        find_nested_def(self.root, name, 0)
    }

    /// A node without `$ref`/`anyOf`/`allOf`: settle its type, then apply
    /// the per-type keyword rules.
    pub(super) fn typed(&mut self, mut m: Map<String, Value>, path: &str, depth: usize) -> Out {
        let mut types: Vec<&'static str> = Vec::new();
        match m.remove("type") {
            None => {}
            Some(Value::String(s)) => match map_type_name(&s) {
                TypeName::Known(t) => {
                    if s != t {
                        self.note(path, format!("type {s:?} -> {t:?}"));
                    }
                    types.push(t);
                }
                TypeName::Any => {
                    if !s.is_empty() {
                        self.note(path, format!("type {s:?} -> any"));
                    }
                }
                TypeName::Unknown => self.note(path, format!("dropped unknown type {s:?}")),
            },
            Some(Value::Array(xs)) => {
                let mut any = xs.is_empty();
                for x in &xs {
                    match x.as_str().map(map_type_name) {
                        Some(TypeName::Known(t)) if !types.contains(&t) => types.push(t),
                        Some(TypeName::Known(_)) => {}
                        Some(TypeName::Any) => any = true,
                        _ => self.note(path, format!("dropped unknown type {x}")),
                    }
                }
                if any {
                    types.clear();
                }
            }
            Some(other) => self.note(path, format!("dropped invalid type {other}")),
        }
        if let Some(out) = self.constant(&mut m, &types, path) {
            return out;
        }
        if types.len() > 1 {
            self.note(path, "type list -> anyOf");
            let mut branches = Vec::new();
            for t in &types {
                let mut copy = Map::new();
                copy.insert("type".into(), Value::String((*t).into()));
                for k in keywords_for(t) {
                    if let Some(v) = m.get(*k) {
                        copy.insert((*k).into(), v.clone());
                    }
                }
                if let Out::Schema(v) = self.typed(copy, path, depth) {
                    branches.push(v);
                }
            }
            let mut out = annotations(&m);
            out.insert("anyOf".into(), Value::Array(branches));
            return Out::Schema(Value::Object(out));
        }
        let ty = match types.first() {
            Some(t) => *t,
            None => match super::types::infer_type(&m) {
                Some(t) => {
                    self.note(path, format!("inferred type {t:?}"));
                    t
                }
                None => {
                    self.note(path, "no type -> any value");
                    return Out::Schema(any_value());
                }
            },
        };
        let mut out = annotations(&m);
        out.insert("type".into(), Value::String(ty.into()));
        self.keywords(ty, &m, &mut out, path, depth);
        Out::Schema(Value::Object(out))
    }

    /// Rewrite a sub-schema found under a keyword (items, properties…).
    pub(super) fn child(&mut self, s: &Value, path: &str, depth: usize) -> Out {
        self.walk(s, path, depth + 1)
    }
}

/// `v` plus a `null` alternative.
fn add_null(v: Value) -> Value {
    let null_schema = serde_json::json!({"type": "null"});
    if is_any_value(&v) {
        return v;
    }
    if let Value::Object(mut m) = v.clone()
        && let Some(Value::Array(alts)) = m.get_mut("anyOf")
    {
        if !alts.contains(&null_schema) {
            alts.push(null_schema);
        }
        return Value::Object(m);
    }
    Value::Object(Map::from_iter([(
        "anyOf".to_string(),
        Value::Array(vec![v, null_schema]),
    )]))
}

pub(super) fn annotations(m: &Map<String, Value>) -> Map<String, Value> {
    ANNOTATIONS
        .iter()
        .filter_map(|k| {
            m.get(*k)
                .filter(|v| v.is_string())
                .map(|v| ((*k).to_string(), v.clone()))
        })
        .collect()
}

/// How many JSON values `v` holds (without recursion).
fn count_values(v: &Value) -> usize {
    let mut n = 0;
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        n += 1;
        match v {
            Value::Object(m) => stack.extend(m.values()),
            Value::Array(xs) => stack.extend(xs.iter()),
            _ => {}
        }
    }
    n
}

fn find_nested_def<'v>(v: &'v Value, name: &str, depth: usize) -> Option<&'v Value> {
    if depth > MAX_DEPTH {
        return None;
    }
    match v {
        Value::Object(m) => {
            for key in ["$defs", "definitions"] {
                if let Some(found) = m.get(key).and_then(|d| d.get(name)) {
                    return Some(found);
                }
            }
            m.values().find_map(|x| find_nested_def(x, name, depth + 1))
        }
        Value::Array(xs) => xs.iter().find_map(|x| find_nested_def(x, name, depth + 1)),
        _ => None,
    }
}
