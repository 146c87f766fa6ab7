//! Unit tests of the streamed thinking envelope.

use serde_json::json;

use super::*;

/// Feed `text` split every `step` characters; the merged events.
fn run(text: &str, step: usize) -> (String, String, String, ThinkStream) {
    let mut s = ThinkStream::new();
    let (mut thinking, mut answer, mut raw) = (String::new(), String::new(), String::new());
    let chars: Vec<char> = text.chars().collect();
    for piece in chars.chunks(step.max(1)) {
        let piece: String = piece.iter().collect();
        for e in s.feed(&piece) {
            match e {
                ThinkEvent::Thinking(t) => thinking.push_str(&t),
                ThinkEvent::AnswerText(t) => answer.push_str(&t),
                ThinkEvent::AnswerRaw(t) => raw.push_str(&t),
            }
        }
    }
    (thinking, answer, raw, s)
}

#[test]
fn thinking_then_a_text_answer_whatever_the_split() {
    let text = r#" {"reasoning": "Light \"scatters\"\n\u00e9.", "answer": "Blue \ud83d\ude00."} "#;
    for step in 1..text.len() {
        let (thinking, answer, raw, s) = run(text, step);
        assert_eq!(thinking, "Light \"scatters\"\né.", "step {step}");
        assert_eq!(answer, "Blue 😀.", "step {step}");
        assert!(raw.is_empty());
        let done = s.finish().unwrap();
        assert!(done.streamed);
        assert_eq!(done.answer, json!("Blue 😀."));
    }
}

#[test]
fn a_structured_answer_is_passed_on_raw() {
    let text = r#"{"reasoning":"r","answer":{"tool_call":{"name":"f","arguments":{"a":"}"}}}}"#;
    for step in [1, 3, 7, 100] {
        let (thinking, answer, raw, s) = run(text, step);
        assert_eq!(thinking, "r");
        assert!(answer.is_empty());
        assert_eq!(raw, r#"{"tool_call":{"name":"f","arguments":{"a":"}"}}}"#);
        assert!(s.finish().unwrap().streamed);
    }
    let (_, _, raw, s) = run(r#"{"reasoning":"r","answer":42}"#, 1);
    assert_eq!(raw, "42");
    assert_eq!(s.finish().unwrap().answer, json!(42));
}

#[test]
fn another_shape_stops_the_events_and_is_parsed_whole() {
    let (thinking, answer, _, s) = run(r#"{"answer":"a","reasoning":"r"}"#, 4);
    assert!(thinking.is_empty() && answer.is_empty());
    let done = s.finish().unwrap();
    assert!(!done.streamed);
    assert_eq!((done.thinking.as_str(), done.answer), ("r", json!("a")));
    let (_, _, _, s) = run("not json", 2);
    assert!(s.finish().is_err());
    // Cut off inside the reasoning: what came was sent, the end is an error.
    let (thinking, _, _, s) = run(r#"{"reasoning":"half"#, 3);
    assert_eq!(thinking, "half");
    assert!(s.finish().is_err());
}
