//! Token budgets end to end over real sockets with live policies: every
//! answer, streamed or whole, is charged the tokens it reports, and a spent
//! budget, overall or for one model, is 429 with `Retry-After`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{
    client,
    live::{Live, bounded, chat, error_text, header_u64, sha256_hex},
    ndjson,
};
use serde_json::{Value, json};

/// Tokens the answer reports (what a token budget is charged).
fn tokens_of(done: &Value) -> u64 {
    done["prompt_eval_count"].as_u64().unwrap() + done["eval_count"].as_u64().unwrap()
}

/// Stream a chat answer; return the done chunk.
async fn chat_streamed(live: &Live, model: &str, key: &str) -> Value {
    let r = client()
        .post(live.url("/api/chat"))
        .bearer_auth(key)
        .json(&json!({"model": model, "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let lines = ndjson(&r.text().await.unwrap());
    let done = lines.last().unwrap().clone();
    assert_eq!(done["done"], true);
    done
}

#[tokio::test]
async fn token_budgets_are_charged_from_the_answer() {
    bounded(20, async {
        let policy = format!(
            "defaults:\n  rate_limit: {{tokens_per_minute: 30}}\n\
             models:\n  \"gemma3:*\":\n    rate_limit: {{tokens_per_minute: 15}}\n\
             auth:\n  keys:\n    \
             - {{id: streams, key_sha256: {}}}\n    \
             - {{id: whole, key_sha256: {}}}\n    \
             - {{id: models, key_sha256: {}}}\n",
            sha256_hex("streams-secret"),
            sha256_hex("whole-secret"),
            sha256_hex("models-secret"),
        );
        let live = Live::start(&policy).await;

        // Streamed answers: each reports 11 prompt + 11 generated tokens,
        // so the second one takes the budget of 30 below zero.
        let first = chat_streamed(&live, "llama3.2", "streams-secret").await;
        assert!(tokens_of(&first) < 30, "{first}");
        let second = chat_streamed(&live, "llama3.2", "streams-secret").await;
        assert!(tokens_of(&first) + tokens_of(&second) > 30);
        let r = chat(&live, "llama3.2", Some("streams-secret")).await;
        assert_eq!(r.status(), 429, "streamed answers are charged");
        let retry = header_u64(&r, "retry-after");
        assert!((1..=60).contains(&retry), "{retry}");
        assert_eq!(header_u64(&r, "ratelimit-limit"), 30);
        assert!(error_text(r).await.contains("tokens"));

        // Whole (non-streamed) answers are charged the same way.
        for _ in 0..2 {
            let r = chat(&live, "llama3.2", Some("whole-secret")).await;
            assert_eq!(r.status(), 200);
            let v: Value = r.json().await.unwrap();
            assert!(tokens_of(&v) > 15, "{v}");
        }
        let r = chat(&live, "llama3.2", Some("whole-secret")).await;
        assert_eq!(r.status(), 429, "non-streamed answers are charged");

        // A per-model budget spends only that model's allowance.
        let r = chat(&live, "gemma3", Some("models-secret")).await;
        assert_eq!(r.status(), 200);
        r.bytes().await.unwrap();
        let r = chat(&live, "gemma3:latest", Some("models-secret")).await;
        assert_eq!(r.status(), 429);
        assert_eq!(header_u64(&r, "ratelimit-limit"), 15);
        let r = chat(&live, "llama3.2", Some("models-secret")).await;
        assert_eq!(r.status(), 200);
    })
    .await;
}
