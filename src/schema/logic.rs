//! The logic keywords: `allOf` merged into its parent, `anyOf` with its
//! sibling keywords moved into each branch and nested `anyOf`s flattened.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::merge::merge_into;
use super::types::{any_value, is_any_value};
use super::walk::{ANNOTATIONS, Out, Walker, annotations};

impl Walker<'_> {
    pub(super) fn flatten_all_of(
        &mut self,
        m: &mut Map<String, Value>,
        all: &Value,
        path: &str,
        depth: usize,
    ) {
        let Some(parts) = all.as_array() else {
            self.note(path, "dropped non-array allOf");
            return;
        };
        for (i, part) in parts.iter().enumerate() {
            let sub = format!("{path}/allOf/{i}");
            match self.walk(part, &sub, depth + 1) {
                Out::Never => self.note(&sub, "dropped false allOf member"),
                Out::Schema(v) if is_any_value(&v) => {}
                Out::Schema(Value::Object(v)) => {
                    for k in merge_into(m, &v) {
                        self.note(path, format!("allOf: conflicting {k}, kept the first"));
                    }
                }
                Out::Schema(_) => {}
            }
        }
        self.note(path, "merged allOf");
    }

    pub(super) fn alternatives(
        &mut self,
        m: Map<String, Value>,
        alts: &Value,
        path: &str,
        depth: usize,
    ) -> Out {
        let list = match alts.as_array() {
            Some(list) if !list.is_empty() => list,
            _ => {
                self.note(path, "dropped empty or non-array anyOf");
                return self.typed(m, path, depth);
            }
        };
        let siblings: Map<String, Value> = m
            .iter()
            .filter(|(k, _)| !ANNOTATIONS.contains(&k.as_str()) && !k.starts_with('$'))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if !siblings.is_empty() {
            self.note(path, "moved keywords next to anyOf into each branch");
        }
        let mut branches = Vec::new();
        // Each branch once, told apart by its JSON text (a linear check,
        // where comparing with every earlier branch would be quadratic).
        let mut seen: HashSet<String> = HashSet::new();
        for (i, alt) in list.iter().enumerate() {
            let sub = format!("{path}/anyOf/{i}");
            let merged = match alt {
                Value::Object(b) if !siblings.is_empty() => {
                    let mut b = b.clone();
                    merge_into(&mut b, &siblings);
                    Value::Object(b)
                }
                Value::Bool(true) if !siblings.is_empty() => Value::Object(siblings.clone()),
                other => other.clone(),
            };
            match self.walk(&merged, &sub, depth + 1) {
                Out::Never => self.note(&sub, "dropped false branch"),
                Out::Schema(v) if is_any_value(&v) => return Out::Schema(v),
                Out::Schema(v) => match only_any_of(&v) {
                    Some(inner) => {
                        for b in inner {
                            if seen.insert(b.to_string()) {
                                branches.push(b.clone());
                            }
                        }
                    }
                    None => {
                        if seen.insert(v.to_string()) {
                            branches.push(v);
                        }
                    }
                },
            }
        }
        match branches.len() {
            0 => Out::Never,
            1 => Out::Schema(branches.pop().unwrap_or_else(any_value)),
            _ => {
                let mut out = annotations(&m);
                out.insert("anyOf".into(), Value::Array(branches));
                Out::Schema(Value::Object(out))
            }
        }
    }
}

/// The branches of a node that is only an `anyOf` (plus annotations).
fn only_any_of(v: &Value) -> Option<&Vec<Value>> {
    let m = v.as_object()?;
    if m.keys()
        .all(|k| k == "anyOf" || ANNOTATIONS.contains(&k.as_str()))
    {
        m.get("anyOf")?.as_array()
    } else {
        None
    }
}
