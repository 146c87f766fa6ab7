//! The forms, the Python literals and malformed input, read whole.

mod forms;
mod stream;

use serde_json::{Value, json};

use super::{Extracted, TextError, TextFormat, extract, render_calls, shape_of};
use crate::tools::{ToolCall, ToolSet};

/// `get_weather(city, unit)`, `get_time(timezone)`, `search(query,
/// limit, filters)`.
pub(super) fn set() -> ToolSet {
    ToolSet::from_request(&[
        json!({"type":"function","function":{"name":"get_weather","parameters":{"type":"object",
            "properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},
            "required":["city"]}}}),
        json!({"type":"function","function":{"name":"get_time","parameters":{"type":"object",
            "properties":{"timezone":{"type":"string"}},"required":["timezone"]}}}),
        json!({"type":"function","function":{"name":"search","parameters":{"type":"object",
            "properties":{"query":{"type":"string"},"limit":{"type":"integer"},"filters":{"type":"object"}}}}}),
    ])
    .unwrap()
}

fn call(name: &str, arguments: Value) -> ToolCall {
    ToolCall {
        name: name.into(),
        arguments,
    }
}

fn calls_of(text: &str) -> Vec<ToolCall> {
    let out = extract(text, &set());
    assert!(out.failures.is_empty(), "{text}: {:?}", out.failures);
    out.calls
}

fn paris() -> ToolCall {
    call("get_weather", json!({"city": "Paris"}))
}

#[test]
fn every_form_reads_the_same_call() {
    for text in [
        r#"[get_weather(city="Paris")]"#,
        r#"get_weather(city="Paris")"#,
        "```tool_code\nget_weather(city='Paris')\n```",
        "```tool_code\nprint(default_api.get_weather(city=\"Paris\"))\n```",
        "```python\nget_weather(city=\"Paris\")\n```",
        "```py\n[get_weather(city=\"Paris\")]\n```",
        r#"<tool_code>{"tool_name": "get_weather", "parameters": {"city": "Paris"}}</tool_code>"#,
        r#"<tool_code>get_weather(city="Paris")</tool_code>"#,
        r#"<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>"#,
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": \"{\\\"city\\\": \\\"Paris\\\"}\"}\n</tool_call>",
        r#"[TOOL_REQUEST]{"name": "get_weather", "arguments": {"city": "Paris"}}[END_TOOL_REQUEST]"#,
        "```tool_call\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n```",
    ] {
        let out = extract(text, &set());
        assert_eq!(out.calls, vec![paris()], "{text}: {out:?}");
        assert_eq!(out.text, "", "{text}");
    }
}

#[test]
fn lists_and_sequences_keep_their_order() {
    let want = vec![paris(), call("get_time", json!({"timezone": "CET"}))];
    for text in [
        r#"[get_weather(city="Paris"), get_time(timezone="CET")]"#,
        "[\n  get_weather(city=\"Paris\"),\n  get_time(timezone=\"CET\"),\n]",
        "get_weather(city=\"Paris\")\nget_time(timezone=\"CET\")",
        "get_weather(city=\"Paris\"); get_time(timezone=\"CET\")",
        "```tool_code\nget_weather(city=\"Paris\")\nget_time(timezone=\"CET\")\n```",
        "<tool_call>{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\"}}</tool_call>\n<tool_call>{\"name\":\"get_time\",\"arguments\":{\"timezone\":\"CET\"}}</tool_call>",
        r#"<tool_call>[{"name":"get_weather","arguments":{"city":"Paris"}},{"name":"get_time","arguments":{"timezone":"CET"}}]</tool_call>"#,
    ] {
        assert_eq!(calls_of(text), want, "{text}");
    }
}

#[test]
fn text_around_calls_is_kept_and_blank_lines_go() {
    let out = extract(
        "Let me check.\n\n<tool_call>{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\"}}</tool_call>\n\nDone.",
        &set(),
    );
    assert_eq!(out.calls, vec![paris()]);
    assert_eq!(out.text, "Let me check.\n\nDone.");
    let out = extract("I will look it up: [get_weather(city=\"Paris\")]", &set());
    assert_eq!(out.calls, vec![paris()]);
    assert_eq!(out.text, "I will look it up:");
    // An answer without calls keeps its text exactly.
    let text = "  Plain [answer] with <b>tags</b>, `code` and get_weather mentioned.\n\n";
    assert_eq!(
        extract(text, &set()),
        Extracted {
            text: text.into(),
            ..Extracted::default()
        }
    );
}

#[test]
fn python_literals() {
    let cases = [
        (
            r#"search(query='it\'s "q"')"#,
            json!({"query": "it's \"q\""}),
        ),
        (
            r#"search(query="a\tb\n\x41\u00e9\U0001F600\101")"#,
            json!({"query": "a\tb\nAé😀A"}),
        ),
        (
            r#"search(query=r"C:\new\"x")"#,
            json!({"query": "C:\\new\\\"x"}),
        ),
        (
            r#"search(query="""multi "quoted"
line""")"#,
            json!({"query": "multi \"quoted\"\nline"}),
        ),
        ("search(query='''a''b''')", json!({"query": "a''b"})),
        (
            r#"search(query="con" 'cat' r"\d")"#,
            json!({"query": "concat\\d"}),
        ),
        (
            r#"search(query="unknown \q escape")"#,
            json!({"query": "unknown \\q escape"}),
        ),
        ("search(limit=1_000)", json!({"limit": 1000})),
        ("search(limit=-5)", json!({"limit": -5})),
        ("search(limit=0x1F)", json!({"limit": 31})),
        (
            "search(limit=0o17, query=None)",
            json!({"limit": 15, "query": null}),
        ),
        ("search(limit=0b101)", json!({"limit": 5})),
        ("search(limit=2.5e-3)", json!({"limit": 0.0025})),
        ("search(limit=-.5)", json!({"limit": -0.5})),
        ("search(limit=5.)", json!({"limit": 5.0})),
        (
            "search(limit=-9223372036854775808)",
            json!({"limit": i64::MIN}),
        ),
        (
            "search(limit=18446744073709551615)",
            json!({"limit": u64::MAX}),
        ),
        (
            "search(filters={'tags': ['a', ('b', 'c')], 1: True, 'none': None, 'f': false, 'n': null})",
            json!({"filters": {"tags": ["a", ["b", "c"]], "1": true, "none": null, "f": false, "n": null}}),
        ),
        (
            "search(filters={}, query=(\"x\"))",
            json!({"filters": {}, "query": "x"}),
        ),
        (
            "search(filters={'t': (), 'u': (1,)})",
            json!({"filters": {"t": [], "u": [1]}}),
        ),
        (
            "search(**{'query': 'x', 'odd-key': 1})",
            json!({"query": "x", "odd-key": 1}),
        ),
        (
            "search(query='日本語 ünïcödé', limit=3,)",
            json!({"query": "日本語 ünïcödé", "limit": 3}),
        ),
    ];
    for (text, args) in cases {
        assert_eq!(calls_of(text), vec![call("search", args)], "{text}");
    }
}

#[test]
fn positional_arguments_follow_the_declared_order() {
    assert_eq!(calls_of(r#"get_weather("Paris")"#), vec![paris()]);
    assert_eq!(
        calls_of(r#"get_weather("Paris", "celsius")"#),
        vec![call(
            "get_weather",
            json!({"city": "Paris", "unit": "celsius"})
        )]
    );
    assert_eq!(
        calls_of(r#"search("q", limit=2)"#),
        vec![call("search", json!({"query": "q", "limit": 2}))]
    );
    for (text, why) in [
        (
            r#"get_weather("Paris", "celsius", 3)"#,
            "at most 2 positional",
        ),
        (r#"get_weather(city="Paris", "celsius")"#, "after a keyword"),
        (r#"get_weather("Paris", city="Lyon")"#, "given twice"),
    ] {
        let out = extract(text, &set());
        assert!(out.calls.is_empty(), "{text}");
        assert!(
            out.failures[0].to_string().contains(why),
            "{text}: {:?}",
            out.failures
        );
        assert_eq!(
            out.text, text,
            "a block that is not a call stays as written"
        );
    }
}

#[test]
fn nothing_is_evaluated() {
    for text in [
        "get_weather(city=os.system('rm -rf /'))",
        "get_weather(city=__import__('os'))",
        "get_weather(city=Paris)",
        "get_weather(city=f\"{x}\")",
        "get_weather(city=b'x')",
        "get_weather(city='a' + 'b')",
        "get_weather(city=[x for x in y])",
        "get_weather(city=lambda: 1)",
        "get_weather(city={1, 2})",
        "get_weather(city=1j)",
        "get_weather(city=\"\\N{BULLET}\")",
        "os.get_weather(city='x')",
        "[get_weather(city='x'), exec(code='x')]",
    ] {
        let out = extract(text, &set());
        assert!(out.calls.is_empty(), "{text}: {out:?}");
        assert_eq!(out.text, text, "{text}");
    }
    let out = extract("get_weather(city=Paris)", &set());
    assert_eq!(out.failures, vec![TextError::NotLiteral("Paris".into())]);
}

#[test]
fn only_declared_tools_are_calls() {
    for text in [
        "[launch_missiles(target=\"x\")]",
        "launch_missiles(target=\"x\")",
        "```python\nprint('hello')\n```",
        "```python\nimport os\nget_weather_report(city='x')\n```",
        "getweather(city='Paris')",
        "Call get_weather(city='Paris') if needed.",
    ] {
        let out = extract(text, &set());
        assert!(
            out.calls.is_empty() && out.failures.is_empty(),
            "{text}: {out:?}"
        );
        assert_eq!(out.text, text);
    }
    for text in [
        r#"<tool_call>{"name": "launch_missiles", "arguments": {}}</tool_call>"#,
        r#"[TOOL_REQUEST]{"name": "rm", "arguments": {}}[END_TOOL_REQUEST]"#,
    ] {
        let out = extract(text, &set());
        assert!(out.calls.is_empty(), "{text}");
        assert!(
            matches!(out.failures[..], [TextError::UndeclaredTool(_)]),
            "{out:?}"
        );
        assert_eq!(out.text, text);
    }
}

#[test]
fn malformed_input_never_panics_and_stays_text() {
    let nested = format!("search(filters={}1{})", "[".repeat(40), "]".repeat(40));
    let huge = format!("<tool_call>{}", "x".repeat(super::MAX_BLOCK + 10));
    let many = format!(
        "[{}]",
        vec!["get_time(timezone='x')"; super::MAX_CALLS + 1].join(", ")
    );
    let cases: Vec<(String, Option<TextError>)> = vec![
        (nested, Some(TextError::TooDeep)),
        (many, Some(TextError::TooManyCalls)),
        (
            "get_weather(city='Par".into(),
            Some(TextError::Unterminated),
        ),
        (
            "[get_weather(city='x'".into(),
            Some(TextError::Unterminated),
        ),
        ("get_weather(city='x\ny')".into(), None),
        (huge, Some(TextError::TooLong)),
        (
            "<tool_call>{\"name\": \"get_weather\", \"argum".into(),
            Some(TextError::Unterminated),
        ),
        ("<tool_call>not json</tool_call>".into(), None),
        ("<tool_call></tool_call>".into(), None),
        ("get_weather(city=\"\\x4\")".into(), None),
        ("get_weather(city=\"\\ud800\")".into(), None),
        ("get_weather(city=--1)".into(), None),
        ("search(limit=99999999999999999999)".into(), None),
        ("search(limit=1e999)".into(), None),
        (
            "[get_weather(city='x') get_time(timezone='y')]".into(),
            None,
        ),
        ("get_weather(, )".into(), None),
        ("get_weather(city=='x')".into(), None),
        (
            "\u{0}[get_weather(\u{10ffff}\u{fffd}".into(),
            Some(TextError::Unterminated),
        ),
    ];
    for (text, want) in cases {
        let out = extract(&text, &set());
        assert!(out.calls.is_empty(), "{text:.80}: {out:?}");
        assert_eq!(out.failures.len(), 1, "{text:.80}: {out:?}");
        if let Some(want) = want {
            assert_eq!(out.failures[0], want, "{text:.80}");
        }
        assert_eq!(out.text, text, "the text is kept as written");
    }
    // A cut-off tag at the very end still holds a complete call.
    assert_eq!(
        calls_of(r#"<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}"#),
        vec![paris()]
    );
}

#[test]
fn rendered_calls_read_back() {
    let calls = vec![
        (
            "search".to_string(),
            json!({"query": "it's \"x\"\n\u{2028}😀", "limit": -3, "filters": {"a": [1.5, true, null], "odd-key": {}}}),
        ),
        ("get_time".to_string(), json!({"timezone": "CET"})),
    ];
    let want: Vec<ToolCall> = calls.iter().map(|(n, a)| call(n, a.clone())).collect();
    for (_, format) in TextFormat::ALL {
        let text = render_calls(&calls, format);
        assert_eq!(calls_of(&text), want, "{format:?}: {text}");
    }
}

#[test]
fn shapes_show_types_not_values() {
    let set = set();
    let tool = set.get("get_weather").unwrap();
    assert_eq!(
        shape_of(tool, TextFormat::Python),
        "[get_weather(city=string)]"
    );
    assert_eq!(
        shape_of(tool, TextFormat::ToolCode),
        "```tool_code\nget_weather(city=string)\n```"
    );
    assert_eq!(
        shape_of(tool, TextFormat::ToolCall),
        r#"<tool_call>{"name":"get_weather","arguments":{"city":string}}</tool_call>"#
    );
    assert_eq!(
        shape_of(tool, TextFormat::ToolRequest),
        r#"[TOOL_REQUEST]{"name":"get_weather","arguments":{"city":string}}[END_TOOL_REQUEST]"#
    );
}

#[test]
fn the_instruction_names_the_form_and_shows_types_not_values() {
    use crate::tools::ToolChoice;
    let set = set();
    for (_, format) in TextFormat::ALL {
        let text = super::instruction(&set, &ToolChoice::Auto, true, format, "");
        let shape = shape_of(set.get("get_weather").unwrap(), format);
        assert!(text.ends_with(&shape), "{format:?}: {text}");
        assert!(text.contains("- search Parameters: {"), "{text}");
        assert!(text.contains("Otherwise answer in plain text."), "{text}");
        assert!(text.contains("several calls at once"), "{text}");
    }
    let text = super::instruction(
        &set,
        &ToolChoice::Named("get_time".into()),
        false,
        TextFormat::Python,
        "",
    );
    assert!(text.contains("You must call get_time. "), "{text}");
    assert!(
        !text.contains("get_weather") && !text.contains("Otherwise"),
        "{text}"
    );
    assert!(text.ends_with("[get_time(timezone=string)]"), "{text}");
    // The tool most relevant to the question leads, as in grammar mode.
    let asked = "What time is it in the Tokyo timezone?";
    let text = super::instruction(&set, &ToolChoice::Auto, false, TextFormat::Python, asked);
    assert!(text.contains("these tools:\n- get_time"), "{text}");
    assert!(text.ends_with("[get_time(timezone=string)]"), "{text}");
}
