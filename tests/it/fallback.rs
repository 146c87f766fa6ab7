//! The fallback model: when the requested model's answer is still invalid
//! after its retries (or its upstreams fail before the first byte), the
//! model the policy names answers, here on another upstream; the answer
//! keeps the requested model's name, and headers, the done chunk and
//! `augur_fallbacks_total` say what happened. A valid answer never touches
//! the fallback, and a stream that has begun never falls back.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use augur::{app::AppState, config::Config};
use common::{Augur, client, header, metric, named, ndjson, post};
use fake_ollama::FakeOllama;
use serde_json::{Value, json};

const VALID: &str = r#"{"a":7}"#;

fn schema() -> Value {
    json!({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]})
}

/// One fake with only `model`, answering `replies` in turn.
async fn scripted(model: &str, replies: &[&str]) -> FakeOllama {
    FakeOllama::builder()
        .models(&[])
        .script(model, replies.iter().map(|r| r.to_string()).collect())
        .start()
        .await
}

fn ask(model: &str, format: Value, stream: bool) -> Value {
    json!({"model": model, "stream": stream, "format": format,
           "messages": [{"role": "user", "content": "a number"}]})
}

async fn fallbacks(augur: &Augur, labels: &[&str]) -> f64 {
    let admin = augur.admin().await;
    let text = common::get_text(&format!("{admin}/metrics")).await;
    metric(&text, "augur_fallbacks_total", labels)
}

#[tokio::test]
async fn an_answer_still_invalid_after_its_retries_is_answered_by_the_fallback_model() {
    let small = scripted("small", &["no", "still no", "nope", "not yet"]).await;
    let big = scripted("big", &[VALID, VALID]).await;
    let augur = common::pair_under(
        &small,
        &big,
        "models:\n  small: {fallback: {models: [big]}}\n",
    )
    .await;
    let r = post(&augur, "/api/chat", &ask("small", schema(), false)).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-model"), Some("big"));
    assert_eq!(header(&r, "x-augur-fallback"), Some("invalid"));
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["model"], "small", "the answer keeps the name asked for");
    assert_eq!(v["message"]["content"], VALID);
    // Both attempts of the requested model, then one of the fallback.
    assert_eq!(small.requests("/api/chat"), 2);
    assert_eq!(big.requests("/api/chat"), 1);
    assert_eq!(big.last_json("/api/chat").unwrap()["model"], "big");

    // Streamed with a schema: held for validation, so it can still fall back.
    let r = post(&augur, "/api/chat", &ask("small", schema(), true)).await;
    assert_eq!(header(&r, "x-augur-model"), Some("big"));
    let chunks = ndjson(&r.text().await.unwrap());
    assert!(chunks.iter().all(|c| c["model"] == "small"), "{chunks:?}");
    let content: String = chunks
        .iter()
        .filter_map(|c| c["message"]["content"].as_str())
        .collect();
    assert_eq!(content, VALID);
    assert_eq!(
        (small.requests("/api/chat"), big.requests("/api/chat")),
        (4, 2)
    );
    let labels = [
        "from=\"small:latest\"",
        "to=\"big:latest\"",
        "reason=\"invalid\"",
    ];
    assert_eq!(fallbacks(&augur, &labels).await, 2.0);
}

#[tokio::test]
async fn a_valid_answer_never_touches_the_fallback() {
    let small = scripted("small", &["oops", VALID]).await;
    let big = scripted("big", &[VALID]).await;
    let augur = common::pair_under(
        &small,
        &big,
        "models:\n  small: {fallback: {models: [big]}}\n",
    )
    .await;
    let r = post(&augur, "/api/chat", &ask("small", schema(), false)).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-model"), None);
    assert_eq!(header(&r, "x-augur-fallback"), None);
    assert_eq!(header(&r, "x-augur-attempts"), Some("2"));
    assert_eq!(big.requests("/api/chat"), 0);
}

#[tokio::test]
async fn a_stream_that_has_begun_never_falls_back() {
    let small = scripted("small", &["not json at all"]).await;
    let big = scripted("big", &[VALID]).await;
    let augur = common::pair_under(
        &small,
        &big,
        "models:\n  small: {fallback: {models: [big]}}\n",
    )
    .await;
    // `"json"` streams as it comes; the verdict is in the done chunk.
    let r = post(&augur, "/api/chat", &ask("small", json!("json"), true)).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-model"), None);
    let chunks = ndjson(&r.text().await.unwrap());
    assert_eq!(chunks.last().unwrap()["augur_validation"], "invalid");
    assert_eq!(big.requests("/api/chat"), 0);
}

#[tokio::test]
async fn an_upstream_failure_before_the_first_byte_falls_back() {
    // `error-500` is a model whose runner dies: 500 before any byte.
    let a = FakeOllama::builder().models(&["error-500"]).start().await;
    let big = scripted("big", &[VALID, VALID]).await;
    let policy = "models:\n  error-500: {fallback: {models: [big], on: [upstream_error]}}\n";
    let augur = common::pair_under(&a, &big, policy).await;
    let r = post(&augur, "/api/chat", &ask("error-500", schema(), false)).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-fallback"), Some("upstream_error"));
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["model"], "error-500");
    // Streamed as it comes: the fallback's stream, before the first byte.
    let r = post(&augur, "/api/chat", &ask("error-500", json!("json"), true)).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-model"), Some("big"));
    assert_eq!(header(&r, "x-augur-fallback"), Some("upstream_error"));
    let chunks = ndjson(&r.text().await.unwrap());
    assert!(chunks.iter().all(|c| c["model"] == "error-500"));
    assert_eq!(chunks.last().unwrap()["done"], true);
    assert_eq!(big.requests("/api/chat"), 2);
}

#[tokio::test]
async fn only_the_causes_the_policy_names_fall_back() {
    let a = FakeOllama::builder()
        .models(&["error-500"])
        .script("small", vec!["no".into(), "no".into()])
        .start()
        .await;
    let big = scripted("big", &[VALID]).await;
    let policy = "models:\n  error-500: {fallback: {models: [big], on: [invalid]}}\n  \
                  small: {fallback: {models: [big], on: [upstream_error]}}\n";
    let augur = common::pair_under(&a, &big, policy).await;
    let r = post(&augur, "/api/chat", &ask("error-500", schema(), false)).await;
    assert_eq!(r.status(), 500);
    let r = post(&augur, "/api/chat", &ask("small", schema(), false)).await;
    assert_eq!(r.status(), 422);
    assert_eq!(big.requests("/api/chat"), 0);
}

#[tokio::test]
async fn a_streamed_tool_call_falls_back_before_anything_was_sent() {
    // No city: nothing to repair.
    let bad = r#"{"tool_call":{"name":"get_weather","arguments":{}}}"#;
    let good = r#"{"tool_call":{"name":"get_weather","arguments":{"city":"Oslo"}}}"#;
    // The streamed attempt, then the whole-answer path's two.
    let tiny = scripted("tiny", &[bad, bad, bad]).await;
    let large = scripted("large", &[good]).await;
    let augur = common::pair_under(
        &tiny,
        &large,
        "models:\n  tiny: {fallback: {models: [large]}}\n",
    )
    .await;
    let body = json!({"model": "tiny", "stream": true,
        "messages": [{"role": "user", "content": "weather in Oslo?"}],
        "tools": [{"type": "function", "function": {"name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
            "required": ["city"]}}}]});
    let r = post(&augur, "/api/chat", &body).await;
    assert_eq!(r.status(), 200);
    let chunks = ndjson(&r.text().await.unwrap());
    let calls = common::tool_calls(&chunks);
    assert_eq!(calls.len(), 1, "{chunks:?}");
    assert_eq!(calls[0]["function"]["arguments"]["city"], "Oslo");
    // Headers went out first: the done chunk says who answered.
    let done = chunks.last().unwrap();
    assert_eq!(done["augur_model"], "large", "{done}");
    assert_eq!(done["augur_fallback"], "invalid");
    assert!(chunks.iter().all(|c| c["model"] == "tiny"));
    assert_eq!(
        (tiny.requests("/api/chat"), large.requests("/api/chat")),
        (3, 1)
    );
}

#[tokio::test]
async fn in_text_mode_the_fallback_models_grammar_attempt_goes_to_it() {
    // Unquoted, `Paris` is no literal: the answer cannot be read.
    let unreadable = "[get_weather(city=Paris)]";
    let good = r#"{"tool_call":{"name":"get_weather","arguments":{"city":"Paris"}}}"#;
    // Each model: a text-mode answer, then the grammar-mode attempt's.
    let small = scripted("small", &[unreadable, unreadable]).await;
    let big = scripted("big", &[unreadable, good]).await;
    let policy = "models:\n  small: {fallback: {models: [big]}, tools: {mode: text}}\n";
    let augur = common::pair_under(&small, &big, policy).await;
    let body = json!({"model": "small", "stream": false,
        "messages": [{"role": "user", "content": "weather in Paris?"}],
        "tools": [common::tool_turns::weather_tool()]});
    let r = post(&augur, "/api/chat", &body).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-model"), Some("big"));
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        v["message"]["tool_calls"][0]["function"]["arguments"],
        json!({"city": "Paris"}),
        "{v}"
    );
    assert_eq!(big.requests("/api/chat"), 2);
    let sent = big.last_json("/api/chat").unwrap();
    assert_eq!(sent["model"], "big", "{sent}");
    assert!(sent.get("format").is_some(), "grammar mode: {sent}");
}

#[tokio::test]
async fn a_fallback_name_that_is_not_a_model_name_is_refused_and_the_last_policy_stays() {
    let petit = scripted("petit", &["no", "still no"]).await;
    let grand = scripted("grand", &[VALID]).await;
    let policies = tempfile::tempdir().unwrap();
    let schemas = tempfile::tempdir().unwrap();
    // Names of their own: the fallback counter is shared by the tests here.
    let good = "models:\n  petit: {fallback: {models: [grand]}}\n";
    common::write_policy(policies.path(), "fallback.yaml", good);
    let config = Config {
        upstreams: named(&[("a", &petit.url()), ("b", &grand.url())]),
        policies: policies.path().to_path_buf(),
        schemas: schemas.path().to_path_buf(),
        drain_timeout: Duration::from_secs(5),
        ..Config::default()
    };
    // No watcher: the edit below is applied by `reload_now` alone.
    let store = augur::policy::PolicyStore::open(&config.policies, &config.schemas).unwrap();
    let augur = common::start_state(AppState::with_store(config, store, None).unwrap()).await;
    augur.state.fleet.refresh(true).await;
    // CR LF would end X-Augur-Model and start another header.
    let bad = "models:\n  petit: {fallback: {models: [\"grand\\r\\nX-Evil: 1\"]}}\n";
    common::write_policy(policies.path(), "fallback.yaml", bad);
    let e = augur.state.policies.reload_now().unwrap_err().to_string();
    assert!(e.contains("fallback.yaml"), "{e}");
    assert!(
        e.contains(r#""grand\r\nX-Evil: 1" is not a valid model name"#),
        "{e}"
    );
    let admin = augur.admin().await;
    let shown: Value = client()
        .get(format!("{admin}/-/policies"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(shown["last_error"], e.as_str());
    // The last good policy still answers.
    let r = post(&augur, "/api/chat", &ask("petit", schema(), false)).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-model"), Some("grand"));
    assert_eq!(header(&r, "x-evil"), None);
}

#[tokio::test]
async fn streamed_thinking_with_a_schema_and_no_retries_falls_back() {
    // No `a`: nothing to repair.
    let bad = r#"{"reasoning": "Counting.", "answer": {"b": 1}}"#;
    let good = r#"{"reasoning": "Counting again.", "answer": {"a": 7}}"#;
    // Names of their own: the fallback counter is shared by the tests here.
    let minor = scripted("minor", &[bad]).await;
    let major = scripted("major", &[good]).await;
    let policy = "models:\n  \
        minor: {validate: {max_retries: 0}, fallback: {models: [major]}}\n  \
        slight: {validate: {max_retries: 0, on_failure: pass}, \
                fallback: {models: [\"nosuch:model\"]}}\n";
    let augur = common::pair_under(&minor, &major, policy).await;
    let mut body = ask("minor", schema(), true);
    body["think"] = json!(true);
    let r = post(&augur, "/api/chat", &body).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-emulated"), Some("thinking"));
    let chunks = ndjson(&r.text().await.unwrap());
    let text = |field: &str| -> String {
        chunks
            .iter()
            .filter_map(|c| c["message"][field].as_str())
            .collect()
    };
    assert_eq!(
        text("thinking"),
        "Counting.",
        "the first thinking only: {chunks:?}"
    );
    assert_eq!(text("content"), VALID, "{chunks:?}");
    // Headers went out first: the done chunk says who answered.
    let done = chunks.last().unwrap();
    assert_eq!(done["done"], true, "{done}");
    assert_eq!(done["augur_model"], "major", "{done}");
    assert_eq!(done["augur_fallback"], "invalid", "{done}");
    assert!(chunks.iter().all(|c| c["model"] == "minor"), "{chunks:?}");
    // The streamed answer was the requested model's one attempt.
    assert_eq!(
        (minor.requests("/api/chat"), major.requests("/api/chat")),
        (1, 1)
    );

    // A chain that fails: `on_failure` decides over the streamed answer.
    let slight = scripted("slight", &[bad]).await;
    let augur = common::pair_under(&slight, &major, policy).await;
    let mut body = ask("slight", schema(), true);
    body["think"] = json!(true);
    let r = post(&augur, "/api/chat", &body).await;
    assert_eq!(r.status(), 200);
    let chunks = ndjson(&r.text().await.unwrap());
    let content: String = chunks
        .iter()
        .filter_map(|c| c["message"]["content"].as_str())
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&content).unwrap(),
        json!({"b": 1}),
        "{chunks:?}"
    );
    let done = chunks.last().unwrap();
    assert_eq!(done["augur_fallback"], "failed", "{done}");
    assert_eq!(done["augur_validation"], "invalid", "{done}");
    assert_eq!(done.get("augur_model"), None, "{done}");
    // The streamed attempt, then the fallback's (a 404 no client sees).
    assert_eq!(slight.requests("/api/chat"), 2);
    assert_eq!(
        slight.last_json("/api/chat").unwrap()["model"],
        "nosuch:model"
    );
}
