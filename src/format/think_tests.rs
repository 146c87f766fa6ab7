//! Unit tests of `think`.

use super::*;

#[test]
fn reasoning_comes_first() {
    let s = think_schema(Some(
        &json!({"type": "object", "properties": {"a": {"type": "integer"}}}),
    ));
    let keys: Vec<&String> = s["properties"]
        .as_object()
        .map(|m| m.keys().collect())
        .unwrap_or_default();
    assert_eq!(keys, ["reasoning", "answer"]);
    assert_eq!(
        s["properties"]["answer"]["properties"]["a"]["type"],
        "integer"
    );
    assert_eq!(s["required"], json!(["reasoning", "answer"]));
    assert_eq!(
        think_schema(None)["properties"]["answer"],
        json!({"type": "string"})
    );
}

#[test]
fn split_returns_thinking_and_answer() {
    let v = json!({"reasoning": "2+2 is 4", "answer": {"n": 4}});
    assert_eq!(
        split_think(&v),
        Some(("2+2 is 4".to_string(), json!({"n": 4})))
    );
    assert_eq!(split_think(&json!({"answer": 1})), None);
    assert_eq!(split_think(&json!([1])), None);
    assert_eq!(answer_text(&json!("hi")), "hi");
    assert_eq!(answer_text(&json!({"n": 4})), r#"{"n":4}"#);
}

#[test]
fn the_validation_schema_keeps_references_resolving() {
    let answer = json!({"$defs": {"P": {"type": "integer"}}, "type": "object",
        "properties": {"n": {"$ref": "#/$defs/P"}, "next": {"$ref": "#"}}});
    let v = crate::validate::compile(&validation_schema(Some(&answer))).unwrap();
    let ok = json!({"reasoning": "r", "answer": {"n": 1, "next": {"n": 2}}});
    let bad = json!({"reasoning": "r", "answer": {"next": {"n": "two"}}});
    assert!(v.check(&ok).is_valid());
    assert_eq!(v.check(&bad).violations[0].pointer, "/answer/next/n");
    assert!(crate::validate::compile(&think_schema(Some(&answer))).is_err());
}

#[test]
fn think_schema_is_grammar_safe() {
    let s = think_schema(Some(&json!({"type": "object"})));
    let sanitized = crate::schema::sanitize(&s).map(|x| x.schema);
    assert_eq!(sanitized, Ok(s));
}
