//! Unit tests of `exchange`.

use super::*;

#[test]
fn lines_keep_their_offsets_and_stop_at_the_budget() {
    let mut budget = 12;
    let mut lines = Lines::default();
    lines.push(1, b"{\"a\":1}\n{\"b", &mut budget);
    lines.push(5, b"\":2}\n", &mut budget);
    assert!(lines.truncated, "12 bytes of 14");
    assert_eq!(budget, 0);
    assert_eq!(
        lines.take_json(),
        json!([{"ms": 1, "data": "{\"a\":1}\n"}, {"ms": 5, "data": "{\"b\""}])
    );
    let mut budget = 2;
    assert_eq!(cut("héllo".as_bytes(), &mut budget), ("h".into(), true));
    assert_eq!(budget, 1, "a character is not split");
}

#[test]
fn done_fields_are_the_augur_fields_of_json_and_sse_lines() {
    let lines = [
        "{\"done\":false}\n",
        "data: {\"augur_guard\":\"flagged\",\"x\":1}\n",
        "{\"done\":true,\"augur_validation\":\"invalid\"}\n",
    ];
    let done = done_fields(lines.into_iter());
    assert_eq!(
        Value::Object(done),
        json!({"augur_guard": "flagged", "augur_validation": "invalid"})
    );
}
