//! Tests of [`super::StreamExtractor`], including random delta splits.

use super::*;
use crate::tools::testutil::tools;
use serde_json::{Value, json};

/// xorshift64*: deterministic, dependency-free.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Merge adjacent `AnswerDelta`s so splits can be compared.
fn merged(events: Vec<StreamEvent>) -> Vec<StreamEvent> {
    let mut out: Vec<StreamEvent> = Vec::new();
    for e in events {
        match (out.last_mut(), e) {
            (Some(StreamEvent::AnswerDelta(a)), StreamEvent::AnswerDelta(b)) => a.push_str(&b),
            (_, e) => out.push(e),
        }
    }
    out
}

fn run(pieces: &[&str], structured: bool) -> Result<Vec<StreamEvent>, ParseError> {
    let set = tools(3);
    let mut x = StreamExtractor::new(&set, structured);
    let mut events = Vec::new();
    for p in pieces {
        events.extend(x.feed(p));
    }
    events.extend(x.finish()?);
    Ok(merged(events))
}

/// `text` cut at random char boundaries (sometimes into single chars).
fn random_split<'a>(text: &'a str, rng: &mut Rng) -> Vec<&'a str> {
    let bounds: Vec<usize> = text.char_indices().map(|(i, _)| i).skip(1).collect();
    let mut cuts: Vec<usize> = if rng.below(10) == 0 {
        bounds
    } else {
        let n = rng.below(text.len().min(12) + 1);
        (0..n)
            .filter_map(|_| bounds.get(rng.below(bounds.len().max(1))).copied())
            .collect()
    };
    cuts.sort_unstable();
    cuts.dedup();
    let mut out = Vec::new();
    let mut last = 0;
    for c in cuts {
        out.push(&text[last..c]);
        last = c;
    }
    out.push(&text[last..]);
    out
}

fn call(name: &str, arguments: Value) -> StreamEvent {
    StreamEvent::Call(ToolCall {
        name: name.into(),
        arguments,
    })
}

fn cases() -> Vec<(&'static str, bool, Vec<StreamEvent>)> {
    vec![
        (
            r#"{"response":"Line1\nLine2 \"q\" tab\t back\\slash \/ \u00e9 \ud83d\ude00 ☃ \u0041\b\f\r end"}"#,
            false,
            vec![StreamEvent::AnswerDelta(
                "Line1\nLine2 \"q\" tab\t back\\slash / é 😀 ☃ A\u{8}\u{c}\r end".into(),
            )],
        ),
        (
            "  {\n \"tool_call\" : {\"name\":\"get_weather\",\"arguments\":{\"city\":\"New {York}\",\"unit\":\"celsius\"}} }\n",
            false,
            vec![call(
                "get_weather",
                json!({"city":"New {York}","unit":"celsius"}),
            )],
        ),
        (
            r#"{"tool_calls":[{"name":"tool_1","arguments":{"n":1}}, {"name":"get_weather","arguments":"{\"city\":\"a\\\"}\"}"},{"name":"tool_2","arguments":{"n":[{"x":"]"}]}}]}"#,
            false,
            vec![
                call("tool_1", json!({"n":1})),
                call("get_weather", json!({"city":"a\"}"})),
                call("tool_2", json!({"n":[{"x":"]"}]})),
            ],
        ),
        (
            "{\"response\": {\"a\": [1, 2, {\"b\": \"x } \\\" y\"}], \"c\": null}}",
            true,
            vec![StreamEvent::AnswerDelta(
                r#"{"a":[1,2,{"b":"x } \" y"}],"c":null}"#.into(),
            )],
        ),
        (
            r#"{"response": 42 }"#,
            true,
            vec![StreamEvent::AnswerDelta("42".into())],
        ),
        (
            r#"{"response":"plain"}"#,
            true,
            vec![StreamEvent::AnswerDelta("\"plain\"".into())],
        ),
        (
            r#"{"name":"tool_1","arguments":{"n":1}}"#,
            false,
            vec![call("tool_1", json!({"n":1}))],
        ),
    ]
}

#[test]
fn whole_feed_gives_the_expected_events() {
    for (text, structured, want) in cases() {
        assert_eq!(run(&[text], structured).unwrap(), want, "{text}");
    }
}

#[test]
fn random_splits_give_the_same_events() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for (text, structured, want) in cases() {
        for _ in 0..300 {
            let pieces = random_split(text, &mut rng);
            assert_eq!(run(&pieces, structured).unwrap(), want, "{pieces:?}");
        }
        // Every single two-way split, too.
        for (i, _) in text.char_indices().skip(1) {
            let pieces = [&text[..i], &text[i..]];
            assert_eq!(run(&pieces, structured).unwrap(), want, "{pieces:?}");
        }
    }
}

#[test]
fn stream_agrees_with_whole_output_parsing() {
    let set = tools(3);
    for (text, structured, want) in cases() {
        let from_parse = match parse_output(text, &set).unwrap() {
            ModelOutput::Calls(c) => c.into_iter().map(StreamEvent::Call).collect::<Vec<_>>(),
            ModelOutput::Answer(v) => {
                vec![StreamEvent::AnswerDelta(answer_content(&v, structured))]
            }
        };
        assert_eq!(from_parse, want, "{text}");
    }
}

#[test]
fn text_is_emitted_as_soon_as_it_is_decoded() {
    let set = tools(1);
    let mut x = StreamExtractor::new(&set, false);
    assert_eq!(x.feed("{\"resp"), vec![]);
    assert_eq!(x.branch(), None);
    assert_eq!(
        x.feed("onse\": \"Hel"),
        vec![StreamEvent::AnswerDelta("Hel".into())]
    );
    assert_eq!(x.branch(), Some(Branch::Answer));
    assert_eq!(
        x.feed("lo \\"),
        vec![StreamEvent::AnswerDelta("lo ".into())]
    );
    assert_eq!(x.feed("u00"), vec![]);
    assert_eq!(
        x.feed("e9\\ud83d"),
        vec![StreamEvent::AnswerDelta("é".into())]
    );
    assert_eq!(x.feed("\\"), vec![]);
    assert_eq!(
        x.feed("ude00!"),
        vec![StreamEvent::AnswerDelta("😀!".into())]
    );
    assert_eq!(x.feed("\"}"), vec![]);
    assert_eq!(x.finish().unwrap(), vec![]);
}

#[test]
fn calls_are_emitted_when_their_object_closes() {
    let set = tools(3);
    let mut x = StreamExtractor::new(&set, false);
    assert_eq!(
        x.feed(r#"{"tool_calls":[{"name":"tool_1","arguments":{"n":1}"#),
        vec![]
    );
    assert_eq!(x.branch(), Some(Branch::Calls));
    assert_eq!(x.feed("}"), vec![call("tool_1", json!({"n":1}))]);
    assert_eq!(
        x.feed(r#",{"name":"tool_2","arguments":{"n":2}},{"name":"tool_1","#),
        vec![call("tool_2", json!({"n":2}))]
    );
    // Cut off mid-call: the calls so far stand, finish reports truncation.
    assert_eq!(x.finish(), Err(ParseError::Truncated));
}

#[test]
fn failures_are_reported() {
    let set = tools(2);
    let mut x = StreamExtractor::new(&set, false);
    let events = x.feed(r#"{"tool_calls":[{"name":"tool_1","arguments":{}},{"name":"evil","arguments":{}},{"name":"tool_1","arguments":{}}]}"#);
    assert_eq!(events, vec![call("tool_1", json!({}))]);
    assert_eq!(x.error(), Some(&ParseError::UndeclaredTool("evil".into())));
    assert_eq!(x.finish(), Err(ParseError::UndeclaredTool("evil".into())));

    let mut x = StreamExtractor::new(&set, false);
    assert_eq!(
        x.feed(r#"{"response":"abc"#),
        vec![StreamEvent::AnswerDelta("abc".into())]
    );
    assert_eq!(x.finish(), Err(ParseError::Truncated));

    for (text, structured) in [
        ("", false),
        ("   ", false),
        (r#"{"response": {"a":"#, true),
        (r#"{"response": "x"#, true),
    ] {
        let mut x = StreamExtractor::new(&set, structured);
        x.feed(text);
        assert_eq!(x.finish(), Err(ParseError::Truncated), "{text}");
    }
    let mut x = StreamExtractor::new(&set, false);
    assert!(x.feed("I think the answer is 4").is_empty());
    assert!(matches!(x.finish(), Err(ParseError::InvalidJson(_))));
    let mut x = StreamExtractor::new(&set, false);
    x.feed(r#"{"other":"x"}"#);
    assert!(matches!(x.finish(), Err(ParseError::NotAnEnvelope(_))));
}

#[test]
fn lone_surrogates_become_replacement_characters() {
    for (text, want) in [
        (r#"{"response":"a\ud83db"}"#, "a\u{FFFD}b"),
        (r#"{"response":"a\ude00b"}"#, "a\u{FFFD}b"),
        (r#"{"response":"a\ud83d\ud83d\ude00"}"#, "a\u{FFFD}😀"),
        (r#"{"response":"a\ud83d\nb"}"#, "a\u{FFFD}\nb"),
        (r#"{"response":"a\ud83d"}"#, "a\u{FFFD}"),
    ] {
        assert_eq!(
            run(&[text], false).unwrap(),
            vec![StreamEvent::AnswerDelta(want.into())],
            "{text}"
        );
    }
}
