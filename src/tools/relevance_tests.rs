//! Unit tests of `relevance`.

use super::*;
use crate::tools::spec::ToolSet;
use serde_json::{Value, json};

fn tool(name: &str, description: &str, params: &[&str]) -> Value {
    let props: serde_json::Map<String, Value> = params
        .iter()
        .map(|p| ((*p).to_owned(), json!({"type": "string"})))
        .collect();
    json!({"type": "function", "function": {"name": name, "description": description,
        "parameters": {"type": "object", "properties": props}}})
}

fn first(tools: &ToolSet, question: &str) -> Option<String> {
    let refs: Vec<&Tool> = tools.tools().iter().collect();
    rank(&refs, question).map(|o| refs[o[0]].name.clone())
}

fn catalogue() -> ToolSet {
    set(vec![
        tool(
            "get_time",
            "Get the current local time in a city.",
            &["city"],
        ),
        tool(
            "get_weather",
            "Get the current weather for a city.",
            &["city", "unit"],
        ),
        tool(
            "track_package",
            "Track a parcel by its tracking number.",
            &["tracking_number"],
        ),
        tool(
            "getOrderStatus",
            "Get the status of a shop order by its id.",
            &["order_id"],
        ),
    ])
}

fn set(tools: Vec<Value>) -> ToolSet {
    ToolSet::from_request(&tools).unwrap()
}

#[test]
fn the_tool_named_by_the_question_comes_first() {
    let tools = catalogue();
    assert_eq!(
        first(&tools, "What's the weather like in Madrid?").as_deref(),
        Some("get_weather")
    );
    assert_eq!(
        first(&tools, "What time is it in Sydney?").as_deref(),
        Some("get_time")
    );
    assert_eq!(
        first(&tools, "Can you track parcel JD0146 for me?").as_deref(),
        Some("track_package")
    );
    assert_eq!(
        first(&tools, "Where is my ORDER 42?").as_deref(),
        Some("getOrderStatus")
    );
}

#[test]
fn shared_words_tell_nothing_and_ties_keep_the_declared_order() {
    let tools = catalogue();
    // "city" belongs to two tools; "current" to both of them too.
    let refs: Vec<&Tool> = tools.tools().iter().collect();
    assert_eq!(rank(&refs, "the current city"), Some(vec![0, 1, 2, 3]));
    assert_eq!(first(&tools, "What is the capital of France?"), None);
    assert_eq!(first(&tools, "the a of"), None);
    assert_eq!(first(&tools, ""), None);
}

#[test]
fn long_and_odd_text_is_bounded() {
    let tools = set(vec![tool(&"x".repeat(60), &"é".repeat(10_000), &[])]);
    let q = format!("{} weather", "ü".repeat(100_000));
    assert_eq!(first(&tools, &q), None);
    assert_eq!(clip("aé", 2), "a");
}
