//! Tests of call screening ([`super::CallScreen`], [`super::StreamScreen`])
//! and of the re-ask's note.

use serde_json::{Map, Value, json};

use super::*;
use crate::pipeline::attempt::reask::{add_note, answer_so_far, note};
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
        "The result of get_weather and factorial is above: reply with the answer."
    );
    let mut body = Map::new();
    body.insert(
        "messages".into(),
        json!([{"role":"system","content":"I."},{"role":"user","content":"Tool result for f: 1"}]),
    );
    add_note(&mut body, "N.");
    assert_eq!(
        body["messages"],
        json!([{"role":"system","content":"I.\nN."},{"role":"user","content":"Tool result for f: 1"}])
    );
    body.insert("messages".into(), json!([{"role":"user","content":"x"}]));
    add_note(&mut body, "N.");
    assert_eq!(body["messages"][0], json!({"role":"system","content":"N."}));
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

#[test]
fn unrelated_calls_share_no_word_and_invent_every_value() {
    let weather = json!({"type":"function","function":{"name":"get_weather",
        "description":"Get the current weather for a city",
        "parameters":{"type":"object","properties":{
            "city":{"type":"string"},
            "unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["city"]}}});
    let set = ToolSet::from_request(&[weather]).unwrap();
    let screen = |question: &str| {
        let messages = vec![json!({"role":"user","content":question})];
        CallScreen::new(messages, true, None).answering_unrelated(question, Some(json!({})))
    };
    let paris = call("get_weather", json!({"city": "Paris"}));
    assert!(screen("Hi there! How are you?").is_unrelated(&set, &paris));
    // A shared word, or the value in the conversation: related.
    assert!(!screen("Will the weather hold?").is_unrelated(&set, &paris));
    assert!(!screen("Anything on in Paris tonight?").is_unrelated(&set, &paris));
    // Nothing to judge: only a value the schema names, or no question.
    let unit = call("get_weather", json!({"unit": "celsius"}));
    assert!(!screen("Hi there!").is_unrelated(&set, &unit));
    assert!(!screen("Is it?").is_unrelated(&set, &paris));
    // Off without an answer to ask for (a required call).
    let messages = vec![json!({"role":"user","content":"Hi there!"})];
    let required = CallScreen::new(messages, true, None).answering_unrelated("Hi there!", None);
    assert!(!required.is_unrelated(&set, &paris));
}

#[test]
fn a_stream_holds_unrelated_calls_until_a_related_one_comes() {
    let set = set();
    let messages = vec![json!({"role":"user","content":"Hi! What is the factorial of 5?"})];
    let screen = CallScreen::new(messages, false, None)
        .answering_unrelated("Hi! What is the factorial of 5?", Some(json!({})));
    let mut gate = StreamScreen::default();
    let paris = call("get_weather", json!({"city": "Paris"}));
    assert_eq!(gate.admit(&screen, &set, &paris), Admit::Hold);
    assert!(gate.holding());
    let five = call("factorial", json!({"n": 5}));
    assert_eq!(gate.admit(&screen, &set, &five), Admit::Send);
    assert_eq!(gate.take_unrelated(), vec![paris.clone()]);
    // Once a call went out, later ones are not held.
    assert_eq!(gate.admit(&screen, &set, &paris), Admit::Send);
    assert!(!gate.holding());
}

#[test]
fn a_gated_screen_judges_only_the_calls_marked_unsure() {
    let calls = vec![
        call("get_weather", json!({"city": "Paris"})),
        call("get_weather", json!({"city": "Zurich"})),
    ];
    let gated = CallScreen::new(answered(), true, None).gated(true);
    // Unscored (or sure): nothing is judged, on a stream as in a whole answer.
    let all = gated.screen(&set(), calls.clone());
    assert_eq!(all.calls, calls);
    assert_eq!(
        gated
            .screen_judged(&set(), calls.clone(), &[false, false])
            .calls,
        calls
    );
    // The invented Zurich, marked unsure, is dropped as ungrounded.
    let judged = gated.screen_judged(&set(), calls.clone(), &[false, true]);
    assert_eq!(judged.calls, calls[..1]);
    assert_eq!(judged.ungrounded, 1);
    let mut stream = StreamScreen::default();
    assert_eq!(stream.admit(&gated, &set(), &calls[0]), Admit::Send);
    assert_eq!(stream.admit(&gated, &set(), &calls[1]), Admit::Send);
}
