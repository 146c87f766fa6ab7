//! Degraded retries end to end: when the upstream's grammar converter
//! rejects a schema (in today's wording or the older one), augur asks again
//! with the schema's value constraints dropped, then its structure cut,
//! then JSON mode, for whole answers and streams alike; with
//! `degrade: false` the upstream's error is the answer.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{
    formats::{chat, generate, streamed_content, with_policy},
    header, ndjson, pair, post, start_with,
};
use fake_ollama::FakeOllama;
use serde_json::{Value, json};

/// A schema the sanitizer keeps as is, which `reject-schema` refuses, and
/// whose constraints the fake's JSON-mode answer still satisfies.
fn answer_schema() -> Value {
    json!({"type": "object", "properties": {
        "answer": {"type": "string", "pattern": "^.*sky.*$", "minLength": 3}
    }, "required": ["answer"]})
}

#[tokio::test]
async fn a_rejected_schema_is_degraded_then_json() {
    let (fake, augur) = pair().await;
    let r = post(
        &augur,
        "/api/chat",
        &chat("reject-schema", answer_schema(), false),
    )
    .await;
    assert_eq!(r.status(), 200);
    // The schema, the schema without value constraints, then "json".
    assert_eq!(fake.requests("/api/chat"), 3);
    assert_eq!(header(&r, "x-augur-attempts"), Some("3"));
    let sent = fake.last_json("/api/chat").unwrap();
    assert_eq!(sent["format"], "json");
    let v: Value = r.json().await.unwrap();
    let content: Value = serde_json::from_str(v["message"]["content"].as_str().unwrap()).unwrap();
    assert!(
        jsonschema::is_valid(&answer_schema(), &content),
        "{content}"
    );
}

#[tokio::test]
async fn a_deep_rejected_schema_reaches_json_mode() {
    // Three levels: constraints dropped, then structure cut, then "json".
    let schema = json!({"type": "object", "properties": {
        "answer": {"type": "string", "minLength": 3},
        "meta": {"type": "object", "properties": {
            "inner": {"type": "object", "properties": {"deep": {"type": "string"}}}
        }}
    }, "required": ["answer"]});
    let (fake, augur) = pair().await;
    let r = post(&augur, "/api/chat", &chat("reject-schema", schema, false)).await;
    assert_eq!(r.status(), 200, "{:?}", r.text().await);
    assert_eq!(fake.last_json("/api/chat").unwrap()["format"], "json");
}

#[tokio::test]
async fn degraded_retries_also_serve_streams() {
    let fake = FakeOllama::builder().start().await;
    let augur = start_with(&fake.url(), |_| {}).await;
    let r = post(
        &augur,
        "/api/generate",
        &generate("reject-schema", answer_schema(), true),
    )
    .await;
    assert_eq!(r.status(), 200);
    let chunks = ndjson(&r.text().await.unwrap());
    let content: Value = serde_json::from_str(&streamed_content(&chunks)).unwrap();
    assert!(jsonschema::is_valid(&answer_schema(), &content));
    assert_eq!(chunks.last().unwrap()["done"], true);

    // stream: pass too: the rejection comes before any byte was sent.
    let augur = with_policy(&fake, "defaults:\n  validate: {stream: pass}\n").await;
    let r = post(
        &augur,
        "/api/chat",
        &chat("reject-schema", answer_schema(), true),
    )
    .await;
    assert_eq!(r.status(), 200);
    let chunks = ndjson(&r.text().await.unwrap());
    let last = chunks.last().unwrap();
    assert_eq!(last["done"], true, "{chunks:?}");
    assert_eq!(last["augur_validation"], "valid", "{last}");
    assert_eq!(fake.last_json("/api/chat").unwrap()["format"], "json");
}

/// An upstream with the older wording: 500 "invalid JSON schema in format"
/// for any schema, a JSON answer otherwise. Returns its URL and the formats
/// it was sent.
async fn old_converter() -> (String, std::sync::Arc<std::sync::Mutex<Vec<Value>>>) {
    use axum::{Json, http::StatusCode, routing::post};
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let app = axum::Router::new().route(
        "/api/chat",
        post(move |Json(body): Json<Value>| async move {
            log.lock().unwrap().push(body["format"].clone());
            if body["format"].is_object() {
                let e = json!({"error": "invalid JSON schema in format"});
                return (StatusCode::INTERNAL_SERVER_ERROR, Json(e));
            }
            let answer = json!({"model": body["model"], "created_at": "2025-01-01T00:00:00Z",
                "message": {"role": "assistant", "content": r#"{"answer":"The sky."}"#},
                "done": true, "done_reason": "stop"});
            (StatusCode::OK, Json(answer))
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, seen)
}

#[tokio::test]
async fn the_older_rejection_wording_degrades_too() {
    let (url, seen) = old_converter().await;
    let augur = start_with(&url, |_| {}).await;
    let r = post(&augur, "/api/chat", &chat("any", answer_schema(), false)).await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["message"]["content"], r#"{"answer":"The sky."}"#);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert!(seen[0].is_object() && seen[1].is_object(), "{seen:?}");
    assert!(seen[1].pointer("/properties/answer/pattern").is_none());
    assert_eq!(seen[2], "json");
}

#[tokio::test]
async fn degrade_off_returns_the_upstreams_error() {
    let fake = FakeOllama::builder().start().await;
    let augur = with_policy(&fake, "defaults:\n  validate: {degrade: false}\n").await;
    let r = post(
        &augur,
        "/api/chat",
        &chat("reject-schema", answer_schema(), false),
    )
    .await;
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    let error = v["error"].as_str().unwrap();
    assert!(error.contains("JSON schema conversion failed"), "{error}");
    assert_eq!(fake.requests("/api/chat"), 1);
}
