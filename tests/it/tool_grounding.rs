//! Over-calling end to end against the fake: with room for several calls a
//! small model continues the first call's pattern with invented values;
//! such calls are dropped (`X-Augur-Repaired: dropped_ungrounded`), calls
//! whose values the conversation holds are kept, and
//! `tools.drop_ungrounded: false` keeps everything. The rule is one of the
//! small-model rules (`tools.small_model`), off by default.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{
    header,
    live::bounded,
    ndjson,
    tool_turns::{chat, factorial_tool, scripted, weather_tool},
};
use serde_json::{Value, json};

/// `factorial(5)`, then the pattern continued: 10, 15, 20.
fn over_calling() -> String {
    let calls: Vec<Value> = [5, 10, 15, 20]
        .iter()
        .map(|n| json!({"name": "factorial", "arguments": {"n": n}}))
        .collect();
    json!({ "tool_calls": calls }).to_string()
}

/// The small-model rules turned on (they are off by default).
const SMALL: &str = "defaults:\n  tools: {small_model: true}\n";

fn question(text: &str) -> Vec<Value> {
    vec![json!({"role": "user", "content": text})]
}

fn call_args(v: &Value) -> Vec<Value> {
    v["message"]["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["function"]["arguments"].clone())
        .collect()
}

#[tokio::test]
async fn pattern_continuations_are_dropped_keeping_the_first_call() {
    bounded(20, async {
        let live = scripted(vec![over_calling(), over_calling()], SMALL).await;
        let q = question("What is the factorial of 5?");
        let r = chat(&live, false, json!([factorial_tool()]), q.clone()).await;
        assert_eq!(r.status(), 200);
        assert_eq!(header(&r, "x-augur-repaired"), Some("dropped_ungrounded"));
        let v: Value = r.json().await.unwrap();
        assert_eq!(call_args(&v), [json!({"n": 5})]);

        let r = chat(&live, true, json!([factorial_tool()]), q).await;
        let chunks = ndjson(&r.text().await.unwrap());
        let calls = common::tool_calls(&chunks);
        assert_eq!(calls.len(), 1, "{chunks:?}");
        assert_eq!(calls[0]["function"]["arguments"], json!({"n": 5}));
        let done = chunks.last().unwrap();
        assert_eq!(done["augur_repaired"], "dropped_ungrounded");
        assert_eq!(live.fake.requests("/api/chat"), 2, "dropping costs no call");
    })
    .await;
}

#[tokio::test]
async fn calls_grounded_in_the_conversation_are_kept() {
    bounded(20, async {
        let reply = json!({"tool_calls": [
            {"name": "get_weather", "arguments": {"city": "Paris"}},
            {"name": "get_weather", "arguments": {"city": "Tokyo"}},
            {"name": "factorial", "arguments": {"n": 7}}]})
        .to_string();
        let live = scripted(vec![reply], SMALL).await;
        let q = question("Weather in Paris and in tokyo? Also, what is seven factorial?");
        let tools = json!([weather_tool(), factorial_tool()]);
        let r = chat(&live, false, tools, q).await;
        assert_eq!(header(&r, "x-augur-repaired"), None);
        let v: Value = r.json().await.unwrap();
        assert_eq!(
            call_args(&v),
            [
                json!({"city": "Paris"}),
                json!({"city": "Tokyo"}),
                json!({"n": 7})
            ]
        );
    })
    .await;
}

#[tokio::test]
async fn with_drop_ungrounded_off_every_call_is_kept() {
    bounded(20, async {
        let off =
            "models:\n  \"scripted\":\n    tools: {small_model: true, drop_ungrounded: false}\n";
        // Off by default: the small-model rules are an opt-in.
        for policy in [off, "{}"] {
            let live = scripted(vec![over_calling()], policy).await;
            let q = question("What is the factorial of 5?");
            let r = chat(&live, false, json!([factorial_tool()]), q).await;
            assert_eq!(header(&r, "x-augur-repaired"), None, "{policy}");
            let v: Value = r.json().await.unwrap();
            assert_eq!(call_args(&v).len(), 4, "{policy}");
            assert_eq!(live.fake.requests("/api/chat"), 1, "{policy}");
        }
    })
    .await;
}
