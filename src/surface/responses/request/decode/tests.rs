//! What Ollama refuses, refused with Ollama's texts: malformed `input`
//! items and content, unusable images and files, field types Go's decoder
//! rejects; and `null` read as an absent field.

use serde_json::json;

use super::super::tests::{body, error};

#[test]
fn malformed_input_is_refused_with_ollamas_texts() {
    let cases = [
        (
            json!(123),
            "input must be a string or array: json: cannot unmarshal number into Go value of type []json.RawMessage",
        ),
        (
            json!([{"type": "unknown_type"}]),
            r#"input[0]: unknown input item type: "unknown_type""#,
        ),
        (
            json!([{"content": "hello"}]),
            "input[0]: input item missing required 'type' field",
        ),
        (
            json!([{"role": "user", "content": "a"}, {"type": ""}]),
            "input[1]: input item missing required 'type' field",
        ),
        (
            json!([{"role": "user", "content": [{"type": "unknown"}]}]),
            "input[0]: content[0]: unknown content type: unknown",
        ),
        (
            json!([{"role": "user", "content": 5}]),
            "input[0]: content must be a string or array: json: cannot unmarshal number into Go value of type []json.RawMessage",
        ),
        (
            json!([{"role": "user", "content": [{"type": "input_text", "text": 1}]}]),
            "input[0]: content[0]: json: cannot unmarshal number into Go struct field ResponsesTextContent.text of type string",
        ),
        (
            json!([{"type": "function_call", "call_id": "c", "name": "f", "arguments": {"a": 1}}]),
            "input[0]: json: cannot unmarshal object into Go struct field ResponsesFunctionCall.arguments of type string",
        ),
        (
            json!([{"type": "function_call_output", "call_id": "c", "output": [{"type": "bogus"}]}]),
            "input[0]: output[0]: unknown content type: bogus",
        ),
    ];
    for (input, want) in cases {
        assert_eq!(error(json!({"model": "m", "input": input})), want);
    }
}

#[test]
fn unusable_content_is_refused_with_ollamas_texts() {
    let cases = [
        (
            json!([{"role": "user", "content": [{"type": "input_file", "file_id": "f"}]}]),
            "file inputs are not currently supported",
        ),
        (
            json!([{"role": "user", "content": [{"type": "input_image", "image_url": "https://x/y.png"}]}]),
            "image URLs are not currently supported, please use base64 encoded data instead",
        ),
        (
            json!([{"role": "user", "content": [{"type": "input_image", "image_url": "data:image/gif;base64,R0lG"}]}]),
            "invalid image input",
        ),
        (
            json!([{"type": "function_call", "call_id": "c", "name": "f", "arguments": "{\"a\":"}]),
            "failed to parse function call arguments: unexpected end of JSON input",
        ),
    ];
    for (input, want) in cases {
        assert_eq!(error(json!({"model": "m", "input": input})), want);
    }
    // An image without a URL is skipped.
    let b = body(
        json!({"model": "m", "input": [{"role": "user", "content": [{"type": "input_image", "file_id": "x"}]}]}),
    );
    assert!(b["messages"][0].get("images").is_none());
}

#[test]
fn field_types_are_checked_like_gos_decoder() {
    let cases = [
        (
            json!({"temperature": "hot"}),
            "json: cannot unmarshal string into Go struct field ResponsesRequest.temperature of type float64",
        ),
        (
            json!({"max_output_tokens": 1.5}),
            "json: cannot unmarshal number 1.5 into Go struct field ResponsesRequest.max_output_tokens of type int",
        ),
        (
            json!({"stream": "yes"}),
            "json: cannot unmarshal string into Go struct field ResponsesRequest.stream of type bool",
        ),
        (
            json!({"reasoning": {"effort": 1}}),
            "json: cannot unmarshal number into Go struct field ResponsesReasoning.reasoning.effort of type string",
        ),
        (
            json!({"tools": [{"type": "function", "name": 3}]}),
            "json: cannot unmarshal number into Go struct field ResponsesTool.tools.name of type string",
        ),
        (
            json!({"tools": {}}),
            "json: cannot unmarshal object into Go struct field ResponsesRequest.tools of type []openai.ResponsesTool",
        ),
        (
            json!({"text": {"format": {"type": "json_schema", "strict": "yes"}}}),
            "json: cannot unmarshal string into Go struct field ResponsesTextFormat.text.format.strict of type bool",
        ),
        (
            json!({"tools": [{"type": "function", "name": "f", "parameters": {"type": "object", "required": "a"}}]}),
            "failed to unmarshal tool parameters: json: cannot unmarshal string into Go struct field ToolFunctionParameters.required of type []string",
        ),
    ];
    for (fields, want) in cases {
        let mut req = json!({"model": "m", "input": "x"});
        req.as_object_mut()
            .unwrap()
            .extend(fields.as_object().unwrap().clone());
        assert_eq!(error(req), want);
    }
    // An error in `input` wins over a type error in another field.
    assert_eq!(
        error(json!({"model": "m", "temperature": "hot", "input": [{"type": "x"}]})),
        r#"input[0]: unknown input item type: "x""#
    );
}

#[test]
fn nulls_and_absent_fields_are_alike() {
    let b = body(json!({
        "model": "m", "input": null, "instructions": null, "temperature": null,
        "tools": null, "text": null, "reasoning": null, "stream": null
    }));
    assert_eq!(
        b,
        json!({"model": "m", "messages": [], "stream": false, "options": {"temperature": 1}})
    );
}
