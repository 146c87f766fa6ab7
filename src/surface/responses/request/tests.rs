//! Responses requests → Ollama `/api/chat` bodies, after the cases of
//! Ollama's `openai/responses_test.go`: history with function calls and
//! their outputs, merges, reasoning, tools and `tool_choice`, `text.format`,
//! and options (error texts: `decode/tests.rs`).

use serde_json::{Value, json};

use super::*;
use crate::tools::{ToolChoice, ToolSet};

pub(super) fn body(req: Value) -> Value {
    let t = translate(req.as_object().unwrap()).unwrap();
    Value::Object(t.body)
}

pub(super) fn error(req: Value) -> String {
    let e = translate(req.as_object().unwrap()).unwrap_err();
    assert_eq!(e.status().as_u16(), 400, "{e}");
    e.to_string()
}

#[test]
fn string_input_with_instructions_is_a_system_and_a_user_message() {
    let t = translate(
        json!({"model": "gemma3", "instructions": "Be a pirate.", "input": "Hello"})
            .as_object()
            .unwrap(),
    )
    .unwrap();
    assert!(t.body["stream"] == false && !t.web_search);
    assert_eq!(t.model, "gemma3");
    assert_eq!(
        Value::Object(t.body).to_string(),
        r#"{"model":"gemma3","messages":[{"role":"system","content":"Be a pirate."},{"role":"user","content":"Hello"}],"stream":false,"options":{"temperature":1}}"#
    );
}

#[test]
fn options_come_from_sampling_fields() {
    let b = body(json!({
        "model": "m", "input": "x", "stream": true,
        "temperature": 0.5, "top_p": 0.9, "max_output_tokens": 100
    }));
    assert_eq!(b["stream"], true);
    assert_eq!(
        b["options"],
        json!({"temperature": 0.5, "top_p": 0.9, "num_predict": 100})
    );
}

#[test]
fn a_function_call_round_trip_becomes_tool_calls_and_a_tool_message() {
    let b = body(json!({
        "model": "m",
        "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "what is the weather?"}]},
            {"type": "function_call", "call_id": "call_abc123", "name": "get_weather", "arguments": "{\"city\":\"Paris\",\"unit\":\"c\"}"},
            {"type": "function_call_output", "call_id": "call_abc123", "output": "sunny, 72F"}
        ]
    }));
    assert_eq!(
        b["messages"],
        json!([
            {"role": "user", "content": "what is the weather?"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "call_abc123", "function": {"index": 0, "name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}}
            ]},
            {"role": "tool", "content": "sunny, 72F", "tool_name": "get_weather", "tool_call_id": "call_abc123"}
        ])
    );
    // Argument order is kept.
    assert_eq!(
        b["messages"][1]["tool_calls"][0]["function"]["arguments"].to_string(),
        r#"{"city":"Paris","unit":"c"}"#
    );
}

#[test]
fn tool_results_reach_the_emulation_history_by_name() {
    let b = body(json!({
        "model": "m",
        "input": [
            {"role": "user", "content": "weather?"},
            {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "sunny"}
        ]
    }));
    let rewritten = crate::tools::rewrite_messages(b["messages"].as_array().unwrap(), "I", false);
    assert_eq!(
        rewritten.last().unwrap()["content"],
        "Tool result for get_weather: sunny"
    );
}

#[test]
fn output_content_arrays_give_text_and_images() {
    let b = body(json!({
        "model": "m",
        "input": [
            {"role": "user", "content": "inspect"},
            {"type": "function_call", "call_id": "c1", "name": "look", "arguments": ""},
            {"type": "function_call_output", "call_id": "c1", "output": [
                {"type": "input_text", "text": "attached"},
                {"type": "output_text", "text": " image"},
                {"type": "input_image", "detail": "auto", "image_url": "data:image/png;base64,dGVzdB=="}
            ]}
        ]
    }));
    assert_eq!(
        b["messages"][1]["tool_calls"][0]["function"]["arguments"],
        json!({})
    );
    let tool = &b["messages"][2];
    assert_eq!(tool["content"], "attached image");
    assert_eq!(tool["images"], json!(["dGVzdA=="]));
}

#[test]
fn calls_join_the_assistant_turn_before_them() {
    let b = body(json!({
        "model": "m",
        "input": [
            {"role": "user", "content": "do things"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "First batch."}]},
            {"type": "function_call", "call_id": "call_1", "name": "func_a", "arguments": "{}"},
            {"type": "function_call", "call_id": "call_2", "name": "func_b", "arguments": "{}"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Second batch."}]},
            {"type": "function_call", "call_id": "call_3", "name": "func_c", "arguments": "{}"}
        ]
    }));
    let m = b["messages"].as_array().unwrap();
    assert_eq!(m.len(), 3);
    assert_eq!(m[1]["content"], "First batch.");
    assert_eq!(m[1]["tool_calls"].as_array().unwrap().len(), 2);
    assert_eq!(m[2]["content"], "Second batch.");
    assert_eq!(m[2]["tool_calls"][0]["function"]["name"], "func_c");
}

#[test]
fn an_assistant_message_between_a_call_and_its_output_joins_the_call() {
    let b = body(json!({
        "model": "m",
        "input": [
            {"role": "user", "content": "Find Ollama and inspect the current directory."},
            {"type": "web_search_call", "id": "ws_test", "status": "completed", "action": {"type": "search", "query": "Ollama"}},
            {"type": "function_call", "call_id": "call_test", "name": "exec_command", "arguments": "{\"cmd\":\"pwd\"}"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "I will inspect the directory."}]},
            {"type": "function_call_output", "call_id": "call_test", "output": "/tmp"}
        ]
    }));
    let m = b["messages"].as_array().unwrap();
    assert_eq!(m.len(), 3);
    assert_eq!(m[1]["content"], "I will inspect the directory.");
    assert_eq!(m[1]["tool_calls"][0]["id"], "call_test");
    assert_eq!(m[2]["role"], "tool");
    assert_eq!(m[2]["tool_call_id"], "call_test");
}

#[test]
fn reasoning_rides_on_the_next_assistant_turn() {
    let b = body(json!({
        "model": "m",
        "input": [
            {"role": "user", "content": "complex task"},
            {"type": "reasoning", "id": "rs_1", "encrypted_content": "Thinking first...", "summary": []},
            {"type": "message", "role": "assistant", "content": ""},
            {"type": "function_call", "call_id": "call_1", "name": "think_action", "arguments": "{}"},
            {"role": "user", "content": "and?"},
            {"type": "reasoning", "id": "rs_2", "encrypted_content": "Still thinking...", "summary": [{"type": "summary_text", "text": "s"}]}
        ]
    }));
    let m = b["messages"].as_array().unwrap();
    assert_eq!(m.len(), 4);
    assert_eq!(m[1]["thinking"], "Thinking first...");
    assert_eq!(m[1]["content"], "");
    assert_eq!(m[1]["tool_calls"][0]["function"]["name"], "think_action");
    assert_eq!(
        m[3],
        json!({"role": "assistant", "content": "", "thinking": "Still thinking..."})
    );
}

#[test]
fn flat_function_tools_nest_under_function() {
    let t = translate(
        json!({
            "model": "m", "input": "hi",
            "tools": [
                {"type": "function", "name": "get_weather", "description": "Weather.", "strict": true,
                 "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": false}},
                {"type": "function", "name": "ping", "description": "", "strict": null, "parameters": null},
                {"type": "namespace", "name": "fs", "tools": [
                    {"type": "function", "name": "read", "parameters": {"type": "object"}},
                    {"type": "function", "name": "fs.write"}
                ]}
            ]
        })
        .as_object()
        .unwrap(),
    )
    .unwrap();
    let tools = t.body["tools"].as_array().unwrap();
    assert_eq!(
        tools[0],
        json!({"type": "function", "function": {"name": "get_weather", "description": "Weather.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": false}}})
    );
    assert_eq!(
        tools[1],
        json!({"type": "function", "function": {"name": "ping"}})
    );
    let names: Vec<&str> = tools
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["get_weather", "ping", "fs.read", "fs.write"]);
    // What augur's tool emulation reads.
    assert_eq!(ToolSet::from_request(tools).unwrap().len(), 4);
    assert_eq!(t.echo.tools.len(), 3);
}

#[test]
fn the_built_in_web_search_tool_is_flagged() {
    let t = translate(
        json!({"model": "m", "input": "hi", "tools": [
            {"type": "web_search"},
            {"type": "function", "name": "web_search", "parameters": {"type": "object"}}
        ]})
        .as_object()
        .unwrap(),
    )
    .unwrap();
    assert!(t.web_search);
    assert_eq!(t.hosted, ["web_search"]);
    // Left to Ollama when it runs the search; otherwise the client's own
    // function of that name is the only `web_search` there is.
    let tools = t.body["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0]["function"]["name"], "web_search");
    assert_eq!(t.echo.tools.len(), 2);
}

#[test]
fn tools_that_are_not_functions_are_left_out_of_the_body() {
    let t = translate(
        json!({"model": "m", "input": "hi", "tools": [
            {"type": "web_search_preview"},
            {"type": "function", "name": "shell", "parameters": {"type": "object"}},
            {"type": "file_search", "vector_store_ids": ["vs_1"]},
            {"type": "code_interpreter", "container": {"type": "auto"}},
            {"type": "computer_use_preview", "display_width": 1, "display_height": 1, "environment": "linux"},
            {"type": "image_generation"},
            {"type": "local_shell"},
            {"type": "mcp", "server_label": "x", "server_url": "https://example.com"},
            {"type": "file_search"}
        ]})
        .as_object()
        .unwrap(),
    )
    .unwrap();
    assert!(!t.web_search);
    assert_eq!(
        t.hosted,
        [
            "web_search_preview",
            "file_search",
            "code_interpreter",
            "computer_use_preview",
            "image_generation",
            "local_shell",
            "mcp"
        ]
    );
    let tools = t.body["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 1);
    assert_eq!(ToolSet::from_request(tools).unwrap().len(), 1);
    // Only hosted tools: no `tools` at all.
    let b = body(json!({"model": "m", "input": "hi", "tools": [{"type": "web_search"}]}));
    assert!(b.get("tools").is_none(), "{b}");
}

#[test]
fn tool_choice_takes_the_form_the_emulation_reads() {
    let tools = json!([{"type": "function", "name": "f", "parameters": {"type": "object"}}]);
    let cases = [
        (json!("auto"), json!("auto"), ToolChoice::Auto),
        (json!("none"), json!("none"), ToolChoice::None),
        (json!("required"), json!("required"), ToolChoice::Required),
        (
            json!({"type": "function", "name": "f"}),
            json!({"type": "function", "function": {"name": "f"}}),
            ToolChoice::Named("f".into()),
        ),
    ];
    for (choice, want, parsed) in cases {
        let b = body(json!({"model": "m", "input": "x", "tools": tools, "tool_choice": choice}));
        assert_eq!(b["tool_choice"], want);
        let set = ToolSet::from_request(b["tools"].as_array().unwrap()).unwrap();
        assert_eq!(
            ToolChoice::from_request(b.get("tool_choice"), &set).unwrap(),
            parsed
        );
    }
    let b = body(json!({"model": "m", "input": "x", "parallel_tool_calls": false}));
    assert_eq!(b["parallel_tool_calls"], false);
    assert!(b.get("tool_choice").is_none());
}

#[test]
fn a_json_text_format_sets_format() {
    let schema =
        json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]});
    let b = body(json!({"model": "m", "input": "x", "text": {"format":
        {"type": "json_schema", "name": "person", "strict": true, "schema": schema}}}));
    assert_eq!(b["format"], schema);
    // JSON mode, as `response_format: {"type": "json_object"}` on chat
    // completions (Ollama's own layer drops it).
    let b = body(json!({"model": "m", "input": "x", "text": {"format": {"type": "json_object"}}}));
    assert_eq!(b["format"], "json");
    for format in [
        json!({"type": "text"}),
        json!({"type": "json_schema", "schema": null}),
        json!({"type": "yaml"}),
    ] {
        let b = body(json!({"model": "m", "input": "x", "text": {"format": format}}));
        assert!(b.get("format").is_none(), "{format}");
    }
}

#[test]
fn reasoning_effort_maps_to_think_like_ollama() {
    for (effort, think) in [
        ("none", json!(false)),
        ("minimal", json!("low")),
        ("low", json!("low")),
        ("medium", json!("medium")),
        ("high", json!("high")),
        ("max", json!("max")),
        ("xhigh", json!("max")),
        ("ultra", json!("max")),
    ] {
        let b = body(json!({"model": "m", "input": "x", "reasoning": {"effort": effort}}));
        assert_eq!(b["think"], think, "{effort}");
    }
    assert!(
        body(json!({"model": "m", "input": "x"}))
            .get("think")
            .is_none()
    );
    assert_eq!(
        error(json!({"model": "m", "input": "x", "reasoning": {"effort": "extreme"}})),
        r#"invalid reasoning value: "extreme" (must be "minimal", "low", "medium", "high", "xhigh", "ultra", "max", or "none")"#
    );
}

#[test]
fn the_echo_keeps_what_the_response_object_repeats() {
    let t = translate(
        json!({
            "model": "m", "input": "x", "instructions": "I", "truncation": "auto",
            "tool_choice": "required", "parallel_tool_calls": false, "background": true,
            "reasoning": {"effort": "low", "summary": "auto"}, "top_p": 0.5,
            "max_output_tokens": 7, "text": {"format": {"type": "json_object"}}
        })
        .as_object()
        .unwrap(),
    )
    .unwrap();
    let e = &t.echo;
    assert_eq!(e.instructions, "I");
    assert_eq!(e.truncation.as_deref(), Some("auto"));
    assert_eq!(e.tool_choice, Some(json!("required")));
    assert_eq!(e.parallel_tool_calls, Some(false));
    assert!(e.background);
    assert_eq!((e.effort.as_str(), e.summary.as_str()), ("low", "auto"));
    assert_eq!(
        (e.top_p, e.temperature, e.max_output_tokens),
        (Some(0.5), None, Some(7))
    );
    assert_eq!(
        e.text_format.clone().map(Value::Object),
        Some(json!({"type": "json_object"}))
    );
}
