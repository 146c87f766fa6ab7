//! Unit tests of `parse`.

use super::*;
use crate::tools::testutil::{call, tools};

#[test]
fn parses_single_and_parallel_calls() {
    let set = tools(3);
    let one = parse_output(
        r#"{"tool_call":{"name":"get_weather","arguments":{"city":"Tokyo","unit":"celsius"}}}"#,
        &set,
    )
    .unwrap();
    assert_eq!(
        one,
        ModelOutput::Calls(vec![call(
            "get_weather",
            json!({"city":"Tokyo","unit":"celsius"})
        )])
    );
    // Key order of the arguments is kept as produced.
    let ModelOutput::Calls(c) = &one else {
        unreachable!()
    };
    let keys: Vec<_> = c[0].arguments.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["city", "unit"]);
    let two = parse_output(
        r#" {"tool_calls":[{"name":"tool_1","arguments":{"n":1}},{"name":"tool_2","arguments":"{\"n\":2}"}]}
"#,
        &set,
    )
    .unwrap();
    assert_eq!(
        two,
        ModelOutput::Calls(vec![
            call("tool_1", json!({"n":1})),
            call("tool_2", json!({"n":2}))
        ])
    );
}

#[test]
fn parses_text_and_structured_answers() {
    let set = tools(1);
    assert_eq!(
        parse_output(r#"{"response":"Hello \"world\" \ud83d\ude00"}"#, &set).unwrap(),
        ModelOutput::Answer(json!("Hello \"world\" 😀"))
    );
    let out = parse_output(r#"{"response":{"temp":21.5,"sky":"clear"}}"#, &set).unwrap();
    assert_eq!(out, ModelOutput::Answer(json!({"temp":21.5,"sky":"clear"})));
    let ModelOutput::Answer(v) = out else {
        unreachable!()
    };
    assert_eq!(answer_content(&v, true), r#"{"temp":21.5,"sky":"clear"}"#);
    assert_eq!(answer_content(&json!("hi"), false), "hi");
    assert_eq!(answer_content(&json!("hi"), true), "\"hi\"");
}

#[test]
fn lenient_shapes_are_accepted() {
    let set = tools(2);
    let want = ModelOutput::Calls(vec![call("tool_1", json!({"n":1}))]);
    for text in [
        r#"{"tool_calls":{"name":"tool_1","arguments":{"n":1}}}"#,
        r#"{"tool_call":[{"name":"tool_1","arguments":{"n":1}}]}"#,
        r#"{"name":"tool_1","arguments":{"n":1}}"#,
        r#"[{"function":{"name":"tool_1","arguments":{"n":1}}}]"#,
        r#"{"tool_call":{"name":"tool_1","parameters":{"n":1}}}"#,
        "```json\n{\"tool_call\":{\"name\":\"tool_1\",\"arguments\":{\"n\":1}}}\n```",
        r#"{"tool_call":{"name":"tool_1","arguments":{"n":1}}} trailing"#,
    ] {
        assert_eq!(parse_output(text, &set).unwrap(), want, "{text}");
    }
    assert_eq!(
        parse_output(r#"{"tool_call":{"name":"get_weather"}}"#, &set).unwrap(),
        ModelOutput::Calls(vec![call("get_weather", json!({}))])
    );
}

#[test]
fn errors_are_specific() {
    let set = tools(2);
    let cases = [
        (
            r#"{"tool_call":{"name":"rm_rf","arguments":{}}}"#,
            ParseError::UndeclaredTool("rm_rf".into()),
        ),
        (
            r#"{"tool_calls":[{"name":"tool_1","arguments":{}},{"name":"nope","arguments":{}}]}"#,
            ParseError::UndeclaredTool("nope".into()),
        ),
        (r#"{"tool_calls":[]}"#, ParseError::NoCalls),
        (
            r#"{"tool_call":{"name":"tool_1","arguments":{"n":"#,
            ParseError::Truncated,
        ),
        ("", ParseError::Truncated),
    ];
    for (text, want) in cases {
        assert_eq!(parse_output(text, &set).unwrap_err(), want, "{text}");
    }
    for text in [
        "hello",
        r#"{"other":1}"#,
        "42",
        r#"{"tool_call":{"arguments":{}}}"#,
        r#"{"tool_call":{"name":"tool_1","arguments":"oops"}}"#,
        r#"{"tool_call":{"name":"tool_1","arguments":[1]}}"#,
    ] {
        assert!(parse_output(text, &set).is_err(), "{text}");
    }
}
