//! Calls written in a [`TextFormat`]: past calls in a rewritten history
//! ([`render_calls`]) and the shape of a call in the instruction
//! ([`shape_of`], types where values go).

use serde_json::{Map, Value, json};

use super::format::TextFormat;
use crate::tools::prompt;
use crate::tools::spec::Tool;

/// `calls` (`(name, arguments)`) as the model would write them in
/// `format`.
pub(crate) fn render_calls(calls: &[(String, Value)], format: TextFormat) -> String {
    match format {
        TextFormat::Python => {
            let list: Vec<String> = calls.iter().map(|(n, a)| python_call(n, a)).collect();
            format!("[{}]", list.join(", "))
        }
        TextFormat::ToolCode => {
            let lines: Vec<String> = calls.iter().map(|(n, a)| python_call(n, a)).collect();
            format!("```tool_code\n{}\n```", lines.join("\n"))
        }
        TextFormat::ToolCall | TextFormat::ToolRequest => calls
            .iter()
            .map(|(name, arguments)| {
                let body = json!({"name": name, "arguments": arguments});
                wrap(&body.to_string(), format)
            })
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

/// The shape of a call of `tool` in `format`: each required argument
/// (or the first) with its type where the value would be, e.g.
/// `[get_weather(city=string)]`.
pub(crate) fn shape_of(tool: &Tool, format: TextFormat) -> String {
    match format {
        TextFormat::Python => format!("[{}]", python_shape(tool)),
        TextFormat::ToolCode => format!("```tool_code\n{}\n```", python_shape(tool)),
        TextFormat::ToolCall | TextFormat::ToolRequest => {
            let body = format!(
                "{{\"name\":{},\"arguments\":{}}}",
                Value::String(tool.name.clone()),
                prompt::shape_arguments(&tool.parameters)
            );
            wrap(&body, format)
        }
    }
}

fn wrap(body: &str, format: TextFormat) -> String {
    match format {
        TextFormat::ToolRequest => format!("[TOOL_REQUEST]{body}[END_TOOL_REQUEST]"),
        _ => format!("<tool_call>{body}</tool_call>"),
    }
}

fn python_shape(tool: &Tool) -> String {
    let schema = &tool.parameters;
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return format!("{}()", tool.name);
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let args: Vec<String> = props
        .iter()
        .filter(|(name, _)| required.is_empty() || required.contains(&name.as_str()))
        .take(if required.is_empty() { 1 } else { 12 })
        .map(|(name, sub)| {
            let shape = prompt::shape_value(sub, 0).replace("true|false", "True|False");
            format!("{name}={shape}")
        })
        .collect();
    format!("{}({})", tool.name, args.join(", "))
}

/// A call in Python syntax; keys that are not identifiers go in `**{…}`.
fn python_call(name: &str, arguments: &Value) -> String {
    let mut args = Vec::new();
    let mut rest = Map::new();
    match arguments {
        Value::Object(map) => {
            for (key, value) in map {
                if is_identifier(key) {
                    args.push(format!("{key}={}", python_literal(value)));
                } else {
                    rest.insert(key.clone(), value.clone());
                }
            }
        }
        Value::Null => {}
        other => args.push(python_literal(other)),
    }
    if !rest.is_empty() {
        args.push(format!("**{}", python_literal(&Value::Object(rest))));
    }
    format!("{name}({})", args.join(", "))
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c == '_' || c.is_alphabetic())
        && chars.all(|c| c == '_' || c.is_alphanumeric())
}

/// A JSON value as a Python literal (JSON's strings and numbers are
/// Python's too).
fn python_literal(value: &Value) -> String {
    match value {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Number(_) | Value::String(_) => value.to_string(),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(python_literal).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(map) => {
            let items: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}: {}", Value::String(k.clone()), python_literal(v)))
                .collect();
            format!("{{{}}}", items.join(", "))
        }
    }
}
