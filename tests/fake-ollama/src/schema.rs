//! JSON-Schema handling of the fake model: a deterministic generator of a schema-valid
//! instance (first enum/const, required properties only, strings "x", numbers 1), and a check
//! that mirrors what llama-server's schema→grammar converter rejects, with its error texts.

use serde_json::{Map, Value, json};

/// A deterministic instance of `schema` (`root` resolves local `$ref`s).
pub fn instance(schema: &Value) -> Value {
    generate(schema, schema, 0)
}

fn resolve<'a>(root: &'a Value, r: &str) -> Option<&'a Value> {
    let ptr = r.strip_prefix('#')?;
    if ptr.is_empty() {
        Some(root)
    } else {
        root.pointer(ptr)
    }
}

fn generate(s: &Value, root: &Value, depth: usize) -> Value {
    let Some(o) = s.as_object() else {
        return json!({});
    };
    if depth > 16 {
        return Value::Null;
    }
    if let Some(r) = o.get("$ref").and_then(Value::as_str) {
        return resolve(root, r).map_or(json!({}), |t| generate(t, root, depth + 1));
    }
    if let Some(c) = o.get("const") {
        return c.clone();
    }
    if let Some(e) = o
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
    {
        return e.clone();
    }
    for k in ["anyOf", "oneOf"] {
        if let Some(first) = o.get(k).and_then(Value::as_array).and_then(|a| a.first()) {
            return generate(first, root, depth + 1);
        }
    }
    if let Some(all) = o.get("allOf").and_then(Value::as_array) {
        let mut merged = Map::new();
        for part in all {
            if let Value::Object(m) = generate(part, root, depth + 1) {
                merged.extend(m);
            }
        }
        return Value::Object(merged);
    }
    let ty = match o.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null"),
        _ if o.contains_key("properties") => "object",
        _ if o.contains_key("items") || o.contains_key("prefixItems") => "array",
        _ => "object",
    };
    match ty {
        "object" => {
            let props = o.get("properties").and_then(Value::as_object);
            let mut out = Map::new();
            for name in o
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let Some(name) = name.as_str() else { continue };
                let sub = props
                    .and_then(|p| p.get(name))
                    .cloned()
                    .unwrap_or(json!({"type": "string"}));
                out.insert(name.to_owned(), generate(&sub, root, depth + 1));
            }
            Value::Object(out)
        }
        "array" => {
            if let Some(prefix) = o
                .get("prefixItems")
                .or(o.get("items"))
                .and_then(Value::as_array)
            {
                return Value::Array(
                    prefix
                        .iter()
                        .map(|p| generate(p, root, depth + 1))
                        .collect(),
                );
            }
            let n = o
                .get("minItems")
                .and_then(Value::as_u64)
                .unwrap_or(0)
                .min(16);
            let item = o.get("items").cloned().unwrap_or(json!({"type": "string"}));
            Value::Array((0..n).map(|_| generate(&item, root, depth + 1)).collect())
        }
        "string" => json!(string_of(o)),
        "integer" => json!(number_of(o).round() as i64),
        "number" => {
            let n = number_of(o);
            if n.fract() == 0.0 {
                json!(n as i64)
            } else {
                json!(n)
            }
        }
        "boolean" => json!(true),
        _ => Value::Null,
    }
}

fn string_of(o: &Map<String, Value>) -> String {
    match o.get("format").and_then(Value::as_str) {
        Some("date") => return "2024-01-01".into(),
        Some("time") => return "00:00:00Z".into(),
        Some("date-time") => return "2024-01-01T00:00:00Z".into(),
        Some(f) if f.starts_with("uuid") => return "00000000-0000-4000-8000-000000000000".into(),
        _ => {}
    }
    let min = o
        .get("minLength")
        .and_then(Value::as_u64)
        .unwrap_or(1)
        .max(1) as usize;
    "x".repeat(min.min(4096))
}

fn number_of(o: &Map<String, Value>) -> f64 {
    let num = |k: &str| o.get(k).and_then(Value::as_f64);
    let mut n = 1.0;
    if let Some(min) = num("minimum") {
        n = f64::max(n, min);
    }
    if let Some(min) = num("exclusiveMinimum")
        && n <= min
    {
        n = min.floor() + 1.0;
    }
    if let Some(max) = num("maximum") {
        n = f64::min(n, max);
    }
    if let Some(max) = num("exclusiveMaximum")
        && n >= max
    {
        n = max.ceil() - 1.0;
    }
    n
}

const PRIMITIVES: &[&str] = &[
    "string", "number", "integer", "boolean", "null", "array", "object",
];

/// `Ok(())` if llama-server would convert the schema into a grammar; otherwise the list of
/// converter errors (joined with `\n` in its message).
pub fn check(schema: &Value) -> Result<(), Vec<String>> {
    let mut errs = Vec::new();
    visit(schema, schema, &mut errs, 0);
    if errs.is_empty() { Ok(()) } else { Err(errs) }
}

fn visit(s: &Value, root: &Value, errs: &mut Vec<String>, depth: usize) {
    let Some(o) = s.as_object() else {
        if !s.is_boolean() {
            errs.push(format!("Unrecognized schema: {}", dump(s)));
        }
        return;
    };
    if depth > 32 {
        return;
    }
    if let Some(r) = o.get("$ref") {
        match r.as_str() {
            Some(r) if r.starts_with("#/") || r == "#" => {
                if resolve(root, r).is_none() {
                    errs.push(format!(
                        "Error resolving ref {r}: {} not in {}",
                        r.rsplit('/').next().unwrap_or(r),
                        dump(root)
                    ));
                }
            }
            Some(r) if r.starts_with("https://") || r.starts_with("http://") => {
                if r.contains('#') {
                    errs.push(format!(
                        "Error resolving ref {r}: could not fetch remote schema"
                    ));
                }
            }
            Some(r) => errs.push(format!("Unsupported ref: {r}")),
            None => errs
                .push("[json.exception.type_error.302] type must be string, but is object".into()),
        }
        return;
    }
    for k in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        if let Some(v) = o.get(k) {
            match v.as_array() {
                Some(a) => a.iter().for_each(|x| visit(x, root, errs, depth + 1)),
                None => errs.push(format!(
                    "[json.exception.type_error.302] type must be array, but is {}",
                    kind(v)
                )),
            }
        }
    }
    match o.get("type") {
        Some(Value::String(t)) if !PRIMITIVES.contains(&t.as_str()) => {
            errs.push(format!("Unrecognized schema: {}", dump(s)));
        }
        Some(Value::Array(ts))
            if ts
                .iter()
                .any(|t| !t.as_str().is_some_and(|t| PRIMITIVES.contains(&t))) =>
        {
            errs.push(format!("Unrecognized schema: {}", dump(s)));
        }
        Some(Value::String(_) | Value::Array(_)) | None => {}
        Some(_) => errs.push(format!("Unrecognized schema: {}", dump(s))),
    }
    if let Some(p) = o.get("pattern").and_then(Value::as_str)
        && !(p.starts_with('^') && p.ends_with('$'))
    {
        errs.push("Pattern must start with '^' and end with '$'".into());
    }
    if let Some(props) = o.get("properties").and_then(Value::as_object) {
        props.values().for_each(|p| visit(p, root, errs, depth + 1));
    }
    for k in ["items", "additionalProperties"] {
        if let Some(v @ Value::Object(_)) = o.get(k) {
            visit(v, root, errs, depth + 1);
        }
    }
    if let Some(Value::Array(items)) = o.get("items") {
        items.iter().for_each(|x| visit(x, root, errs, depth + 1));
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// nlohmann::json's `dump()`: compact, object keys sorted (it stores objects in a std::map).
pub fn dump(v: &Value) -> String {
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<_> = m.keys().collect();
                keys.sort();
                Value::Object(
                    keys.into_iter()
                        .map(|k| (k.clone(), sorted(&m[k])))
                        .collect(),
                )
            }
            Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(v).to_string()
}

/// The error Ollama (llama-server engine) returns for a schema llama-server cannot convert:
/// HTTP 400 carrying llama-server's raw, trimmed error body as the message. Inferred from the
/// llama-server code (`"json_schema": JSON schema conversion failed:\n<errors>`), not observed.
pub fn conversion_error(errs: &[String]) -> String {
    let msg = format!(
        "\"json_schema\": JSON schema conversion failed:\n{}",
        errs.join("\n")
    );
    json!({ "error": { "code": 400, "message": msg, "type": "invalid_request_error" } }).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimal_valid_instance() {
        let s = json!({"type":"object","properties":{
            "city":{"type":"string"},"n":{"type":"integer","minimum":3},
            "unit":{"enum":["c","f"]},"tags":{"type":"array","items":{"type":"string"},"minItems":1},
            "opt":{"type":"string"}},"required":["city","n","unit","tags"]});
        assert_eq!(
            instance(&s).to_string(),
            r#"{"city":"x","n":3,"unit":"c","tags":["x"]}"#
        );
        let r = json!({"$defs":{"a":{"const":7}},"type":"object","properties":{"a":{"$ref":"#/$defs/a"}},"required":["a"]});
        assert_eq!(instance(&r), json!({"a":7}));
    }

    #[test]
    fn rejects_what_llama_server_rejects() {
        assert_eq!(
            check(&json!({"type":"json"})).unwrap_err(),
            vec![r#"Unrecognized schema: {"type":"json"}"#]
        );
        assert!(check(&json!({"type":"string","pattern":"[a-z]+"})).is_err());
        assert!(check(&json!({"$ref":"https://example.com/s.json#/x"})).is_err());
        assert!(check(&json!({"$ref":"other.json#/x"})).is_err());
        assert!(
            check(&json!({"type":"object","properties":{"a":{"type":["string","null"]}}})).is_ok()
        );
        assert!(check(&json!({"type":"string","pattern":"^[a-z]+$"})).is_ok());
    }
}
