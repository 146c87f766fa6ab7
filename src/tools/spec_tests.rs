//! Tests of tool parsing, grammar copies and the checks tools are given.

use super::*;
use crate::schema::budget::tests::fan_out;

#[test]
fn accepts_ollama_openai_and_flat_shapes() {
    let tools = vec![
        json!({"type":"function","function":{"name":"a","description":"A","parameters":{"type":"object","properties":{"x":{"type":"string"}}}}}),
        json!({"function":{"name":"b"}}),
        json!({"type":"function","name":"c","parameters":{"type":"object"}}),
    ];
    let set = ToolSet::from_request(&tools).unwrap();
    assert_eq!(set.len(), 3);
    assert_eq!(set.tools()[0].description, "A");
    assert_eq!(
        set.get("b").unwrap().parameters,
        json!({"type":"object","properties":{}})
    );
    assert!(set.get("c").is_some());
    assert!(set.get("d").is_none());
}

#[test]
fn duplicate_and_invalid_tools_are_errors() {
    let dup = vec![
        json!({"type":"function","function":{"name":"a"}}),
        json!({"type":"function","function":{"name":"a"}}),
    ];
    assert_eq!(
        ToolSet::from_request(&dup).unwrap_err(),
        ToolError::DuplicateName("a".into())
    );
    for bad in [
        json!("x"),
        json!({"type":"function","function":{}}),
        json!({"type":"function","function":{"name":""}}),
        json!({"type":"retrieval"}),
        json!({"type":"function","function":"f"}),
    ] {
        assert!(ToolSet::from_request(&[bad]).is_err());
    }
}

#[test]
fn non_object_parameters_are_permissive() {
    for params in [json!(true), json!("object"), json!([1]), json!(3)] {
        let set = ToolSet::from_request(&[
            json!({"type":"function","function":{"name":"f","parameters":params}}),
        ])
        .unwrap();
        let t = &set.tools()[0];
        assert_eq!(t.grammar, json!({"type":"object"}));
        assert!(!t.sanitize_notes.is_empty());
    }
}

#[test]
fn grammar_copies_are_always_embeddable() {
    let s = embeddable(
        json!({"$schema":"http://json-schema.org/draft-07/schema#","$id":"x","type":"object"}),
    );
    assert_eq!(s, Ok(json!({"type":"object"})));
    assert!(embeddable(json!({"type":"object","properties":{"a":{"$ref":"#/$defs/A"}}})).is_err());
    assert!(embeddable(json!({"type":"whatever"})).is_err());
    assert_eq!(embeddable(json!(true)), Ok(json!({"type":"object"})));
    let set = ToolSet::from_request(&[json!({"type":"function","function":{"name":"r",
        "parameters":{"type":"object","$defs":{"A":{"type":"integer"}},"properties":{"a":{"$ref":"#/$defs/A"}}}}})])
    .unwrap();
    let g = set.tools()[0].grammar.to_string();
    assert!(!g.contains("$ref"), "{g}");
    // The original keeps its $ref and is what arguments are checked against.
    assert!(set.tools()[0].exact());
    assert!(set.tools()[0].checker().check(&json!({"a":1})).is_valid());
    assert!(!set.tools()[0].checker().check(&json!({"a":"x"})).is_valid());
}

#[test]
fn a_tool_over_the_budget_is_refused_by_name() {
    let tools = [
        json!({"function": {"name": "fine", "parameters": {"type": "object"}}}),
        json!({"function": {"name": "fan", "parameters": fan_out(20)}}),
    ];
    let e = ToolSet::from_request(&tools).unwrap_err();
    assert_eq!(
        e.to_string(),
        "tool \"fan\" parameters schema too large: expands to more than 20000 sub-schemas (limit)"
    );
    // Ten levels fit one by one; twenty such tools do not fit together.
    let many: Vec<Value> = (0..20)
        .map(|i| json!({"function": {"name": format!("t{i}"), "parameters": fan_out(11)}}))
        .collect();
    match ToolSet::from_request(&many).unwrap_err() {
        ToolError::TooLarge(e) => assert!(e.to_string().contains("80000"), "{e}"),
        other => panic!("{other}"),
    }
}

#[test]
fn parameters_that_do_not_compile_are_checked_against_the_grammar_copy() {
    let set = ToolSet::from_request(&[
        json!({"function": {"name": "p", "parameters": {"type": "object",
            "properties": {"x": {"type": "string", "pattern": "("}}, "required": ["x"]}}}),
        json!({"function": {"name": "ok", "parameters": {"type": "object"}}}),
    ])
    .unwrap();
    let p = set.get("p").unwrap();
    assert!(!p.exact());
    assert!(!set.exact());
    assert!(set.get("ok").unwrap().exact());
    // The grammar copy still wants a string x.
    assert!(p.checker().check(&json!({"x": "any"})).is_valid());
    assert!(!p.checker().check(&json!({"x": 1})).is_valid());
    assert!(set.weight() > 0);
}
