//! Calls nobody asked for, end to end against the fake: when every call of
//! an answer is to a tool sharing no word with the question, with values
//! found nowhere in the conversation ("Hi there!" →
//! `get_weather({"city":"Paris"})`), augur asks once more for an answer,
//! whole and streamed, also when a value is a placeholder (not retried
//! first). A related or grounded call goes out as made, and so
//! do the calls by default (the rule belongs to `tools.small_model`, off
//! unless a policy turns it on), with `tools.answer_unrelated: false`, with `tool_choice`
//! requiring a call, or when the re-ask brings no answer. A first question
//! that shares no word with any tool and offers no value a call could take
//! is asked for an answer at once.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{
    header,
    live::bounded,
    ndjson,
    tool_turns::{
        MODEL, answer_branch, answer_reply, call_reply, chat, scripted, streamed_answer,
        weather_tool,
    },
};
use serde_json::{Value, json};

const ANSWER: &str = "Hello! I am well, thank you.";

/// The small-model rules turned on (they are off by default).
const SMALL: &str = "defaults:\n  tools: {small_model: true}\n";

/// A greeting after an earlier exchange (a first question that relates to
/// no tool is asked for an answer at once; see the last tests).
fn greeting() -> Vec<Value> {
    vec![
        json!({"role": "user", "content": "Good morning."}),
        json!({"role": "assistant", "content": "Good morning!"}),
        json!({"role": "user", "content": "Hi there! How are you?"}),
    ]
}

fn paris() -> String {
    call_reply("get_weather", json!({"city": "Paris"}))
}

#[tokio::test]
async fn an_unrelated_invented_call_is_asked_again_for_an_answer() {
    bounded(20, async {
        let live = scripted(vec![paris(), answer_reply(ANSWER)], SMALL).await;
        let r = chat(&live, false, json!([weather_tool()]), greeting()).await;
        assert_eq!(r.status(), 200);
        assert_eq!(header(&r, "x-augur-repaired"), Some("unrelated"));
        assert_eq!(header(&r, "x-augur-attempts"), Some("2"));
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["message"]["content"], ANSWER);
        assert!(v["message"].get("tool_calls").is_none(), "{v}");
        // One re-ask, for the answer branch only, the question unchanged.
        assert_eq!(live.fake.requests("/api/chat"), 2);
        let sent = live.fake.last_json("/api/chat").unwrap();
        assert_eq!(sent["format"], answer_branch());
        let last = sent["messages"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(last["content"], "Hi there! How are you?");
    })
    .await;
}

#[tokio::test]
async fn an_unrelated_call_with_a_placeholder_is_asked_for_an_answer_not_retried() {
    bounded(20, async {
        for stream in [false, true] {
            let echo = call_reply("get_weather", json!({"city": "city"}));
            let live = scripted(vec![echo, answer_reply(ANSWER)], SMALL).await;
            let r = chat(&live, stream, json!([weather_tool()]), greeting()).await;
            assert_eq!(r.status(), 200, "stream {stream}");
            let text = if stream {
                let chunks = ndjson(&r.text().await.unwrap());
                assert_eq!(chunks.last().unwrap()["augur_repaired"], "unrelated");
                streamed_answer(&chunks)
            } else {
                assert_eq!(header(&r, "x-augur-repaired"), Some("unrelated"));
                let v: Value = r.json().await.unwrap();
                v["message"]["content"].as_str().unwrap().to_owned()
            };
            assert_eq!(text, ANSWER, "stream {stream}");
            // Asked for an answer, not for the call again with feedback.
            let sent = live.fake.last_json("/api/chat").unwrap();
            assert_eq!(sent["format"], answer_branch(), "stream {stream}");
        }
    })
    .await;
}

#[tokio::test]
async fn a_streamed_unrelated_call_is_held_and_the_answer_streams_instead() {
    bounded(20, async {
        let live = scripted(vec![paris(), answer_reply(ANSWER)], SMALL).await;
        let r = chat(&live, true, json!([weather_tool()]), greeting()).await;
        assert_eq!(r.status(), 200);
        let chunks = ndjson(&r.text().await.unwrap());
        assert_eq!(streamed_answer(&chunks), ANSWER);
        assert_eq!(chunks.last().unwrap()["augur_repaired"], "unrelated");
        assert_eq!(live.fake.requests("/api/chat"), 2);
    })
    .await;
}

#[tokio::test]
async fn related_or_grounded_calls_go_out_as_made() {
    bounded(30, async {
        let cases = [
            // Shares a word with the tool ("weather").
            "What's the weather like today?",
            // Names the value ("Paris"), though no word of the tool.
            "Anything happening in Paris?",
        ];
        for (i, question) in cases.into_iter().enumerate() {
            for stream in [false, true] {
                let live = scripted(vec![paris()], SMALL).await;
                let messages = vec![json!({"role": "user", "content": question})];
                let r = chat(&live, stream, json!([weather_tool()]), messages).await;
                assert_eq!(r.status(), 200);
                let text = r.text().await.unwrap();
                assert!(text.contains("\"get_weather\""), "case {i}: {text}");
                assert!(!text.contains("unrelated"), "case {i}: {text}");
                assert_eq!(live.fake.requests("/api/chat"), 1, "case {i}");
            }
        }
    })
    .await;
}

#[tokio::test]
async fn off_required_or_no_answer_returns_the_calls() {
    bounded(30, async {
        // Turned off by policy, and off by default.
        let off = "defaults:\n  tools: {small_model: true, answer_unrelated: false}\n";
        for policy in [off, "{}"] {
            let live = scripted(vec![paris()], policy).await;
            let r = chat(&live, false, json!([weather_tool()]), greeting()).await;
            let v: Value = r.json().await.unwrap();
            assert_eq!(
                v["message"]["tool_calls"][0]["function"]["name"], "get_weather",
                "{policy}"
            );
            assert_eq!(live.fake.requests("/api/chat"), 1, "{policy}");
        }

        // The re-ask brings a call again: the first calls stand.
        for stream in [false, true] {
            let live = scripted(vec![paris(), paris()], SMALL).await;
            let r = chat(&live, stream, json!([weather_tool()]), greeting()).await;
            assert_eq!(r.status(), 200);
            let text = r.text().await.unwrap();
            let calls = if stream {
                ndjson(&text)
                    .iter()
                    .filter_map(|c| c["message"]["tool_calls"].as_array().cloned())
                    .flatten()
                    .collect::<Vec<_>>()
            } else {
                let v: Value = serde_json::from_str(&text).unwrap();
                v["message"]["tool_calls"].as_array().cloned().unwrap()
            };
            assert_eq!(calls.len(), 1, "{text}");
            assert_eq!(calls[0]["function"]["arguments"]["city"], "Paris");
            assert_eq!(live.fake.requests("/api/chat"), 2);
        }
    })
    .await;
}

#[tokio::test]
async fn a_required_call_is_never_replaced() {
    bounded(20, async {
        let live = scripted(vec![paris()], SMALL).await;
        let body = json!({"model": MODEL, "stream": false,
            "tools": [weather_tool()], "messages": greeting(), "tool_choice": "required"});
        let r = common::post(&live.augur, "/v1/chat/completions", &body).await;
        assert_eq!(r.status(), 200);
        let v: Value = r.json().await.unwrap();
        let call = &v["choices"][0]["message"]["tool_calls"][0]["function"];
        assert_eq!(call["name"], "get_weather", "{v}");
        assert_eq!(live.fake.requests("/api/chat"), 1);
    })
    .await;
}

#[tokio::test]
async fn a_first_question_no_tool_relates_to_is_asked_for_an_answer_at_once() {
    bounded(30, async {
        let first = vec![json!({"role": "user", "content": "Hi there! How are you?"})];
        for policy in [
            SMALL,
            "defaults:\n  tools: {small_model: true, mode: text}\n",
        ] {
            for stream in [false, true] {
                let live = scripted(vec![answer_reply(ANSWER)], policy).await;
                let r = chat(&live, stream, json!([weather_tool()]), first.clone()).await;
                assert_eq!(r.status(), 200);
                assert_eq!(header(&r, "x-augur-repaired"), None);
                let text = r.text().await.unwrap();
                let answer = if stream {
                    streamed_answer(&ndjson(&text))
                } else {
                    let v: Value = serde_json::from_str(&text).unwrap();
                    v["message"]["content"].as_str().unwrap().to_owned()
                };
                assert_eq!(answer, ANSWER, "{policy} stream {stream}");
                // One request, for the answer branch only.
                assert_eq!(live.fake.requests("/api/chat"), 1);
                let sent = live.fake.last_json("/api/chat").unwrap();
                assert_eq!(sent["format"], answer_branch(), "{policy} stream {stream}");
            }
        }

        // Related, offering a value (a name), after an earlier exchange, or
        // with the rule off: the whole envelope, calls included.
        let related = vec![json!({"role": "user", "content": "Weather in Oslo?"})];
        let named = vec![json!({"role": "user", "content": "Anything new in Oslo?"})];
        let off = "defaults:\n  tools: {small_model: true, answer_unrelated: false}\n";
        let cases = [
            (related, SMALL),
            (named, SMALL),
            (greeting(), SMALL),
            (first.clone(), off),
            (first, "{}"),
        ];
        for (messages, policy) in cases {
            let live = scripted(vec![answer_reply(ANSWER)], policy).await;
            let r = chat(&live, false, json!([weather_tool()]), messages).await;
            assert_eq!(r.status(), 200);
            let sent = live.fake.last_json("/api/chat").unwrap();
            assert_ne!(sent["format"], answer_branch(), "{policy}");
            assert!(sent["format"].to_string().contains("get_weather"), "{sent}");
        }
    })
    .await;
}
