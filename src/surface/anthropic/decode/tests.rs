//! Unit tests of `decode`.

use serde_json::json;

use super::*;

fn req_err(v: Value) -> String {
    request(v.as_object().unwrap()).unwrap_err().to_string()
}

#[test]
fn well_typed_requests_pass() {
    let v = json!({
        "model": "m", "max_tokens": 10, "stream": null, "temperature": 1,
        "system": [{"type": "text", "text": "s"}], "stop_sequences": ["x"],
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "a", "name": "f", "input": {"x": 1}},
                {"type": "thinking", "thinking": "t", "signature": "s"}
            ]},
            {"role": "user", "content": null}
        ],
        "tools": [{"name": "f", "input_schema": {"type": "object"}}],
        "tool_choice": {"type": "any"}, "thinking": {"type": "enabled", "budget_tokens": 5},
        "unknown": 3
    });
    assert_eq!(request(v.as_object().unwrap()), Ok(()));
}

#[test]
fn type_errors_read_like_go() {
    assert_eq!(
        req_err(json!({"max_tokens": "10"})),
        "json: cannot unmarshal string into Go struct field MessagesRequest.max_tokens of type int"
    );
    assert_eq!(
        req_err(json!({"max_tokens": 1.5})),
        "json: cannot unmarshal number 1.5 into Go struct field MessagesRequest.max_tokens of type int"
    );
    assert_eq!(
        req_err(json!({"model": 3, "max_tokens": "x"})),
        "json: cannot unmarshal number into Go struct field MessagesRequest.model of type string"
    );
    assert_eq!(
        req_err(json!({"tool_choice": "auto"})),
        "json: cannot unmarshal string into Go struct field MessagesRequest.tool_choice of type anthropic.ToolChoice"
    );
    assert_eq!(
        req_err(json!({"tools": [{"name": 1}]})),
        "json: cannot unmarshal number into Go struct field Tool.tools.name of type string"
    );
    assert_eq!(
        req_err(json!({"stop_sequences": "x"})),
        "json: cannot unmarshal string into Go struct field MessagesRequest.stop_sequences of type []string"
    );
    assert_eq!(
        req_err(json!({"messages": {}})),
        "json: cannot unmarshal object into Go struct field MessagesRequest.messages of type []anthropic.MessageParam"
    );
}

#[test]
fn message_errors_stop_decoding_and_win() {
    // A type error before it is overridden by the message's own error.
    assert_eq!(
        req_err(json!({"model": 1, "messages": [{"role": "user"}]})),
        "unexpected end of JSON input"
    );
    assert_eq!(
        req_err(json!({"messages": [{"role": 1, "content": "x"}]})),
        "json: cannot unmarshal number into Go struct field MessagesRequest.messages.role of type string"
    );
    assert_eq!(
        req_err(json!({"messages": [{"role": "user", "content": 5}]})),
        "json: cannot unmarshal number into Go struct field MessagesRequest.messages of type []anthropic.ContentBlock"
    );
    assert_eq!(
        req_err(json!({"messages": [{"role": "user", "content": [{"type": "text", "text": 5}]}]})),
        "json: cannot unmarshal number into Go struct field MessagesRequest.messages.text of type string"
    );
    assert_eq!(
        req_err(
            json!({"messages": [{"role": "user", "content": [{"type": "image", "source": {"data": 1}}]}]})
        ),
        "json: cannot unmarshal number into Go struct field MessagesRequest.messages.source.data of type string"
    );
    assert_eq!(
        req_err(json!({"messages": [{"role": "user", "content": ["x"]}]})),
        "json: cannot unmarshal string into Go struct field MessagesRequest.messages of type anthropic.ContentBlock"
    );
    assert_eq!(
        req_err(
            json!({"messages": [{"role": "assistant", "content": [{"type": "tool_use", "input": "x"}]}]})
        ),
        MALFORMED_OBJECT
    );
    assert!(req_err(json!({"messages": ["hi"]})).starts_with(
        "json: cannot unmarshal string into Go struct field MessagesRequest.messages of type struct { Role string"
    ));
}

#[test]
fn tool_schemas_decode_like_tool_function_parameters() {
    assert_eq!(
        tool_schema(&json!({"type": "object", "properties": {"a": {"type": ["string", "null"]}}})),
        Ok(())
    );
    assert_eq!(tool_schema(&json!(null)), Ok(()));
    assert_eq!(
        tool_schema(&json!("x")).unwrap_err().to_string(),
        "json: cannot unmarshal string into Go value of type api.ToolFunctionParameters"
    );
    assert_eq!(
        tool_schema(&json!({"type": 1})).unwrap_err().to_string(),
        "json: cannot unmarshal number into Go struct field ToolFunctionParameters.type of type string"
    );
    assert_eq!(
        tool_schema(&json!({"properties": []}))
            .unwrap_err()
            .to_string(),
        MALFORMED_OBJECT
    );
    assert_eq!(
        tool_schema(&json!({"properties": {"a": {"description": 5}}}))
            .unwrap_err()
            .to_string(),
        "json: cannot unmarshal number into Go struct field ToolFunctionParameters.properties.description of type string"
    );
    assert_eq!(
        tool_schema(&json!({"properties": {"a": {"properties": {"b": {"type": 3}}}}}))
            .unwrap_err()
            .to_string(),
        "json: cannot unmarshal number into Go struct field ToolFunctionParameters.properties.properties.type of type []string"
    );
}
