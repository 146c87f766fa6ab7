//! Schema sanitizing end to end against the fake Ollama: what llama.cpp's
//! grammar converter rejects never reaches the upstream, and answers are
//! still validated against the client's original schema.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{
    formats::{assert_grammar_safe, chat, generate, hostile_schema, scripted},
    pair, post,
};
use serde_json::{Value, json};

#[tokio::test]
async fn converter_rejected_constructs_never_reach_the_upstream() {
    let (fake, augur) = pair().await;
    for path in ["/api/chat", "/api/generate"] {
        let body = if path == "/api/chat" {
            chat("llama3.2", hostile_schema(), false)
        } else {
            generate("llama3.2", hostile_schema(), false)
        };
        let r = post(&augur, path, &body).await;
        assert_eq!(r.status(), 200, "{path}");
        let sent = fake.last_json(path).unwrap()["format"].clone();
        assert_grammar_safe(&sent);
        assert_eq!(
            sent.pointer("/properties/tag/pattern"),
            Some(&json!("^.*(?:[a-z]+).*$")),
            "{sent}"
        );
        let v: Value = r.json().await.unwrap();
        let text = v
            .pointer("/message/content")
            .or(v.get("response"))
            .and_then(Value::as_str)
            .unwrap();
        let answer: Value = serde_json::from_str(text).unwrap();
        assert!(jsonschema::is_valid(&hostile_schema(), &answer), "{answer}");
    }
}

#[tokio::test]
async fn answers_are_validated_against_the_original_schema() {
    // Grammar-wise the sanitized schema allows any tag; the original wants
    // letters. A digits-only tag is caught and reported at its pointer.
    let bad = r#"{"tag":"123","note":null,"extra":1}"#;
    let (_fake, augur) = scripted("scripted", &[bad, bad]).await;
    let r = post(
        &augur,
        "/api/chat",
        &chat("scripted", hostile_schema(), false),
    )
    .await;
    assert_eq!(r.status(), 422);
    let v: Value = r.json().await.unwrap();
    let error = v["error"].as_str().unwrap();
    assert!(error.contains("/tag"), "{error}");
}
