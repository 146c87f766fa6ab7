//! Tests of argument validation and repair.

use super::*;
use crate::tools::testutil::{call, tools};
use serde_json::json;

#[test]
fn validates_against_the_original_schema() {
    let set = tools(2);
    let calls = [
        call("get_weather", json!({"city":"Tokyo"})),
        call("get_weather", json!({"unit":"kelvin"})),
        call("tool_1", json!({"n":"3"})),
        call("nope", json!({})),
    ];
    let v = validate_calls(&calls, &set);
    assert_eq!(v.len(), 4);
    assert!(v[0].is_empty());
    assert_eq!(v[1].len(), 2, "{:?}", v[1]);
    assert!(v[1].iter().any(|(p, m)| p == "/city" && m.contains("city")));
    assert!(v[1].iter().any(|(p, _)| p == "/unit"));
    assert_eq!(v[2].len(), 1);
    assert_eq!(v[2][0].0, "/n");
    assert_eq!(
        v[3],
        vec![(String::new(), "\"nope\" is not a declared tool".into())]
    );
}

#[test]
fn uncompilable_schemas_do_not_fail() {
    let raw: Vec<Value> = serde_json::from_str(include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/tools/odd_tools.json"
    )))
    .unwrap();
    let set = ToolSet::from_request(&raw).unwrap();
    let calls: Vec<ToolCall> = set
        .tools()
        .iter()
        .map(|t| call(&t.name, json!({"x": 1})))
        .collect();
    let v = validate_calls(&calls, &set);
    assert_eq!(v.len(), calls.len());
}

#[test]
fn repair_coerces_what_the_schema_implies() {
    let schema = json!({"type":"object","properties":{
        "i":{"type":"integer"},"f":{"type":"number"},"b":{"type":"boolean"},
        "s":{"type":"string"},"t":{"type":"string"},"a":{"type":"array","items":{"type":"integer"}},
        "j":{"type":"array"},"o":{"type":"object","properties":{"k":{"type":"int"}}},
        "e":{"type":"string","enum":["celsius","fahrenheit"]},"u":{"type":["integer","null"]},
        "keep":{"type":"string"}}});
    let mut args = json!({"i":"5","f":"2.5","b":"TRUE","s":7,"t":false,"a":"3","j":"[1,2]",
        "o":"{\"k\":\"4\"}","e":"Celsius","u":"null","keep":"x","extra":1});
    let notes = repair_arguments(&mut args, &schema);
    assert_eq!(
        args,
        json!({"i":5,"f":2.5,"b":true,"s":"7","t":"false","a":[3],"j":[1,2],
            "o":{"k":4},"e":"celsius","u":null,"keep":"x","extra":1})
    );
    let keys: Vec<_> = args.as_object().unwrap().keys().collect();
    assert_eq!(keys[0], "i");
    for n in [
        "converted a string to an integer",
        "converted a string to a number",
        "converted a string to a boolean",
        "converted a value to a string",
        "wrapped a value in an array",
        "parsed JSON text into a value",
        "matched an enum value ignoring case",
        "converted a string to null",
    ] {
        assert!(notes.contains(&n), "{n}: {notes:?}");
    }
}

#[test]
fn repair_drops_forbidden_keys_and_leaves_valid_args_alone() {
    let schema = json!({"type":"object","properties":{"a":{"type":"integer"},
        "n":{"type":"object","properties":{"x":{"type":"string"}},"additionalProperties":false}},
        "additionalProperties":false});
    let mut args = json!({"a":1,"zz":2,"n":{"x":"y","q":1}});
    let notes = repair_arguments(&mut args, &schema);
    assert_eq!(args, json!({"a":1,"n":{"x":"y"}}));
    assert_eq!(notes, vec!["dropped properties the schema does not allow"]);
    let mut good = json!({"a":1,"n":{"x":"y"}});
    assert!(repair_arguments(&mut good, &schema).is_empty());
    // Unusable strings stay as they are (validation reports them).
    let mut bad = json!({"a":"many"});
    assert!(repair_arguments(&mut bad, &schema).is_empty());
    assert_eq!(bad, json!({"a":"many"}));
    // Odd schemas are ignored rather than failing.
    for s in [json!(true), json!("int"), json!({"type":5})] {
        let mut v = json!({"a":"1"});
        assert!(repair_arguments(&mut v, &s).is_empty());
    }
}

#[test]
fn repair_then_validate_clears_violations() {
    let set = tools(3);
    let mut calls = vec![
        call("tool_1", json!({"n":"7"})),
        call("get_weather", json!({"city":"Oslo","unit":"CELSIUS"})),
    ];
    assert!(validate_calls(&calls, &set).iter().all(|v| !v.is_empty()));
    let notes = repair_calls(&mut calls, &set);
    assert_eq!(notes.len(), 2);
    assert!(validate_calls(&calls, &set).iter().all(Vec::is_empty));
    assert_eq!(calls[0].arguments, json!({"n":7}));
}
