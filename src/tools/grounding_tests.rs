//! Tests of the grounding rule ([`super::Grounding`]) and of dropping
//! ungrounded continuations (`drop_ungrounded`, below).

use serde_json::{Value, json};

use super::*;
use crate::tools::{ToolSet, testutil::call};

fn set() -> ToolSet {
    ToolSet::from_request(&[
        json!({"type":"function","function":{"name":"factorial",
            "parameters":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}}}),
        json!({"type":"function","function":{"name":"get_weather",
            "parameters":{"type":"object","properties":{
                "city":{"type":"string"},
                "unit":{"type":"string","enum":["celsius","fahrenheit"]},
                "days":{"type":"integer","default":1},
                "hourly":{"type":"boolean"}},"required":["city"]}}}),
        json!({"type":"function","function":{"name":"get_time",
            "parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}),
    ])
    .unwrap()
}

fn user(text: &str) -> Grounding {
    Grounding::from_messages(&[json!({"role":"user","content":text})])
}

#[test]
fn numbers_are_grounded_by_value() {
    let g = user(
        "What is the factorial of 5? Also 1,000 and 2.50, twenty-five, a dozen, three hundred.",
    );
    for n in [
        json!(5),
        json!(5.0),
        json!(1000),
        json!(1),
        json!(2.5),
        json!(25),
        json!(12),
        json!(300),
        json!(-5),
    ] {
        assert!(g.grounds(&n, None), "{n}");
    }
    for n in [json!(10), json!(15), json!(50), json!(0)] {
        assert!(!g.grounds(&n, None), "{n}");
    }
    // A number as a string is a number.
    assert!(g.grounds(&json!("5"), None));
    assert!(!g.grounds(&json!("10"), None));
}

#[test]
fn strings_are_grounded_ignoring_case_and_spacing() {
    let g = user("Weather in  san   FRANCISCO and new york, please");
    for s in [
        "San Francisco",
        "san francisco",
        "New York",
        "york",
        "",
        "  ",
    ] {
        assert!(g.grounds(&json!(s), None), "{s}");
    }
    // Each word found is enough ("New York, please" → "please york").
    assert!(g.grounds(&json!("York New"), None));
    for s in ["Paris", "New Delhi", "London"] {
        assert!(!g.grounds(&json!(s), None), "{s}");
    }
    assert!(g.mentions("NEW YORK"));
    assert!(!g.mentions("Paris"));
}

#[test]
fn booleans_nulls_and_schema_values_are_always_grounded() {
    let g = user("nothing relevant");
    assert!(g.grounds(&json!(true), None));
    assert!(g.grounds(&Value::Null, None));
    let s = json!({"type":"string","enum":["celsius","fahrenheit"]});
    assert!(g.grounds(&json!("Fahrenheit"), Some(&s)));
    assert!(g.grounds(&json!(1), Some(&json!({"type":"integer","default":1}))));
    assert!(g.grounds(
        &json!("x"),
        Some(&json!({"anyOf":[{"const":"x"},{"type":"null"}]}))
    ));
    assert!(g.grounds(&json!("Oslo"), Some(&json!({"examples":["Oslo"]}))));
    assert!(!g.grounds(&json!("Oslo"), Some(&json!({"type":"string"}))));
}

#[test]
fn every_message_grounds_but_not_augurs_instruction() {
    let messages = [
        json!({"role":"system","content":"Default city: Lyon."}),
        json!({"role":"user","content":[{"type":"text","text":"Weather?"}]}),
        json!({"role":"assistant","content":"","tool_calls":[{"function":{"name":"get_weather","arguments":"{\"city\":\"Lyon\",\"days\":3}"}}]}),
        json!({"role":"tool","content":"{\"temp\": 17}"}),
    ];
    let g = Grounding::from_messages(&messages);
    for v in [json!("lyon"), json!(3), json!(17)] {
        assert!(g.grounds(&v, None), "{v}");
    }
    assert!(!g.grounds(&json!("Paris"), None));
}

#[test]
fn pattern_continuations_with_invented_values_are_dropped() {
    let g = user("What is the factorial of 5?");
    let calls: Vec<ToolCall> = [5, 10, 15, 20]
        .iter()
        .map(|n| call("factorial", json!({"n": n})))
        .collect();
    let (kept, dropped) = drop_ungrounded(calls, &set(), &g);
    assert_eq!(kept, vec![call("factorial", json!({"n": 5}))]);
    assert_eq!(dropped.len(), 3);
}

#[test]
fn grounded_calls_are_kept() {
    let g = user("Weather in Paris and in Tokyo, and the factorial of 5 and 7");
    let calls = vec![
        call("get_weather", json!({"city": "Paris"})),
        call("get_weather", json!({"city": "Tokyo"})),
        call("factorial", json!({"n": 5})),
        call("factorial", json!({"n": 7})),
    ];
    let (kept, dropped) = drop_ungrounded(calls.clone(), &set(), &g);
    assert_eq!(kept, calls);
    assert!(dropped.is_empty());
}

#[test]
fn only_continuations_are_judged_and_the_first_call_never() {
    let g = user("Tell me a joke");
    // The first call is kept whatever its values.
    let (kept, _) = drop_ungrounded(vec![call("factorial", json!({"n": 99}))], &set(), &g);
    assert_eq!(kept.len(), 1);
    // Other argument keys: not a continuation.
    let calls = vec![
        call("get_weather", json!({"city": "Paris"})),
        call("get_weather", json!({"city": "Oslo", "days": 4})),
    ];
    let (kept, dropped) = drop_ungrounded(calls.clone(), &set(), &g);
    assert_eq!(kept, calls);
    assert!(dropped.is_empty());
    // A change the schema names (an enum) that the conversation mentions
    // is grounded; then other keys.
    let g2 = user("Paris, in celsius and in fahrenheit please");
    let calls = vec![
        call("get_weather", json!({"city": "Paris", "unit": "celsius"})),
        call(
            "get_weather",
            json!({"city": "Paris", "unit": "fahrenheit"}),
        ),
        call(
            "get_weather",
            json!({"city": "Paris", "unit": "celsius", "hourly": true}),
        ),
    ];
    let (kept, _) = drop_ungrounded(calls.clone(), &set(), &g2);
    assert_eq!(kept, calls, "an enum changed; then other keys");
    // Not mentioned, it is a sweep through the enum: dropped.
    let (kept, dropped) = drop_ungrounded(calls.clone(), &set(), &g);
    assert_eq!(kept, vec![calls[0].clone(), calls[2].clone()]);
    assert_eq!(dropped, vec![calls[1].clone()]);
    // One grounded changed value keeps the call.
    let g = user("Weather in Paris for 3 days, and London for a week");
    let calls = vec![
        call("get_weather", json!({"city": "Paris", "days": 3})),
        call("get_weather", json!({"city": "London", "days": 7})),
        call("get_weather", json!({"city": "Berlin", "days": 3})),
    ];
    let (kept, dropped) = drop_ungrounded(calls, &set(), &g);
    assert_eq!(kept.len(), 2);
    assert_eq!(
        dropped,
        vec![call("get_weather", json!({"city": "Berlin", "days": 3}))]
    );
}

#[test]
fn nested_changes_are_compared_leaf_by_leaf() {
    let set = ToolSet::from_request(&[json!({"type":"function","function":{"name":"search",
        "parameters":{"type":"object","properties":{"q":{"type":"object","properties":{
            "terms":{"type":"array","items":{"type":"string"}}}}}}}})])
    .unwrap();
    let g = user("search for rust and go");
    let calls = vec![
        call("search", json!({"q": {"terms": ["rust"]}})),
        call("search", json!({"q": {"terms": ["rust", "go"]}})),
        call("search", json!({"q": {"terms": ["rust", "zig"]}})),
    ];
    let (kept, dropped) = drop_ungrounded(calls, &set, &g);
    assert_eq!(kept.len(), 2);
    assert_eq!(dropped[0].arguments["q"]["terms"][1], "zig");
}

#[test]
fn a_conversation_too_large_grounds_everything() {
    let big = "x".repeat(MAX_TEXT + 1);
    let g = user(&big);
    assert!(g.grounds(&json!(12345), None));
    let calls = vec![
        call("factorial", json!({"n": 1})),
        call("factorial", json!({"n": 2})),
    ];
    assert_eq!(drop_ungrounded(calls, &set(), &g).0.len(), 2);
}

#[test]
fn other_tools_added_with_invented_values_are_dropped() {
    let g = user("What is the factorial of 5?");
    let calls = vec![
        call("factorial", json!({"n": 5})),
        call("get_time", json!({"city": "Rome"})),
        call("get_weather", json!({"city": "Paris", "unit": "celsius"})),
    ];
    let (kept, dropped) = drop_ungrounded(calls, &set(), &g);
    assert_eq!(kept, vec![call("factorial", json!({"n": 5}))]);
    assert_eq!(dropped.len(), 2);
    // A grounded value keeps another tool; so does having no free value.
    let g = user("Weather and time in Rome, and 5!");
    let calls = vec![
        call("get_weather", json!({"city": "Rome"})),
        call("get_time", json!({"city": "Rome"})),
        call("factorial", json!({"n": 5})),
    ];
    assert_eq!(drop_ungrounded(calls.clone(), &set(), &g).0, calls);
    let g = user("Anything");
    let calls = vec![
        call("get_time", json!({"city": "Rome"})),
        call("get_weather", json!({"unit": "celsius", "hourly": true})),
    ];
    assert_eq!(drop_ungrounded(calls.clone(), &set(), &g).0, calls);
}

#[test]
fn an_enum_changed_beside_an_invented_value_does_not_keep_a_continuation() {
    let g = user("What's the weather in Lyon?");
    let calls = vec![
        call("get_weather", json!({"city": "Lyon", "unit": "celsius"})),
        call(
            "get_weather",
            json!({"city": "Paris", "unit": "fahrenheit"}),
        ),
        // Compared with the kept call only: Paris is new, and invented.
        call("get_weather", json!({"city": "Paris", "unit": "celsius"})),
        // Only the enum differs from the kept call, to a value the
        // question does not mention: a sweep.
        call("get_weather", json!({"city": "Lyon", "unit": "fahrenheit"})),
    ];
    let (kept, dropped) = drop_ungrounded(calls.clone(), &set(), &g);
    assert_eq!(kept, vec![calls[0].clone()]);
    assert_eq!(dropped, calls[1..].to_vec());
}

/// Small models asked for one item add it once per value of an enum; a
/// value the question names, or a boolean, keeps the call.
#[test]
fn a_sweep_through_an_enum_is_dropped_unless_the_question_names_the_values() {
    let g = user("What's the weather in Lyon?");
    let calls = vec![
        call("get_weather", json!({"city": "Lyon", "unit": "celsius"})),
        call("get_weather", json!({"city": "Lyon", "unit": "fahrenheit"})),
    ];
    let (kept, dropped) = drop_ungrounded(calls.clone(), &set(), &g);
    assert_eq!((kept.len(), dropped.len()), (1, 1));
    let g = user("Lyon: Celsius, and FAHRENHEIT too");
    assert_eq!(drop_ungrounded(calls, &set(), &g).0.len(), 2);
    let g = user("What's the weather in Lyon?");
    let calls = vec![
        call("get_weather", json!({"city": "Lyon", "hourly": false})),
        call("get_weather", json!({"city": "Lyon", "hourly": true})),
    ];
    assert_eq!(drop_ungrounded(calls, &set(), &g).0.len(), 2, "booleans");
}

/// A huge value against a huge conversation: words the conversation holds
/// as words cost no search; a value whose words are only found inside
/// longer words searches at most the budget, then counts as grounded.
#[test]
fn judging_a_huge_value_against_a_huge_conversation_is_bounded() {
    let text: String = (0..100_000).map(|i| format!("xq{i}z ")).collect();
    let g = Grounding::from_text(&text);
    assert!(text.len() > 800_000);
    let inside: String = (0..40_000).map(|i| format!("q{i}z ")).collect();
    assert!(g.grounds(&json!(inside), None));
    assert!(g.searched() <= SEARCH_BUDGET, "{}", g.searched());

    let g = Grounding::from_text(&text);
    let words: String = (0..40_000).map(|i| format!("XQ{i}Z ")).collect();
    // One search for the value whole; every word then from the index.
    assert!(g.grounds(&json!(words), None));
    assert!(g.searched() <= 2 * text.len(), "{}", g.searched());
    // An invented word is still found out, at the cost of one search.
    let g = Grounding::from_text(&text);
    assert!(!g.grounds(&json!("xq1z xq2z invented"), None));
    assert!(g.searched() <= 2 * text.len(), "{}", g.searched());
}

/// `calls` without the ungrounded continuations and additions (see
/// [`is_ungrounded`]); the first call is always kept. Returns the kept
/// calls and the dropped ones.
fn drop_ungrounded(
    calls: Vec<ToolCall>,
    set: &ToolSet,
    grounding: &Grounding,
) -> (Vec<ToolCall>, Vec<ToolCall>) {
    let mut kept = Vec::with_capacity(calls.len());
    let mut dropped = Vec::new();
    for call in calls {
        if is_ungrounded(&call, &kept, set, grounding) {
            dropped.push(call);
        } else {
            kept.push(call);
        }
    }
    (kept, dropped)
}
