//! Validation and repair tests over `tests/fixtures/outputs/cases.json`.

use serde_json::{Value, json};

use super::{
    Validators, Violation, coerce_to_schema, format_violations, parse_and_repair, retry_feedback,
};

fn dir() -> String {
    format!("{}/tests/fixtures/outputs", env!("CARGO_MANIFEST_DIR"))
}

fn cases() -> Vec<(Value, String)> {
    let text = std::fs::read_to_string(format!("{}/cases.json", dir())).expect("fixture");
    let all: Vec<Value> = serde_json::from_str(&text).expect("fixture JSON");
    all.into_iter()
        .map(|c| {
            let body = match c.get("file").and_then(Value::as_str) {
                Some(f) => std::fs::read_to_string(format!("{}/{f}", dir())).expect("file"),
                None => c["text"].as_str().unwrap_or_default().to_string(),
            };
            (c, body)
        })
        .collect()
}

fn schema_of(c: &Value) -> Option<&Value> {
    c.get("schema").filter(|s| !s.is_null())
}

#[test]
fn repair_fixtures() {
    let v = Validators::new(64);
    let all = cases();
    assert!(all.len() >= 20);
    for (c, text) in &all {
        let name = &c["name"];
        let out = parse_and_repair(text, schema_of(c), &v, true);
        if let Some(want) = c.get("value") {
            let got = out.value.clone().unwrap_or(Value::Null);
            assert_eq!(&got, want, "{name}");
        }
        let repairs: Vec<&str> = c["repairs"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        assert_eq!(out.repairs, repairs, "{name}");
        assert_eq!(
            Some(out.is_valid()),
            c["valid"].as_bool(),
            "{name}: {:?}",
            out.violations
        );
        let truncated = c.get("truncated").and_then(Value::as_bool).unwrap_or(false);
        assert_eq!(out.truncated, truncated, "{name}");
    }
}

#[test]
fn repair_is_idempotent() {
    let v = Validators::new(64);
    for (c, text) in cases() {
        let first = parse_and_repair(&text, schema_of(&c), &v, true);
        let Some(value) = first.value else { continue };
        let again = parse_and_repair(&value.to_string(), schema_of(&c), &v, true);
        assert_eq!(again.value.as_ref(), Some(&value), "{}", c["name"]);
        assert!(
            again.repairs.is_empty(),
            "{}: {:?}",
            c["name"],
            again.repairs
        );
        if let Some(s) = schema_of(&c) {
            let mut same = value.clone();
            if v.validate(s, &value).is_empty() {
                assert!(coerce_to_schema(&mut same, s).is_empty(), "{}", c["name"]);
                assert_eq!(same, value);
            }
        }
    }
}

#[test]
fn without_repair_only_strict_parse() {
    let v = Validators::new(8);
    let out = parse_and_repair("```json\n{\"a\":1}\n```", None, &v, false);
    assert_eq!(out.value, None);
    assert_eq!(out.violations.len(), 1);
    let out = parse_and_repair("{\"a\": 1", None, &v, false);
    assert!(out.truncated);
    let out = parse_and_repair(
        "{\"a\":\"5\"}",
        Some(&json!({"properties": {"a": {"type": "integer"}}})),
        &v,
        false,
    );
    assert_eq!(out.value, Some(json!({"a": "5"})));
    assert_eq!(out.violations.len(), 1);
}

#[test]
fn validators_compile_each_schema_once() {
    let v = Validators::new(16);
    let a = json!({"type": "object", "properties": {"x": {"type": "integer"}}});
    let a_reordered = json!({"properties": {"x": {"type": "integer"}}, "type": "object"});
    let b = json!({"type": "string"});
    for _ in 0..5 {
        assert!(v.validate(&a, &json!({"x": 1})).is_empty());
        assert_eq!(v.validate(&a_reordered, &json!({"x": "no"})).len(), 1);
        assert!(v.validate(&b, &json!("s")).is_empty());
    }
    assert_eq!(v.compilations(), 2);
    let clone = v.clone();
    clone.validate(&b, &json!(1));
    assert_eq!(v.compilations(), 2);
}

#[test]
fn uncompilable_schema_constrains_nothing() {
    let v = Validators::new(4);
    let bad = json!({"type": "int"});
    assert!(v.compile(&bad).is_err());
    assert!(v.validate(&bad, &json!("anything")).is_empty());
    assert!(v.compile(&bad).is_err());
    assert_eq!(v.compilations(), 1);
}

#[test]
fn violations_point_into_the_instance() {
    let v = Validators::new(4);
    let s = json!({"type": "object", "properties": {"age": {"type": "integer"}, "name": {"type": "string"}}, "required": ["name"]});
    let out = v.validate(&s, &json!({"age": "five"}));
    let text = format_violations(&out, 5);
    assert!(
        text.contains(r#"/age: "five" is not of type "integer""#),
        "{text}"
    );
    assert!(
        text.contains(r#"/name: "name" is a required property"#),
        "{text}"
    );
    let many: Vec<Violation> = (0..5)
        .map(|i| Violation {
            pointer: format!("/{i}"),
            message: "bad".into(),
        })
        .collect();
    assert_eq!(format_violations(&many, 2), "/0: bad; /1: bad; and 3 more");
}

#[test]
fn formats_are_validated() {
    let v = Validators::new(4);
    let s = json!({"type": "string", "format": "date"});
    assert!(v.validate(&s, &json!("2024-02-30x")).len() == 1);
    assert!(v.validate(&s, &json!("2024-02-10")).is_empty());
}

#[test]
fn retry_feedback_mentions_problem() {
    let vs = vec![Violation {
        pointer: "/age".into(),
        message: "\"five\" is not of type \"integer\"".into(),
    }];
    let f = retry_feedback(&vs, false);
    assert!(
        f.starts_with("Your previous answer was invalid: /age:"),
        "{f}"
    );
    assert!(f.ends_with("Answer again with JSON that matches the schema."));
    assert!(retry_feedback(&[], true).contains("cut off"));
    assert!(retry_feedback(&[], true).contains("more briefly"));
}

#[test]
fn coerce_tool_arguments() {
    let s = json!({"type": "object", "properties": {
        "n": {"type": "integer"}, "flag": {"type": "boolean"}, "tags": {"type": "array", "items": {"type": "string"}},
        "when": {"type": ["null", "number"]}
    }, "additionalProperties": false});
    let mut args = json!({"n": "3", "flag": "False", "tags": 7, "when": "2.5", "junk": 1});
    let r = coerce_to_schema(&mut args, &s);
    assert_eq!(
        args,
        json!({"n": 3, "flag": false, "tags": ["7"], "when": 2.5})
    );
    assert_eq!(r, vec!["coerced_types", "dropped_keys"]);
}
