//! Whole answers rendered as Anthropic messages.

use super::*;

#[test]
fn a_text_answer_is_a_message() {
    let v = json!({"model": "test-model", "created_at": "2025-01-01T00:00:00Z",
        "message": {"role": "assistant", "content": "Hello there!"},
        "done": true, "done_reason": "stop", "total_duration": 5, "prompt_eval_count": 10, "eval_count": 5});
    assert_eq!(
        crate::wire::go::marshal(&message(&meta(), &v)),
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
        crate::wire::go::marshal(&m["content"]),
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
        crate::wire::go::marshal(&message(&meta(), &v)),
        r#"{"id":"msg_123","type":"message","role":"assistant","model":"m","content":null,"usage":{"input_tokens":0,"output_tokens":0}}"#
    );
}

#[test]
fn message_ids_look_like_ollamas() {
    let a = crate::surface::anthropic::answer::message_id();
    let b = crate::surface::anthropic::answer::message_id();
    assert_ne!(a, b);
    assert_eq!(a.len(), 4 + 24);
    assert!(a.starts_with("msg_") && a[4..].bytes().all(|c| c.is_ascii_hexdigit()));
}
