//! Unit tests of `choice`.

use super::*;
use serde_json::json;

fn set() -> ToolSet {
    ToolSet::from_request(&[json!({"type":"function","function":{"name":"get_weather"}})]).unwrap()
}

#[test]
fn parses_all_forms() {
    let s = set();
    let cases = [
        (json!(null), ToolChoice::Auto),
        (json!("auto"), ToolChoice::Auto),
        (json!("none"), ToolChoice::None),
        (json!("required"), ToolChoice::Required),
        (json!("any"), ToolChoice::Required),
        (json!({"type":"any"}), ToolChoice::Required),
        (
            json!({"type":"function","function":{"name":"get_weather"}}),
            ToolChoice::Named("get_weather".into()),
        ),
        (
            json!({"type":"function","name":"get_weather"}),
            ToolChoice::Named("get_weather".into()),
        ),
        (
            json!({"type":"tool","name":"get_weather"}),
            ToolChoice::Named("get_weather".into()),
        ),
    ];
    for (v, want) in cases {
        assert_eq!(ToolChoice::from_request(Some(&v), &s).unwrap(), want, "{v}");
    }
    assert_eq!(
        ToolChoice::from_request(None, &s).unwrap(),
        ToolChoice::Auto
    );
}

#[test]
fn unknown_names_and_values_are_errors() {
    let s = set();
    assert_eq!(
        ToolChoice::from_request(
            Some(&json!({"type":"function","function":{"name":"nope"}})),
            &s
        ),
        Err(ToolError::UnknownToolChoice("nope".into()))
    );
    for v in [json!("sometimes"), json!(3), json!({"type":"function"})] {
        assert!(ToolChoice::from_request(Some(&v), &s).is_err(), "{v}");
    }
    assert!(!ToolChoice::None.emulates());
    assert!(ToolChoice::Auto.allows_answer());
    assert!(!ToolChoice::Required.allows_answer());
}
