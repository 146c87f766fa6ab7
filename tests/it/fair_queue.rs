//! Fair queuing end to end over real sockets: on a model with one slot and
//! a slow answer, one key's burst of queued requests does not make another
//! key wait behind all of it, and queued requests whose clients left never
//! reach the upstream.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::{Duration, Instant};

use common::{
    client,
    live::{Live, bounded, sha256_hex},
};
use fake_ollama::FakeOllama;
use serde_json::json;

/// How long the fake takes to answer `slow-first-byte`: one slot time.
const SLOT_MS: u64 = 150;

async fn chat(url: String, key: &'static str) -> (u16, Instant) {
    let r = client()
        .post(url)
        .bearer_auth(key)
        .json(&json!({"model": "slow-first-byte", "stream": false,
            "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let _ = r.bytes().await;
    (status, Instant::now())
}

/// Wait until `/metrics` shows `depth` requests of `key` queued (a bound
/// on a loaded machine, not a measure).
async fn depth_reaches(
    metrics: &metrics_exporter_prometheus::PrometheusHandle,
    key: &str,
    depth: u64,
) {
    let line = format!(
        "augur_concurrency_queue_depth{{model=\"slow-first-byte\",principal=\"{key}\"}} {depth}"
    );
    let start = Instant::now();
    while !metrics.render().lines().any(|l| l == line) {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "never {line}:\n{}",
            metrics.render()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn another_key_is_served_within_two_slot_times_of_a_burst() {
    bounded(60, async {
        let fake = FakeOllama::builder().slow_ms(SLOT_MS).start().await;
        let policy = format!(
            "models:\n  slow-first-byte:\n    concurrency: {{max_in_flight: 1, queue_timeout_ms: 60000}}\n\
             auth:\n  required: true\n  keys:\n    \
             - {{id: burst, key_sha256: {}}}\n    \
             - {{id: single, key_sha256: {}}}\n",
            sha256_hex("burst-secret"),
            sha256_hex("single-secret"),
        );
        let live = Live::with_fake(fake, &policy).await;
        // The queue depth per key, as /metrics shows it (the recorder of
        // the whole test binary; principal `burst` is this test's own).
        let metrics = common::metrics();
        let url = live.url("/api/chat");

        // Key `burst` sends 30 requests: one at the upstream, 29 queued.
        let mut burst = Vec::new();
        for _ in 0..30 {
            burst.push(tokio::spawn(chat(url.clone(), "burst-secret")));
        }
        depth_reaches(&metrics, "burst", 29).await;
        // Ten more whose clients give up while queued leave the queue.
        let mut leaving = Vec::new();
        for _ in 0..10 {
            leaving.push(tokio::spawn(chat(url.clone(), "burst-secret")));
        }
        depth_reaches(&metrics, "burst", 39).await;
        for task in &leaving {
            task.abort();
        }
        depth_reaches(&metrics, "burst", 29).await;
        assert_eq!(live.fake.requests("/api/chat"), 1);

        let asked = Instant::now();
        let (status, single_done) = chat(url.clone(), "single-secret").await;
        assert_eq!(status, 200);
        let waited = single_done - asked;

        let mut burst_done = Vec::new();
        for task in burst {
            let (status, done) = task.await.unwrap();
            assert_eq!(status, 200);
            burst_done.push(done);
        }
        let before = burst_done.iter().filter(|d| **d < single_done).count();
        // FIFO would serve all 30 first; fair queuing at most the one at
        // the upstream and the one whose turn it was.
        assert!(before <= 2, "{before} of the burst were served first");
        assert!(
            waited < Duration::from_millis(6 * SLOT_MS),
            "waited {waited:?}, slot time {SLOT_MS} ms"
        );
        // The requests whose clients left never reached the upstream.
        assert_eq!(live.fake.requests("/api/chat"), 31);
        depth_reaches(&metrics, "burst", 0).await;
    })
    .await;
}
