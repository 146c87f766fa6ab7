//! Unit tests of `results`.

use super::*;
use crate::tools::testutil::call;

#[test]
fn results_are_matched_by_id_name_or_order() {
    let messages = [
        json!({"role":"user","content":"Paris and Tokyo?"}),
        json!({"role":"assistant","tool_calls":[
            {"id":"a","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},
            {"id":"b","function":{"name":"get_weather","arguments":{"city":"Tokyo"}}},
            {"function":{"name":"get_time","arguments":{}}}]}),
        json!({"role":"tool","tool_call_id":"b","content":"sunny"}),
        json!({"role":"Tool","content":"rain"}),
        json!({"role":"tool","tool_name":"get_time","content":"12:00"}),
    ];
    assert_eq!(
        answered_calls(&messages),
        vec![
            call("get_weather", json!({"city":"Tokyo"})),
            call("get_weather", json!({"city":"Paris"})),
            call("get_time", json!({})),
        ]
    );
}

#[test]
fn unanswered_calls_are_not_listed() {
    let messages = [
        json!({"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":{"n":1}}}]}),
        json!({"role":"user","content":"never mind"}),
        json!({"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":{"n":2}}}]}),
        json!({"role":"tool","tool_name":"g","content":"?"}),
    ];
    assert!(answered_calls(&messages).is_empty());
    let mut m = ResultMatcher::default();
    assert_eq!(m.on_calls(&[json!({"name":"f"})]), 0..1);
    let answer = m.on_result(&serde_json::Map::new());
    assert_eq!(
        answer,
        Answer {
            name: Some("f".into()),
            call: Some(0)
        }
    );
    // Nothing pending: no name, no call.
    assert_eq!(
        m.on_result(&serde_json::Map::new()),
        Answer {
            name: None,
            call: None
        }
    );
}
