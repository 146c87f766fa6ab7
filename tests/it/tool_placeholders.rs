//! Placeholders end to end against the fake: the instruction holds no value
//! a model could copy, and a template token copied into an argument
//! (`<city>`, `{city}`, `"string"`) is retried with feedback like any
//! invalid argument, whole and streamed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{
    header,
    live::bounded,
    ndjson,
    tool_turns::{call_reply, chat, last_sent_message, scripted, weather_tool},
};
use serde_json::{Value, json};

fn question() -> Vec<Value> {
    vec![json!({"role": "user", "content": "How is the weather in Tokyo?"})]
}

#[tokio::test]
async fn the_instruction_shows_shapes_not_values() {
    bounded(20, async {
        let good = call_reply("get_weather", json!({"city": "Tokyo"}));
        let live = scripted(vec![good], "{}").await;
        let r = chat(&live, false, json!([weather_tool()]), question()).await;
        assert_eq!(r.status(), 200);
        let sent = live.fake.last_json("/api/chat").unwrap();
        let system = sent["messages"][0]["content"].as_str().unwrap();
        assert!(
            system.ends_with(
                r#"Call shape: {"tool_calls":[{"name":"get_weather","arguments":{"city":string}}]}"#
            ),
            "{system}"
        );
        assert!(!system.contains('<'), "no <placeholder> to copy: {system}");
    })
    .await;
}

#[tokio::test]
async fn a_copied_placeholder_is_retried_with_feedback() {
    for placeholder in ["<city>", "{city}", "$city", "string", "<string>", "city"] {
        bounded(20, async {
            let bad = call_reply("get_weather", json!({"city": placeholder}));
            let good = call_reply("get_weather", json!({"city": "Tokyo"}));
            let live = scripted(vec![bad, good], "{}").await;
            let r = chat(&live, false, json!([weather_tool()]), question()).await;
            assert_eq!(r.status(), 200, "{placeholder}");
            assert_eq!(header(&r, "x-augur-attempts"), Some("2"));
            let v: Value = r.json().await.unwrap();
            let args = &v["message"]["tool_calls"][0]["function"]["arguments"];
            assert_eq!(args, &json!({"city": "Tokyo"}), "{placeholder}");
            let feedback = last_sent_message(&live);
            assert!(
                feedback.contains("get_weather/city")
                    && feedback.contains(&format!("{:?} is a placeholder", placeholder)),
                "{feedback}"
            );
        })
        .await;
    }
}

#[tokio::test]
async fn a_streamed_placeholder_falls_back_to_the_retried_answer() {
    bounded(20, async {
        let bad = call_reply("get_weather", json!({"city": "<city"}));
        let good = call_reply("get_weather", json!({"city": "Tokyo"}));
        // The stream's reply, the whole path's first attempt, its retry.
        let live = scripted(vec![bad.clone(), bad, good], "{}").await;
        let r = chat(&live, true, json!([weather_tool()]), question()).await;
        let chunks = ndjson(&r.text().await.unwrap());
        let calls = common::tool_calls(&chunks);
        assert_eq!(calls.len(), 1, "{chunks:?}");
        assert_eq!(calls[0]["function"]["arguments"], json!({"city": "Tokyo"}));
        assert_eq!(live.fake.requests("/api/chat"), 3);
    })
    .await;
}

#[tokio::test]
async fn a_placeholder_the_user_wrote_is_meant() {
    bounded(20, async {
        let call = call_reply("get_weather", json!({"city": "<city>"}));
        let live = scripted(vec![call], "{}").await;
        let messages = vec![
            json!({"role": "user", "content": "Weather for the city literally named <city>?"}),
        ];
        let r = chat(&live, false, json!([weather_tool()]), messages).await;
        assert_eq!(r.status(), 200);
        let v: Value = r.json().await.unwrap();
        assert_eq!(
            v["message"]["tool_calls"][0]["function"]["arguments"],
            json!({"city": "<city>"})
        );
        assert_eq!(live.fake.requests("/api/chat"), 1);
    })
    .await;
}

#[tokio::test]
async fn a_placeholder_still_there_after_the_retries_is_422() {
    bounded(20, async {
        let bad = call_reply("get_weather", json!({"city": "<city>"}));
        let live = scripted(vec![bad.clone(), bad], "{}").await;
        let r = chat(&live, false, json!([weather_tool()]), question()).await;
        assert_eq!(r.status(), 422);
        let v: Value = r.json().await.unwrap();
        let error = v["error"].as_str().unwrap();
        assert!(
            error.contains("get_weather") && error.contains("placeholder"),
            "{error}"
        );
    })
    .await;
}

/// An empty value for a required argument is no value: retried with
/// feedback, whole and streamed (the README's Paris example on the 270M
/// model sometimes answers `{"city": ""}`).
#[tokio::test]
async fn an_empty_required_value_is_retried_with_feedback() {
    for stream in [false, true] {
        bounded(20, async {
            let bad = call_reply("get_weather", json!({"city": ""}));
            let good = call_reply("get_weather", json!({"city": "Tokyo"}));
            // Streamed: the stream's reply, the whole path's first attempt,
            // its retry.
            let replies = match stream {
                false => vec![bad, good],
                true => vec![bad.clone(), bad, good],
            };
            let asked = replies.len() as u64;
            let live = scripted(replies, "{}").await;
            let r = chat(&live, stream, json!([weather_tool()]), question()).await;
            assert_eq!(r.status(), 200);
            let text = r.text().await.unwrap();
            let calls: Vec<Value> = match stream {
                false => {
                    let v: Value = serde_json::from_str(&text).unwrap();
                    v["message"]["tool_calls"].as_array().unwrap().clone()
                }
                true => common::tool_calls(&ndjson(&text))
                    .into_iter()
                    .cloned()
                    .collect(),
            };
            assert_eq!(calls.len(), 1, "{text}");
            assert_eq!(
                calls[0]["function"]["arguments"],
                json!({"city": "Tokyo"}),
                "{text}"
            );
            let feedback = last_sent_message(&live);
            assert!(
                feedback.contains("get_weather/city")
                    && feedback.contains("is required and the value is empty"),
                "{feedback}"
            );
            assert_eq!(live.fake.requests("/api/chat"), asked);
        })
        .await;
    }
}
