//! Unit tests of `request`.

use super::*;

#[test]
fn translates_like_ollamas_openai_layer() {
    let req = json!({
        "model": "gemma3",
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{\"a\":1}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "42"}
        ],
        "max_tokens": 10,
        "stop": "x",
        "response_format": {"type": "json_object"},
        "stream": true,
        "stream_options": {"include_usage": true}
    });
    let t = translate(req.as_object().unwrap()).unwrap();
    assert!(t.body["stream"] == true && t.include_usage);
    let b = Value::Object(t.body);
    assert_eq!(b["options"]["num_predict"], 10);
    assert_eq!(b["options"]["temperature"], 1.0);
    assert_eq!(b["options"]["stop"], json!(["x"]));
    assert_eq!(b["format"], "json");
    assert_eq!(b["messages"][1]["content"], "hi");
    assert_eq!(
        b["messages"][2]["tool_calls"][0]["function"]["arguments"],
        json!({"a": 1})
    );
    assert_eq!(b["messages"][3]["tool_name"], "f");
}

#[test]
fn empty_messages_are_rejected_like_ollama() {
    let req = json!({"model": "m", "messages": []});
    let err = translate(req.as_object().unwrap()).err().unwrap();
    assert_eq!(err.to_string(), "[] is too short - 'messages'");
}
