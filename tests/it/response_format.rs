//! OpenAI's `response_format` on `/v1/chat/completions` end to end against
//! the fake Ollama: schemas are sent as Ollama's `format`, answers repaired
//! and retried as for Ollama's own routes, streamed as valid JSON over SSE,
//! and errors given in OpenAI's shape.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{
    formats::{person, scripted},
    header, pair, post,
};
use serde_json::{Value, json};

/// The `data:` payloads of an SSE body, without `[DONE]`.
fn sse(text: &str) -> Vec<Value> {
    assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
    text.split("\n\n")
        .filter_map(|e| e.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

fn openai(model: &str, response_format: Value, stream: bool) -> Value {
    json!({"model": model, "stream": stream, "response_format": response_format,
        "messages": [{"role": "user", "content": "Who?"}]})
}

fn json_schema(schema: Value) -> Value {
    json!({"type": "json_schema", "json_schema": {"name": "person", "schema": schema}})
}

#[tokio::test]
async fn response_format_is_repaired_and_answered_in_openais_shape() {
    let (fake, augur) = pair().await;
    let r = post(
        &augur,
        "/v1/chat/completions",
        &openai("bad-json", json_schema(person()), false),
    )
    .await;
    assert_eq!(r.status(), 200);
    assert!(
        header(&r, "x-augur-repaired")
            .unwrap()
            .contains("code_fence")
    );
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    let content: Value =
        serde_json::from_str(v["choices"][0]["message"]["content"].as_str().unwrap()).unwrap();
    assert_eq!(content, json!({"name": "x", "age": 1}));
    assert_eq!(fake.requests("/v1/chat/completions"), 0);
    assert_eq!(
        fake.last_json("/api/chat").unwrap()["format"]["type"],
        "object"
    );

    // Retried too.
    let r = post(
        &augur,
        "/v1/chat/completions",
        &openai("invalid-then-valid", json_schema(person()), false),
    )
    .await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-attempts"), Some("2"));
}

#[tokio::test]
async fn response_format_streams_valid_json() {
    let (_fake, augur) = pair().await;
    let r = post(
        &augur,
        "/v1/chat/completions",
        &openai("bad-json", json_schema(person()), true),
    )
    .await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "content-type"), Some("text/event-stream"));
    let events = sse(&r.text().await.unwrap());
    let content: String = events
        .iter()
        .filter_map(|e| {
            e.pointer("/choices/0/delta/content")
                .and_then(Value::as_str)
        })
        .collect();
    let content: Value = serde_json::from_str(&content).unwrap();
    assert_eq!(content, json!({"name": "x", "age": 1}));
    assert_eq!(
        events.last().unwrap()["choices"][0]["finish_reason"],
        "stop"
    );
}

#[tokio::test]
async fn response_format_errors_use_openais_shape() {
    let bad = r#"{"name": 7}"#;
    let (fake, augur) = scripted("scripted", &[bad, bad]).await;
    let r = post(
        &augur,
        "/v1/chat/completions",
        &openai("scripted", json_schema(person()), false),
    )
    .await;
    assert_eq!(r.status(), 422);
    let v: Value = r.json().await.unwrap();
    let message = v["error"]["message"].as_str().unwrap();
    assert!(message.contains("/age"), "{message}");
    assert!(v["error"]["type"].is_string(), "{v}");

    let before = fake.requests("/api/chat");
    for rf in [
        json!({"type": "yaml"}),
        json_schema(json!({"type": "object", "properties": {"a": {"type": "strnig"}}})),
    ] {
        let r = post(
            &augur,
            "/v1/chat/completions",
            &openai("scripted", rf.clone(), false),
        )
        .await;
        assert_eq!(r.status(), 400, "{rf}");
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["error"]["type"], "invalid_request_error", "{v}");
        assert!(v["error"]["message"].is_string(), "{v}");
    }
    assert_eq!(fake.requests("/api/chat"), before);
    assert_eq!(fake.requests("/v1/chat/completions"), 0);
}
