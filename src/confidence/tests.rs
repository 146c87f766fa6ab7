//! Tests of confidence scoring: which tokens count, and what they say.

use serde_json::{Value, json};

use super::*;

/// Tokens spelling `pieces`, each `(text, probability)`.
fn tokens(pieces: &[(&str, f64)]) -> Tokens {
    let items: Vec<Value> = pieces
        .iter()
        .map(|(t, p)| {
            json!({"token": t, "logprob": p.ln(), "bytes": t.as_bytes(),
                "top_logprobs": [{"token": t, "logprob": p.ln()}, {"token": "x", "logprob": (1.0 - p).max(1e-9).ln()}]})
        })
        .collect();
    let mut t = Tokens::default();
    t.extend(&Value::Array(items));
    t
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn an_emulated_call_is_scored_by_its_values_only() {
    // Keys, punctuation and the name's tokens are unsure (the grammar
    // forced them, whatever the model wanted): they do not count.
    let t = tokens(&[
        ("{\"", 0.01),
        ("tool_call", 0.02),
        ("\":{\"", 0.01),
        ("name", 0.02),
        ("\":\"", 0.01),
        ("get", 0.001),
        ("_weather", 0.02),
        ("\",\"", 0.03),
        ("arguments", 0.01),
        ("\":{\"", 0.01),
        ("city", 0.02),
        ("\":\"", 0.01),
        ("Par", 0.4),
        ("is", 0.9),
        ("\"}}}", 0.95),
    ]);
    let c = of_envelope(&t).unwrap();
    assert_eq!(c.calls.len(), 1);
    assert_eq!(c.calls[0].name, "get_weather");
    let s = &c.answer;
    assert!(close(s.min, 0.4), "{s:?}");
    assert_eq!(s.weakest.token, "Par");
    assert_eq!(s.weakest.alternatives[1].0, "x");
    assert_eq!(s.unsure, 1);
    // Par, is: the name's tokens are the grammar's.
    assert_eq!(s.tokens, 2);
    let mean = (0.4f64.ln() + 0.9f64.ln()) / 2.0;
    assert!(close(s.mean, mean.exp()), "{s:?}");
}

#[test]
fn an_answer_is_its_weakest_call() {
    let text =
        r#"{"tool_calls":[{"name":"f","arguments":{"a":1}},{"name":"g","arguments":{"b":"xy"}}]}"#;
    // One token a character; the "x" of the second call is unsure.
    let pieces: Vec<(String, f64)> = text
        .chars()
        .enumerate()
        .map(|(i, c)| {
            (
                c.to_string(),
                if i == text.find('x').unwrap() {
                    0.2
                } else {
                    0.97
                },
            )
        })
        .collect();
    let pieces: Vec<(&str, f64)> = pieces.iter().map(|(s, p)| (s.as_str(), *p)).collect();
    let c = of_envelope(&tokens(&pieces)).unwrap();
    let names: Vec<&str> = c.calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["f", "g"]);
    assert!(close(c.calls[0].score.min, 0.97));
    assert!(close(c.calls[1].score.min, 0.2));
    assert!(close(c.answer.min, 0.2));
    assert_eq!(c.answer.weakest.token, "x");
}

#[test]
fn an_emulated_answer_is_scored_by_its_words() {
    let t = tokens(&[
        ("{\"response\":\"", 0.1),
        ("Bon", 0.8),
        ("jour", 0.6),
        (" !", 0.3),
        ("\"}", 0.9),
    ]);
    let c = of_envelope(&t).unwrap();
    assert!(c.calls.is_empty());
    assert!(close(c.answer.min, 0.6), "{:?}", c.answer);
}

#[test]
fn native_and_text_calls_are_found_in_the_text() {
    // Japanese argument, Python call syntax.
    let t = tokens(&[
        ("[", 0.5),
        ("get", 0.9),
        ("_weather", 0.9),
        ("(city=\"", 0.2),
        ("札", 0.7),
        ("幌", 0.35),
        ("\")]", 0.9),
    ]);
    let calls = [("get_weather".to_string(), json!({"city": "札幌"}))];
    let c = of_calls(&t, &calls).unwrap();
    assert!(close(c.answer.min, 0.35), "{:?}", c.answer);
    assert_eq!(c.answer.weakest.token, "幌");
    assert_eq!(c.answer.tokens, 4);
    // A call not in the text is not scored.
    let missing = [("other".to_string(), json!({}))];
    assert!(of_calls(&t, &missing).is_none());
}

#[test]
fn a_plain_answer_is_scored_by_its_words() {
    let t = tokens(&[("Hello", 0.9), (",", 0.01), (" world", 0.7), ("\n", 0.02)]);
    let c = of_text(&t).unwrap();
    assert!(close(c.answer.min, 0.7));
    assert_eq!(c.answer.tokens, 2);
}

#[test]
fn tokens_split_inside_a_character_join_up() {
    // "é" is two bytes, one a token each.
    let mut t = Tokens::default();
    t.extend(&json!([
        {"token": "caf", "logprob": -0.1, "bytes": [99, 97, 102]},
        {"token": "\u{fffd}", "logprob": -0.2, "bytes": [195]},
        {"token": "\u{fffd}", "logprob": -1.5, "bytes": [169]}
    ]));
    assert_eq!(t.text(), Some("café"));
    let c = of_text(&t).unwrap();
    assert!(close(c.answer.min, (-1.5f64).exp()));
}

#[test]
fn nothing_usable_is_unknown() {
    assert!(of_text(&Tokens::default()).is_none());
    let mut t = Tokens::default();
    t.extend(&json!([{"token": "a"}]));
    assert!(of_text(&t).is_none(), "a token without its logprob");
    let mut t = Tokens::default();
    t.extend(&json!({"not": "a list"}));
    assert!(of_text(&t).is_none());
    let mut t = Tokens::default();
    let many: Vec<Value> = (0..tokens::MAX_TOKENS + 1)
        .map(|_| json!({"token": "a", "logprob": -0.1}))
        .collect();
    t.extend(&Value::Array(many));
    assert!(of_text(&t).is_none(), "past the bound");
}

#[test]
fn leaves_skip_keys_and_survive_a_cut() {
    let leaves = leaves_of(r#"{"a": "x\"y", "b": [1, true, null], "c": {"d": "#);
    let spans: Vec<(usize, usize)> = leaves.iter().map(|l| (l.start, l.end)).collect();
    assert_eq!(spans.len(), 4, "{leaves:?}");
    assert_eq!(leaves[0].path, vec![Step::Key("a".into())]);
    assert_eq!(leaves[1].path, vec![Step::Key("b".into()), Step::Index(0)]);
}

#[test]
fn an_empty_value_is_scored_by_the_quote_that_closed_it() {
    let t = tokens(&[
        ("{\"tool_call\":{\"name\":\"", 0.01),
        ("f", 0.9),
        ("\",\"arguments\":{\"q\":\"", 0.01),
        ("\"}}}", 0.3),
    ]);
    let c = of_envelope(&t).unwrap();
    assert!(close(c.answer.min, 0.3), "{:?}", c.answer);
    assert_eq!(c.calls[0].name, "f");
}

#[test]
fn a_call_without_arguments_is_scored_by_its_name() {
    let t = tokens(&[
        ("{\"tool_call\":{\"name\":\"", 0.01),
        ("now", 0.7),
        ("\",\"arguments\":{}}}", 0.01),
    ]);
    let c = of_envelope(&t).unwrap();
    assert_eq!(c.calls[0].name, "now");
    assert!(close(c.answer.min, 0.7));
}

/// One token a character of `text`, each sure but those at `unsure`
/// (byte offsets), at 0.2.
fn per_char(text: &str, unsure: &[usize]) -> Tokens {
    let pieces: Vec<(String, f64)> = text
        .char_indices()
        .map(|(i, c)| (c.to_string(), if unsure.contains(&i) { 0.2 } else { 0.97 }))
        .collect();
    let pieces: Vec<(&str, f64)> = pieces.iter().map(|(s, p)| (s.as_str(), *p)).collect();
    tokens(&pieces)
}

#[test]
fn a_call_repeated_within_the_answer_is_scored_once() {
    // augur returns an exact repeat once: its second writing is no call of
    // the answer, and its unsure value no reason to doubt it.
    let text = r#"{"tool_calls":[{"name":"f","arguments":{"a":1}},{"name":"f","arguments":{"a":1}},{"name":"g","arguments":{"b":"xy"}}]}"#;
    let second = text.match_indices("1").nth(1).unwrap().0;
    let c = of_envelope(&per_char(text, &[second])).unwrap();
    let names: Vec<&str> = c.calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["f", "g"]);
    assert!(close(c.answer.min, 0.97), "{:?}", c.answer);
    assert_eq!(c.answer.unsure, 0);
    assert_eq!(c.answer.tokens, 3, "1, x, y");
    // Same name, other arguments: two calls, both scored.
    let text =
        r#"{"tool_calls":[{"name":"f","arguments":{"a":1}},{"name":"f","arguments":{"a":2}}]}"#;
    let c = of_envelope(&per_char(text, &[text.find('2').unwrap()])).unwrap();
    assert_eq!(c.calls.len(), 2);
    assert!(close(c.answer.min, 0.2));
}

#[test]
fn a_call_cut_off_by_the_end_of_the_answer_is_not_scored() {
    // The complete calls of a cut answer are returned; the trailing one is not.
    let text =
        r#"{"tool_calls":[{"name":"f","arguments":{"a":1}},{"name":"g","arguments":{"b":"xy"#;
    let c = of_envelope(&per_char(text, &[text.find('x').unwrap()])).unwrap();
    let names: Vec<&str> = c.calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["f"]);
    assert!(close(c.answer.min, 0.97), "{:?}", c.answer);
}
