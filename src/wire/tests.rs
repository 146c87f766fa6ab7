//! Unit tests of `wire`.

#[test]
fn header_text_escapes_what_a_header_cannot_hold() {
    let h = |t: &str| super::header_text(t).to_str().unwrap().to_string();
    assert_eq!(h("gemma3:4b"), "gemma3:4b");
    assert_eq!(
        h("code_fence, trailing_comma"),
        "code_fence, trailing_comma"
    );
    assert_eq!(h("big\r\nX-Evil: 1"), "big%0D%0AX-Evil: 1");
    assert_eq!(h("a\tb\u{7f}\0"), "a%09b%7F%00");
    assert_eq!(h("Ünï 100%"), "%C3%9Cn%C3%AF 100%25");
}

#[test]
fn json_len_is_the_compact_length() {
    let v = serde_json::json!({"a": [1, "x\"y", null], "b": {"c": true}});
    assert_eq!(super::json_len(&v), v.to_string().len());
}
