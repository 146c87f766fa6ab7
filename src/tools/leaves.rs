//! The scalar leaves of argument values: every scalar of a value, or
//! those that differ from another value at the same place, each with its
//! place (a JSON pointer) and its schema. Bounded in depth and count.

use serde_json::Value;

/// Deepest nesting of arguments compared.
const MAX_DEPTH: usize = 16;
/// Most leaves looked at per call.
const MAX_LEAVES: usize = 256;

/// Scalars equal as JSON values, numbers by value, strings ignoring case
/// and surrounding whitespace.
pub(crate) fn same_scalar(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::String(x), Value::String(y)) => x.trim().eq_ignore_ascii_case(y.trim()),
        _ => a == b,
    }
}

/// A scalar argument value: where it is (a JSON pointer), the value, and
/// its schema if known.
pub(crate) type Leaf<'a> = (String, &'a Value, Option<&'a Value>);

/// The scalars of `a` that differ from `b` at the same place, each with
/// its schema.
pub(crate) fn changed_leaves<'a>(
    a: &'a Value,
    b: &Value,
    schema: Option<&'a Value>,
    at: &str,
    depth: usize,
    out: &mut Vec<Leaf<'a>>,
) {
    if depth > MAX_DEPTH || out.len() >= MAX_LEAVES {
        return;
    }
    match (a, b) {
        (Value::Object(am), Value::Object(bm)) => {
            for (k, av) in am {
                let sub = property_schema(schema, k);
                let at = format!("{at}/{k}");
                match bm.get(k) {
                    Some(bv) => changed_leaves(av, bv, sub, &at, depth + 1, out),
                    None => leaves(av, sub, &at, depth + 1, out),
                }
            }
        }
        (Value::Array(aa), Value::Array(ba)) => {
            let sub = schema.and_then(|s| s.get("items"));
            for (i, av) in aa.iter().enumerate() {
                let at = format!("{at}/{i}");
                match ba.get(i) {
                    Some(bv) => changed_leaves(av, bv, sub, &at, depth + 1, out),
                    None => leaves(av, sub, &at, depth + 1, out),
                }
            }
        }
        _ if same_scalar(a, b) => {}
        _ => leaves(a, schema, at, depth, out),
    }
}

/// Every scalar of `v`, each with its place and schema.
pub(crate) fn leaves<'a>(
    v: &'a Value,
    schema: Option<&'a Value>,
    at: &str,
    depth: usize,
    out: &mut Vec<Leaf<'a>>,
) {
    if depth > MAX_DEPTH || out.len() >= MAX_LEAVES {
        return;
    }
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                leaves(
                    x,
                    property_schema(schema, k),
                    &format!("{at}/{k}"),
                    depth + 1,
                    out,
                );
            }
        }
        Value::Array(a) => {
            let sub = schema.and_then(|s| s.get("items"));
            for (i, x) in a.iter().enumerate() {
                leaves(x, sub, &format!("{at}/{i}"), depth + 1, out);
            }
        }
        _ => out.push((at.to_string(), v, schema)),
    }
}

/// The schema of property `key` under `schema`, if it says.
pub(crate) fn property_schema<'a>(schema: Option<&'a Value>, key: &str) -> Option<&'a Value> {
    let s = schema?;
    s.get("properties")
        .and_then(|p| p.get(key))
        .or_else(|| s.get("additionalProperties").filter(|a| a.is_object()))
}
