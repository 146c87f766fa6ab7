//! Unit tests of `gate`.

use super::*;

#[test]
fn held_chunks_make_one_whole_answer() {
    let held = [
        json!({"message": {"role": "assistant", "content": "", "thinking": "hm"}, "done": false}),
        json!({"message": {"role": "assistant", "content": "",
            "tool_calls": [{"function": {"name": "a", "arguments": {}}}]}, "done": false}),
        json!({"message": {"role": "assistant", "content": "",
            "tool_calls": [{"function": {"name": "b", "arguments": {}}}]}, "done": false}),
    ];
    let done = json!({"model": "m", "message": {"role": "assistant", "content": ""},
        "done": true, "eval_count": 9});
    let v = whole(&held, &done);
    assert_eq!(v["eval_count"], 9);
    assert_eq!(v["message"]["thinking"], "hm");
    let names: Vec<&Value> = v["message"]["tool_calls"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| &c["function"]["name"])
        .collect();
    assert_eq!(names, [&json!("a"), &json!("b")]);
}

#[test]
fn a_whole_answer_streams_as_content_calls_done() {
    let answer = json!({"model": "m", "done": true, "eval_count": 3, "message": {
        "role": "assistant", "content": "",
        "tool_calls": [{"function": {"name": "a", "arguments": {}}}]}});
    let chunks = chunks_of(&answer, &json!("m"));
    assert_eq!(chunks.len(), 2);
    assert_eq!(
        chunks[0]["message"]["tool_calls"][0]["function"]["name"],
        "a"
    );
    assert_eq!(chunks[0]["done"], false);
    assert_eq!(chunks[1]["done"], true);
    assert_eq!(chunks[1]["eval_count"], 3);
    assert!(chunks[1]["message"].get("tool_calls").is_none());
}
