//! The response cache's tests' shared parts: augur with live policies in
//! front of a fake Ollama whose loaded models (and so their digests) augur
//! reads often, a deterministic request for each generation route, and the
//! count of upstream generation calls.

use std::time::Duration;

use bytes::Bytes;
use fake_ollama::FakeOllama;
use serde_json::{Value, json};

use super::{client, header, live::Live, until};

/// The generation routes, each with a deterministic request for `model`.
pub fn requests(model: &str) -> Vec<(&'static str, Value)> {
    let messages = json!([{"role": "user", "content": "What is the capital of France?"}]);
    vec![
        (
            "/api/chat",
            json!({"model": model, "messages": messages, "options": {"temperature": 0}}),
        ),
        (
            "/api/generate",
            json!({"model": model, "prompt": "Capital of France?", "options": {"seed": 7}}),
        ),
        (
            "/v1/chat/completions",
            json!({"model": model, "messages": messages, "temperature": 0}),
        ),
        (
            "/v1/completions",
            json!({"model": model, "prompt": "Capital of France?", "temperature": 0}),
        ),
        (
            "/v1/responses",
            json!({"model": model, "input": "Capital of France?", "temperature": 0}),
        ),
        (
            "/v1/messages",
            json!({"model": model, "max_tokens": 64, "messages": messages, "temperature": 0}),
        ),
    ]
}

/// Upstream generation calls the fake has answered.
pub fn generations(fake: &FakeOllama) -> u64 {
    requests("m")
        .iter()
        .map(|(path, _)| fake.requests(path))
        .sum()
}

/// A fake Ollama with `loaded` models listed in `/api/ps`, augur under
/// `policy`, and augur reading the loaded models (their digests) often.
pub async fn start(loaded: &[&str], policy: &str) -> Live {
    let fake = FakeOllama::builder().loaded(loaded).start().await;
    let live = Live::with_fake(fake, policy).await;
    live.augur
        .state
        .fleet
        .polling_loaded(Duration::from_millis(50), live.augur.stopping())
        .map(tokio::spawn);
    for name in loaded {
        let name = format!("{name}:latest");
        assert!(
            until(Duration::from_secs(5), || live
                .augur
                .state
                .fleet
                .digest_of(&name)
                .is_some())
            .await,
            "no digest for {name}"
        );
    }
    live
}

/// One request: its `X-Augur-Cache` header, status and body bytes.
pub async fn send(
    live: &Live,
    path: &str,
    body: &Value,
    key: Option<&str>,
    headers: &[(&str, &str)],
) -> (Option<String>, u16, Bytes) {
    let mut req = client().post(live.url(path)).json(body);
    if let Some(key) = key {
        req = req.bearer_auth(key);
    }
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let r = req.send().await.unwrap();
    let cache = header(&r, "x-augur-cache").map(str::to_string);
    let status = r.status().as_u16();
    (cache, status, r.bytes().await.unwrap())
}

pub const CACHED: &str = "cache: {ttl: 10m, max_bytes: 1048576}";
