//! Bounds on a runaway part, for the grammar only: the `format` sent
//! upstream gets a `maxItems` / `maxLength` where the model ran away, so
//! the next answer must close that part in time. The client's schema,
//! which the answer is validated against, is left as it is.

use serde_json::{Value, json};

use super::cut::{MAX_DEPTH, Part, Runaway, Step};

/// Most items a runaway array is bounded to.
pub(crate) const MAX_ITEMS_BOUND: u64 = 64;
/// Most characters a runaway string is bounded to (a grammar repetition
/// of this many characters stays cheap to build).
pub(crate) const MAX_LENGTH_BOUND: u64 = 512;

/// A bound on one part of the grammar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bound {
    /// `maxItems` or `maxLength`.
    pub keyword: &'static str,
    /// Half of what the model produced before the cut, so the rest of the
    /// answer fits in the same number of tokens.
    pub value: u64,
    /// What the model produced before the cut (items or characters).
    pub seen: u64,
}

impl Bound {
    /// The bound for a runaway part; `None` when nothing came before the cut.
    pub(crate) fn of(part: Part) -> Option<Bound> {
        let (keyword, seen, cap) = match part {
            Part::Array { items } => ("maxItems", items as u64, MAX_ITEMS_BOUND),
            Part::Text { chars } => ("maxLength", chars as u64, MAX_LENGTH_BOUND),
        };
        (seen > 0).then(|| Bound {
            keyword,
            value: (seen / 2).clamp(1, cap),
            seen,
        })
    }

    /// What the bound counts, for feedback ("items", "characters").
    pub(crate) fn unit(&self) -> &'static str {
        if self.keyword == "maxItems" {
            "items"
        } else {
            "characters"
        }
    }

    fn min_keyword(&self) -> &'static str {
        if self.keyword == "maxItems" {
            "minItems"
        } else {
            "minLength"
        }
    }

    fn ty(&self) -> &'static str {
        if self.keyword == "maxItems" {
            "array"
        } else {
            "string"
        }
    }
}

/// Bound `runaway` in `grammar` (in every alternative its path can lead
/// to). The bound applied, or `None` when no sub-schema could take one
/// that helps.
pub(crate) fn apply(grammar: &mut Value, runaway: &Runaway) -> Option<Bound> {
    let bound = Bound::of(runaway.part)?;
    let mut applied = None;
    walk(grammar, &runaway.path, bound, 0, &mut applied);
    applied
}

fn walk(schema: &mut Value, path: &[Step], bound: Bound, depth: usize, out: &mut Option<Bound>) {
    if depth > 2 * MAX_DEPTH {
        return;
    }
    let Value::Object(m) = schema else { return };
    if let Some(Value::Array(branches)) = m.get_mut("anyOf") {
        for branch in branches.iter_mut() {
            if viable(branch, path.first()) {
                walk(branch, path, bound, depth + 1, out);
            }
        }
        return;
    }
    let Some((step, rest)) = path.split_first() else {
        set(m, bound, out);
        return;
    };
    let child = match step {
        Step::Key { key, .. } => {
            let named = m
                .get("properties")
                .and_then(Value::as_object)
                .is_some_and(|p| p.contains_key(key));
            if named {
                m.get_mut("properties").and_then(|p| p.get_mut(key))
            } else {
                m.get_mut("additionalProperties").filter(|a| a.is_object())
            }
        }
        Step::Index(i) => {
            let positional = m
                .get("prefixItems")
                .and_then(Value::as_array)
                .is_some_and(|p| *i < p.len());
            if positional {
                m.get_mut("prefixItems").and_then(|p| p.get_mut(*i))
            } else {
                m.get_mut("items").filter(|a| a.is_object())
            }
        }
    };
    if let Some(child) = child {
        walk(child, rest, bound, depth + 1, out);
    }
}

/// Put `bound` on the schema of the runaway part itself, unless it
/// already has a bound as tight, or its minimum leaves no room. A string
/// with a `pattern` or `format` takes none: the converter writes those
/// rules and ignores `maxLength` beside them.
fn set(m: &mut serde_json::Map<String, Value>, bound: Bound, out: &mut Option<Bound>) {
    if m.get("type").and_then(Value::as_str) != Some(bound.ty()) {
        return;
    }
    if bound.ty() == "string" && (m.contains_key("pattern") || m.contains_key("format")) {
        return;
    }
    let min = m
        .get(bound.min_keyword())
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let value = bound.value.max(min);
    let current = m.get(bound.keyword).and_then(Value::as_u64);
    if value > bound.seen || current.is_some_and(|c| c <= value) {
        return;
    }
    m.insert(bound.keyword.into(), json!(value));
    *out = Some(Bound { value, ..bound });
}

/// Whether an alternative can hold the value `step` leads into: an object
/// with that member whose constants agree with the siblings seen, or an
/// array.
fn viable(branch: &Value, step: Option<&Step>) -> bool {
    let Some(m) = branch.as_object() else {
        return false;
    };
    if m.contains_key("anyOf") {
        return true;
    }
    match step {
        None => true,
        Some(Step::Index(_)) => m.get("type").and_then(Value::as_str) == Some("array"),
        Some(Step::Key { key, siblings }) => {
            let props = m.get("properties").and_then(Value::as_object);
            let has = props.is_some_and(|p| p.contains_key(key))
                || m.get("additionalProperties").is_some_and(Value::is_object);
            has && siblings.iter().all(|(k, v)| {
                let Some(s) = props.and_then(|p| p.get(k)) else {
                    return true;
                };
                let wanted = Value::String(v.clone());
                let const_ok = s.get("const").is_none_or(|c| *c == wanted);
                let enum_ok = s
                    .get("enum")
                    .and_then(Value::as_array)
                    .is_none_or(|e| e.contains(&wanted));
                const_ok && enum_ok
            })
        }
    }
}
