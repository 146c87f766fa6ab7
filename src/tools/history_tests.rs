//! Tests of history rewriting ([`super::rewrite_messages`]).

use super::*;

fn fixture(name: &str) -> Vec<Value> {
    let path = format!("{}/tests/fixtures/tools/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

const INSTR: &str = "TOOLS INSTRUCTION";

#[test]
fn instruction_is_appended_to_the_system_prompt_not_replacing_it() {
    let out = rewrite_messages(&fixture("history_openai.json"), INSTR, false);
    assert_eq!(
        out[0],
        json!({"role":"system","content":"You are a terse weather bot.\n\nTOOLS INSTRUCTION"})
    );
    assert_eq!(
        out[1],
        json!({"role":"user","content":"Weather in Paris and Tokyo?"})
    );
    assert_eq!(out.iter().filter(|m| role(m) == "system").count(), 1);
}

#[test]
fn a_system_message_is_added_when_missing() {
    let out = rewrite_messages(&fixture("history_ollama.json"), INSTR, false);
    assert_eq!(out[0], json!({"role":"system","content":INSTR}));
    assert_eq!(out[1], json!({"role":"user","content":"Weather in Paris?"}));
    assert_eq!(out.len(), 5);
}

#[test]
fn a_user_turn_always_follows_the_system_text() {
    // gemma3 renders the system text into the first user turn only.
    let only_system = [json!({"role":"system","content":"S"})];
    let out = rewrite_messages(&only_system, INSTR, false);
    assert_eq!(
        out,
        vec![
            json!({"role":"system","content":"S\n\nTOOLS INSTRUCTION"}),
            json!({"role":"user","content":""})
        ]
    );
    let assistant_first = [
        json!({"role":"assistant","content":"Hi"}),
        json!({"role":"user","content":"x"}),
    ];
    let out = rewrite_messages(&assistant_first, INSTR, false);
    assert_eq!(role(&out[0]), "system");
    assert_eq!(out[1], json!({"role":"user","content":""}));
    assert_eq!(
        out[2],
        json!({"role":"assistant","content":"{\"response\":\"Hi\"}"})
    );
    // A tool result first becomes user text, so no extra turn is needed.
    let tool_first = [json!({"role":"Tool","content":"r"})];
    let out = rewrite_messages(&tool_first, INSTR, false);
    assert_eq!(out.len(), 2);
    assert_eq!(out[1], json!({"role":"user","content":"Tool result: r"}));
    // Several leading system messages: the instruction goes after the last.
    let two = [
        json!({"role":"system","content":"A"}),
        json!({"role":"system","content":[{"type":"text","text":"B"}]}),
        json!({"role":"user","content":"u"}),
    ];
    let out = rewrite_messages(&two, INSTR, false);
    assert_eq!(out[0], two[0]);
    assert_eq!(
        out[1],
        json!({"role":"system","content":"B\n\nTOOLS INSTRUCTION"})
    );
    assert_eq!(out.len(), 3);
}

#[test]
fn string_arguments_and_tool_call_ids_are_resolved() {
    let out = rewrite_messages(&fixture("history_openai.json"), INSTR, false);
    assert_eq!(
        out[2],
        json!({"role":"assistant","content":
            r#"{"tool_calls":[{"name":"get_weather","arguments":{"city":"Paris","unit":"celsius"}},{"name":"get_time","arguments":{"tz":"Asia/Tokyo"}}]}"#})
    );
    assert_eq!(
        out[3],
        json!({"role":"user","content":"Tool result for get_time: {\"time\":\"09:00\"}"})
    );
    assert_eq!(
        out[4],
        json!({"role":"user","content":"Tool result for get_weather: {\"temp\":18}"})
    );
    assert_eq!(
        out[5],
        json!({"role":"assistant","content":"{\"response\":\"Paris 18°C; Tokyo 09:00.\"}"})
    );
    assert_eq!(out[6], json!({"role":"user","content":"Thanks"}));
}

#[test]
fn object_arguments_and_tool_name_results() {
    let out = rewrite_messages(&fixture("history_ollama.json"), INSTR, false);
    assert_eq!(
        out[2],
        json!({"role":"assistant","content":r#"{"tool_call":{"name":"get_weather","arguments":{"city":"Paris"}}}"#})
    );
    assert_eq!(
        out[3],
        json!({"role":"user","content":"Tool result for get_weather: 18 degrees"})
    );
    // Parallel mode always uses the array shape.
    let out = rewrite_messages(&fixture("history_ollama.json"), INSTR, true);
    assert_eq!(
        out[2]["content"],
        json!(r#"{"tool_calls":[{"name":"get_weather","arguments":{"city":"Paris"}}]}"#)
    );
}

#[test]
fn unnamed_results_follow_call_order_and_odd_arguments_survive() {
    let msgs = [
        json!({"role":"user","content":"go"}),
        json!({"role":"assistant","tool_calls":[
            {"function":{"name":"a","arguments":""}},
            {"function":{"name":"b","arguments":"not json"}},
            {"function":{"name":"c"}}]}),
        json!({"role":"tool","tool_name":"b","content":"rb"}),
        json!({"role":"tool","content":"ra"}),
        json!({"role":"tool","content":{"x":1}}),
        json!({"role":"tool","tool_call_id":"unknown","content":"extra"}),
    ];
    let out = rewrite_messages(&msgs, INSTR, false);
    assert_eq!(
        out[2]["content"],
        json!(
            r#"{"tool_calls":[{"name":"a","arguments":{}},{"name":"b","arguments":"not json"},{"name":"c","arguments":{}}]}"#
        )
    );
    let texts: Vec<&str> = out[3..]
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        texts,
        [
            "Tool result for b: rb",
            "Tool result for a: ra",
            "Tool result for c: {\"x\":1}",
            "Tool result: extra"
        ]
    );
}

#[test]
fn structured_assistant_answers_are_embedded_as_values() {
    let msgs = [
        json!({"role":"user","content":"u"}),
        json!({"role":"assistant","content":"{\"temp\":21}","images":null}),
        json!({"role":"assistant","content":""}),
    ];
    let out = rewrite_messages(&msgs, INSTR, false);
    assert_eq!(
        out[2],
        json!({"role":"assistant","content":"{\"response\":{\"temp\":21}}","images":null})
    );
    assert_eq!(out[3], json!({"role":"assistant","content":""}));
}

#[test]
fn results_of_calls_to_one_tool_say_which_call_they_answer() {
    // Paris then Rome; the results come back Rome first.
    let messages = [
        json!({"role":"user","content":"Weather in Paris and Rome?"}),
        json!({"role":"assistant","tool_calls":[
            {"id":"call_a","function":{"name":"get_weather","arguments":{"city":"Paris"}}},
            {"id":"call_b","function":{"name":"get_weather","arguments":{"city":"Rome"}}},
            {"id":"call_c","function":{"name":"get_time","arguments":{"tz":"CET"}}}]}),
        json!({"role":"tool","tool_call_id":"call_b","content":"rain"}),
        json!({"role":"tool","tool_call_id":"call_c","content":"09:00"}),
        json!({"role":"tool","tool_call_id":"call_a","content":"sun"}),
    ];
    let out = rewrite_messages(&messages, INSTR, true);
    let texts: Vec<&str> = out[3..6]
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        texts,
        [
            r#"Tool result for get_weather {"city":"Rome"}: rain"#,
            // A tool called once in its turn needs no arguments.
            "Tool result for get_time: 09:00",
            r#"Tool result for get_weather {"city":"Paris"}: sun"#,
        ]
    );
}

#[test]
fn long_arguments_are_cut_where_a_result_repeats_them() {
    let long = "é".repeat(400);
    let messages = [
        json!({"role":"assistant","tool_calls":[
            {"id":"a","function":{"name":"f","arguments":{"q":long}}},
            {"id":"b","function":{"name":"f","arguments":{"q":"x"}}}]}),
        json!({"role":"tool","tool_call_id":"a","content":"1"}),
    ];
    let out = rewrite_messages(&messages, INSTR, true);
    let text = out.last().unwrap()["content"].as_str().unwrap().to_string();
    assert!(text.starts_with("Tool result for f {\"q\":\"é"), "{text}");
    assert!(text.ends_with("…: 1"), "{text}");
    assert!(text.len() < 300, "{}", text.len());
}
