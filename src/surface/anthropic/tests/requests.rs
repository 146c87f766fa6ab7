//! Requests translated into Ollama chat bodies, and the ones refused.

use super::*;

#[test]
fn a_basic_request_is_ollamas_chat_body() {
    let t = tr(
        json!({"model": "test-model", "max_tokens": 1024, "messages": [{"role": "user", "content": "Hello"}]}),
    );
    assert_eq!(
        crate::wire::to_go_json(&body(&t)),
        r#"{"model":"test-model","messages":[{"role":"user","content":"Hello"}],"stream":false,"options":{"num_predict":1024}}"#
    );
    assert_eq!(t.body["stream"], false);
    assert!(!t.body.contains_key("think") && !t.thinking_off && !t.web_search);
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
    assert_eq!(t.body["stream"], true);
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
fn builtin_web_search_is_left_out_with_a_custom_one_of_its_name() {
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
    // The server tool is left out of the translated body (Ollama runs it
    // from the client's own request), and so is a client tool of its name.
    assert_eq!(names, ["get_weather"]);
    assert!(t.web_search);
    assert_eq!(t.server_tools, ["web_search_20250305"]);
}

#[test]
fn deferred_tools_are_not_offered() {
    let t = tr(
        json!({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "Hi"}],
        "tools": [
            {"name": "DeferredToolPlaceholder", "description": "never call this tool", "defer_loading": true,
             "input_schema": {"type": "object"}},
            {"name": "Read", "defer_loading": false, "input_schema": {"type": "object"}}
        ]}),
    );
    let b = body(&t);
    assert_eq!(b["tools"].as_array().map(Vec::len), Some(1));
    assert_eq!(b["tools"][0]["function"]["name"], "Read");
    let t = tr(
        json!({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "Hi"}],
        "tools": [{"name": "Later", "defer_loading": true, "input_schema": {"type": "object"}}]}),
    );
    assert!(body(&t).get("tools").is_none());
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
        (t.body.get("think").cloned(), t.thinking_off)
    };
    assert_eq!(
        think(json!({"thinking": {"type": "enabled", "budget_tokens": 1000}})),
        (Some(json!(true)), false)
    );
    assert_eq!(
        think(json!({"thinking": {"type": "disabled"}, "output_config": {"effort": "high"}})),
        (Some(json!(false)), true)
    );
    assert_eq!(
        think(json!({"thinking": {"type": "adaptive"}, "output_config": {"effort": "high"}})),
        (Some(json!("high")), false)
    );
    assert_eq!(
        think(json!({"output_config": {"effort": " XHigh "}})),
        (Some(json!("high")), false)
    );
    assert_eq!(
        think(json!({"output_config": {"effort": "max"}})),
        (Some(json!("max")), false)
    );
    assert_eq!(
        think(json!({"thinking": {"type": "adaptive"}})),
        (None, false)
    );
    assert_eq!(
        think(json!({"output_config": {"effort": "extreme"}})),
        (None, false)
    );
}

#[test]
fn relaxing_thinking_drops_a_truthy_think_only() {
    let mut b = tr(json!({"model": "m", "max_tokens": 1, "thinking": {"type": "enabled"}, "messages": [{"role": "user", "content": "Hi"}]})).body;
    assert!(crate::pipeline::plan::relax_think(&mut b));
    assert!(!b.contains_key("think"));
    let mut b = tr(json!({"model": "m", "max_tokens": 1, "thinking": {"type": "disabled"}, "messages": [{"role": "user", "content": "Hi"}]})).body;
    assert!(!crate::pipeline::plan::relax_think(&mut b));
    assert_eq!(b["think"], false);
}
