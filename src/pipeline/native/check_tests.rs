//! Unit tests of `check`.

use super::*;
use serde_json::json;

fn set() -> ToolSet {
    let tools = json!([
        {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"], "additionalProperties": false}}},
        {"type": "function", "function": {"name": "search_web", "parameters": {"type": "object",
            "properties": {"query": {"type": "string"}}}}}
    ]);
    ToolSet::from_request(tools.as_array().map(Vec::as_slice).unwrap_or_default()).unwrap()
}

#[test]
fn closest_names_share_words_or_letters() {
    let set = set();
    assert_eq!(closest(&set, "weather"), ["get_weather"]);
    assert_eq!(closest(&set, "getWeather"), ["get_weather"]);
    assert_eq!(closest(&set, "web_search")[0], "search_web");
    assert!(closest(&set, "zzzzzzzzzzzzzz").is_empty());
}

#[test]
fn repair_coerces_and_reports() {
    let set = set();
    let call = ToolCall {
        name: "get_weather".into(),
        arguments: json!({"city": "Paris", "days": "2"}),
    };
    let v = check(&set, vec![call], true);
    assert!(v.is_valid(), "{v:?}");
    assert_eq!(v.calls[0].arguments, json!({"city": "Paris", "days": 2}));
    assert!(!v.repairs.is_empty());
}

#[test]
fn undeclared_is_invalid_and_named() {
    let set = set();
    let call = ToolCall {
        name: "weather".into(),
        arguments: json!({}),
    };
    let v = check(&set, vec![call], true);
    assert!(!v.is_valid());
    let d = details(&set, &v);
    assert!(d[0].message.contains("\"get_weather\""), "{d:?}");
}
