//! Unit tests of `prompt`.

use super::*;
use crate::tools::testutil::tools;

#[test]
fn instruction_lists_tools_and_shapes_without_values() {
    let set = tools(3);
    let text = instruction(&set, &ToolChoice::Auto, false, "");
    assert!(text.starts_with("You can call these tools:\n- get_weather: Get the current weather for a city. Parameters: {\"type\":\"object\",\"properties\":{\"city\""), "{text}");
    assert!(text.contains("- tool_2: Tool number 2. Parameters:"));
    assert!(text.contains(r#"{"tool_call":{"name":…,"arguments":{…}}} to call a tool, or {"response":…} to answer."#), "{text}");
    assert!(
        text.contains(r#"Tool results come back as "Tool result for get_weather: …"."#),
        "{text}"
    );
    assert!(
        text.ends_with(
            r#"Call shape: {"tool_call":{"name":"get_weather","arguments":{"city":string}}}"#
        ),
        "{text}"
    );
    // Nothing a model could copy as a value.
    assert!(!text.contains('<'), "{text}");
    assert!(text.len() < 1200, "{}", text.len());
}

#[test]
fn instruction_follows_choice_and_mode() {
    let set = tools(3);
    let text = instruction(&set, &ToolChoice::Required, true, "");
    assert!(text.contains("You must call a tool."));
    assert!(text.contains(r#"{"tool_calls":[{"name""#));
    assert!(!text.contains("\"response\""));
    assert!(text.ends_with(
        r#"Call shape: {"tool_calls":[{"name":"get_weather","arguments":{"city":string}}]}"#
    ));
    let text = instruction(&set, &ToolChoice::Named("tool_1".into()), false, "");
    assert!(text.contains("You must call tool_1."));
    assert!(!text.contains("get_weather"));
    assert!(text.ends_with(r#"{"tool_call":{"name":"tool_1","arguments":{"n":integer}}}"#));
}

#[test]
fn the_tool_the_question_names_leads_the_list_and_the_example() {
    let set = tools(3);
    let text = instruction(&set, &ToolChoice::Auto, false, "Use tool number 2 please");
    assert!(
        text.starts_with("You can call these tools:\n- tool_2: "),
        "{text}"
    );
    assert!(text.contains("\n- get_weather: "), "{text}");
    assert!(
        text.ends_with(r#"Call shape: {"tool_call":{"name":"tool_2","arguments":{"n":integer}}}"#),
        "{text}"
    );
    // A question no tool shares a word with keeps the declared order.
    let text = instruction(
        &set,
        &ToolChoice::Auto,
        false,
        "What is the capital of France?",
    );
    assert!(
        text.starts_with("You can call these tools:\n- get_weather: "),
        "{text}"
    );
}

#[test]
fn long_enums_and_descriptions_are_cut() {
    let huge: Vec<String> = (0..500).map(|i| format!("v{i}")).collect();
    let set = ToolSet::from_request(&[json!({"type":"function","function":{
        "name":"pick","description":"x ".repeat(1000),
        "parameters":{"type":"object","title":"Pick","properties":{"v":{"type":"string","enum":huge}},"required":["v"]}}})])
    .unwrap();
    let text = instruction(&set, &ToolChoice::Auto, false, "");
    assert!(text.len() < 1000, "{}", text.len());
    assert!(text.contains(r#""enum":["v0","v1","v2","v3","v4","v5","v6","v7","v8","v9","…"]"#));
    assert!(!text.contains("title"));
    assert!(
        text.ends_with(r#"{"tool_call":{"name":"pick","arguments":{"v":"v0"|"v1"|"v2"|"v3"|…}}}"#)
    );
}

#[test]
fn shapes_follow_types() {
    let schema = json!({"type":"object","properties":{
        "a":{"type":"integer"},"b":{"type":["null","boolean"]},"c":{"type":"array","items":{"type":"number"}},
        "d":{"type":"object","properties":{"e":{"type":"string"}}},"f":{"default":"x"},
        "g":{"const":3},"h":{}}});
    assert_eq!(shape_arguments(&schema), r#"{"a":integer}"#);
    let all = json!({"type":"object","properties":schema["properties"].clone(),"required":["a","b","c","d","f","g","h"]});
    assert_eq!(
        shape_arguments(&all),
        r#"{"a":integer,"b":true|false,"c":[number],"d":{"e":string},"f":string,"g":3,"h":…}"#
    );
    assert_eq!(shape_arguments(&json!({"type":"object"})), "{…}");
}
