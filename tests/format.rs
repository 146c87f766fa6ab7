//! Structured output end to end against the fake Ollama: thinking
//! emulation and OpenAI's `response_format`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{
    formats::{assert_grammar_safe, chat, generate, hostile_schema, person, scripted},
    header, ndjson, pair, post,
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

// ---------------------------------------------------------------------------
// Thinking emulation

const THOUGHT: &str = r#"{"reasoning": "Light scatters.", "answer": "Blue."}"#;

fn assert_think_format(sent: &Value) {
    assert!(sent.get("think").is_none(), "{sent}");
    let keys: Vec<&String> = sent["format"]["properties"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(keys, ["reasoning", "answer"], "reasoning first");
    assert_eq!(sent["format"]["required"], json!(["reasoning", "answer"]));
}

#[tokio::test]
async fn think_without_the_capability_is_emulated() {
    let (fake, augur) = scripted("gemma3", &[THOUGHT, THOUGHT]).await;
    let mut body = chat("gemma3", Value::Null, false);
    body["think"] = json!(true);
    let r = post(&augur, "/api/chat", &body).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-emulated"), Some("thinking"));
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["message"]["thinking"], "Light scatters.");
    assert_eq!(v["message"]["content"], "Blue.");
    let sent = fake.last_json("/api/chat").unwrap();
    assert_think_format(&sent);
    assert_eq!(
        sent["format"]["properties"]["answer"],
        json!({"type": "string"})
    );

    let mut body = generate("gemma3", Value::Null, false);
    body["think"] = json!(true);
    let r = post(&augur, "/api/generate", &body).await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["thinking"], "Light scatters.");
    assert_eq!(v["response"], "Blue.");
    assert_think_format(&fake.last_json("/api/generate").unwrap());
}

#[tokio::test]
async fn emulated_thinking_with_a_schema_answers_the_schema() {
    let (fake, augur) = pair().await;
    let mut body = generate("gemma3", hostile_schema(), false);
    body["think"] = json!(true);
    let r = post(&augur, "/api/generate", &body).await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert!(v["thinking"].is_string(), "{v}");
    let answer: Value = serde_json::from_str(v["response"].as_str().unwrap()).unwrap();
    assert!(jsonschema::is_valid(&hostile_schema(), &answer), "{answer}");
    let sent = fake.last_json("/api/generate").unwrap();
    assert_think_format(&sent);
    assert_grammar_safe(&sent["format"]);
    assert_eq!(sent["format"]["properties"]["answer"]["type"], "object");
}

#[tokio::test]
async fn emulated_thinking_streams_as_it_is_produced() {
    let (_fake, augur) = scripted("gemma3", &[THOUGHT, THOUGHT]).await;
    for path in ["/api/chat", "/api/generate"] {
        let mut body = if path == "/api/chat" {
            chat("gemma3", Value::Null, true)
        } else {
            generate("gemma3", Value::Null, true)
        };
        body["think"] = json!(true);
        let r = post(&augur, path, &body).await;
        assert_eq!(r.status(), 200);
        let chunks = ndjson(&r.text().await.unwrap());
        let field = |c: &Value, k: &str| {
            c.get("message")
                .and_then(|m| m.get(k))
                .or_else(|| c.get(if k == "content" { "response" } else { k }))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let (last, deltas) = chunks.split_last().unwrap();
        let thinking: Vec<String> = deltas.iter().map(|c| field(c, "thinking")).collect();
        let content: Vec<String> = deltas.iter().map(|c| field(c, "content")).collect();
        assert_eq!(thinking.concat(), "Light scatters.", "{path}: {chunks:?}");
        assert_eq!(content.concat(), "Blue.", "{path}");
        // The thinking arrives in pieces, as the model writes it, and all
        // of it before the answer.
        let first_content = content.iter().position(|c| !c.is_empty()).unwrap();
        assert!(
            thinking[..first_content]
                .iter()
                .filter(|t| !t.is_empty())
                .count()
                > 1
        );
        assert!(thinking[first_content..].iter().all(String::is_empty));
        assert_eq!(last["done"], true);
        assert_eq!(field(last, "content"), "");
        assert_eq!(field(last, "thinking"), "");
    }
}

#[tokio::test]
async fn a_streamed_thinking_answer_with_a_schema_is_validated_before_it_is_sent() {
    let bad = r#"{"reasoning": "Counting.", "answer": {"name": "x"}}"#;
    let good = r#"{"reasoning": "Counting again.", "answer": {"name": "x", "age": 3}}"#;
    let (fake, augur) = scripted("gemma3", &[bad, good]).await;
    let mut body = chat("gemma3", person(), true);
    body["think"] = json!(true);
    let r = post(&augur, "/api/chat", &body).await;
    assert_eq!(r.status(), 200);
    let chunks = ndjson(&r.text().await.unwrap());
    let thinking: String = chunks
        .iter()
        .filter_map(|c| c["message"]["thinking"].as_str())
        .collect();
    let content: String = chunks
        .iter()
        .filter_map(|c| c["message"]["content"].as_str())
        .collect();
    assert_eq!(thinking, "Counting.", "the first thinking only: {chunks:?}");
    let answer: Value = serde_json::from_str(&content).unwrap();
    assert_eq!(answer, json!({"name": "x", "age": 3}));
    assert_eq!(fake.requests("/api/chat"), 2, "retried with feedback");
    assert_eq!(chunks.last().unwrap()["done"], true);
}

// ---------------------------------------------------------------------------
// OpenAI response_format

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
