//! Requests refused before anything is sent, with Ollama's own texts.

use super::*;

#[test]
fn missing_fields_are_refused_with_ollamas_texts() {
    assert_eq!(
        tr_err(json!({"max_tokens": 1024, "messages": [{"role": "user", "content": "Hello"}]})),
        "model is required"
    );
    assert_eq!(
        tr_err(json!({"model": "m", "messages": [{"role": "user", "content": "Hello"}]})),
        "max_tokens is required and must be positive"
    );
    assert_eq!(
        tr_err(
            json!({"model": "m", "max_tokens": 0, "messages": [{"role": "user", "content": "Hello"}]})
        ),
        "max_tokens is required and must be positive"
    );
    assert_eq!(
        tr_err(
            json!({"model": "m", "max_tokens": -5, "messages": [{"role": "user", "content": "Hello"}]})
        ),
        "max_tokens is required and must be positive"
    );
    assert_eq!(
        tr_err(json!({"model": "m", "max_tokens": 1024})),
        "messages is required"
    );
    assert_eq!(
        tr_err(json!({"model": "m", "max_tokens": 1024, "messages": []})),
        "messages is required"
    );
}

#[test]
fn malformed_blocks_are_refused_with_ollamas_texts() {
    assert_eq!(
        tr_err(req(
            json!([{"role": "assistant", "content": [{"type": "tool_use", "name": "test"}]}])
        )),
        "tool_use block missing required 'id' field"
    );
    assert_eq!(
        tr_err(req(
            json!([{"role": "assistant", "content": [{"type": "tool_use", "id": "call_123"}]}])
        )),
        "tool_use block missing required 'name' field"
    );
    assert_eq!(
        tr_err(
            json!({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "Hi"}],
            "tools": [{"name": "bad_tool", "input_schema": "{invalid json"}]})
        ),
        "invalid input_schema for tool \"bad_tool\": json: cannot unmarshal string into Go value of type api.ToolFunctionParameters"
    );
    // Decoding errors come before the field checks, as in Ollama.
    assert_eq!(
        tr_err(json!({"max_tokens": "1024", "messages": []})),
        "json: cannot unmarshal string into Go struct field MessagesRequest.max_tokens of type int"
    );
    assert_eq!(
        tr_err(req(json!([{"role": "user"}]))),
        "unexpected end of JSON input"
    );
    // Messages are converted before tools: the first error is the message's.
    assert_eq!(
        tr_err(json!({"model": "m", "max_tokens": 1,
            "messages": [{"role": "user", "content": [{"type": "image", "source": {"type": "url"}}]}],
            "tools": [{"name": "t", "input_schema": 5}]})),
        "invalid image source type: url. Only base64 images are supported."
    );
}
