//! Per-model concurrency end to end over real sockets with live policies:
//! while `max_in_flight` requests run, another for the same normalized
//! model is refused with Ollama's busy error, or with a queue timeout waits
//! for the slot.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::{Duration, Instant};

use common::{
    client,
    live::{Live, bounded, chat},
    ndjson,
};
use serde_json::{Value, json};

const BUSY: &str =
    r#"{"error":"server busy, please try again.  maximum pending requests exceeded"}"#;

/// Start a streamed `slow-stream` chat of `chunks` chunks (200 ms apart)
/// and read its first line, so it holds its concurrency slot.
async fn open_slow_stream(live: &Live, model: &str, chunks: u64) -> reqwest::Response {
    let r = client()
        .post(live.url("/api/chat"))
        .json(&json!({
            "model": model,
            "messages": [{"role": "user", "content": "hi"}],
            "options": {"num_predict": chunks}
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    r
}

/// Read the rest of a stream; return its last line.
async fn finish_stream(r: reqwest::Response) -> Value {
    let text = r.text().await.unwrap();
    let lines = ndjson(&text);
    lines.last().unwrap().clone()
}

#[tokio::test]
async fn concurrency_refuses_or_queues_per_normalized_model() {
    bounded(25, async {
        let live = Live::start(
            "models:\n  slow-stream:\n    concurrency: {max_in_flight: 1, queue_timeout_ms: 0}\n",
        )
        .await;

        let mut first = open_slow_stream(&live, "slow-stream", 5).await;
        let chunk = first.chunk().await.unwrap().unwrap();
        assert!(!chunk.is_empty());
        // The slot is held: the same model under another spelling is refused.
        for model in ["slow-stream:latest", "slow-stream"] {
            let r = chat(&live, model, None).await;
            assert_eq!(r.status(), 503, "{model}");
            assert_eq!(r.text().await.unwrap(), BUSY);
        }
        assert_eq!(chat(&live, "llama3.2", None).await.status(), 200);
        let done = finish_stream(first).await;
        assert_eq!(done["done"], true);
        // The slot is free again once the stream ended.
        let r = open_slow_stream(&live, "slow-stream:latest", 2).await;
        assert_eq!(finish_stream(r).await["done"], true);

        // With a queue timeout the second request waits for the first.
        live.apply(
            "models:\n  slow-stream:\n    concurrency: {max_in_flight: 1, queue_timeout_ms: 5000}\n",
        )
        .await;
        let mut first = open_slow_stream(&live, "slow-stream", 5).await;
        first.chunk().await.unwrap().unwrap();
        let started = Instant::now();
        let url = live.url("/api/chat");
        let waiting = tokio::spawn(async move {
            let r = client()
                .post(url)
                .json(&json!({"model": "slow-stream:latest", "stream": false,
                    "messages": [{"role": "user", "content": "hi"}], "options": {"num_predict": 2}}))
                .send()
                .await
                .unwrap();
            let status = r.status();
            let body: Value = r.json().await.unwrap();
            (status, body, Instant::now())
        });
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!waiting.is_finished(), "the second request waits");
        let done = finish_stream(first).await;
        let first_done = Instant::now();
        assert_eq!(done["done"], true);
        let (status, body, second_done) = waiting.await.unwrap();
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["done"], true);
        assert!(second_done > first_done);
        assert!(started.elapsed() >= Duration::from_millis(600));
    })
    .await;
}
