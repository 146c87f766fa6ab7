//! Unit tests of `chunk`.

use super::*;
use crate::tools::ToolCall;

#[test]
fn a_call_chunk_is_shaped_as_ollama_streams_a_call() {
    let call = ToolCall {
        name: "get_time".into(),
        arguments: json!({"zone": "Asia/Tokyo", "a": 1}),
    };
    let calls = tools::ollama_tool_calls(&[call], 1);
    let mut v = call_chunk(&json!("gemma3:270m"), calls);
    v["created_at"] = json!("T");
    v["message"]["tool_calls"][0]["id"] = json!("ID");
    assert_eq!(
        crate::wire::to_go_json(&v),
        r#"{"model":"gemma3:270m","created_at":"T","message":{"role":"assistant","content":"","tool_calls":[{"id":"ID","function":{"index":1,"name":"get_time","arguments":{"zone":"Asia/Tokyo","a":1}}}]},"done":false}"#
    );
}
