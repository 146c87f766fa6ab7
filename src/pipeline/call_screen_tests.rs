//! Tests of call screening ([`super::CallScreen`], [`super::StreamScreen`])
//! and of the re-ask's note.

use serde_json::{Value, json};

use super::*;
use crate::tools::testutil::call;

fn set() -> ToolSet {
    ToolSet::from_request(&[
        json!({"type":"function","function":{"name":"factorial",
            "parameters":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}}}),
        json!({"type":"function","function":{"name":"get_weather",
            "parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}),
    ])
    .unwrap()
}

/// A conversation where `factorial(5)` was called and answered.
fn answered() -> Vec<Value> {
    vec![
        json!({"role":"user","content":"What is the factorial of 5? And the weather in Paris?"}),
        json!({"role":"assistant","content":"","tool_calls":[{"id":"c1","function":{"name":"factorial","arguments":{"n":5}}}]}),
        json!({"role":"tool","tool_call_id":"c1","content":"120"}),
    ]
}

fn screen(drop_ungrounded: bool, loop_breaker: bool) -> CallScreen {
    let reask = loop_breaker.then(|| json!({"type":"object"}));
    CallScreen::new(answered(), drop_ungrounded, reask)
}

#[test]
fn answers_are_screened_in_order() {
    let calls = vec![
        call("factorial", json!({"n": 5})),
        call("factorial", json!({"n": 10})),
        call("get_weather", json!({"city": "Paris"})),
    ];
    assert_eq!(
        screen(true, true).screen(&set(), calls.clone()),
        Screened {
            calls: vec![call("get_weather", json!({"city": "Paris"}))],
            ungrounded: 1,
            repeats: vec![call("factorial", json!({"n": 5}))],
        }
    );
    // Both off: everything goes through.
    assert_eq!(
        screen(false, false).screen(&set(), calls.clone()),
        Screened {
            calls,
            ..Screened::default()
        }
    );
    // The default screen (no conversation) changes nothing.
    let one = vec![call("factorial", json!({"n": 5}))];
    assert_eq!(CallScreen::default().screen(&set(), one.clone()).calls, one);
}

#[test]
fn placeholders_are_violations_unless_the_conversation_has_them() {
    let s = screen(true, true);
    let v = s.violations(&set(), &call("get_weather", json!({"city": "<city>"})));
    assert_eq!(v.len(), 1);
    assert_eq!(v[0].pointer, "/city");
    let messages = [json!({"role":"user","content":"Is there a town called <city>?"})];
    let s = CallScreen::new(messages.to_vec(), true, None);
    assert!(
        s.violations(&set(), &call("get_weather", json!({"city": "<city>"})))
            .is_empty()
    );
}

#[test]
fn streamed_calls_are_admitted_one_by_one() {
    let s = screen(true, true);
    let mut gate = StreamScreen::default();
    let set = set();
    assert_eq!(
        gate.admit(&s, &set, &call("factorial", json!({"n": 5}))),
        Admit::Hold
    );
    assert_eq!(
        gate.admit(&s, &set, &call("factorial", json!({"n": 10}))),
        Admit::Drop
    );
    assert_eq!(
        gate.admit(&s, &set, &call("factorial", json!({"n": 120}))),
        Admit::Send
    );
    assert!(gate.holding());
    assert_eq!(gate.withheld(), 1);
    assert_eq!(gate.repairs(1), [DROPPED_UNGROUNDED, LOOP]);
    assert_eq!(gate.take_held(), vec![call("factorial", json!({"n": 5}))]);
    assert!(!gate.holding());
    assert_eq!(gate.repairs(0), [DROPPED_UNGROUNDED]);
}

#[test]
fn the_note_names_the_tools_once_and_follows_the_last_user_turn() {
    let repeats = [
        call("get_weather", json!({"city": "Paris"})),
        call("get_weather", json!({"city": "Rome"})),
        call("factorial", json!({"n": 5})),
    ];
    let text = note(&repeats);
    assert_eq!(
        text,
        "(The result of get_weather and factorial is above: reply with the answer.)"
    );
    let mut body = Map::new();
    body.insert(
        "messages".into(),
        json!([{"role":"user","content":"Tool result for f: 1"}]),
    );
    add_note(&mut body, "N.");
    assert_eq!(
        body["messages"],
        json!([{"role":"user","content":"Tool result for f: 1\n\nN."}])
    );
    body.insert(
        "messages".into(),
        json!([{"role":"assistant","content":"x"}]),
    );
    add_note(&mut body, "N.");
    assert_eq!(body["messages"][1], json!({"role":"user","content":"N."}));
}

#[test]
fn a_cut_off_text_answer_is_kept_as_far_as_it_got() {
    let set = set();
    assert_eq!(
        answer_so_far(r#"{"response": "Paris is rainy and 18 \u00b0C. The"#, &set).as_deref(),
        Some("Paris is rainy and 18 °C. The")
    );
    assert_eq!(answer_so_far(r#"{"response": ""#, &set), None);
    assert_eq!(answer_so_far(r#"{"tool_call": {"name":"#, &set), None);
}
