//! A plain emulated answer cut by the client's token limit, end to end
//! against the fake Ollama: the text produced so far comes back with
//! Ollama's `done_reason: "length"` (OpenAI `finish_reason: "length"`,
//! Anthropic `stop_reason: "max_tokens"`), whole or streamed, without a
//! retry and without raising the limit.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{client, formats::streamed_content, ndjson, pair, post};
use serde_json::{Value, json};

/// What `tool-json` answers: the last user message. Cut at 8 tokens of 3
/// characters it is `{"response":"It is sunny`.
const REPLY: &str = r#"{"response":"It is sunny in Paris, with a light breeze."}"#;
const CUT: &str = "It is sunny";

fn weather_tool() -> Value {
    json!({"type": "function", "function": {"name": "get_weather",
        "description": "Current weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
            "required": ["city"]}}})
}

fn chat(stream: bool) -> Value {
    json!({"model": "tool-json", "stream": stream, "tools": [weather_tool()],
        "messages": [{"role": "user", "content": REPLY}], "options": {"num_predict": 8}})
}

#[tokio::test]
async fn a_cut_plain_answer_is_the_text_so_far_with_done_reason_length() {
    let (fake, augur) = pair().await;
    let r = post(&augur, "/api/chat", &chat(false)).await;
    assert_eq!(r.status(), 200);
    assert!(r.headers().get("x-augur-attempts").is_none());
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["message"]["content"], CUT);
    assert!(v["message"].get("tool_calls").is_none());
    assert_eq!(
        (&v["done"], &v["done_reason"]),
        (&json!(true), &json!("length"))
    );
    assert_eq!(fake.requests("/api/chat"), 1, "no retry");
    let sent = fake.last_json("/api/chat").unwrap();
    assert_eq!(sent["options"]["num_predict"], 8, "the client's limit");

    let r = post(&augur, "/api/chat", &chat(true)).await;
    assert_eq!(r.status(), 200);
    let chunks = ndjson(&r.text().await.unwrap());
    assert_eq!(streamed_content(&chunks), CUT);
    let done = chunks.last().unwrap();
    assert_eq!(
        (&done["done"], &done["done_reason"]),
        (&json!(true), &json!("length"))
    );
    assert!(
        chunks.iter().all(|c| c.get("error").is_none()),
        "{chunks:?}"
    );
    assert_eq!(fake.requests("/api/chat"), 2);
}

#[tokio::test]
async fn openai_clients_get_finish_reason_length() {
    let (fake, augur) = pair().await;
    let body = json!({"model": "tool-json", "max_tokens": 8, "tools": [weather_tool()],
        "messages": [{"role": "user", "content": REPLY}]});
    let r = post(&augur, "/v1/chat/completions", &body).await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["choices"][0]["finish_reason"], "length");
    assert_eq!(v["choices"][0]["message"]["content"], CUT);

    let mut streaming = body.clone();
    streaming["stream"] = json!(true);
    let text = post(&augur, "/v1/chat/completions", &streaming)
        .await
        .text()
        .await
        .unwrap();
    let data: Vec<Value> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let content: String = data
        .iter()
        .filter_map(|d| d["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(content, CUT);
    let reasons: Vec<&Value> = data
        .iter()
        .map(|d| &d["choices"][0]["finish_reason"])
        .filter(|r| !r.is_null())
        .collect();
    assert_eq!(reasons, [&json!("length")], "{text}");
    assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
    assert_eq!(fake.requests("/api/chat"), 2, "one call each, no retry");
}

#[tokio::test]
async fn anthropic_clients_get_stop_reason_max_tokens() {
    let (_fake, augur) = pair().await;
    let tool = json!({"name": "get_weather", "input_schema": {"type": "object",
        "properties": {"city": {"type": "string"}}, "required": ["city"]}});
    let body = json!({"model": "tool-json", "max_tokens": 8, "tools": [tool],
        "messages": [{"role": "user", "content": REPLY}]});
    let send = |body: Value| {
        client()
            .post(format!("{}/v1/messages", augur.url))
            .json(&body)
            .send()
    };
    let v: Value = send(body.clone()).await.unwrap().json().await.unwrap();
    assert_eq!(v["stop_reason"], "max_tokens", "{v}");
    assert_eq!(v["content"][0], json!({"type": "text", "text": CUT}));

    let mut streaming = body;
    streaming["stream"] = json!(true);
    let text = send(streaming).await.unwrap().text().await.unwrap();
    let data: Vec<Value> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let answer: String = data
        .iter()
        .filter(|d| d["delta"]["type"] == "text_delta")
        .map(|d| d["delta"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(answer, CUT);
    let stop = data.iter().find(|d| d["type"] == "message_delta").unwrap();
    assert_eq!(stop["delta"]["stop_reason"], "max_tokens", "{text}");
}

#[tokio::test]
async fn emulated_thinking_cut_by_the_limit_keeps_what_it_thought() {
    let (fake, augur) = pair().await;
    // Cut inside the reasoning: thinking so far, no answer, length.
    let reply = r#"{"reasoning":"The user asks about the weather in Paris.","answer":"Sunny."}"#;
    for stream in [false, true] {
        let body = json!({"model": "tool-json", "stream": stream, "think": true,
            "messages": [{"role": "user", "content": reply}], "options": {"num_predict": 8}});
        let r = post(&augur, "/api/chat", &body).await;
        assert_eq!(r.status(), 200);
        let chunks = if stream {
            ndjson(&r.text().await.unwrap())
        } else {
            vec![r.json::<Value>().await.unwrap()]
        };
        let thinking: String = chunks
            .iter()
            .filter_map(|c| c["message"]["thinking"].as_str())
            .collect();
        assert_eq!(thinking, "The user a", "stream {stream}");
        assert_eq!(streamed_content(&chunks), "");
        assert_eq!(chunks.last().unwrap()["done_reason"], "length");
    }
    assert_eq!(fake.requests("/api/chat"), 2, "no retry");
}
