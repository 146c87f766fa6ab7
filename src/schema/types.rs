//! JSON Schema `type` names: mapping of common misspellings and
//! Python/TypeScript names, keyword-based inference, and the permissive
//! "any value" schema every converter version accepts.

use serde_json::{Map, Value, json};

/// What a client-supplied type name means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TypeName {
    /// One of [`PRIMITIVES`].
    Known(&'static str),
    /// Any value (`any`, `unknown`, `mixed`, empty string).
    Any,
    /// A name with no sensible mapping.
    Unknown,
}

/// Map a type name (case- and space-insensitive) to a primitive.
pub(crate) fn map_type_name(raw: &str) -> TypeName {
    let name = raw.trim().to_ascii_lowercase();
    let known = match name.as_str() {
        "string" | "str" | "text" | "char" | "varchar" => "string",
        "number" | "float" | "double" | "decimal" | "numeric" | "real" | "float64" | "float32" => {
            "number"
        }
        "integer" | "int" | "long" | "int64" | "int32" | "uint" | "short" | "bigint" => "integer",
        "boolean" | "bool" => "boolean",
        "null" | "none" | "nil" | "nonetype" => "null",
        "array" | "list" | "tuple" | "set" | "sequence" | "vec" => "array",
        "object" | "dict" | "map" | "record" | "json" | "hash" | "hashmap" | "mapping" => "object",
        "" | "any" | "unknown" | "mixed" | "value" => return TypeName::Any,
        _ => return TypeName::Unknown,
    };
    TypeName::Known(known)
}

/// The permissive "any JSON value" schema. Older converters reject
/// keyword-less schemas and all of them reject `true`, so it is spelled out.
pub(crate) fn any_value() -> Value {
    json!({"anyOf": [
        {"type": "string"},
        {"type": "number"},
        {"type": "boolean"},
        {"type": "null"},
        {"type": "object"},
        {"type": "array"}
    ]})
}

/// Whether `v` is exactly [`any_value`].
pub(super) fn is_any_value(v: &Value) -> bool {
    *v == any_value()
}

/// Keywords that only make sense for one primitive type.
pub(super) fn keywords_for(ty: &str) -> &'static [&'static str] {
    match ty {
        "string" => &[
            "pattern",
            "format",
            "minLength",
            "maxLength",
            "contentEncoding",
        ],
        "number" | "integer" => &[
            "minimum",
            "maximum",
            "exclusiveMinimum",
            "exclusiveMaximum",
            "multipleOf",
        ],
        "array" => &[
            "items",
            "prefixItems",
            "minItems",
            "maxItems",
            "uniqueItems",
            "contains",
            "minContains",
            "maxContains",
            "additionalItems",
            "unevaluatedItems",
        ],
        "object" => &[
            "properties",
            "required",
            "additionalProperties",
            "patternProperties",
            "minProperties",
            "maxProperties",
            "propertyNames",
            "dependentRequired",
            "dependentSchemas",
            "unevaluatedProperties",
        ],
        _ => &[],
    }
}

/// Infer the type implied by the keywords of a schema without `type`.
pub(super) fn infer_type(map: &Map<String, Value>) -> Option<&'static str> {
    let has = |k: &str| map.contains_key(k);
    if has("properties")
        || has("required")
        || has("patternProperties")
        || has("minProperties")
        || has("maxProperties")
        || map
            .get("additionalProperties")
            .is_some_and(|a| *a != Value::Bool(true))
    {
        return Some("object");
    }
    if has("items") || has("prefixItems") || has("minItems") || has("maxItems") {
        return Some("array");
    }
    if has("pattern") || has("minLength") || has("maxLength") {
        return Some("string");
    }
    if map.get("format").is_some_and(Value::is_string) {
        return Some("string");
    }
    if has("minimum") || has("maximum") || has("exclusiveMinimum") || has("exclusiveMaximum") {
        return Some("number");
    }
    if has("multipleOf") {
        return Some("number");
    }
    None
}

/// The primitive type of a JSON value.
pub(super) fn type_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// One type covering every value of `values`, if there is one.
pub(super) fn common_type(values: &[Value]) -> Option<&'static str> {
    let mut ty: Option<&'static str> = None;
    for v in values {
        let t = type_of(v);
        ty = match (ty, t) {
            (None, t) => Some(t),
            (Some(a), b) if a == b => Some(a),
            (Some("integer"), "number") | (Some("number"), "integer") => Some("number"),
            _ => return None,
        };
    }
    ty
}

/// `schema` with every `type` name it maps ([`map_type_name`]) spelled as
/// the JSON Schema type (`"int"` → `"integer"`; an "any" name drops the
/// keyword), so a validator accepts it; `None` when nothing needed mapping.
/// Data keywords (`enum`, `const`, `default`, `examples`) are left alone.
pub(crate) fn with_type_names_mapped(schema: &Value) -> Option<Value> {
    let mut out = schema.clone();
    let mut changed = false;
    let mut stack: Vec<&mut Value> = vec![&mut out];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(m) => {
                if let Some(t) = m.get("type")
                    && let Some(mapped) = mapped_type(t)
                {
                    changed = true;
                    match mapped {
                        Some(t) => m.insert("type".into(), t),
                        None => m.remove("type"),
                    };
                }
                for (k, x) in m.iter_mut() {
                    if !matches!(k.as_str(), "enum" | "const" | "default" | "examples") {
                        stack.push(x);
                    }
                }
            }
            Value::Array(xs) => stack.extend(xs.iter_mut()),
            _ => {}
        }
    }
    changed.then_some(out)
}

/// What a `type` value becomes: `None` = unchanged, `Some(None)` = drop it.
fn mapped_type(t: &Value) -> Option<Option<Value>> {
    let map = |s: &str| match map_type_name(s) {
        TypeName::Known(k) => Some(Some(k)),
        TypeName::Any => Some(None),
        TypeName::Unknown => None,
    };
    match t {
        Value::String(s) => match map(s)? {
            Some(k) if k == s.as_str() => None,
            Some(k) => Some(Some(Value::String(k.into()))),
            None => Some(None),
        },
        Value::Array(xs) => {
            let mut names: Vec<Value> = Vec::new();
            for x in xs {
                match map(x.as_str()?)? {
                    None => return Some(None),
                    Some(k) => {
                        let k = Value::String(k.into());
                        if !names.contains(&k) {
                            names.push(k);
                        }
                    }
                }
            }
            (names != *xs).then_some(Some(Value::Array(names)))
        }
        _ => None,
    }
}
