//! [`find_unknown_type`]: the first `type` name a schema uses that maps to
//! no JSON type.

use serde_json::Value;

use super::keywords;
use super::types::{TypeName, map_type_name};

/// The first `type` string anywhere in `schema` that maps to no JSON type,
/// as (JSON pointer of the schema node, type name). `None` when every type
/// is known or mappable (see [`map_type_name`]). Linear in the schema's
/// size: the pointer is only spelled out for the node found.
pub(crate) fn find_unknown_type(schema: &Value) -> Option<(String, String)> {
    enum Seg<'a> {
        Key(&'a str),
        Index(usize),
    }
    fn bad(t: &Value) -> Option<String> {
        t.as_str()
            .filter(|s| map_type_name(s) == TypeName::Unknown)
            .map(str::to_string)
    }
    fn visit<'a>(v: &'a Value, path: &mut Vec<Seg<'a>>) -> Option<String> {
        if path.len() > 64 {
            return None;
        }
        match v {
            Value::Object(m) => {
                match m.get("type") {
                    Some(t @ Value::String(_)) => {
                        if let Some(s) = bad(t) {
                            return Some(s);
                        }
                    }
                    Some(Value::Array(ts)) => {
                        if let Some(s) = ts.iter().find_map(bad) {
                            return Some(s);
                        }
                    }
                    _ => {}
                }
                for (k, x) in m {
                    if matches!(k.as_str(), "enum" | "const" | "default" | "examples") {
                        continue;
                    }
                    path.push(Seg::Key(k));
                    if let Some(found) = visit(x, path) {
                        return Some(found);
                    }
                    path.pop();
                }
                None
            }
            Value::Array(xs) => {
                for (i, x) in xs.iter().enumerate() {
                    path.push(Seg::Index(i));
                    if let Some(found) = visit(x, path) {
                        return Some(found);
                    }
                    path.pop();
                }
                None
            }
            _ => None,
        }
    }
    let mut path = Vec::new();
    let found = visit(schema, &mut path)?;
    let pointer: String = path
        .iter()
        .map(|s| match s {
            Seg::Key(k) => format!("/{}", keywords::escape_pointer(k)),
            Seg::Index(i) => format!("/{i}"),
        })
        .collect();
    Some((pointer, found))
}
