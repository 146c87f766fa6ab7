//! Validation and repair tests over `tests/fixtures/outputs/cases.json`.

use serde_json::{Value, json};

use super::{Validators, Violation, coerce_to_schema, format_violations, parse_and_repair};

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
    let v = Validators::new(1 << 24);
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
            Some(out.value.is_some() && out.violations.is_empty() && out.unchecked.is_none()),
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
    let v = Validators::new(1 << 24);
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
            if v.validate(s, &value).is_valid() {
                assert!(coerce_to_schema(&mut same, s).is_empty(), "{}", c["name"]);
                assert_eq!(same, value);
            }
        }
    }
}

#[test]
fn without_repair_only_strict_parse() {
    let v = Validators::new(1 << 24);
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
    let v = Validators::new(1 << 24);
    let a = json!({"type": "object", "properties": {"x": {"type": "integer"}}});
    let a_reordered = json!({"properties": {"x": {"type": "integer"}}, "type": "object"});
    let b = json!({"type": "string"});
    for _ in 0..5 {
        assert!(v.validate(&a, &json!({"x": 1})).is_valid());
        assert_eq!(
            v.validate(&a_reordered, &json!({"x": "no"}))
                .violations
                .len(),
            1
        );
        assert!(v.validate(&b, &json!("s")).is_valid());
    }
    assert_eq!(v.compilations(), 2);
    let clone = v.clone();
    clone.validate(&b, &json!(1));
    assert_eq!(v.compilations(), 2);
}

#[test]
fn an_uncompilable_schema_is_refused_and_never_valid() {
    let v = Validators::new(1 << 24);
    for bad in [
        json!({"type": "string", "pattern": "("}),
        json!({"type": "string", "pattern": "a{1000000}"}),
        json!({"$ref": "#/$defs/none"}),
        json!({"type": {"a": 1}}),
        json!({"type": "strnig"}),
    ] {
        assert!(v.compile(&bad).is_err(), "{bad}");
        let out = v.validate(&bad, &json!("anything"));
        assert!(!out.is_valid(), "{bad}");
        assert!(out.unchecked.is_some(), "{bad}");
    }
    let e = v
        .compile(&json!({"type": "string", "pattern": "("}))
        .unwrap_err();
    assert!(e.to_string().starts_with("invalid: "), "{e}");
    // Remembered: a second try does not compile again.
    let before = v.compilations();
    assert!(
        v.compile(&json!({"type": "string", "pattern": "("}))
            .is_err()
    );
    assert_eq!(v.compilations(), before);
}

#[test]
fn mapped_type_names_compile_as_the_json_types() {
    let v = Validators::new(1 << 24);
    let s = json!({"type": "dict", "properties": {"n": {"type": "int"}, "t": {"type": ["str", "none"]},
        "a": {"type": "any"}}});
    let c = v.compile(&s).unwrap();
    assert!(c.mapped_types);
    assert!(
        v.validate(&s, &json!({"n": 1, "t": null, "a": [1]}))
            .is_valid()
    );
    assert_eq!(
        v.validate(&s, &json!({"n": "one"})).violations[0].pointer,
        "/n"
    );
}

#[test]
fn validation_is_bounded() {
    let v = Validators::new(1 << 24);
    // Ten branches per item, ten thousand items: collecting every error
    // would hold hundreds of megabytes; one is reported instead.
    let alts: Vec<Value> = (0..10)
        .map(|b| json!({"type": "object", "properties": {"k": {"const": b}, "x": {"type": "integer"}}}))
        .collect();
    let s = json!({"type": "array", "items": {"anyOf": alts}});
    let item = json!({"k": "no", "x": "no"});
    let big = Value::Array(vec![item.clone(); 10_000]);
    let out = v.validate(&s, &big);
    assert_eq!(out.violations.len(), 1, "{out:?}");
    assert!(out.violations[0].message.len() <= 303);
    // Small answers get every violation, up to the cap.
    let small = Value::Array(vec![item; 3]);
    assert_eq!(v.validate(&s, &small).violations.len(), 3);
    let many: serde_json::Map<String, Value> = (0..100)
        .map(|i| (format!("p{i}"), json!({"type": "integer"})))
        .collect();
    let wide = json!({"properties": many});
    let answer: serde_json::Map<String, Value> =
        (0..100).map(|i| (format!("p{i}"), json!("x"))).collect();
    let out = v.validate(&wide, &Value::Object(answer));
    assert_eq!(out.violations.len(), super::MAX_VIOLATIONS);
    // Far too much work for the schema: unchecked, not valid.
    let huge = Value::Array(vec![json!(1); 3_000_000]);
    let out = v.validate(&s, &huge);
    assert!(out.unchecked.is_some() && !out.is_valid());
}

#[test]
fn the_cache_is_weighed_by_size() {
    let v = Validators::new(2 * 1024 * 1024);
    for i in 0..200 {
        let props: serde_json::Map<String, Value> = (0..200)
            .map(|p| {
                (
                    format!("p{i}_{p}"),
                    json!({"type": "string", "description": "some text"}),
                )
            })
            .collect();
        assert!(v.compile(&json!({"properties": props})).is_ok());
    }
    assert!(v.weighted_size() <= 2 * 1024 * 1024, "{v:?}");
    assert_eq!(v.compilations(), 200);
}

#[test]
fn violations_point_into_the_instance() {
    let v = Validators::new(1 << 24);
    let s = json!({"type": "object", "properties": {"age": {"type": "integer"}, "name": {"type": "string"}}, "required": ["name"]});
    let out = v.validate(&s, &json!({"age": "five"})).violations;
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
    let v = Validators::new(1 << 24);
    let s = json!({"type": "string", "format": "date"});
    assert!(v.validate(&s, &json!("2024-02-30x")).violations.len() == 1);
    assert!(v.validate(&s, &json!("2024-02-10")).is_valid());
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

#[test]
fn deep_answers_against_recursive_schemas_fit_a_worker_stack() {
    // The deepest JSON serde_json parses, against recursive schemas, on a
    // thread with the stack a worker thread has.
    let nested_arrays = format!("{}1{}", "[".repeat(127), "]".repeat(127));
    let nested_objects = format!("{}null{}", "{\"next\":".repeat(127), "}".repeat(127));
    let bad_leaf = format!("{}true{}", "{\"next\":".repeat(127), "}".repeat(127));
    let cases = [
        (
            json!({"$defs": {"J": {"anyOf": [{"type": "string"},
                {"type": "array", "items": {"$ref": "#/$defs/J"}},
                {"type": "object", "additionalProperties": {"$ref": "#/$defs/J"}}]}},
                "$ref": "#/$defs/J"}),
            nested_arrays,
        ),
        (
            json!({"type": "object", "properties": {"next": {"anyOf": [{"$ref": "#"}, {"type": "null"}]}}}),
            nested_objects,
        ),
        (
            json!({"type": "object", "properties": {"next": {"anyOf": [{"$ref": "#"}, {"type": "null"}]}}}),
            bad_leaf,
        ),
    ];
    let worker = std::thread::Builder::new()
        .stack_size(2 * 1024 * 1024)
        .spawn(move || {
            let v = Validators::new(1 << 24);
            for (schema, text) in cases {
                let out = parse_and_repair(&text, Some(&schema), &v, true);
                assert!(out.value.is_some());
                let _ = crate::schema::sanitize(&schema);
            }
        })
        .unwrap();
    worker.join().unwrap();
}
