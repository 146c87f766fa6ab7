//! The forms Ollama's per-model parsers leave in the content: JSON with
//! `args`, bare JSON, qwen3-coder's XML, a missing `<tool_call>`,
//! Mistral's `[TOOL_CALLS]` and Llama's `<|python_tag|>`; read whole and
//! split at every byte boundary.

use serde_json::{Value, json};

use super::super::{Extracted, MAX_BLOCK, MAX_CALLS, TextError, TextEvent, TextStream, extract};
use super::set;
use crate::tools::{ToolCall, ToolSet};

fn call(name: &str, arguments: Value) -> ToolCall {
    ToolCall {
        name: name.into(),
        arguments,
    }
}

fn paris() -> ToolCall {
    call("get_weather", json!({"city": "Paris"}))
}

fn collect(events: Vec<TextEvent>) -> Extracted {
    let mut out = Extracted::default();
    for e in events {
        match e {
            TextEvent::Text(t) => out.text.push_str(&t),
            TextEvent::Calls { calls, .. } => out.calls.extend(calls),
            TextEvent::Unparsed { raw, error } => {
                out.text.push_str(&raw);
                out.failures.push(error);
            }
        }
    }
    out
}

fn pieces(pieces: &[&str], set: &ToolSet) -> Extracted {
    let mut stream = TextStream::new(set);
    let mut events = Vec::new();
    for p in pieces {
        events.extend(stream.feed(p));
    }
    events.extend(stream.finish());
    collect(events)
}

/// `text` read whole, and the same when split in two at every byte
/// boundary and fed one character at a time.
fn read(text: &str, set: &ToolSet) -> Extracted {
    let whole = extract(text, set);
    for cut in (1..text.len()).filter(|&c| text.is_char_boundary(c)) {
        let split = pieces(&[&text[..cut], &text[cut..]], set);
        assert_eq!(split, whole, "{text:?} cut at {cut}");
    }
    let chars: Vec<String> = text.chars().map(String::from).collect();
    let chars: Vec<&str> = chars.iter().map(String::as_str).collect();
    assert_eq!(pieces(&chars, set), whole, "{text:?} char by char");
    whole
}

#[test]
fn every_new_form_reads_the_same_call() {
    for text in [
        r#"<tool_call>{"name": "get_weather", "args": {"city": "Paris"}}</tool_call>"#,
        r#"<tool_call>{"name": "get_weather", "args": "{\"city\": \"Paris\"}"}</tool_call>"#,
        r#"<tool_call>{"name": "get_weather", "parameters": "{\"city\": \"Paris\"}"}</tool_call>"#,
        r#"<tool_call>{"function": {"name": "get_weather", "args": {"city": "Paris"}}}</tool_call>"#,
        r#"{"name": "get_weather", "arguments": {"city": "Paris"}}"#,
        "\n  {\"name\": \"get_weather\", \"args\": {\"city\": \"Paris\"}}\n\n",
        r#"[{"name": "get_weather", "parameters": {"city": "Paris"}}]"#,
        r#"{"arguments": {"city": "Paris"}, "name": "get_weather"}"#,
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>",
        "<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>",
        "<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>",
        "<function=get_weather><parameter=city>Paris</parameter></function>",
        "<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n",
        r#"{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>"#,
        "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
        r#"[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}]"#,
        r#"[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "a1b2c3d4e"}]"#,
        r#"[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}"#,
        r#"[TOOL_CALLS]get_weather[CALL_ID]a1b2c3d4e[ARGS]{"city": "Paris"}"#,
        r#"<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}"#,
    ] {
        let out = read(text, &set());
        assert_eq!(out.calls, vec![paris()], "{text}: {out:?}");
        assert_eq!(out.text, "", "{text}");
    }
}

#[test]
fn new_forms_follow_one_another_and_keep_the_text_around() {
    let both = vec![paris(), call("get_time", json!({"timezone": "CET"}))];
    for text in [
        r#"[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]get_time[ARGS]{"timezone": "CET"}"#,
        r#"[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "get_time", "arguments": {"timezone": "CET"}}]"#,
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n<function=get_time>\n<parameter=timezone>\nCET\n</parameter>\n</function>\n</tool_call>",
        "<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n<function=get_time>\n<parameter=timezone>\nCET\n</parameter>\n</function>",
        "{\"name\": \"get_weather\", \"args\": {\"city\": \"Paris\"}}</tool_call>\n{\"name\": \"get_time\", \"args\": {\"timezone\": \"CET\"}}</tool_call>",
        "[{\"name\": \"get_weather\", \"args\": {\"city\": \"Paris\"}}, {\"name\": \"get_time\", \"args\": {\"timezone\": \"CET\"}}]",
    ] {
        let out = read(text, &set());
        assert_eq!(out.calls, both, "{text}: {out:?}");
        assert_eq!(out.text, "", "{text}");
    }
    let out = read(
        "Let me check.\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>\nDone.",
        &set(),
    );
    assert_eq!(out.calls, vec![paris()]);
    assert_eq!(out.text, "Let me check.\nDone.");
    let out = read(
        "Checking.\n[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}",
        &set(),
    );
    assert_eq!((out.calls, out.text.as_str()), (vec![paris()], "Checking."));
}

#[test]
fn bare_json_is_a_call_only_as_the_whole_answer_or_before_a_closing_tag() {
    for text in [
        r#"Here: {"name": "get_weather", "arguments": {"city": "Paris"}}"#,
        r#"{"name": "get_weather", "arguments": {"city": "Paris"}} is what I would send."#,
        r#"{"name": "get_weather", "arguments": {"city": "Paris"}}{"name": "get_time"}"#,
        r#"{"name": "Bob", "age": 3}"#,
        r#"{"name": "launch_missiles", "arguments": {}}"#,
        r#"{"name": "launch_missiles", "arguments": {}}</tool_call>"#,
        r#"[{"name": "get_weather", "arguments": {"city": "Paris"}}, 3]"#,
        r#"{"name": "get_weather", "arguments": {"city": "Par"#,
        r#"{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_"#,
        r#"{"city": "Paris"}"#,
        "{name: x}",
    ] {
        let out = read(text, &set());
        assert!(
            out.calls.is_empty() && out.failures.is_empty(),
            "{text}: {out:?}"
        );
        assert_eq!(out.text, text);
    }
    // Calls inside a JSON text that is not a call are still found.
    let text = "{\"name\": \"Bob\"}\nget_weather(city=\"Paris\")";
    let out = read(text, &set());
    assert_eq!(out.calls, vec![paris()]);
    assert_eq!(out.text, "{\"name\": \"Bob\"}");
}

#[test]
fn a_bare_answer_is_held_to_its_end_and_other_json_flows_once_closed() {
    let mut stream = TextStream::new(&set());
    let call = r#"{"name": "get_weather", "arguments": {"city": "Paris"}}"#;
    assert_eq!(stream.feed(call), vec![]);
    assert_eq!(stream.feed("\n"), vec![]);
    let events = stream.finish();
    assert!(
        matches!(&events[..], [TextEvent::Calls { calls, raw }] if calls == &vec![paris()] && raw == call),
        "{events:?}"
    );
    let mut stream = TextStream::new(&set());
    assert_eq!(stream.feed(r#"{"name": "Bob", "#), vec![]);
    assert_eq!(
        stream.feed(r#""age": 3} and"#),
        vec![TextEvent::Text(r#"{"name": "Bob", "age": 3} and"#.into())]
    );
}

#[test]
fn qwen3_coder_values_take_the_declared_types() {
    let set = ToolSet::from_request(&[json!({"type": "function", "function": {"name": "f",
        "parameters": {"type": "object", "properties": {
            "n": {"type": "integer"}, "x": {"type": "number"}, "b": {"type": "boolean"},
            "o": {"type": "object"}, "a": {"type": "array"}, "s": {"type": "string"},
            "u": {"type": ["integer", "null"]}, "v": {"anyOf": [{"type": "number"}, {"type": "string"}]},
            "bad": {"type": "integer"}, "free": {}}}}})])
    .unwrap();
    let text = "<tool_call>\n<function=f>\n<parameter=n>\n42\n</parameter>\n<parameter=x>\n2.5\n</parameter>\n\
        <parameter=b>\nTrue\n</parameter>\n<parameter=o>\n{\"k\": [1, null]}\n</parameter>\n\
        <parameter=a>\n['a', 1, None]\n</parameter>\n<parameter=s>\n  two lines\nkept 7 \n</parameter>\n\
        <parameter=u>\nnull\n</parameter>\n<parameter=v>\n-3\n</parameter>\n<parameter=bad>\nforty\n</parameter>\n\
        <parameter=free>\n12\n</parameter>\n</function>\n</tool_call>";
    let out = read(text, &set);
    assert!(out.failures.is_empty(), "{out:?}");
    assert_eq!(
        out.calls,
        vec![call(
            "f",
            json!({"n": 42, "x": 2.5, "b": true, "o": {"k": [1, null]}, "a": ["a", 1, null],
                "s": "  two lines\nkept 7 ", "u": null, "v": -3, "bad": "forty", "free": "12"})
        )]
    );
    // A parameter given twice is refused, as in the Python form.
    let twice = "<function=f><parameter=n>1</parameter><parameter=n>2</parameter></function>";
    let out = read(twice, &set);
    assert!(out.calls.is_empty());
    assert!(
        matches!(out.failures[..], [TextError::Arguments(_)]),
        "{out:?}"
    );
}

#[test]
fn undeclared_names_in_the_new_forms_are_not_calls() {
    for text in [
        r#"<tool_call>{"name": "rm", "args": {}}</tool_call>"#,
        "<tool_call>\n<function=rm>\n<parameter=path>\n/\n</parameter>\n</function>\n</tool_call>",
        "<function=rm>\n</function>",
        r#"[TOOL_CALLS]rm[ARGS]{"path": "/"}"#,
        r#"[TOOL_CALLS][{"name": "rm", "arguments": {}}]"#,
        r#"<|python_tag|>{"name": "rm", "parameters": {}}"#,
    ] {
        let out = read(text, &set());
        assert!(out.calls.is_empty(), "{text}");
        assert!(
            matches!(out.failures[..], [TextError::UndeclaredTool(_)]),
            "{text}: {out:?}"
        );
        assert_eq!(out.text, text);
    }
}

#[test]
fn markers_without_a_call_stay_text() {
    for (text, want) in [
        (
            "[TOOL_CALLS] is the marker Mistral writes.",
            TextError::NotACall("a call marker without a call after it".into()),
        ),
        ("[TOOL_CALLS]get_weather", TextError::Unterminated),
        (
            "<|python_tag|>print('hi')",
            TextError::NotACall("a call marker without a call after it".into()),
        ),
        (
            "[TOOL_CALLS]get_weather[ARGS]{\"city\"",
            TextError::Unterminated,
        ),
        (
            "<function=get_weather>\n<parameter=city Paris",
            TextError::Unterminated,
        ),
    ] {
        let out = read(text, &set());
        assert!(out.calls.is_empty(), "{text}");
        assert_eq!(out.failures, vec![want], "{text}");
        assert_eq!(out.text, text);
    }
}

#[test]
fn the_new_forms_are_bounded() {
    let filler = "x".repeat(MAX_BLOCK + 10);
    for (open, error) in [
        (
            "<function=get_weather>\n<parameter=city>\n",
            Some(TextError::TooLong),
        ),
        (
            "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"",
            Some(TextError::TooLong),
        ),
        (
            "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"",
            Some(TextError::TooLong),
        ),
        (
            "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"",
            Some(TextError::TooLong),
        ),
        (
            "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"",
            None,
        ),
    ] {
        let text = format!("{open}{filler}");
        let out = extract(&text, &set());
        assert!(out.calls.is_empty(), "{open}");
        assert_eq!(
            out.failures,
            error.into_iter().collect::<Vec<_>>(),
            "{open}"
        );
        assert_eq!(out.text, text, "{open}");
        // Streamed, the held text goes out at the bound.
        let mut stream = TextStream::new(&set());
        let mut events = stream.feed(open);
        for chunk in filler.as_bytes().chunks(1000) {
            events.extend(stream.feed(std::str::from_utf8(chunk).unwrap()));
        }
        let sent: usize = events
            .iter()
            .map(|e| match e {
                TextEvent::Text(t) | TextEvent::Unparsed { raw: t, .. } => t.len(),
                TextEvent::Calls { raw, .. } => raw.len(),
            })
            .sum();
        assert!(sent >= MAX_BLOCK - 1000, "{open}: held text is bounded");
        let mut rest = events;
        rest.extend(stream.finish());
        assert_eq!(collect(rest), out, "{open}");
    }
    let one = "{\"name\": \"get_time\", \"arguments\": {\"timezone\": \"x\"}}";
    let many = format!("[TOOL_CALLS][{}]", vec![one; MAX_CALLS + 1].join(", "));
    let xml = "<function=get_time><parameter=timezone>x</parameter></function>";
    let many_xml = format!("<tool_call>{}</tool_call>", xml.repeat(MAX_CALLS + 1));
    for text in [many, many_xml] {
        let out = extract(&text, &set());
        assert!(out.calls.is_empty());
        assert_eq!(out.failures, vec![TextError::TooManyCalls]);
        assert_eq!(out.text, text);
    }
}

#[test]
fn feeding_one_byte_at_a_time_stays_linear() {
    let long = 60_000;
    let call = r#"{"name": "get_weather", "arguments": {"city": "Paris"}}"#;
    for (open, fill) in [
        (call, ' '),
        ("[TOOL_CALLS]", 'a'),
        ("[TOOL_CALLS]", ' '),
        ("[", ' '),
        ("{", ' '),
        ("<function=get_weather>", 'x'),
        (r#"{"name": "get_weather", "arguments": {"city": ""#, 'x'),
        (r#"<|python_tag|>{"name": ""#, 'x'),
    ] {
        let started = std::time::Instant::now();
        let mut stream = TextStream::new(&set());
        let mut events = stream.feed(open);
        let mut buf = [0u8; 4];
        let fill = fill.encode_utf8(&mut buf);
        for _ in 0..long {
            events.extend(stream.feed(fill));
        }
        events.extend(stream.finish());
        let out = collect(events);
        if open == call {
            assert_eq!(out.calls, vec![paris()], "trailing whitespace is dropped");
        } else {
            assert_eq!(out.text.len(), open.len() + long, "{open}");
        }
        let spent = started.elapsed();
        assert!(
            spent < std::time::Duration::from_secs(5),
            "{open}: {spent:?}"
        );
    }
}

/// The fuzz target's checks (`fuzz/fuzz_targets/text_calls.rs`) on its
/// seeds, at every piece size it uses.
#[test]
fn the_fuzz_seeds_pass_the_fuzz_targets_checks() {
    let tool = |name: &str, props: Value| {
        json!({"type": "function", "function": {"name": name,
            "parameters": {"type": "object", "properties": props}}})
    };
    let set = ToolSet::from_request(&[
        tool(
            "get_weather",
            json!({"city": {"type": "string"}, "unit": {"type": "string"}}),
        ),
        tool("get_time", json!({"timezone": {"type": "string"}})),
        tool("print", json!({"text": {"type": "string"}})),
    ])
    .unwrap();
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz/seeds/text_calls");
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let data = std::fs::read(entry.unwrap().path()).unwrap();
        let text = String::from_utf8_lossy(&data[1..]);
        let whole = extract(&text, &set);
        assert!(whole.calls.iter().all(|c| c.arguments.is_object()));
        if whole.calls.is_empty() {
            assert_eq!(whole.text, text);
        }
        for step in 1..=32 {
            let mut cuts = Vec::new();
            let mut start = 0;
            while start < text.len() {
                let mut end = (start + step).min(text.len());
                while !text.is_char_boundary(end) {
                    end += 1;
                }
                cuts.push(&text[start..end]);
                start = end;
            }
            assert_eq!(pieces(&cuts, &set), whole, "{text:?} in pieces of {step}");
        }
        seen += 1;
    }
    assert!(seen >= 9, "the seeds are there");
}
