//! Unit tests of `response`.

use super::*;

fn meta() -> Meta {
    Meta {
        id: "chatcmpl-1".into(),
        created: 7,
        model: "m".into(),
        include_usage: true,
    }
}

#[test]
fn whole_answers_carry_string_arguments_and_tool_calls_reason() {
    let v = json!({"model":"m","message":{"role":"assistant","content":"","tool_calls":[{"id":"call_ab","function":{"index":0,"name":"f","arguments":{"a":1}}}]},"done":true,"done_reason":"stop","prompt_eval_count":3,"eval_count":4});
    let c = completion(&meta(), &v);
    assert_eq!(c["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(
        c["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"],
        "{\"a\":1}"
    );
    assert_eq!(
        c["choices"][0]["message"]["tool_calls"][0]["type"],
        "function"
    );
    assert_eq!(c["usage"]["total_tokens"], 7);
}

#[test]
fn streams_end_with_finish_usage_and_done() {
    let mut s = StreamState {
        meta: meta(),
        first: true,
        saw_calls: false,
    };
    let a = s.events(&json!({"message":{"role":"assistant","content":"Hi"},"done":false}));
    assert_eq!(a.len(), 1);
    let text = String::from_utf8(a[0].to_vec()).unwrap();
    assert!(
        text.starts_with("data: {")
            && text.contains(r#""delta":{"role":"assistant","content":"Hi"}"#)
    );
    let end = s.events(&json!({"message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","eval_count":2}));
    assert_eq!(end.len(), 3);
    assert!(
        String::from_utf8(end[0].to_vec())
            .unwrap()
            .contains(r#""finish_reason":"stop""#)
    );
    assert!(
        String::from_utf8(end[1].to_vec())
            .unwrap()
            .contains(r#""choices":[]"#)
    );
    assert_eq!(&end[2][..], b"data: [DONE]\n\n");
}
