//! Declared tools: [`ToolSet`] parsed from a request's `tools` array.
//!
//! Each [`Tool`] keeps the client's original `parameters` schema (what
//! arguments are validated against) and a grammar-safe copy produced by
//! [`crate::schema::sanitize`] (what goes into the `format` envelope). An odd
//! parameters schema never fails the request: anything the sanitizer cannot
//! handle falls back to a permissive `{"type":"object"}` for the grammar.

use std::sync::Arc;

use serde_json::{Map, Value, json};
use sha2::Digest;

use super::error::ToolError;
use crate::schema::FormatForms;
use crate::schema::budget::{BudgetError, Limits, Report};
use crate::validate::{Compiled, SchemaRejected, Validators};

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
    /// What arguments are checked against: the compiled parameters, or the
    /// grammar copy when they do not compile (see [`Tool::exact`]).
    checker: Arc<Compiled>,
    /// Whether [`Tool::checker`] is the client's own parameters schema.
    exact: bool,
    /// Why the client's parameters schema is not valid JSON Schema (or
    /// holds a `$ref` to nothing), if so: emulation refuses such a tool (Ollama's own tool support
    /// reads only a few keywords and may pass it on).
    invalid: Option<SchemaRejected>,
}

impl Tool {
    /// Parse one tool's schema: its budget is checked (refused ⇒ an error
    /// naming the tool), it is compiled, and its grammar copy is made with
    /// at most `visits_left` sub-schemas rewritten (the tool set shares one
    /// allowance).
    fn new(
        name: String,
        description: String,
        parameters: Value,
        visits_left: &mut usize,
        forms: FormatForms,
    ) -> Result<Tool, ToolError> {
        let cache = Validators::shared();
        let mut invalid = None;
        let own = match &parameters {
            Value::Object(_) | Value::Bool(_) => match cache.compile(&parameters) {
                Ok(c) => Some(c),
                // Not a size problem: the grammar copy is checked instead.
                Err(
                    e @ (SchemaRejected::Invalid(_)
                    | SchemaRejected::Budget(BudgetError::Unresolvable { .. })),
                ) => {
                    invalid = Some(e);
                    None
                }
                Err(SchemaRejected::Budget(e)) => {
                    return Err(ToolError::Schema {
                        name,
                        source: SchemaRejected::Budget(e),
                    });
                }
            },
            _ => None,
        };
        let (grammar, sanitize_notes, visits) = grammar_schema(&parameters, *visits_left, forms);
        *visits_left = visits_left.saturating_sub(visits);
        let exact = own.is_some();
        let checker = match own {
            Some(c) => c,
            None => cache
                .compile(&grammar)
                .or_else(|_| cache.compile(&permissive_object()))
                .map_err(|source| ToolError::Schema {
                    name: name.clone(),
                    source,
                })?,
        };
        Ok(Tool {
            name,
            description,
            parameters,
            grammar,
            sanitize_notes,
            checker,
            exact,
            invalid,
        })
    }

    /// The compiled schema arguments are checked against: the original
    /// parameters when they compile, else the grammar copy (which always
    /// compiles but may be looser: then [`Tool::exact`] is false).
    pub fn checker(&self) -> &Compiled {
        &self.checker
    }

    /// Whether arguments are checked against the client's own schema.
    pub fn exact(&self) -> bool {
        self.exact
    }

    /// Why the client's parameters schema is not valid JSON Schema (after
    /// the type-name spellings augur maps), if it is not.
    pub fn invalid(&self) -> Option<&SchemaRejected> {
        self.invalid.as_ref()
    }

    /// Approximate heap bytes this tool holds.
    fn weight(&self) -> u64 {
        let text = crate::wire::json_len(&self.parameters) + crate::wire::json_len(&self.grammar);
        u64::from(self.checker.weight) + 16 * text as u64 + 256
    }
}

/// The grammar copy of a parameters schema, with notes on what changed
/// and the sub-schemas rewritten.
fn grammar_schema(
    parameters: &Value,
    max_visits: usize,
    forms: FormatForms,
) -> (Value, Vec<String>, usize) {
    if !parameters.is_object() {
        return (
            permissive_object(),
            vec!["parameters is not an object schema; arguments left unconstrained".into()],
            0,
        );
    }
    let max_visits = max_visits.min(crate::schema::MAX_VISITS);
    match crate::schema::sanitize_with(parameters, max_visits, forms) {
        Ok(s) => {
            let mut notes = s.changes;
            match embeddable(s.schema) {
                Ok(schema) => (schema, notes, s.visits),
                Err(why) => {
                    notes.push(format!("{why}; arguments left unconstrained"));
                    (permissive_object(), notes, s.visits)
                }
            }
        }
        Err(e) => (
            permissive_object(),
            vec![format!(
                "schema not grammar-safe ({e}); arguments left unconstrained"
            )],
            0,
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
    if Validators::shared().compile(&schema).is_err() {
        return Err("schema does not compile");
    }
    Ok(schema)
}

fn has_ref(v: &Value) -> bool {
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(m) => {
                if m.contains_key("$ref") || m.contains_key("$dynamicRef") {
                    return true;
                }
                stack.extend(m.values());
            }
            Value::Array(a) => stack.extend(a.iter()),
            _ => {}
        }
    }
    false
}

/// The tools declared by one request, in declaration order.
#[derive(Debug, Clone, Default)]
pub struct ToolSet {
    tools: Arc<[Tool]>,
}

impl ToolSet {
    /// [`ToolSet::from_request`], remembered by content: clients resend the
    /// same tools on every turn, and sanitizing many schemas is the costly
    /// part of the rewrite. Sets are weighed by size, under half of
    /// [`crate::validate::cache_budget`]. Errors are not cached. `forms`
    /// says which patterns stand for string formats in the grammar copies.
    pub fn from_request_cached(tools: &[Value], forms: FormatForms) -> Result<ToolSet, ToolError> {
        // Far over the budget: refused before the tools are hashed.
        crate::schema::budget::check_size(tools, &Limits::default().for_tool_set())
            .map_err(ToolError::TooLarge)?;
        let mut key = crate::validate::values_key(tools);
        if forms == FormatForms::Common {
            // The same tools with other grammar copies: another entry.
            key = sha2::Sha256::digest([&key[..], b"common forms"].concat()).into();
        }
        if let Some(set) = cache().get(&key) {
            return Ok(set);
        }
        let set = ToolSet::from_request_with(tools, forms)?;
        // Heavier than the whole budget: used once, not kept.
        if set.weight() <= cache().policy().max_capacity().unwrap_or(0) {
            cache().insert(key, set.clone());
            crate::validate::settle(cache());
        }
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
    ///
    /// Each tool's parameters must fit the schema budget (a refusal names
    /// the tool) and all of them together four times that budget; their
    /// grammar copies share a cap on the work of rewriting them.
    pub fn from_request(tools: &[Value]) -> Result<ToolSet, ToolError> {
        ToolSet::from_request_with(tools, FormatForms::Exact)
    }

    /// [`ToolSet::from_request`] with string formats narrowed to `forms`
    /// in the grammar copies.
    pub fn from_request_with(tools: &[Value], forms: FormatForms) -> Result<ToolSet, ToolError> {
        let mut out: Vec<Tool> = Vec::with_capacity(tools.len());
        let mut visits_left = 4 * crate::schema::MAX_VISITS;
        let mut total = Report::default();
        let limits = Limits::default().for_tool_set();
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
            let tool = Tool::new(name, description, parameters, &mut visits_left, forms)?;
            total.add(&tool.checker.report);
            total.within(&limits).map_err(ToolError::TooLarge)?;
            out.push(tool);
        }
        Ok(ToolSet { tools: out.into() })
    }

    /// Approximate heap bytes the set holds.
    pub fn weight(&self) -> u64 {
        self.tools.iter().map(Tool::weight).sum::<u64>() + 64
    }

    /// Whether every tool's arguments are checked against its own schema.
    pub fn exact(&self) -> bool {
        self.tools.iter().all(Tool::exact)
    }

    /// All tools, in declaration order.
    /// The first tool whose parameters schema is not valid JSON Schema, as
    /// the error emulation answers with (naming the tool).
    pub fn invalid_schema(&self) -> Option<ToolError> {
        self.tools.iter().find_map(|t| {
            t.invalid.clone().map(|source| ToolError::Schema {
                name: t.name.clone(),
                source,
            })
        })
    }

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

/// The process-wide cache of parsed tool sets, weighed by size.
fn cache() -> &'static moka::sync::Cache<[u8; 32], ToolSet> {
    static CACHE: std::sync::OnceLock<moka::sync::Cache<[u8; 32], ToolSet>> =
        std::sync::OnceLock::new();
    CACHE.get_or_init(|| {
        moka::sync::Cache::builder()
            .max_capacity((crate::validate::cache_budget() / 2).max(1))
            .weigher(|_k, set: &ToolSet| u32::try_from(set.weight()).unwrap_or(u32::MAX))
            .build()
    })
}

#[cfg(test)]
#[path = "spec_tests.rs"]
mod tests;
