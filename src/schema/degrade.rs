//! Degraded schemas for retries after the upstream rejected a sanitized one.
//!
//! Step 1 keeps the shape (types, properties, required, alternatives, consts)
//! and drops value constraints: patterns, formats, enums, numeric bounds,
//! lengths and item counts. Step 2 keeps only the top two levels of object
//! and array structure and replaces alternatives with "any value". After that
//! the only step left is plain JSON mode.

use serde_json::{Map, Value, json};

use super::sanitize::sanitize;
use super::types::{any_value, common_type, is_any_value};

const CONSTRAINTS: [&str; 13] = [
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "description",
    "title",
];

/// A simpler schema for a degraded retry after the upstream rejected the
/// sanitized one; `None` when the only step left is plain JSON mode.
pub fn degrade(schema: &Value) -> Option<Value> {
    let base = sanitize(schema).ok()?.schema;
    let step1 = drop_constraints(&base);
    let next = if step1 != base {
        step1
    } else {
        let step2 = shape_only(&base, 0);
        if step2 == base {
            return None;
        }
        step2
    };
    if is_any_value(&next) || next == json!({"type": "object"}) {
        return None;
    }
    Some(next)
}

fn drop_constraints(v: &Value) -> Value {
    let Value::Object(m) = v else {
        return v.clone();
    };
    let mut out = Map::new();
    for (k, x) in m {
        if CONSTRAINTS.contains(&k.as_str()) {
            continue;
        }
        match k.as_str() {
            "enum" => {
                let values = x.as_array().map(Vec::as_slice).unwrap_or_default();
                match common_type(values) {
                    Some(t) => {
                        out.insert("type".into(), json!(t));
                    }
                    None => return any_value(),
                }
            }
            "properties" => {
                let props = x
                    .as_object()
                    .map(|p| {
                        p.iter()
                            .map(|(n, s)| (n.clone(), drop_constraints(s)))
                            .collect()
                    })
                    .unwrap_or_default();
                out.insert(k.clone(), Value::Object(props));
            }
            "anyOf" | "items" => {
                let y = match x {
                    Value::Array(xs) => Value::Array(xs.iter().map(drop_constraints).collect()),
                    other => drop_constraints(other),
                };
                out.insert(k.clone(), y);
            }
            "additionalProperties" => {
                out.insert(k.clone(), drop_constraints(x));
            }
            _ => {
                out.insert(k.clone(), x.clone());
            }
        }
    }
    Value::Object(out)
}

fn shape_only(v: &Value, depth: usize) -> Value {
    let Value::Object(m) = v else {
        return v.clone();
    };
    if is_any_value(v) || m.contains_key("const") {
        return v.clone();
    }
    if m.contains_key("anyOf") || m.contains_key("enum") {
        return any_value();
    }
    let ty = m.get("type").and_then(Value::as_str).unwrap_or("");
    if depth >= 2 && (ty == "object" || ty == "array") {
        return json!({"type": ty});
    }
    let mut out = Map::new();
    out.insert("type".into(), json!(ty));
    match ty {
        "object" => {
            if let Some(Value::Object(p)) = m.get("properties") {
                let props: Map<String, Value> = p
                    .iter()
                    .map(|(n, s)| (n.clone(), shape_only(s, depth + 1)))
                    .collect();
                out.insert("properties".into(), Value::Object(props));
            }
            if let Some(r) = m.get("required") {
                out.insert("required".into(), r.clone());
            }
            if let Some(a) = m.get("additionalProperties") {
                let a = match a {
                    Value::Bool(_) => a.clone(),
                    _ => Value::Bool(true),
                };
                out.insert("additionalProperties".into(), a);
            }
        }
        "array" => match m.get("items") {
            Some(Value::Object(_)) => {
                if let Some(items) = m.get("items") {
                    out.insert("items".into(), shape_only(items, depth + 1));
                }
            }
            Some(_) => {}
            None => {
                if let Some(n) = m.get("maxItems") {
                    out.insert("maxItems".into(), n.clone());
                }
            }
        },
        _ => {}
    }
    Value::Object(out)
}
