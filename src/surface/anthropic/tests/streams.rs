//! Ollama chunks converted into Anthropic SSE events.

use super::*;

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

/// The events of `chunks` converted in order under `meta`.
fn convert(meta: Meta, chunks: &[Value]) -> Vec<Event> {
    let mut c = Converter::new(meta);
    chunks.iter().flat_map(|ch| c.process(ch)).collect()
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
    let all = convert(
        meta(),
        &[
            chunk(
                json!({"role": "assistant", "content": "", "thinking": "I should call the tool."}),
            ),
            chunk(json!({"role": "assistant", "content": "", "tool_calls": [
                {"id": "call_abc", "function": {"index": 0, "name": "ask_user", "arguments": {"question": "cats or dogs?"}}}
            ]})),
            done("stop", 10, 5),
        ],
    );
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
    let all = convert(
        meta(),
        &[
            chunk(json!({"role": "assistant", "content": "---\n"})),
            chunk(json!({"role": "assistant", "content": "", "thinking": "Let me think."})),
            json!({"message": {"role": "assistant", "content": "The answer."}, "done": true, "done_reason": "stop", "prompt_eval_count": 10, "eval_count": 5}),
        ],
    );
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
    let call = |id: &str, n: u64| {
        chunk(json!({"role": "assistant", "content": "", "tool_calls": [
            {"id": id, "function": {"index": n, "name": "f", "arguments": {"n": n, "s": "<b>"}}}
        ]}))
    };
    let all = convert(
        meta(),
        &[
            chunk(json!({"role": "assistant", "content": "Sure."})),
            call("call_1", 0),
            call("call_2", 1),
            call("call_1", 0),
            done("stop", 1, 2),
        ],
    );
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
    let thinking = chunk(json!({"role": "assistant", "content": "", "thinking": "hmm"}));
    let all = convert(meta(), &[thinking.clone(), done("length", 1, 2)]);
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
    let off = Meta {
        show_thinking: false,
        ..meta()
    };
    let all = convert(
        off,
        &[
            thinking,
            chunk(json!({"role": "assistant", "content": "ok"})),
            json!({"message": {"role": "assistant", "content": ""}, "done": true}),
        ],
    );
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
