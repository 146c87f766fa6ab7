//! One pass over the raw schema document: how many values and bytes it
//! holds, how deep it nests, and where its `$id`s and anchors are.

use serde_json::{Map, Value};

use super::limits::{BudgetError, Limits};

/// Deepest JSON nesting accepted anywhere in a schema document (the depth
/// serde_json itself accepts in a request body).
pub(super) const MAX_JSON_DEPTH: usize = 128;

/// What a pass over the raw document found.
pub(super) struct Raw<'a> {
    pub nodes: usize,
    pub bytes: usize,
    /// `$id` values and the objects holding them.
    pub resources: Vec<(&'a str, &'a Value)>,
    /// `$anchor`, `$dynamicAnchor` and `$id: "#name"` names.
    pub anchors: Vec<(&'a str, &'a Value)>,
}

/// Keywords whose values are data, not sub-schemas.
fn is_data_keyword(k: &str) -> bool {
    matches!(k, "enum" | "const" | "default" | "examples" | "example")
}

/// Count the document's values and bytes and find its `$id`s and anchors.
pub(super) fn scan<'a>(root: &'a Value, limits: &Limits) -> Result<Raw<'a>, BudgetError> {
    let mut raw = Raw {
        nodes: 0,
        bytes: 0,
        resources: Vec::new(),
        anchors: Vec::new(),
    };
    // (value, JSON depth, inside a data keyword)
    let mut stack: Vec<(&Value, usize, bool)> = vec![(root, 0, false)];
    while let Some((v, depth, data)) = stack.pop() {
        raw.nodes += 1;
        if raw.nodes > limits.max_nodes {
            return Err(BudgetError::TooManyNodes {
                limit: limits.max_nodes,
            });
        }
        if depth > MAX_JSON_DEPTH {
            return Err(BudgetError::TooDeep {
                limit: MAX_JSON_DEPTH,
                at: "(JSON nesting)".into(),
            });
        }
        raw.bytes += match v {
            Value::Null | Value::Bool(true) => 4,
            Value::Bool(false) => 5,
            Value::Number(n) => number_len(n),
            Value::String(s) => s.len() + 2,
            Value::Array(xs) => 1 + xs.len().max(1),
            Value::Object(m) => 1 + m.len().max(1) + m.keys().map(|k| k.len() + 3).sum::<usize>(),
        };
        if raw.bytes > limits.max_bytes {
            return Err(BudgetError::TooManyBytes {
                limit: limits.max_bytes,
            });
        }
        match v {
            Value::Object(m) => {
                if !data {
                    note_identifiers(m, v, &mut raw);
                }
                for (k, x) in m {
                    stack.push((x, depth + 1, data || is_data_keyword(k)));
                }
            }
            Value::Array(xs) => stack.extend(xs.iter().map(|x| (x, depth + 1, data))),
            _ => {}
        }
    }
    Ok(raw)
}

fn number_len(n: &serde_json::Number) -> usize {
    match (n.as_u64(), n.as_i64()) {
        (Some(u), _) => u.checked_ilog10().unwrap_or(0) as usize + 1,
        (None, Some(i)) => i.unsigned_abs().checked_ilog10().unwrap_or(0) as usize + 2,
        _ => 24,
    }
}

fn note_identifiers<'a>(m: &'a Map<String, Value>, v: &'a Value, raw: &mut Raw<'a>) {
    for key in ["$id", "id"] {
        if let Some(Value::String(id)) = m.get(key) {
            match id.strip_prefix('#') {
                Some(name) => raw.anchors.push((name, v)),
                None => raw.resources.push((id.as_str(), v)),
            }
        }
    }
    for key in ["$anchor", "$dynamicAnchor"] {
        if let Some(Value::String(name)) = m.get(key) {
            raw.anchors.push((name.as_str(), v));
        }
    }
}

/// Whether `$id` value `id` names the resource `uri` refers to.
pub(super) fn same_resource(id: &str, uri: &str) -> bool {
    let id = id.trim_end_matches('#');
    id == uri || id.ends_with(&format!("/{uri}")) || uri.ends_with(&format!("/{id}"))
}

/// `%XX` escapes of a URI fragment decoded (invalid ones kept as they are).
pub(super) fn percent_decode(s: &str) -> String {
    if !s.contains('%') {
        return s.to_string();
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub(super) fn escape(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}
