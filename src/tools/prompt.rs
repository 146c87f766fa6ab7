//! The instruction text that tells the model about the tools and the reply
//! shape, with the shape of one call built from a tool's schema.
//!
//! Nothing in it is a value the model could copy into a call or an answer:
//! small models copy example values and placeholders (`"<city>"`, `"<your
//! answer>"`) verbatim, so the shapes show `…` and type names instead.
//!
//! Kept short on purpose: injected text degrades small and fine-tuned
//! models, and the grammar already enforces the shape. Parameter schemas are
//! shown as compact JSON pruned to what helps the model (types, properties,
//! required, descriptions, short enums).

use serde_json::{Map, Value, json};

use super::choice::ToolChoice;
use super::envelope::{KEY_CALL, KEY_CALLS, KEY_RESPONSE, MAX_PARALLEL_CALLS};
use super::spec::{Tool, ToolSet};

/// Longest tool or property description shown, in characters.
const MAX_DESCRIPTION: usize = 300;
/// Most enum values shown per enum.
const MAX_ENUM: usize = 10;
/// Deepest schema nesting shown.
const MAX_DEPTH: usize = 6;

/// Keywords kept when a schema is shown to the model.
const SHOWN_KEYWORDS: &[&str] = &[
    "type",
    "description",
    "properties",
    "required",
    "items",
    "enum",
    "const",
    "anyOf",
    "oneOf",
    "allOf",
    "format",
    "minimum",
    "maximum",
    "minItems",
    "maxItems",
    "$ref",
    "$defs",
    "definitions",
];

/// The instruction appended to the system prompt (see
/// [`super::history::rewrite_messages`]): one line per tool (`name: description`
/// and its parameters as compact JSON), the reply shape matching
/// [`super::envelope::build_format`] for the same `choice` and `parallel`, and the
/// shape of a call of the first tool listed, types in place of values.
/// Tools are listed most relevant to `question` (the latest user message)
/// first; see [`super::relevance`].
pub fn instruction(set: &ToolSet, choice: &ToolChoice, parallel: bool, question: &str) -> String {
    let shown = shown_tools(set, choice, question);
    let Some(example_tool) = shown.first() else {
        return String::new();
    };
    let mut out = String::from("You can call these tools:\n");
    for t in &shown {
        out.push_str("- ");
        out.push_str(&t.name);
        let desc = one_line(&t.description);
        if !desc.is_empty() {
            out.push_str(": ");
            out.push_str(&desc);
            if !desc.ends_with(['.', '!', '?', '…']) {
                out.push('.');
            }
        }
        out.push_str(" Parameters: ");
        out.push_str(&compact_schema(&t.parameters, 0).to_string());
        out.push('\n');
    }
    let call_shape = r#"{"name":…,"arguments":{…}}"#;
    let calls = if parallel {
        format!("{{\"{KEY_CALLS}\":[{call_shape}]}} (1 to {MAX_PARALLEL_CALLS} calls)")
    } else {
        format!("{{\"{KEY_CALL}\":{call_shape}}}")
    };
    match choice {
        ToolChoice::Required => out.push_str("You must call a tool. "),
        ToolChoice::Named(n) => out.push_str(&format!("You must call {n}. ")),
        ToolChoice::Auto | ToolChoice::None => {}
    }
    out.push_str("Reply with one JSON object only: ");
    if choice.allows_answer() {
        out.push_str(&format!(
            "{calls} to call a tool, or {{\"{KEY_RESPONSE}\":…}} to answer."
        ));
    } else {
        out.push_str(&calls);
        out.push('.');
    }
    out.push_str("\nArgument values come from the conversation. Tool results come back as \"Tool result for ");
    out.push_str(&example_tool.name);
    out.push_str(": …\".");
    // The shape of a call, with each argument's type where a value would
    // be: a value shown here is copied by small models whatever was asked.
    let call = format!(
        "{{\"name\":{},\"arguments\":{}}}",
        Value::String(example_tool.name.clone()),
        shape_arguments(&example_tool.parameters)
    );
    let shape = if parallel {
        format!("{{\"{KEY_CALLS}\":[{call}]}}")
    } else {
        format!("{{\"{KEY_CALL}\":{call}}}")
    };
    out.push_str("\nCall shape: ");
    out.push_str(&shape);
    out
}

/// The tools an instruction lists: all of them, or the one `choice`
/// names; most relevant to `question` first (the list and the call
/// example lead with it).
pub(crate) fn shown_tools<'a>(
    set: &'a ToolSet,
    choice: &ToolChoice,
    question: &str,
) -> Vec<&'a Tool> {
    let declared: Vec<&Tool> = set
        .tools()
        .iter()
        .filter(|t| match choice {
            ToolChoice::Named(n) => &t.name == n,
            _ => true,
        })
        .collect();
    match super::relevance::rank(&declared, question) {
        Some(order) => order
            .iter()
            .filter_map(|i| declared.get(*i).copied())
            .collect(),
        None => declared,
    }
}

/// `text` on one line, trimmed and cut to [`MAX_DESCRIPTION`] characters.
pub(crate) fn one_line(text: &str) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.chars().count() > MAX_DESCRIPTION {
        let mut cut: String = joined.chars().take(MAX_DESCRIPTION).collect();
        cut.push('…');
        cut
    } else {
        joined
    }
}

/// `schema` pruned for display: only [`SHOWN_KEYWORDS`], short enums and
/// descriptions, bounded depth. Non-object schemas are shown as they are.
pub(crate) fn compact_schema(schema: &Value, depth: usize) -> Value {
    let Value::Object(m) = schema else {
        return schema.clone();
    };
    if depth >= MAX_DEPTH {
        return json!({});
    }
    let mut out = Map::new();
    for key in SHOWN_KEYWORDS {
        let Some(v) = m.get(*key) else { continue };
        let shown = match (*key, v) {
            ("description", Value::String(s)) => Value::String(one_line(s)),
            ("enum", Value::Array(a)) if a.len() > MAX_ENUM => {
                let mut a: Vec<Value> = a.iter().take(MAX_ENUM).cloned().collect();
                a.push(Value::String("…".into()));
                Value::Array(a)
            }
            ("properties" | "$defs" | "definitions", Value::Object(props)) => Value::Object(
                props
                    .iter()
                    .map(|(k, s)| (k.clone(), compact_schema(s, depth + 1)))
                    .collect(),
            ),
            ("items", s @ Value::Object(_)) => compact_schema(s, depth + 1),
            ("anyOf" | "oneOf" | "allOf", Value::Array(a)) => {
                Value::Array(a.iter().map(|s| compact_schema(s, depth + 1)).collect())
            }
            _ => v.clone(),
        };
        out.insert((*key).to_owned(), shown);
    }
    Value::Object(out)
}

/// Most properties shown in a call shape.
const MAX_SHAPE_PROPERTIES: usize = 12;

/// The arguments of `schema` as a shape: its required properties (or the
/// first property when none is required), each with its type where a value
/// would be (`{"city":string,"days":integer}`). Not JSON on purpose: there
/// is no value in it to copy.
pub(crate) fn shape_arguments(schema: &Value) -> String {
    shape_object(schema, 0)
}

fn shape_object(schema: &Value, depth: usize) -> String {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return "{…}".to_string();
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut parts: Vec<String> = Vec::new();
    for (name, sub) in props {
        let wanted = if required.is_empty() {
            parts.is_empty()
        } else {
            required.contains(&name.as_str())
        };
        if !wanted {
            continue;
        }
        if parts.len() == MAX_SHAPE_PROPERTIES {
            parts.push("…".to_string());
            break;
        }
        parts.push(format!(
            "{}:{}",
            Value::String(name.clone()),
            shape_value(sub, depth)
        ));
    }
    format!("{{{}}}", parts.join(","))
}

/// Where a value of `schema` would go: `const` and short enums as their
/// values (`"celsius"|"fahrenheit"`), else the type (`string`, `integer`,
/// `number`, `true|false`, `[string]`, `{…}`).
pub(crate) fn shape_value(schema: &Value, depth: usize) -> String {
    if let Some(c) = schema.get("const") {
        return c.to_string();
    }
    if let Some(Value::Array(options)) = schema.get("enum")
        && !options.is_empty()
    {
        let mut shown: Vec<String> = options.iter().take(4).map(Value::to_string).collect();
        if options.len() > 4 {
            shown.push("…".into());
        }
        return shown.join("|");
    }
    let declared = match schema.get("type") {
        Some(Value::String(t)) => Some(t.as_str()),
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).find(|t| *t != "null"),
        _ => None,
    };
    let ty = declared.or_else(|| match schema.get("default") {
        Some(Value::String(_)) => Some("string"),
        Some(Value::Number(_)) => Some("number"),
        Some(Value::Bool(_)) => Some("boolean"),
        _ if schema.get("properties").is_some() => Some("object"),
        _ if schema.get("items").is_some() => Some("array"),
        _ => None,
    });
    match ty {
        Some("string" | "str") => "string".into(),
        Some("integer" | "int") => "integer".into(),
        Some("number" | "float") => "number".into(),
        Some("boolean" | "bool") => "true|false".into(),
        Some("null") => "null".into(),
        Some("array" | "list") if depth < 3 => {
            let item = schema.get("items").unwrap_or(&Value::Null);
            format!("[{}]", shape_value(item, depth + 1))
        }
        Some("object" | "dict") if depth < 3 => shape_object(schema, depth + 1),
        Some("array" | "list") => "[…]".into(),
        Some("object" | "dict") => "{…}".into(),
        _ => "…".into(),
    }
}

#[cfg(test)]
#[path = "prompt_tests.rs"]
mod tests;
