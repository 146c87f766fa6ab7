//! The `format` envelope: one JSON Schema admitting tool calls or an answer.
//!
//! Shapes (`P` = a per-tool schema, `A` = the answer schema):
//!
//! ```text
//! P        = {"type":"object","properties":{"name":{"type":"string","const":<tool>},
//!                                           "arguments":<grammar params>},
//!             "required":["name","arguments"]}
//! single   = {"type":"object","properties":{"tool_call":P | {"anyOf":[P…]}},"required":["tool_call"]}
//! parallel = {"type":"object","properties":{"tool_calls":{"type":"array","items":P | {"anyOf":[P…]},
//!             "minItems":1,"maxItems":MAX_PARALLEL_CALLS}},"required":["tool_calls"]}
//! answer   = {"type":"object","properties":{"response":A},"required":["response"]}
//! root     = {"anyOf":[calls, answer]}   (auto)
//!          | calls                       (required / named)
//!          | answer                      (none; normally not emulated at all)
//! ```
//!
//! Every branch object has exactly one property, so the envelope key is
//! always the first thing after `{` and a stream can pick the branch early.
//! `additionalProperties` is left implicit: llama.cpp's converter then admits
//! no extra keys.

use serde_json::{Value, json};

use super::choice::ToolChoice;
use super::spec::ToolSet;
use super::spec::{embeddable, permissive_object};

/// Envelope key of a single call (non-parallel mode).
pub(crate) const KEY_CALL: &str = "tool_call";
/// Envelope key of the call array (parallel mode).
pub(crate) const KEY_CALLS: &str = "tool_calls";
/// Envelope key of the answer.
pub(crate) const KEY_RESPONSE: &str = "response";
/// Upper bound on calls per reply in parallel mode. Small base models rarely
/// close arrays on their own; the bound makes the grammar close it.
pub(crate) const MAX_PARALLEL_CALLS: usize = 4;

/// Build the schema to send upstream as `format`.
///
/// `parallel` selects the `tool_calls` array (bounded by
/// [`MAX_PARALLEL_CALLS`]) instead of a single `tool_call` object.
/// `answer_schema` is the client's own `format`, if any: a schema object is
/// sanitized and becomes the `response` schema, `"json"` becomes
/// `{"type":"object"}`, anything else (absent, `""`, `null`) means a string
/// answer. [`ToolChoice::Required`] and [`ToolChoice::Named`] drop the answer
/// branch; `Named` also restricts the calls to that tool.
/// [`ToolChoice::None`] (or an empty set) yields the answer branch alone.
pub fn build_format(
    set: &ToolSet,
    choice: &ToolChoice,
    parallel: bool,
    answer_schema: Option<&Value>,
) -> Value {
    let answer = answer_branch(answer_schema);
    let per_tool: Vec<Value> = set
        .tools()
        .iter()
        .filter(|t| match choice {
            ToolChoice::Named(n) => &t.name == n,
            _ => true,
        })
        .map(|t| {
            // Built by hand: `json!` would copy each schema through the
            // serializer, which dominates the cost with many tools.
            let mut properties = serde_json::Map::new();
            properties.insert("name".into(), json!({"type": "string", "const": t.name}));
            properties.insert("arguments".into(), t.grammar.clone());
            let mut call = serde_json::Map::new();
            call.insert("type".into(), json!("object"));
            call.insert("properties".into(), Value::Object(properties));
            call.insert("required".into(), json!(["name", "arguments"]));
            Value::Object(call)
        })
        .collect();
    if per_tool.is_empty() || !choice.emulates() {
        return answer;
    }
    // Values are moved into place rather than passed through `json!`, which
    // would copy every tool schema through the serializer at each level.
    let call = if per_tool.len() == 1 {
        per_tool.into_iter().next().unwrap_or_default()
    } else {
        object([("anyOf", Value::Array(per_tool))])
    };
    let calls = if parallel {
        let list = object([
            ("type", json!("array")),
            ("items", call),
            ("minItems", json!(1)),
            ("maxItems", json!(MAX_PARALLEL_CALLS)),
        ]);
        object([
            ("type", json!("object")),
            ("properties", object([(KEY_CALLS, list)])),
            ("required", json!([KEY_CALLS])),
        ])
    } else {
        object([
            ("type", json!("object")),
            ("properties", object([(KEY_CALL, call)])),
            ("required", json!([KEY_CALL])),
        ])
    };
    if choice.allows_answer() {
        object([("anyOf", Value::Array(vec![calls, answer]))])
    } else {
        calls
    }
}

/// A JSON object from `(key, value)` pairs, in order.
fn object<const N: usize>(pairs: [(&str, Value); N]) -> Value {
    Value::Object(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

/// `{"type":"object","properties":{"response":…},"required":["response"]}`.
fn answer_branch(answer_schema: Option<&Value>) -> Value {
    let inner = match answer_schema {
        Some(schema @ Value::Object(_)) => crate::schema::sanitize(schema)
            .ok()
            .and_then(|s| embeddable(s.schema).ok())
            .unwrap_or_else(permissive_object),
        Some(Value::String(s)) if s == "json" => permissive_object(),
        Some(Value::Bool(true)) => permissive_object(),
        _ => json!({"type": "string"}),
    };
    json!({
        "type": "object",
        "properties": { KEY_RESPONSE: inner },
        "required": [KEY_RESPONSE],
    })
}

#[cfg(test)]
#[path = "envelope_tests.rs"]
mod tests;
