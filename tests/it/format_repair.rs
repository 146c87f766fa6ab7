//! Repair of structured answers end to end against the fake Ollama: code
//! fences, trailing commas, surrounding prose, string scalars and truncated
//! JSON are fixed without asking the model again, and each fix is named in
//! `x-augur-repaired`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{
    formats::{chat, generate, person, scripted},
    header, pair, post,
};
use serde_json::{Value, json};

#[tokio::test]
async fn fences_and_trailing_commas_are_repaired() {
    let (fake, augur) = pair().await;
    let r = post(&augur, "/api/chat", &chat("bad-json", person(), false)).await;
    assert_eq!(r.status(), 200);
    let repaired = header(&r, "x-augur-repaired").unwrap().to_string();
    assert!(repaired.contains("code_fence"), "{repaired}");
    assert!(repaired.contains("trailing_comma"), "{repaired}");
    assert_eq!(header(&r, "x-augur-attempts"), None);
    let v: Value = r.json().await.unwrap();
    let content: Value = serde_json::from_str(v["message"]["content"].as_str().unwrap()).unwrap();
    assert_eq!(content, json!({"name": "x", "age": 1}));
    assert_eq!(v["done"], true);
    assert_eq!(fake.requests("/api/chat"), 1);
}

#[tokio::test]
async fn prose_and_string_scalars_are_repaired_on_generate() {
    let reply = r#"Sure! Here it is: {"name": "Ann", "age": "42"} Hope that helps."#;
    let (fake, augur) = scripted("scripted", &[reply]).await;
    let r = post(
        &augur,
        "/api/generate",
        &generate("scripted", person(), false),
    )
    .await;
    assert_eq!(r.status(), 200);
    let repaired = header(&r, "x-augur-repaired").unwrap().to_string();
    assert!(repaired.contains("surrounding_text"), "{repaired}");
    assert!(repaired.contains("coerced_types"), "{repaired}");
    let v: Value = r.json().await.unwrap();
    let content: Value = serde_json::from_str(v["response"].as_str().unwrap()).unwrap();
    assert_eq!(content, json!({"name": "Ann", "age": 42}));
    assert_eq!(fake.requests("/api/generate"), 1);
}

#[tokio::test]
async fn truncated_json_is_closed() {
    let (fake, augur) = pair().await;
    let schema =
        json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]});
    let r = post(&augur, "/api/chat", &chat("truncated", schema, false)).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-repaired"), Some("closed_truncated"));
    let v: Value = r.json().await.unwrap();
    let content: Value = serde_json::from_str(v["message"]["content"].as_str().unwrap()).unwrap();
    assert!(content["a"].is_string(), "{content}");
    assert_eq!(fake.requests("/api/chat"), 1);
}
