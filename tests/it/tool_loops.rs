//! The loop breaker end to end against the fake: a call repeating one the
//! conversation already answered is not returned; augur asks once more,
//! with the answer branch of the envelope only, whole and streamed; with
//! `tools.loop_breaker: false` the call is returned as the model made it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{
    header,
    live::bounded,
    ndjson,
    tool_turns::{
        answer_branch, answer_reply, answered_weather, call_reply, chat, factorial_tool,
        last_sent_message, scripted, streamed_answer, weather_tool,
    },
};
use serde_json::{Value, json};

const ANSWER: &str = "It is 18 °C with light rain in Paris.";

fn repeat() -> String {
    call_reply("get_weather", json!({"city": "Paris"}))
}

#[tokio::test]
async fn a_repeated_answered_call_is_asked_again_once_for_an_answer() {
    bounded(20, async {
        let live = scripted(vec![repeat(), answer_reply(ANSWER)], "{}").await;
        let r = chat(&live, false, json!([weather_tool()]), answered_weather()).await;
        assert_eq!(r.status(), 200);
        assert_eq!(header(&r, "x-augur-repaired"), Some("loop"));
        assert_eq!(header(&r, "x-augur-attempts"), Some("2"));
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["message"]["content"], ANSWER);
        assert!(v["message"].get("tool_calls").is_none(), "{v}");
        assert_eq!(v["done_reason"], "stop");

        // Exactly one re-ask, for the answer branch only, with the note.
        assert_eq!(live.fake.requests("/api/chat"), 2);
        let sent = live.fake.last_json("/api/chat").unwrap();
        assert_eq!(sent["format"], answer_branch());
        let last = last_sent_message(&live);
        assert!(last.starts_with("Tool result for get_weather: "), "{last}");
        assert!(!last.contains("is above"), "{last}");
        let system = sent["messages"][0]["content"].as_str().unwrap();
        assert!(
            system.ends_with("\nThe result of get_weather is above: reply with the answer."),
            "{system}"
        );
    })
    .await;
}

#[tokio::test]
async fn a_streamed_repeat_is_held_and_the_answer_streams_instead() {
    bounded(20, async {
        let live = scripted(vec![repeat(), answer_reply(ANSWER)], "{}").await;
        let r = chat(&live, true, json!([weather_tool()]), answered_weather()).await;
        assert_eq!(r.status(), 200);
        let chunks = ndjson(&r.text().await.unwrap());
        assert_eq!(streamed_answer(&chunks), ANSWER);
        let done = chunks.last().unwrap();
        assert_eq!(done["done"], true);
        assert_eq!(done["augur_repaired"], "loop");
        assert_eq!(live.fake.requests("/api/chat"), 2);
        assert_eq!(
            live.fake.last_json("/api/chat").unwrap()["format"],
            answer_branch()
        );
    })
    .await;
}

#[tokio::test]
async fn with_the_loop_breaker_off_the_repeat_is_returned() {
    bounded(20, async {
        let policy = "defaults:\n  tools: {loop_breaker: false}\n";
        let live = scripted(vec![repeat(), repeat()], policy).await;
        let r = chat(&live, false, json!([weather_tool()]), answered_weather()).await;
        assert_eq!(r.status(), 200);
        assert_eq!(header(&r, "x-augur-repaired"), None);
        let v: Value = r.json().await.unwrap();
        let call = &v["message"]["tool_calls"][0]["function"];
        assert_eq!(call["name"], "get_weather");
        assert_eq!(call["arguments"], json!({"city": "Paris"}));
        assert_eq!(live.fake.requests("/api/chat"), 1);

        let r = chat(&live, true, json!([weather_tool()]), answered_weather()).await;
        let chunks = ndjson(&r.text().await.unwrap());
        assert_eq!(
            chunks[0]["message"]["tool_calls"][0]["function"]["name"],
            "get_weather"
        );
        assert!(chunks.last().unwrap().get("augur_repaired").is_none());
        assert_eq!(live.fake.requests("/api/chat"), 2);
    })
    .await;
}

#[tokio::test]
async fn new_calls_beside_a_repeat_are_returned_without_it() {
    bounded(20, async {
        let reply = json!({"tool_calls": [
            {"name": "get_weather", "arguments": {"city": "paris"}},
            {"name": "factorial", "arguments": {"n": 18}}]})
        .to_string();
        let live = scripted(vec![reply.clone(), reply], "{}").await;
        let tools = json!([weather_tool(), factorial_tool()]);
        let r = chat(&live, false, tools.clone(), answered_weather()).await;
        assert_eq!(header(&r, "x-augur-repaired"), Some("loop"));
        let v: Value = r.json().await.unwrap();
        let calls = v["message"]["tool_calls"].as_array().unwrap();
        assert_eq!(calls.len(), 1, "{v}");
        assert_eq!(calls[0]["function"]["name"], "factorial");
        assert_eq!(live.fake.requests("/api/chat"), 1);

        let r = chat(&live, true, tools, answered_weather()).await;
        let chunks = ndjson(&r.text().await.unwrap());
        let sent = common::tool_calls(&chunks);
        assert_eq!(sent.len(), 1, "{chunks:?}");
        assert_eq!(sent[0]["function"]["name"], "factorial");
        assert_eq!(sent[0]["function"]["index"], 0);
        assert_eq!(chunks.last().unwrap()["augur_repaired"], "loop");
    })
    .await;
}

#[tokio::test]
async fn a_required_tool_choice_or_a_failed_re_ask_leaves_the_call() {
    bounded(20, async {
        // tool_choice "required": no answer can be asked for.
        let live = scripted(vec![repeat()], "{}").await;
        let body = json!({"model": "scripted", "stream": false, "tools": [weather_tool()],
            "tool_choice": "required", "messages": answered_weather()});
        let r = common::client()
            .post(live.url("/api/chat"))
            .json(&body)
            .send()
            .await
            .unwrap();
        let v: Value = r.json().await.unwrap();
        assert_eq!(
            v["message"]["tool_calls"][0]["function"]["name"],
            "get_weather"
        );
        assert_eq!(live.fake.requests("/api/chat"), 1);

        // The re-ask's reply is not an answer: the call stands.
        let live = scripted(vec![repeat(), "not json".into()], "{}").await;
        let r = chat(&live, false, json!([weather_tool()]), answered_weather()).await;
        assert_eq!(r.status(), 200);
        let v: Value = r.json().await.unwrap();
        assert_eq!(
            v["message"]["tool_calls"][0]["function"]["name"],
            "get_weather"
        );
        assert_eq!(live.fake.requests("/api/chat"), 2);
    })
    .await;
}

#[tokio::test]
async fn a_call_not_answered_yet_is_not_a_repeat() {
    bounded(20, async {
        let live = scripted(vec![repeat()], "{}").await;
        // The call was made but its result has not come back.
        let mut messages = answered_weather();
        messages.pop();
        let r = chat(&live, false, json!([weather_tool()]), messages).await;
        let v: Value = r.json().await.unwrap();
        assert_eq!(
            v["message"]["tool_calls"][0]["function"]["name"],
            "get_weather"
        );
        assert_eq!(live.fake.requests("/api/chat"), 1);
    })
    .await;
}
