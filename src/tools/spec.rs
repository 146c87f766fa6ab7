//! Declared tools: [`ToolSet`] parsed from a request's `tools` array.
//!
//! Each [`Tool`] keeps the client's original `parameters` schema (what
//! arguments are validated against) and a grammar-safe copy produced by
//! [`crate::schema::sanitize`] (what goes into the `format` envelope). An odd
//! parameters schema never fails the request: anything the sanitizer cannot
//! handle falls back to a permissive `{"type":"object"}` for the grammar.

use std::sync::{Arc, OnceLock};

use serde_json::{Map, Value, json};

use super::ToolError;

/// Grammar schema used when a tool's parameters cannot be used as given.
pub(crate) fn permissive_object() -> Value {
    json!({"type": "object"})
}

/// One declared function tool.
#[derive(Debug, Clone)]
pub struct Tool {
    /// The function name, exactly as the client declared it.
    pub name: String,
    /// The function description (empty when absent).
    pub description: String,
    /// The parameters schema as the client sent it (missing ⇒ an empty
    /// object schema). Arguments are validated against this.
    pub parameters: Value,
    /// The grammar-safe parameters schema used inside the envelope.
    pub grammar: Value,
    /// Notes from the sanitizer (or the fallback), for logs.
    pub sanitize_notes: Vec<String>,
    validator: OnceLock<Option<std::sync::Arc<jsonschema::Validator>>>,
}

impl Tool {
    fn new(name: String, description: String, parameters: Value) -> Tool {
        let (grammar, sanitize_notes) = grammar_schema(&parameters);
        Tool {
            name,
            description,
            parameters,
            grammar,
            sanitize_notes,
            validator: OnceLock::new(),
        }
    }

    /// The compiled validator for [`Tool::parameters`], built on first use.
    /// When the original does not compile (Python type names, remote
    /// `$ref`s, …) the grammar schema is used instead, which always
    /// compiles but may be looser.
    pub(crate) fn validator(&self) -> Option<&jsonschema::Validator> {
        self.validator
            .get_or_init(|| {
                let cache = crate::validate::Validators::shared();
                cache
                    .compile(&self.parameters)
                    .or_else(|_| cache.compile(&self.grammar))
                    .ok()
            })
            .as_deref()
    }
}

/// The grammar copy of a parameters schema, with notes on what changed.
fn grammar_schema(parameters: &Value) -> (Value, Vec<String>) {
    if !parameters.is_object() {
        return (
            permissive_object(),
            vec!["parameters is not an object schema; arguments left unconstrained".into()],
        );
    }
    match crate::schema::sanitize(parameters) {
        Ok(s) => {
            let mut notes = s.changes;
            match embeddable(s.schema) {
                Ok(schema) => (schema, notes),
                Err(why) => {
                    notes.push(format!("{why}; arguments left unconstrained"));
                    (permissive_object(), notes)
                }
            }
        }
        Err(e) => (
            permissive_object(),
            vec![format!(
                "schema not grammar-safe ({e}); arguments left unconstrained"
            )],
        ),
    }
}

/// `schema` made safe to embed inside the envelope, or why it cannot be.
///
/// A sub-schema's `$ref`s would resolve against the envelope's root, so a
/// schema still holding one is refused; so is one that does not compile.
pub(crate) fn embeddable(schema: Value) -> Result<Value, &'static str> {
    let mut schema = match schema {
        Value::Object(m) => m,
        Value::Bool(true) => return Ok(permissive_object()),
        _ => return Err("sanitized schema is not an object"),
    };
    schema.remove("$schema");
    schema.remove("$id");
    let schema = Value::Object(schema);
    if has_ref(&schema) {
        return Err("schema keeps a $ref");
    }
    if crate::validate::Validators::shared()
        .compile(&schema)
        .is_err()
    {
        return Err("schema does not compile");
    }
    Ok(schema)
}

fn has_ref(v: &Value) -> bool {
    match v {
        Value::Object(m) => m
            .iter()
            .any(|(k, v)| k == "$ref" || k == "$dynamicRef" || has_ref(v)),
        Value::Array(a) => a.iter().any(has_ref),
        _ => false,
    }
}

/// The tools declared by one request, in declaration order.
#[derive(Debug, Clone, Default)]
pub struct ToolSet {
    tools: Arc<[Tool]>,
}

impl ToolSet {
    /// [`ToolSet::from_request`], remembered by content: clients resend the
    /// same tools on every turn, and sanitizing many schemas is the costly
    /// part of the rewrite. Errors are not cached.
    pub fn from_request_cached(tools: &[Value]) -> Result<ToolSet, ToolError> {
        static CACHE: std::sync::OnceLock<moka::sync::Cache<[u8; 32], ToolSet>> =
            std::sync::OnceLock::new();
        let cache = CACHE.get_or_init(|| moka::sync::Cache::new(1024));
        let key = crate::validate::values_key(tools);
        if let Some(set) = cache.get(&key) {
            return Ok(set);
        }
        let set = ToolSet::from_request(tools)?;
        cache.insert(key, set.clone());
        Ok(set)
    }

    /// Parse a request's `tools` array.
    ///
    /// Accepts Ollama's and OpenAI's `{"type":"function","function":{name,
    /// description, parameters}}` and the flat `{"type":"function","name",…}`
    /// shape. Missing `type` is taken as `"function"`; missing `parameters`
    /// becomes `{"type":"object","properties":{}}`. Errors (all client
    /// errors, HTTP 400): a tool that is not an object, a non-function
    /// `type`, a missing or empty name, a duplicate name.
    pub fn from_request(tools: &[Value]) -> Result<ToolSet, ToolError> {
        let mut out: Vec<Tool> = Vec::with_capacity(tools.len());
        for (index, raw) in tools.iter().enumerate() {
            let obj = raw.as_object().ok_or_else(|| ToolError::InvalidTool {
                index,
                reason: "a tool must be a JSON object".into(),
            })?;
            match obj.get("type") {
                None | Some(Value::Null) => {}
                Some(Value::String(t)) if t == "function" => {}
                Some(other) => {
                    return Err(ToolError::InvalidTool {
                        index,
                        reason: format!("unsupported tool type {other}; only \"function\" tools"),
                    });
                }
            }
            let func: &Map<String, Value> = match obj.get("function") {
                Some(Value::Object(f)) => f,
                Some(_) => {
                    return Err(ToolError::InvalidTool {
                        index,
                        reason: "`function` must be an object".into(),
                    });
                }
                None => obj,
            };
            let name = match func.get("name") {
                Some(Value::String(n)) if !n.trim().is_empty() => n.clone(),
                _ => {
                    return Err(ToolError::InvalidTool {
                        index,
                        reason: "missing function name".into(),
                    });
                }
            };
            if out.iter().any(|t| t.name == name) {
                return Err(ToolError::DuplicateName(name));
            }
            let description = func
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let parameters = match func.get("parameters") {
                None | Some(Value::Null) => json!({"type": "object", "properties": {}}),
                Some(p) => p.clone(),
            };
            out.push(Tool::new(name, description, parameters));
        }
        Ok(ToolSet { tools: out.into() })
    }

    /// All tools, in declaration order.
    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }

    /// The tool called `name`, if declared.
    pub fn get(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// Number of declared tools.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// True when no tools were declared (the caller should not emulate).
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_ollama_openai_and_flat_shapes() {
        let tools = vec![
            json!({"type":"function","function":{"name":"a","description":"A","parameters":{"type":"object","properties":{"x":{"type":"string"}}}}}),
            json!({"function":{"name":"b"}}),
            json!({"type":"function","name":"c","parameters":{"type":"object"}}),
        ];
        let set = ToolSet::from_request(&tools).unwrap();
        assert_eq!(set.len(), 3);
        assert_eq!(set.tools()[0].description, "A");
        assert_eq!(
            set.get("b").unwrap().parameters,
            json!({"type":"object","properties":{}})
        );
        assert!(set.get("c").is_some());
        assert!(set.get("d").is_none());
    }

    #[test]
    fn duplicate_and_invalid_tools_are_errors() {
        let dup = vec![
            json!({"type":"function","function":{"name":"a"}}),
            json!({"type":"function","function":{"name":"a"}}),
        ];
        assert_eq!(
            ToolSet::from_request(&dup).unwrap_err(),
            ToolError::DuplicateName("a".into())
        );
        for bad in [
            json!("x"),
            json!({"type":"function","function":{}}),
            json!({"type":"function","function":{"name":""}}),
            json!({"type":"retrieval"}),
            json!({"type":"function","function":"f"}),
        ] {
            assert!(ToolSet::from_request(&[bad]).is_err());
        }
    }

    #[test]
    fn non_object_parameters_are_permissive() {
        for params in [json!(true), json!("object"), json!([1]), json!(3)] {
            let set = ToolSet::from_request(&[
                json!({"type":"function","function":{"name":"f","parameters":params}}),
            ])
            .unwrap();
            let t = &set.tools()[0];
            assert_eq!(t.grammar, json!({"type":"object"}));
            assert!(!t.sanitize_notes.is_empty());
        }
    }

    #[test]
    fn grammar_copies_are_always_embeddable() {
        let s = embeddable(
            json!({"$schema":"http://json-schema.org/draft-07/schema#","$id":"x","type":"object"}),
        );
        assert_eq!(s, Ok(json!({"type":"object"})));
        assert!(
            embeddable(json!({"type":"object","properties":{"a":{"$ref":"#/$defs/A"}}})).is_err()
        );
        assert!(embeddable(json!({"type":"whatever"})).is_err());
        assert_eq!(embeddable(json!(true)), Ok(json!({"type":"object"})));
        let set = ToolSet::from_request(&[json!({"type":"function","function":{"name":"r",
            "parameters":{"type":"object","$defs":{"A":{"type":"integer"}},"properties":{"a":{"$ref":"#/$defs/A"}}}}})])
        .unwrap();
        let g = set.tools()[0].grammar.to_string();
        assert!(!g.contains("$ref"), "{g}");
        // The original keeps its $ref and is what arguments are checked against.
        assert!(
            set.tools()[0]
                .validator()
                .unwrap()
                .is_valid(&json!({"a":1}))
        );
        assert!(
            !set.tools()[0]
                .validator()
                .unwrap()
                .is_valid(&json!({"a":"x"}))
        );
    }
}
