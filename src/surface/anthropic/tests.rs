//! Translation and rendering, against the shapes of Ollama's
//! `anthropic/anthropic_test.go` and `middleware/anthropic_test.go`.

use http::{HeaderMap, HeaderValue, StatusCode};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::{error::ProxyError, pipeline::output::Output};

use super::{
    request::{Translated, relax_think, translate},
    response::{Meta, message, render, stop_reason},
    stream::{Converter, Event},
};

const IMAGE: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNk+A8AAQUBAScY42YAAAAASUVORK5CYII=";

fn tr(v: Value) -> Translated {
    translate(v.as_object().unwrap()).unwrap()
}

fn tr_err(v: Value) -> String {
    match translate(v.as_object().unwrap()) {
        Err(ProxyError::BadRequest(m)) => m,
        Err(other) => panic!("not a 400: {other:?}"),
        Ok(_) => panic!("translated"),
    }
}

fn body(t: &Translated) -> Value {
    Value::Object(t.body.clone())
}

fn req(messages: Value) -> Value {
    json!({"model": "m", "max_tokens": 1024, "messages": messages})
}

// ---------------------------------------------------------------- requests

#[test]
fn a_basic_request_is_ollamas_chat_body() {
    let t = tr(
        json!({"model": "test-model", "max_tokens": 1024, "messages": [{"role": "user", "content": "Hello"}]}),
    );
    assert_eq!(
        crate::wire::to_go_json(&body(&t)),
        r#"{"model":"test-model","messages":[{"role":"user","content":"Hello"}],"stream":false,"options":{"num_predict":1024}}"#
    );
    assert!(!t.stream && !t.thinking && !t.thinking_off && !t.web_search);
    assert_eq!(t.model, "test-model");
    assert_eq!(t.estimated_input_tokens, 2);
}

#[test]
fn system_prompts_come_first() {
    let t = tr(
        json!({"model": "m", "max_tokens": 1, "system": "You are a helpful assistant.",
        "messages": [{"role": "user", "content": "Hello"}]}),
    );
    assert_eq!(
        body(&t)["messages"][0],
        json!({"role": "system", "content": "You are a helpful assistant."})
    );
    let t = tr(json!({"model": "m", "max_tokens": 1,
        "system": [{"type": "text", "text": "You are helpful."}, {"type": "image"}, {"type": "text", "text": " Be concise."}],
        "messages": [{"role": "user", "content": "Hello"}]}));
    assert_eq!(
        body(&t)["messages"][0]["content"],
        "You are helpful. Be concise."
    );
    // An empty system prompt adds no message.
    let t = tr(
        json!({"model": "m", "max_tokens": 1, "system": "", "messages": [{"role": "user", "content": "Hello"}]}),
    );
    assert_eq!(body(&t)["messages"].as_array().unwrap().len(), 1);
}

#[test]
fn sampling_options_map_to_ollama_options() {
    let t = tr(
        json!({"model": "m", "max_tokens": 2048, "temperature": 0.7, "top_p": 0.9, "top_k": 40,
        "stop_sequences": ["\n", "END"], "stream": true, "metadata": {"user_id": "u"},
        "messages": [{"role": "user", "content": "Hello"}]}),
    );
    assert!(t.stream);
    let b = body(&t);
    assert_eq!(b["stream"], true);
    assert_eq!(
        b["options"],
        json!({"num_predict": 2048, "temperature": 0.7, "top_p": 0.9, "top_k": 40, "stop": ["\n", "END"]})
    );
}

#[test]
fn images_are_checked_and_kept() {
    let t = tr(req(json!([{"role": "user", "content": [
        {"type": "text", "text": "What's in this image?"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": IMAGE}}
    ]}])));
    assert_eq!(
        body(&t)["messages"][0],
        json!({"role": "user", "content": "What's in this image?", "images": [IMAGE]})
    );
    assert_eq!(
        tr_err(req(
            json!([{"role": "user", "content": [{"type": "image", "source": {"type": "url", "url": "https://x"}}]}])
        )),
        "invalid image source type: url. Only base64 images are supported."
    );
    assert_eq!(
        tr_err(req(
            json!([{"role": "user", "content": [{"type": "image"}]}])
        )),
        "invalid image source"
    );
    assert_eq!(
        tr_err(req(
            json!([{"role": "user", "content": [{"type": "image", "source": {"type": "base64", "data": "abc$"}}]}])
        )),
        "invalid base64 image data: illegal base64 data at input byte 3"
    );
}

#[test]
fn tool_history_keeps_ids_and_names_results() {
    let t = tr(req(json!([
        {"role": "user", "content": "What's the weather in Paris?"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "Use the tool.", "signature": "sig"},
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"location": "Paris"}},
            {"type": "tool_use", "id": "toolu_2", "name": "get_time", "input": {}}
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "Sunny, 22°C"},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": [{"type": "text", "text": "12:00"}, {"type": "text", "text": " UTC"}], "is_error": false},
            {"type": "tool_result", "tool_use_id": "toolu_unknown"},
            {"type": "text", "text": "Please describe it."}
        ]}
    ])));
    let b = body(&t);
    assert_eq!(
        b["messages"],
        json!([
            {"role": "user", "content": "What's the weather in Paris?"},
            {"role": "assistant", "content": "Checking.", "thinking": "Use the tool.", "tool_calls": [
                {"id": "toolu_1", "function": {"index": 0, "name": "get_weather", "arguments": {"location": "Paris"}}},
                {"id": "toolu_2", "function": {"index": 0, "name": "get_time", "arguments": {}}}
            ]},
            {"role": "tool", "content": "Sunny, 22°C", "tool_name": "get_weather", "tool_call_id": "toolu_1"},
            {"role": "tool", "content": "12:00 UTC", "tool_name": "get_time", "tool_call_id": "toolu_2"},
            {"role": "tool", "content": "", "tool_call_id": "toolu_unknown"},
            {"role": "user", "content": "Please describe it."}
        ])
    );
}

#[test]
fn tool_results_outside_user_turns_follow_the_message() {
    let t = tr(req(json!([
        {"role": "Assistant", "content": [
            {"type": "tool_use", "id": "a", "name": "f"},
            {"type": "tool_result", "tool_use_id": "a", "content": "r"}
        ]}
    ])));
    assert_eq!(
        body(&t)["messages"],
        json!([
            {"role": "assistant", "content": "", "tool_calls": [{"id": "a", "function": {"index": 0, "name": "f", "arguments": {}}}]},
            {"role": "tool", "content": "r", "tool_name": "f", "tool_call_id": "a"}
        ])
    );
}

#[test]
fn tool_result_images_and_empty_messages() {
    let t = tr(req(json!([
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_img", "content": [
            {"type": "text", "text": "Attached image"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": IMAGE}}
        ]}]},
        {"role": "user", "content": ""},
        {"role": "user", "content": null},
        {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "x"}]}
    ])));
    assert_eq!(
        body(&t)["messages"],
        json!([{"role": "tool", "content": "Attached image", "images": [IMAGE], "tool_call_id": "call_img"}])
    );
    assert_eq!(
        tr_err(req(
            json!([{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": [{"type": "image", "source": "x"}]}]}])
        )),
        "invalid tool_result image source"
    );
}

#[test]
fn a_thinking_only_block_makes_a_message() {
    let t = tr(req(json!([
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "Let me think about this..."}]}
    ])));
    assert_eq!(
        body(&t)["messages"][1],
        json!({"role": "assistant", "content": "", "thinking": "Let me think about this..."})
    );
}

#[test]
fn server_web_search_history_is_a_tool_exchange() {
    let t = tr(req(json!([{"role": "assistant", "content": [
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "q"}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [
            {"type": "web_search_result", "title": "T", "url": "https://a"},
            {"type": "web_search_result", "title": "U", "url": "https://b"}
        ]},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_2", "content": {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"}}
    ]}])));
    let b = body(&t);
    assert_eq!(
        b["messages"][0]["tool_calls"][0]["function"]["name"],
        "web_search"
    );
    assert_eq!(
        b["messages"][1]["content"],
        "- T: https://a\n- U: https://b\n"
    );
    assert_eq!(b["messages"][1]["tool_name"], "web_search");
    assert_eq!(
        b["messages"][2]["content"],
        "web_search_tool_result_error: max_uses_exceeded"
    );
}

#[test]
fn tools_become_function_tools_with_the_whole_schema() {
    let schema = json!({"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"], "additionalProperties": false});
    let t = tr(
        json!({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "Hi"}],
        "tools": [
            {"name": "get_weather", "description": "Get current weather", "input_schema": schema, "cache_control": {"type": "ephemeral"}},
            {"type": "custom", "name": "noop"}
        ]}),
    );
    assert_eq!(
        body(&t)["tools"],
        json!([
            {"type": "function", "function": {"name": "get_weather", "description": "Get current weather", "parameters": schema}},
            {"type": "function", "function": {"name": "noop"}}
        ])
    );
    assert!(!t.web_search);
}

#[test]
fn builtin_web_search_replaces_a_custom_one() {
    let t = tr(
        json!({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "Hi"}],
        "tools": [
            {"type": "web_search_20250305", "name": "web_search", "max_uses": 3},
            {"type": "custom", "name": "web_search", "input_schema": {"type": "invalid"}},
            {"type": "custom", "name": "get_weather", "input_schema": {"type": "object"}}
        ]}),
    );
    let b = body(&t);
    let names: Vec<&str> = b["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["web_search", "get_weather"]);
    assert_eq!(
        b["tools"][0]["function"]["parameters"],
        json!({"type": "object", "required": ["query"], "properties": {"query": {"type": "string", "description": "The search query to look up on the web"}}})
    );
    assert!(t.web_search);
}

#[test]
fn tool_choice_takes_the_form_emulation_reads() {
    let with = |choice: Value| {
        let t = tr(
            json!({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "Hi"}],
            "tools": [{"name": "f", "input_schema": {"type": "object"}}], "tool_choice": choice}),
        );
        let b = body(&t);
        (
            b.get("tool_choice").cloned(),
            b.get("parallel_tool_calls").cloned(),
        )
    };
    assert_eq!(with(json!({"type": "auto"})), (Some(json!("auto")), None));
    assert_eq!(
        with(json!({"type": "any"})),
        (Some(json!("required")), None)
    );
    assert_eq!(with(json!({"type": "none"})), (Some(json!("none")), None));
    assert_eq!(
        with(json!({"type": "tool", "name": "f", "disable_parallel_tool_use": true})),
        (
            Some(json!({"type": "function", "function": {"name": "f"}})),
            Some(json!(false))
        )
    );
    assert_eq!(
        with(json!({"type": "auto", "disable_parallel_tool_use": false})),
        (Some(json!("auto")), None)
    );
    assert_eq!(
        with(json!({"type": "tool"})),
        (Some(json!({"type": "tool"})), None)
    );
    assert_eq!(with(json!({"type": "sometimes"})), (None, None));
    assert_eq!(with(json!(null)), (None, None));
}

#[test]
fn tool_choice_reads_back_through_augurs_parser() {
    use crate::tools::{ToolChoice, ToolSet};
    let t = tr(
        json!({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "Hi"}],
        "tools": [{"name": "f", "input_schema": {"type": "object"}}],
        "tool_choice": {"type": "tool", "name": "f"}}),
    );
    let set = ToolSet::from_request(t.body["tools"].as_array().unwrap()).unwrap();
    assert_eq!(
        ToolChoice::from_request(t.body.get("tool_choice"), &set).unwrap(),
        ToolChoice::Named("f".into())
    );
    for (anthropic, want) in [("any", ToolChoice::Required), ("none", ToolChoice::None)] {
        let t = tr(
            json!({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "Hi"}],
            "tools": [{"name": "f"}], "tool_choice": {"type": anthropic}}),
        );
        assert_eq!(
            ToolChoice::from_request(t.body.get("tool_choice"), &set).unwrap(),
            want
        );
    }
}

#[test]
fn thinking_maps_to_think() {
    let think = |extra: Value| {
        let mut r =
            json!({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "Hi"}]});
        for (k, v) in extra.as_object().unwrap() {
            r[k] = v.clone();
        }
        let t = tr(r);
        (t.body.get("think").cloned(), t.thinking, t.thinking_off)
    };
    assert_eq!(
        think(json!({"thinking": {"type": "enabled", "budget_tokens": 1000}})),
        (Some(json!(true)), true, false)
    );
    assert_eq!(
        think(json!({"thinking": {"type": "disabled"}, "output_config": {"effort": "high"}})),
        (Some(json!(false)), false, true)
    );
    assert_eq!(
        think(json!({"thinking": {"type": "adaptive"}, "output_config": {"effort": "high"}})),
        (Some(json!("high")), true, false)
    );
    assert_eq!(
        think(json!({"output_config": {"effort": " XHigh "}})),
        (Some(json!("high")), true, false)
    );
    assert_eq!(
        think(json!({"output_config": {"effort": "max"}})),
        (Some(json!("max")), true, false)
    );
    assert_eq!(
        think(json!({"thinking": {"type": "adaptive"}})),
        (None, false, false)
    );
    assert_eq!(
        think(json!({"output_config": {"effort": "extreme"}})),
        (None, false, false)
    );
}

#[test]
fn relaxing_thinking_drops_a_truthy_think_only() {
    let mut b = tr(json!({"model": "m", "max_tokens": 1, "thinking": {"type": "enabled"}, "messages": [{"role": "user", "content": "Hi"}]})).body;
    assert!(relax_think(&mut b));
    assert!(!b.contains_key("think"));
    let mut b = tr(json!({"model": "m", "max_tokens": 1, "thinking": {"type": "disabled"}, "messages": [{"role": "user", "content": "Hi"}]})).body;
    assert!(!relax_think(&mut b));
    assert_eq!(b["think"], false);
}

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

// ---------------------------------------------------------------- whole answers

fn meta() -> Meta {
    Meta {
        id: "msg_123".into(),
        model: "test-model".into(),
        estimated_input_tokens: 0,
        show_thinking: true,
    }
}

#[test]
fn a_text_answer_is_a_message() {
    let v = json!({"model": "test-model", "created_at": "2025-01-01T00:00:00Z",
        "message": {"role": "assistant", "content": "Hello there!"},
        "done": true, "done_reason": "stop", "total_duration": 5, "prompt_eval_count": 10, "eval_count": 5});
    assert_eq!(
        super::go::marshal(&message(&meta(), &v)),
        r#"{"id":"msg_123","type":"message","role":"assistant","model":"test-model","content":[{"type":"text","text":"Hello there!"}],"stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":5}}"#
    );
}

#[test]
fn tool_calls_are_tool_use_blocks_with_their_ids() {
    let v = json!({"model": "test-model", "message": {"role": "assistant", "content": "",
        "tool_calls": [
            {"id": "call_123", "function": {"index": 0, "name": "get_weather", "arguments": {"location": "Paris", "days": 2.0}}},
            {"id": "call_456", "function": {"index": 1, "name": "get_time", "arguments": {}}}
        ]}, "done": true, "done_reason": "stop", "prompt_eval_count": 3, "eval_count": 4});
    let m = message(&meta(), &v);
    assert_eq!(
        super::go::marshal(&m["content"]),
        r#"[{"type":"tool_use","id":"call_123","name":"get_weather","input":{"location":"Paris","days":2}},{"type":"tool_use","id":"call_456","name":"get_time","input":{}}]"#
    );
    assert_eq!(m["stop_reason"], "tool_use");
}

#[test]
fn thinking_comes_first_unless_turned_off() {
    let v = json!({"model": "m", "message": {"role": "assistant", "content": "The answer is 42.", "thinking": "Let me think about this..."},
        "done": true, "done_reason": "stop"});
    let m = message(&meta(), &v);
    assert_eq!(
        m["content"],
        json!([
            {"type": "thinking", "thinking": "Let me think about this..."},
            {"type": "text", "text": "The answer is 42."}
        ])
    );
    assert_eq!(m["usage"], json!({"input_tokens": 0, "output_tokens": 0}));
    let off = Meta {
        show_thinking: false,
        ..meta()
    };
    assert_eq!(
        message(&off, &v)["content"],
        json!([{"type": "text", "text": "The answer is 42."}])
    );
}

#[test]
fn stop_reasons_map_like_ollama() {
    for (reason, calls, want) in [
        ("stop", false, "end_turn"),
        ("length", false, "max_tokens"),
        ("stop", true, "tool_use"),
        ("length", true, "tool_use"),
        ("other", false, "stop_sequence"),
        ("", false, ""),
    ] {
        assert_eq!(stop_reason(reason, calls), want, "{reason} {calls}");
    }
    let v = json!({"model": "m", "message": {"role": "assistant", "content": "cut"}, "done": true, "done_reason": "length", "eval_count": 7});
    assert_eq!(message(&meta(), &v)["stop_reason"], "max_tokens");
    // No reason, no block: both as Ollama writes them.
    let v = json!({"model": "m", "message": {"role": "assistant", "content": ""}, "done": true});
    assert_eq!(
        super::go::marshal(&message(&meta(), &v)),
        r#"{"id":"msg_123","type":"message","role":"assistant","model":"m","content":null,"usage":{"input_tokens":0,"output_tokens":0}}"#
    );
}

#[test]
fn message_ids_look_like_ollamas() {
    let a = super::response::message_id();
    let b = super::response::message_id();
    assert_ne!(a, b);
    assert_eq!(a.len(), 4 + 24);
    assert!(a.starts_with("msg_") && a[4..].bytes().all(|c| c.is_ascii_hexdigit()));
}

// ---------------------------------------------------------------- streams

fn names(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .map(|e| match e.name {
            "content_block_start" => format!(
                "start:{}:{}",
                e.data["content_block"]["type"].as_str().unwrap(),
                e.data["index"]
            ),
            "content_block_delta" => format!(
                "delta:{}:{}",
                e.data["delta"]["type"].as_str().unwrap(),
                e.data["index"]
            ),
            "content_block_stop" => format!("stop:{}", e.data["index"]),
            other => other.to_string(),
        })
        .collect()
}

fn chunk(message: Value) -> Value {
    json!({"model": "test-model", "created_at": "2025-01-01T00:00:00Z", "message": message, "done": false})
}

fn done(reason: &str, prompt: u64, eval: u64) -> Value {
    json!({"model": "test-model", "created_at": "2025-01-01T00:00:00Z", "message": {"role": "assistant", "content": ""},
        "done": true, "done_reason": reason, "prompt_eval_count": prompt, "eval_count": eval})
}

#[test]
fn a_text_stream_is_framed_like_ollama() {
    let mut c = Converter::new(meta());
    let first = c.process(&json!({"model": "test-model", "message": {"role": "assistant", "content": "Hello"}, "done": false, "prompt_eval_count": 10}));
    let frames: Vec<String> = first
        .iter()
        .map(|e| String::from_utf8(e.frame().to_vec()).unwrap())
        .collect();
    assert_eq!(
        frames,
        [
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_123\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"test-model\",\"content\":[],\"usage\":{\"input_tokens\":10,\"output_tokens\":0}}}\n\n",
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\"}}\n\n",
        ]
    );
    let last = c.process(
        &json!({"model": "test-model", "message": {"role": "assistant", "content": " world!"},
        "done": true, "done_reason": "stop", "prompt_eval_count": 10, "eval_count": 5}),
    );
    assert_eq!(
        names(&last),
        [
            "delta:text_delta:0",
            "stop:0",
            "message_delta",
            "message_stop"
        ]
    );
    assert_eq!(
        last[2].data,
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"input_tokens": 10, "output_tokens": 5}})
    );
    assert_eq!(last[3].data, json!({"type": "message_stop"}));
}

#[test]
fn message_start_falls_back_to_the_estimate() {
    let mut c = Converter::new(Meta {
        estimated_input_tokens: 42,
        ..meta()
    });
    let e = c.process(&chunk(json!({"role": "assistant", "content": "x"})));
    assert_eq!(e[0].data["message"]["usage"]["input_tokens"], 42);
    // The final usage is the done chunk's own.
    let e = c.process(&done("stop", 0, 3));
    let delta = e.iter().find(|e| e.name == "message_delta").unwrap();
    assert_eq!(
        delta.data["usage"],
        json!({"input_tokens": 0, "output_tokens": 3})
    );
}

#[test]
fn thinking_then_a_tool_call_closes_thinking_first() {
    let mut c = Converter::new(meta());
    let mut all = c.process(&chunk(
        json!({"role": "assistant", "content": "", "thinking": "I should call the tool."}),
    ));
    all.extend(c.process(&chunk(json!({"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_abc", "function": {"index": 0, "name": "ask_user", "arguments": {"question": "cats or dogs?"}}}
    ]}))));
    all.extend(c.process(&done("stop", 10, 5)));
    assert_eq!(
        names(&all),
        [
            "message_start",
            "start:thinking:0",
            "delta:thinking_delta:0",
            "stop:0",
            "start:tool_use:1",
            "delta:input_json_delta:1",
            "stop:1",
            "message_delta",
            "message_stop"
        ]
    );
    assert_eq!(
        all[1].data["content_block"],
        json!({"type": "thinking", "thinking": ""})
    );
    assert_eq!(
        all[4].data["content_block"],
        json!({"type": "tool_use", "id": "call_abc", "name": "ask_user", "input": {}})
    );
    assert_eq!(
        all[5].data["delta"],
        json!({"type": "input_json_delta", "partial_json": "{\"question\":\"cats or dogs?\"}"})
    );
    assert_eq!(all[7].data["delta"], json!({"stop_reason": "tool_use"}));
}

#[test]
fn text_before_thinking_opens_new_blocks() {
    let mut c = Converter::new(meta());
    let mut all = Vec::new();
    for ch in [
        chunk(json!({"role": "assistant", "content": "---\n"})),
        chunk(json!({"role": "assistant", "content": "", "thinking": "Let me think."})),
        json!({"message": {"role": "assistant", "content": "The answer."}, "done": true, "done_reason": "stop", "prompt_eval_count": 10, "eval_count": 5}),
    ] {
        all.extend(c.process(&ch));
    }
    assert_eq!(
        names(&all),
        [
            "message_start",
            "start:text:0",
            "delta:text_delta:0",
            "stop:0",
            "start:thinking:1",
            "delta:thinking_delta:1",
            "stop:1",
            "start:text:2",
            "delta:text_delta:2",
            "stop:2",
            "message_delta",
            "message_stop"
        ]
    );
}

#[test]
fn tool_calls_in_a_stream_each_get_a_block_once() {
    let mut c = Converter::new(meta());
    let call = |id: &str, n: u64| {
        chunk(json!({"role": "assistant", "content": "", "tool_calls": [
            {"id": id, "function": {"index": n, "name": "f", "arguments": {"n": n, "s": "<b>"}}}
        ]}))
    };
    let mut all = c.process(&chunk(json!({"role": "assistant", "content": "Sure."})));
    all.extend(c.process(&call("call_1", 0)));
    all.extend(c.process(&call("call_2", 1)));
    all.extend(c.process(&call("call_1", 0)));
    all.extend(c.process(&done("stop", 1, 2)));
    assert_eq!(
        names(&all),
        [
            "message_start",
            "start:text:0",
            "delta:text_delta:0",
            "stop:0",
            "start:tool_use:1",
            "delta:input_json_delta:1",
            "stop:1",
            "start:tool_use:2",
            "delta:input_json_delta:2",
            "stop:2",
            "message_delta",
            "message_stop"
        ]
    );
    // Go's json.Marshal of the arguments is HTML-safe; the event escapes it again.
    assert_eq!(
        all[5].data["delta"]["partial_json"],
        "{\"n\":0,\"s\":\"\\u003cb\\u003e\"}"
    );
    assert!(
        String::from_utf8(all[5].frame().to_vec())
            .unwrap()
            .contains(r#""partial_json":"{\"n\":0,\"s\":\"\\u003cb\\u003e\"}""#)
    );
}

#[test]
fn a_length_stop_and_a_thinking_only_stream() {
    let mut c = Converter::new(meta());
    let mut all = c.process(&chunk(
        json!({"role": "assistant", "content": "", "thinking": "hmm"}),
    ));
    all.extend(c.process(&done("length", 1, 2)));
    assert_eq!(
        names(&all),
        [
            "message_start",
            "start:thinking:0",
            "delta:thinking_delta:0",
            "stop:0",
            "message_delta",
            "message_stop"
        ]
    );
    assert_eq!(all[4].data["delta"], json!({"stop_reason": "max_tokens"}));

    // Thinking turned off: none of it is sent.
    let mut c = Converter::new(Meta {
        show_thinking: false,
        ..meta()
    });
    let mut all = c.process(&chunk(
        json!({"role": "assistant", "content": "", "thinking": "hmm"}),
    ));
    all.extend(c.process(&chunk(json!({"role": "assistant", "content": "ok"}))));
    all.extend(c.process(&json!({"message": {"role": "assistant", "content": ""}, "done": true})));
    assert_eq!(
        names(&all),
        [
            "message_start",
            "start:text:0",
            "delta:text_delta:0",
            "stop:0",
            "message_delta",
            "message_stop"
        ]
    );
    assert_eq!(all[4].data["delta"], json!({}));
}

#[test]
fn error_events_have_anthropics_shape() {
    let e = Event::error(&ProxyError::UpstreamUnavailable("down".into()));
    assert_eq!(
        String::from_utf8(e.frame().to_vec()).unwrap(),
        "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"upstream unavailable: down\"}}\n\n"
    );
    let e = Event::error(&ProxyError::upstream(
        StatusCode::SERVICE_UNAVAILABLE,
        "busy".into(),
    ));
    assert_eq!(
        e.data["error"],
        json!({"type": "overloaded_error", "message": "busy"})
    );
    let e = Event::error(&ProxyError::Internal("secret".into()));
    assert_eq!(e.data["error"]["message"], "internal error");
}

// ---------------------------------------------------------------- rendering

async fn body_text(r: axum::response::Response) -> String {
    let bytes = axum::body::to_bytes(r.into_body(), usize::MAX)
        .await
        .unwrap();
    String::from_utf8(bytes.to_vec()).unwrap()
}

fn augur_headers() -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert("x-augur-emulated", HeaderValue::from_static("tools"));
    h
}

#[tokio::test]
async fn a_whole_answer_renders_as_json() {
    let v = json!({"model": "test-model", "message": {"role": "assistant", "content": "Hi <there>"},
        "done": true, "done_reason": "stop", "prompt_eval_count": 1, "eval_count": 2});
    let r = render(
        meta(),
        Output::Full {
            value: v,
            headers: augur_headers(),
        },
    );
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["content-type"], "application/json");
    assert_eq!(r.headers()["x-augur-emulated"], "tools");
    assert_eq!(
        body_text(r).await,
        "{\"id\":\"msg_123\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"test-model\",\"content\":[{\"type\":\"text\",\"text\":\"Hi \\u003cthere\\u003e\"}],\"stop_reason\":\"end_turn\",\"usage\":{\"input_tokens\":1,\"output_tokens\":2}}\n"
    );
}

fn parse_sse(text: &str) -> Vec<(String, Value)> {
    assert!(text.ends_with("\n\n"), "{text}");
    text.split_terminator("\n\n")
        .map(|frame| {
            let (event, data) = frame.split_once('\n').unwrap();
            let name = event.strip_prefix("event: ").unwrap().to_string();
            let data = data.strip_prefix("data: ").unwrap();
            assert_eq!(serde_json::from_str::<Value>(data).unwrap()["type"], name);
            (name, serde_json::from_str(data).unwrap())
        })
        .collect()
}

#[tokio::test]
async fn a_stream_renders_as_sse_events() {
    let (tx, rx) = mpsc::channel(8);
    let r = render(
        meta(),
        Output::Stream {
            rx,
            headers: augur_headers(),
        },
    );
    assert_eq!(r.headers()["content-type"], "text/event-stream");
    assert_eq!(r.headers()["cache-control"], "no-cache");
    assert_eq!(r.headers()["x-augur-emulated"], "tools");
    for item in [
        chunk(json!({"role": "assistant", "content": "Let me check."})),
        chunk(json!({"role": "assistant", "content": "", "tool_calls": [
            {"id": "call_x1", "function": {"index": 0, "name": "get_weather", "arguments": {"city": "Paris"}}}
        ]})),
        done("stop", 12, 8),
        // Nothing after the done chunk is read.
        chunk(json!({"role": "assistant", "content": "late"})),
    ] {
        tx.send(Ok(item)).await.unwrap();
    }
    let events = parse_sse(&body_text(r).await);
    let kinds: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    assert_eq!(events[4].1["content_block"]["id"], "call_x1");
    assert_eq!(events[5].1["delta"]["partial_json"], "{\"city\":\"Paris\"}");
    assert_eq!(
        events[7].1,
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"input_tokens": 12, "output_tokens": 8}})
    );
}

#[tokio::test]
async fn events_go_out_before_the_stream_ends() {
    use futures_util::StreamExt;
    let (tx, rx) = mpsc::channel(8);
    let r = render(
        meta(),
        Output::Stream {
            rx,
            headers: HeaderMap::new(),
        },
    );
    let mut frames = r.into_body().into_data_stream();
    tx.send(Ok(chunk(json!({"role": "assistant", "content": "Hi"}))))
        .await
        .unwrap();
    // Each event is its own frame, available while the producer is still open.
    let mut got = Vec::new();
    for _ in 0..3 {
        got.push(String::from_utf8(frames.next().await.unwrap().unwrap().to_vec()).unwrap());
    }
    assert!(got[0].starts_with("event: message_start\n"));
    assert!(got[1].starts_with("event: content_block_start\n"));
    assert!(got[2].starts_with("event: content_block_delta\n"));
    drop(tx);
    assert!(frames.next().await.is_none());
}

#[tokio::test]
async fn a_mid_stream_error_ends_with_an_error_event() {
    let (tx, rx) = mpsc::channel(8);
    let r = render(
        meta(),
        Output::Stream {
            rx,
            headers: HeaderMap::new(),
        },
    );
    tx.send(Ok(chunk(json!({"role": "assistant", "content": "Hal"}))))
        .await
        .unwrap();
    tx.send(Err(ProxyError::UpstreamTimeout(30_000)))
        .await
        .unwrap();
    tx.send(Ok(done("stop", 1, 1))).await.unwrap();
    let events = parse_sse(&body_text(r).await);
    let kinds: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "error"
        ]
    );
    assert_eq!(
        events[3].1,
        json!({"type": "error", "error": {"type": "api_error", "message": "upstream timed out after 30000 ms"}})
    );
}

#[tokio::test]
async fn an_error_first_is_the_only_event() {
    let (tx, rx) = mpsc::channel(8);
    let r = render(
        meta(),
        Output::Stream {
            rx,
            headers: HeaderMap::new(),
        },
    );
    tx.send(Err(ProxyError::Limited {
        status: StatusCode::TOO_MANY_REQUESTS,
        message: "slow down".into(),
        headers: HeaderMap::new(),
    }))
    .await
    .unwrap();
    let events = parse_sse(&body_text(r).await);
    assert_eq!(events.len(), 1);
    assert_eq!(
        events[0].1["error"],
        json!({"type": "rate_limit_error", "message": "slow down"})
    );
}

#[test]
fn meta_comes_from_the_translation() {
    let t = tr(
        json!({"model": "gemma3", "max_tokens": 5, "thinking": {"type": "disabled"},
        "messages": [{"role": "user", "content": "Hello, world!"}]}),
    );
    let m = Meta::new(&t);
    assert_eq!(m.model, "gemma3");
    assert_eq!(m.estimated_input_tokens, 4);
    assert!(!m.show_thinking);
    assert!(m.id.starts_with("msg_"));
}
