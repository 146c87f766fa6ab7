//! Calls a native-tools model wrote as text in its content, rescued into
//! real tool calls (policy `tools.rescue_text_calls`), against the fake
//! Ollama's `text-call` model (a Qwen-style `<tool_call>` block its parser
//! missed) and scripted tool models: `/api/chat` and
//! `/v1/chat/completions`, whole and streamed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::weather_tool;
use common::{client, header, live::Live, ndjson, pair, post};
use fake_ollama::FakeOllama;
use serde_json::{Value, json};

/// The arguments the fake's `text-call` model writes for [`weather_tool`].
fn written_arguments() -> Value {
    fake_ollama::schema::instance(&weather_tool()["function"]["parameters"])
}

fn chat(model: &str, stream: bool) -> Value {
    json!({"model": model, "stream": stream, "tools": [weather_tool()],
        "messages": [{"role": "user", "content": "Weather in Paris?"}]})
}

/// The `data:` payloads of an SSE body, `[DONE]` left out.
fn sse(text: &str) -> Vec<Value> {
    assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
    text.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

#[tokio::test]
async fn a_call_left_in_content_comes_back_as_tool_calls() {
    let (fake, augur) = pair().await;
    let body = chat("text-call", false);
    let raw = serde_json::to_vec(&body).unwrap();
    let r = client()
        .post(format!("{}/api/chat", augur.url))
        .body(raw.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-repaired"), Some("text_tool_call"));
    assert_eq!(header(&r, "x-augur-emulated"), None);
    let v: Value = r.json().await.unwrap();
    let message = &v["message"];
    assert_eq!(message["content"], "I'll look that up.");
    let calls = message["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["function"]["name"], "get_weather");
    assert_eq!(calls[0]["function"]["index"], 0);
    assert_eq!(calls[0]["function"]["arguments"], written_arguments());
    assert!(calls[0]["id"].as_str().unwrap().starts_with("call_"));
    assert_eq!(
        (v["done"].clone(), v["done_reason"].clone()),
        (json!(true), json!("stop"))
    );
    // Only the answer was read: the request went as the client sent it.
    assert_eq!(fake.last_request_to("/api/chat").unwrap().body, raw);
}

#[tokio::test]
async fn a_streamed_call_goes_out_as_a_tool_call_chunk() {
    let (_fake, augur) = pair().await;
    let r = post(&augur, "/api/chat", &chat("text-call", true)).await;
    assert_eq!(r.headers()["content-type"], "application/x-ndjson");
    let chunks = ndjson(&r.text().await.unwrap());
    let content: String = chunks
        .iter()
        .filter_map(|c| c["message"]["content"].as_str())
        .collect();
    assert_eq!(content.trim_end(), "I'll look that up.");
    // The text went out in pieces, before the call was known.
    let texts = chunks
        .iter()
        .filter(|c| c["message"]["content"] != "")
        .count();
    assert!(texts > 2, "{chunks:?}");
    let calls = common::tool_calls(&chunks);
    assert_eq!(calls.len(), 1, "{chunks:?}");
    assert_eq!(calls[0]["function"]["name"], "get_weather");
    assert_eq!(calls[0]["function"]["arguments"], written_arguments());
    let last = chunks.last().unwrap();
    assert_eq!(last["done"], true);
    assert_eq!(last["augur_repaired"], "text_tool_call");
    assert!(last["message"].get("tool_calls").is_none());
    assert!(chunks.iter().all(|c| c["done"] == false || c == last));
}

#[tokio::test]
async fn openai_clients_get_the_rescued_call_whole_and_streamed() {
    let (fake, augur) = pair().await;
    let r = post(&augur, "/v1/chat/completions", &chat("text-call", false)).await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    let choice = &v["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    assert_eq!(choice["message"]["content"], "I'll look that up.");
    let call = &choice["message"]["tool_calls"][0];
    assert_eq!(call["type"], "function");
    assert_eq!(call["function"]["name"], "get_weather");
    let args: Value =
        serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, written_arguments());
    // Read through Ollama's own chat route, translated as its OpenAI layer does.
    assert_eq!(fake.requests("/v1/chat/completions"), 0);
    assert_eq!(
        fake.last_json("/api/chat").unwrap()["tools"][0],
        weather_tool()
    );

    let r = post(&augur, "/v1/chat/completions", &chat("text-call", true)).await;
    assert_eq!(r.headers()["content-type"], "text/event-stream");
    let events = sse(&r.text().await.unwrap());
    let text: String = events
        .iter()
        .filter_map(|e| e["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert!(!text.contains("tool_call"), "{text}");
    assert_eq!(text.trim_end(), "I'll look that up.");
    let calls: Vec<&Value> = events
        .iter()
        .filter_map(|e| e["choices"][0]["delta"]["tool_calls"].as_array())
        .flatten()
        .collect();
    assert_eq!(calls.len(), 1, "{events:?}");
    let args: Value =
        serde_json::from_str(calls[0]["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, written_arguments());
    let finish = events
        .iter()
        .filter_map(|e| e["choices"][0]["finish_reason"].as_str())
        .collect::<Vec<_>>();
    assert_eq!(finish, ["tool_calls"]);
}

/// augur with `policy` in front of a tool model answering `replies`.
async fn scripted_tool_model(replies: &[&str], policy: &str) -> Live {
    let replies = replies.iter().map(|r| r.to_string()).collect();
    let fake = FakeOllama::builder()
        .script_tools("native", replies)
        .start()
        .await;
    Live::with_fake(fake, policy).await
}

async fn chat_native(live: &Live, stream: bool) -> reqwest::Response {
    client()
        .post(live.url("/api/chat"))
        .json(&chat("native", stream))
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn every_form_is_rescued_and_arguments_are_repaired() {
    let replies = [
        r#"[get_weather(city="Paris", days="2")]"#,
        "```tool_code\nprint(default_api.get_weather(city='Paris', days='2'))\n```",
        r#"<tool_code>{"tool_name": "get_weather", "parameters": {"city": "Paris", "days": "2"}}</tool_code>"#,
        r#"[TOOL_REQUEST]{"name": "get_weather", "arguments": {"city": "Paris", "days": "2"}}[END_TOOL_REQUEST]"#,
    ];
    let live = scripted_tool_model(&replies, "{}").await;
    for (i, reply) in replies.iter().enumerate() {
        let stream = i % 2 == 1;
        let r = chat_native(&live, stream).await;
        let (calls, repaired) = if stream {
            let chunks = ndjson(&r.text().await.unwrap());
            let calls: Vec<Value> = chunks
                .iter()
                .filter_map(|c| c["message"]["tool_calls"].as_array())
                .flatten()
                .cloned()
                .collect();
            let repaired = chunks.last().unwrap()["augur_repaired"].clone();
            (calls, repaired)
        } else {
            let repaired = json!(header(&r, "x-augur-repaired"));
            let v: Value = r.json().await.unwrap();
            assert_eq!(v["message"]["content"], "", "{reply}");
            (
                v["message"]["tool_calls"].as_array().unwrap().clone(),
                repaired,
            )
        };
        assert_eq!(calls.len(), 1, "{reply}");
        assert_eq!(
            calls[0]["function"]["arguments"],
            json!({"city": "Paris", "days": 2}),
            "{reply}: the string \"2\" coerced as the schema implies"
        );
        assert_eq!(
            repaired, "text_tool_call, converted a string to an integer",
            "{reply}"
        );
    }
}

#[tokio::test]
async fn what_is_not_a_valid_call_stays_in_the_content() {
    let replies = [
        // Arguments that no repair fixes.
        r#"<tool_call>{"name": "get_weather", "arguments": {"days": 0}}</tool_call>"#,
        // An undeclared tool, a name in place of a literal, a plain answer.
        r#"<tool_call>{"name": "rm_rf", "arguments": {}}</tool_call>"#,
        "get_weather(city=Paris)",
        "The answer is [1, 2] and <b>bold</b>.\n",
    ];
    let mut all = replies.to_vec();
    all.extend(replies);
    let live = scripted_tool_model(&all, "{}").await;
    for stream in [false, true] {
        for reply in replies {
            let r = chat_native(&live, stream).await;
            assert_eq!(r.status(), 200);
            let content = if stream {
                let chunks = ndjson(&r.text().await.unwrap());
                assert!(
                    chunks
                        .iter()
                        .all(|c| c["message"].get("tool_calls").is_none())
                );
                assert!(chunks.last().unwrap().get("augur_repaired").is_none());
                chunks
                    .iter()
                    .filter_map(|c| c["message"]["content"].as_str())
                    .collect::<String>()
            } else {
                assert_eq!(header(&r, "x-augur-repaired"), None);
                let v: Value = r.json().await.unwrap();
                assert!(v["message"].get("tool_calls").is_none(), "{v}");
                v["message"]["content"].as_str().unwrap().to_string()
            };
            assert_eq!(content, reply, "stream {stream}");
        }
    }
}

#[tokio::test]
async fn the_policy_turns_the_rescue_off() {
    let live = scripted_tool_model(
        &["<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>"],
        "defaults:\n  tools: {rescue_text_calls: false}\n",
    )
    .await;
    let body = serde_json::to_vec(&chat("native", false)).unwrap();
    let r = client()
        .post(live.url("/api/chat"))
        .body(body.clone())
        .send()
        .await
        .unwrap();
    let v: Value = r.json().await.unwrap();
    assert!(v["message"].get("tool_calls").is_none());
    assert!(
        v["message"]["content"]
            .as_str()
            .unwrap()
            .starts_with("<tool_call>")
    );
    assert_eq!(live.fake.last_request_to("/api/chat").unwrap().body, body);
}
