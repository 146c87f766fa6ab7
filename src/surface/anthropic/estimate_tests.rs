//! Unit tests of `estimate`.

use serde_json::json;

use super::*;

fn est(v: Value) -> u64 {
    input_tokens(v.as_object().unwrap())
}

#[test]
fn counts_like_ollama() {
    // "user" (4) + "Hello, world!" (13) = 17 / 4.
    assert_eq!(
        est(json!({"messages": [{"role": "user", "content": "Hello, world!"}]})),
        4
    );
    // 28 + 4 + 5 = 37 / 4.
    assert_eq!(
        est(
            json!({"system": "You are a helpful assistant.", "messages": [{"role": "user", "content": "Hello"}]})
        ),
        9
    );
    // Thinking and text count; thinking's signature does not.
    assert_eq!(
        est(json!({"messages": [{"role": "assistant", "content": [
            {"type": "thinking", "thinking": "abcd", "signature": "zzzzzzzz"},
            {"type": "text", "text": "abcd"}
        ]}]})),
        4
    );
    // Nothing to count still costs a token when there are messages.
    assert_eq!(est(json!({"messages": [{"role": "", "content": ""}]})), 1);
    assert_eq!(est(json!({"messages": []})), 0);
}

#[test]
fn tool_blocks_count_as_their_go_json() {
    let b = json!({"type": "tool_use", "id": "t1", "name": "f", "input": {"b": 1.0, "a": "<"}, "cache_control": {}});
    assert_eq!(
        block_json(b.as_object().unwrap()),
        r#"{"type":"tool_use","id":"t1","name":"f","input":{"b":1,"a":"\u003c"}}"#
    );
    let r = json!({"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "ok"}], "is_error": true});
    assert_eq!(
        block_json(r.as_object().unwrap()),
        r#"{"type":"tool_result","tool_use_id":"t1","content":[{"text":"ok","type":"text"}],"is_error":true}"#
    );
    let m = json!({"messages": [{"role": "user", "content": [r]}]});
    assert_eq!(est(m), (4 + 97) / 4);
}

#[test]
fn tools_count_name_description_and_schema() {
    let v = json!({
        "messages": [{"role": "user", "content": "What's the weather?"}],
        "tools": [{"name": "get_weather", "description": "Get the current weather for a location",
                   "input_schema": {"type": "object", "properties": {"location": {"type": "string"}}}}]
    });
    // 4 + 19 + 11 + 38 + 61 = 133 / 4.
    assert_eq!(est(v), 33);
}
