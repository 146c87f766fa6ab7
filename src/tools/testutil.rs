//! Shared fixtures for the tool-emulation unit tests.

use serde_json::{Value, json};

use super::call::ToolCall;
use super::spec::ToolSet;

pub(crate) fn weather_tool() -> Value {
    json!({"type":"function","function":{
        "name":"get_weather","description":"Get the current weather for a city",
        "parameters":{"type":"object","properties":{
            "city":{"type":"string","description":"City name"},
            "unit":{"type":"string","enum":["celsius","fahrenheit"]}},
            "required":["city"]}}})
}

/// `n` tools: `get_weather` first, then `tool_1` … with one integer argument.
pub(crate) fn tools(n: usize) -> ToolSet {
    let mut v = vec![weather_tool()];
    for i in 1..n {
        v.push(json!({"type":"function","function":{
            "name": format!("tool_{i}"), "description": format!("Tool number {i}"),
            "parameters":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}}}));
    }
    ToolSet::from_request(&v).unwrap()
}

/// A call of `name` with `arguments`.
pub(crate) fn call(name: &str, arguments: Value) -> ToolCall {
    ToolCall {
        name: name.into(),
        arguments,
    }
}
