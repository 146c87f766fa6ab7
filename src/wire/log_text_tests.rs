//! Unit tests of `log_text`.

use super::*;

#[test]
fn values_cannot_break_a_text_line() {
    assert!(matches!(escaped("plain value"), Cow::Borrowed(_)));
    assert_eq!(
        escaped("a\nINFO augur::access: request status=200\r\t\u{1b}[31m\u{85}\u{2028}"),
        "a\\nINFO augur::access: request status=200\\r\\t\\u{1b}[31m\\u{85}\\u{2028}"
    );
}

#[test]
fn json_lines_escape_what_serde_json_leaves() {
    let line = serde_json::json!({"tool": "a\u{2028}b\u{85}c\nd\u{2029}"}).to_string();
    let escaped = json_line(&line);
    assert!(
        !escaped.contains(['\u{2028}', '\u{2029}', '\u{85}', '\n']),
        "{escaped}"
    );
    let back: serde_json::Value = serde_json::from_str(&escaped).unwrap();
    assert_eq!(back["tool"], "a\u{2028}b\u{85}c\nd\u{2029}");
}
