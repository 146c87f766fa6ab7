//! Tests of placeholder detection ([`super::placeholder_violations`]).

use serde_json::{Value, json};

use super::*;
use crate::tools::ToolSet;

fn set() -> ToolSet {
    ToolSet::from_request(&[json!({"type":"function","function":{"name":"get_weather",
        "parameters":{"type":"object","properties":{
            "city":{"type":"string"},
            "cityName":{"type":"string"},
            "unit":{"type":"string","enum":["<unit>","celsius"]},
            "type":{"type":"string"},
            "note":{"type":"string","default":"{note}"},
            "tags":{"type":"array","items":{"type":"string"}},
            "days":{"type":"integer"}}}}})])
    .unwrap()
}

fn found(arguments: Value) -> Vec<String> {
    let call = ToolCall {
        name: "get_weather".into(),
        arguments,
    };
    placeholder_violations(&call, &set(), &|s| s == "<city> literally")
        .into_iter()
        .map(|(pointer, _)| pointer)
        .collect()
}

#[test]
fn template_tokens_of_the_property_are_placeholders() {
    for v in [
        "<city>",
        "<city",
        " <City> ",
        "{city}",
        "{{city}}",
        "${city}",
        "$city",
        "[city]",
        "<<city>>",
        "<city name>",
        "<string>",
        "{value}",
        "<your city>",
        "…",
        "...",
        "string",
        "String",
    ] {
        assert_eq!(found(json!({"city": v})), ["/city"], "{v:?}");
    }
    // camelCase and snake_case keys match their words.
    assert_eq!(found(json!({"cityName": "<city_name>"})), ["/cityName"]);
    assert_eq!(found(json!({"cityName": "<city>"})), ["/cityName"]);
    assert_eq!(found(json!({"tags": ["rain", "<tag>"]})), ["/tags/1"]);
    // The property's own name as its value.
    assert_eq!(found(json!({"city": "city"})), ["/city"]);
    assert_eq!(found(json!({"cityName": "City name"})), ["/cityName"]);
    assert!(found(json!({"city": "city centre"})).is_empty());
}

#[test]
fn real_values_are_not_placeholders() {
    for v in [
        "Paris",
        "<div>",
        "<3",
        "$100",
        "[citation needed]",
        "{\"a\":1}",
        "a <city> b",
        "strings",
        "New York",
        "",
        "<b>bold</b>",
        "$USD",
    ] {
        assert!(found(json!({"city": v})).is_empty(), "{v:?}");
    }
    // A property about types may hold a type name.
    assert!(found(json!({"type": "string"})).is_empty());
    // Values the schema names, or the conversation holds, are meant.
    assert!(found(json!({"unit": "<unit>", "note": "{note}"})).is_empty());
    assert!(found(json!({"city": "<city> literally"})).is_empty());
    // Only strings are looked at.
    assert!(found(json!({"days": 3})).is_empty());
}

#[test]
fn messages_say_what_to_do() {
    let call = ToolCall {
        name: "get_weather".into(),
        arguments: json!({"city": "<city>"}),
    };
    let v = placeholder_violations(&call, &set(), &|_| false);
    assert_eq!(v.len(), 1);
    assert!(v[0].1.contains("\"<city>\" is a placeholder"), "{}", v[0].1);
    assert!(is_placeholder("<value>", "anything", None));
    assert!(
        !is_placeholder("string", "city", None),
        "no schema, no type"
    );
}

#[test]
fn an_empty_value_for_a_required_property_is_no_value() {
    let set = ToolSet::from_request(&[json!({"type":"function","function":{"name":"f",
        "parameters":{"type":"object","required":["city","mode","where"],"properties":{
            "city":{"type":"string"},
            "mode":{"type":"string","enum":["","fast"]},
            "note":{"type":"string"},
            "where":{"type":"object","required":["street"],"properties":{
                "street":{"type":"string"},"floor":{"type":"string"}}}}}}})])
    .unwrap();
    let found = |arguments: Value| {
        let call = ToolCall {
            name: "f".into(),
            arguments,
        };
        placeholder_violations(&call, &set, &|_| true)
            .into_iter()
            .map(|(pointer, message)| format!("{pointer} {message}"))
            .collect::<Vec<_>>()
    };
    let v =
        found(json!({"city": "", "mode": "", "note": "", "where": {"street": " ", "floor": ""}}));
    assert_eq!(v.len(), 2, "{v:?}");
    assert!(
        v[0].starts_with("/city \"city\" is required and the value is empty"),
        "{v:?}"
    );
    assert!(v[1].starts_with("/where/street "), "{v:?}");
    // A value given, an optional property, or an empty value the schema
    // names: nothing to say.
    assert!(
        found(json!({"city": "Paris", "mode": "", "note": "", "where": {"street": "Main"}}))
            .is_empty()
    );
}
