//! The instruction text that tells the model about the tools and the reply
//! shape, with a one-shot example built from a tool's schema.
//!
//! Kept short on purpose: injected text degrades small and fine-tuned
//! models, and the grammar already enforces the shape. Parameter schemas are
//! shown as compact JSON pruned to what helps the model (types, properties,
//! required, descriptions, short enums).

use serde_json::{Map, Value, json};

use super::envelope::{KEY_CALL, KEY_CALLS, KEY_RESPONSE, MAX_PARALLEL_CALLS};
use super::{Tool, ToolChoice, ToolSet};

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
/// [`super::rewrite_messages`]): one line per tool (`name: description`
/// and its parameters as compact JSON), the reply shape matching
/// [`super::build_format`] for the same `choice` and `parallel`, and one
/// example call.
pub fn instruction(set: &ToolSet, choice: &ToolChoice, parallel: bool) -> String {
    let shown: Vec<&Tool> = set
        .tools()
        .iter()
        .filter(|t| match choice {
            ToolChoice::Named(n) => &t.name == n,
            _ => true,
        })
        .collect();
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
    let call_shape = r#"{"name":"<tool name>","arguments":{…}}"#;
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
            "{calls} to call a tool, or {{\"{KEY_RESPONSE}\":\"<your answer>\"}} to answer."
        ));
    } else {
        out.push_str(&calls);
        out.push('.');
    }
    out.push_str("\nTool results come back as \"Tool result for <tool name>: …\".");
    let example = json!({"name": example_tool.name, "arguments": example_arguments(&example_tool.parameters)});
    let example = if parallel {
        json!({ KEY_CALLS: [example] })
    } else {
        json!({ KEY_CALL: example })
    };
    out.push_str("\nExample: ");
    out.push_str(&example.to_string());
    out
}

/// `text` on one line, trimmed and cut to [`MAX_DESCRIPTION`] characters.
fn one_line(text: &str) -> String {
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
fn compact_schema(schema: &Value, depth: usize) -> Value {
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

/// Example arguments for `schema`: its required properties (or the first
/// property when none is required), each with a value of the right type.
fn example_arguments(schema: &Value) -> Value {
    let props = schema.get("properties").and_then(Value::as_object);
    let Some(props) = props else {
        return json!({});
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut out = Map::new();
    for (name, sub) in props {
        let wanted = if required.is_empty() {
            out.is_empty()
        } else {
            required.contains(&name.as_str())
        };
        if wanted {
            out.insert(name.clone(), example_value(name, sub, 0));
        }
    }
    Value::Object(out)
}

/// A plausible value for a property called `name` with schema `schema`.
fn example_value(name: &str, schema: &Value, depth: usize) -> Value {
    for key in ["examples", "default", "const", "enum"] {
        match (key, schema.get(key)) {
            ("examples" | "enum", Some(Value::Array(a))) if !a.is_empty() => return a[0].clone(),
            ("default" | "const", Some(v)) => return v.clone(),
            _ => {}
        }
    }
    let ty = match schema.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("string"),
        _ => "string",
    };
    match ty {
        "integer" | "int" | "number" | "float" => json!(1),
        "boolean" | "bool" => json!(true),
        "array" | "list" if depth < 3 => {
            let item = schema.get("items").unwrap_or(&Value::Null);
            json!([example_value(name, item, depth + 1)])
        }
        "object" | "dict" if depth < 3 => example_arguments(schema),
        "null" => Value::Null,
        _ => Value::String(format!("<{name}>")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::testutil::tools;

    #[test]
    fn instruction_lists_tools_shape_and_example() {
        let set = tools(3);
        let text = instruction(&set, &ToolChoice::Auto, false);
        assert!(text.starts_with("You can call these tools:\n- get_weather: Get the current weather for a city. Parameters: {\"type\":\"object\",\"properties\":{\"city\""), "{text}");
        assert!(text.contains("- tool_2: Tool number 2. Parameters:"));
        assert!(text.contains(r#"{"tool_call":{"name":"<tool name>","arguments":{…}}} to call a tool, or {"response":"<your answer>"} to answer."#), "{text}");
        assert!(
            text.ends_with(
                r#"Example: {"tool_call":{"name":"get_weather","arguments":{"city":"<city>"}}}"#
            ),
            "{text}"
        );
        assert!(text.len() < 1200, "{}", text.len());
    }

    #[test]
    fn instruction_follows_choice_and_mode() {
        let set = tools(3);
        let text = instruction(&set, &ToolChoice::Required, true);
        assert!(text.contains("You must call a tool."));
        assert!(text.contains(r#"{"tool_calls":[{"name""#));
        assert!(!text.contains("\"response\""));
        assert!(text.ends_with(
            r#"Example: {"tool_calls":[{"name":"get_weather","arguments":{"city":"<city>"}}]}"#
        ));
        let text = instruction(&set, &ToolChoice::Named("tool_1".into()), false);
        assert!(text.contains("You must call tool_1."));
        assert!(!text.contains("get_weather"));
        assert!(text.ends_with(r#"{"tool_call":{"name":"tool_1","arguments":{"n":1}}}"#));
    }

    #[test]
    fn long_enums_and_descriptions_are_cut() {
        let huge: Vec<String> = (0..500).map(|i| format!("v{i}")).collect();
        let set = ToolSet::from_request(&[json!({"type":"function","function":{
            "name":"pick","description":"x ".repeat(1000),
            "parameters":{"type":"object","title":"Pick","properties":{"v":{"type":"string","enum":huge}},"required":["v"]}}})])
        .unwrap();
        let text = instruction(&set, &ToolChoice::Auto, false);
        assert!(text.len() < 1000, "{}", text.len());
        assert!(text.contains(r#""enum":["v0","v1","v2","v3","v4","v5","v6","v7","v8","v9","…"]"#));
        assert!(!text.contains("title"));
        assert!(text.ends_with(r#"{"tool_call":{"name":"pick","arguments":{"v":"v0"}}}"#));
    }

    #[test]
    fn example_values_follow_types() {
        let schema = json!({"type":"object","properties":{
            "a":{"type":"integer"},"b":{"type":["null","boolean"]},"c":{"type":"array","items":{"type":"number"}},
            "d":{"type":"object","properties":{"e":{"type":"string"}}},"f":{"default":"x"}}});
        assert_eq!(example_arguments(&schema), json!({"a":1}));
        let all = json!({"type":"object","properties":schema["properties"].clone(),"required":["a","b","c","d","f"]});
        assert_eq!(
            example_arguments(&all),
            json!({"a":1,"b":true,"c":[1],"d":{"e":"<e>"},"f":"x"})
        );
    }
}
