//! Editing the policy file while traffic runs, over real sockets: edits
//! apply within 2 s, a broken file changes nothing and shows at
//! `GET /-/policies`, unchanged quotas keep their state across a reload,
//! and no request fails because of reloads, not even among 200 open
//! streams.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::{Duration, Instant};

use common::{
    client,
    live::{Live, POLICY_FILE, bounded, chat, header_u64, within_2s},
    ndjson,
};
use futures_util::StreamExt;
use serde_json::{Value, json};

/// Keep `n` clients streaming short `long-stream` answers until `stop`;
/// returns the number of answers and the failures seen.
fn background_traffic(
    live: &Live,
    n: usize,
    stop: tokio::sync::watch::Receiver<bool>,
) -> Vec<tokio::task::JoinHandle<(u64, Vec<String>)>> {
    (0..n)
        .map(|_| {
            let url = live.url("/api/chat");
            let stop = stop.clone();
            tokio::spawn(async move {
                let c = client();
                let (mut ok, mut failures) = (0, Vec::new());
                while !*stop.borrow() {
                    let r = c
                        .post(&url)
                        .json(&json!({"model": "long-stream", "messages": [{"role": "user", "content": "hi"}],
                            "options": {"num_predict": 5, "interval_ms": 20}}))
                        .send()
                        .await
                        .unwrap();
                    let status = r.status();
                    let text = r.text().await.unwrap_or_default();
                    let done = text
                        .lines()
                        .last()
                        .and_then(|l| serde_json::from_str::<Value>(l).ok())
                        .is_some_and(|v| v["done"] == true);
                    if status == 200 && done {
                        ok += 1;
                    } else {
                        failures.push(format!("{status}: {text}"));
                    }
                }
                (ok, failures)
            })
        })
        .collect()
}

#[tokio::test]
async fn edits_apply_within_2s_and_broken_files_change_nothing() {
    bounded(30, async {
        let base = "defaults:\n  rate_limit: {requests_per_minute: 100000}\n";
        let live = Live::start(base).await;
        let admin = live.augur.admin().await;
        let (stop, stop_rx) = tokio::sync::watch::channel(false);
        let traffic = background_traffic(&live, 4, stop_rx);
        tokio::time::sleep(Duration::from_millis(300)).await;

        // A new per-model limit applies within 2 s.
        assert_eq!(chat(&live, "llama3.2", None).await.status(), 200);
        let limited = format!(
            "{base}models:\n  llama3.2:\n    rate_limit: {{requests_per_minute: 1, burst: 1}}\n"
        );
        let good = live.version();
        live.rewrite(&limited);
        let written = Instant::now();
        loop {
            let status = chat(&live, "llama3.2", None).await.status();
            if status == 429 {
                break;
            }
            assert_eq!(status, 200);
            assert!(written.elapsed() < Duration::from_secs(2), "not within 2 s");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let limited_version = live.version();
        assert_ne!(limited_version, good);

        // A broken file changes nothing and shows at GET /-/policies.
        live.rewrite(&format!("{limited}  \"gemma3:*\": {{rate_limit: [\n"));
        let mut shown = Value::Null;
        let written = Instant::now();
        while shown["last_error"].is_null() {
            assert!(
                written.elapsed() < Duration::from_secs(2),
                "rejection not shown within 2 s"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
            shown = client()
                .get(format!("{admin}/-/policies"))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
        }
        let error = shown["last_error"].as_str().unwrap();
        assert!(error.contains(POLICY_FILE), "{error}");
        assert!(shown["last_error_at"].is_string());
        assert_eq!(shown["version"], limited_version.as_str());
        assert_eq!(live.version(), limited_version);
        assert_eq!(
            chat(&live, "llama3.2", None).await.status(),
            429,
            "the limit stays"
        );
        assert_eq!(chat(&live, "gemma3", None).await.status(), 200);

        // Fixing the file applies it and clears the error.
        live.rewrite(base);
        let written = Instant::now();
        while chat(&live, "llama3.2", None).await.status() != 200 {
            assert!(
                written.elapsed() < Duration::from_secs(2),
                "fix not within 2 s"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let shown: Value = client()
            .get(format!("{admin}/-/policies"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert!(shown["last_error"].is_null(), "{shown}");
        let files = shown["files"].as_array().unwrap();
        assert_eq!(files.len(), 1, "{shown}");
        assert!(files[0].as_str().unwrap().ends_with(POLICY_FILE), "{shown}");

        stop.send(true).unwrap();
        let mut answers = 0;
        for t in traffic {
            let (ok, failures) = t.await.unwrap();
            assert!(failures.is_empty(), "{failures:?}");
            answers += ok;
        }
        assert!(answers > 8, "traffic ran during the edits: {answers}");
    })
    .await;
}

#[tokio::test]
async fn a_reload_keeps_the_state_of_unchanged_quotas() {
    bounded(20, async {
        let quota = "defaults:\n  rate_limit: {requests_per_minute: 2}\n";
        let live = Live::start(quota).await;
        for _ in 0..2 {
            assert_eq!(chat(&live, "llama3.2", None).await.status(), 200);
        }
        assert_eq!(chat(&live, "llama3.2", None).await.status(), 429);

        // Another setting changes; the quota does not: still spent.
        live.apply(&format!(
            "{quota}models:\n  qwen3:\n    emulate_tools: never\n"
        ))
        .await;
        assert_eq!(chat(&live, "llama3.2", None).await.status(), 429);

        // A changed quota starts fresh.
        live.apply("defaults:\n  rate_limit: {requests_per_minute: 3}\n")
            .await;
        let r = chat(&live, "llama3.2", None).await;
        assert_eq!(r.status(), 200);
        assert_eq!(header_u64(&r, "ratelimit-limit"), 3);
    })
    .await;
}

#[tokio::test]
async fn no_request_fails_because_of_reloads_under_200_streams() {
    bounded(40, async {
        let variant = |rpm: u32, max: u32, extra: &str| {
            format!(
                "defaults:\n  rate_limit: {{requests_per_minute: {rpm}}}\n\
                 models:\n  long-stream:\n    concurrency: {{max_in_flight: {max}, queue_timeout_ms: 5000}}\n{extra}"
            )
        };
        let live = Live::start(&variant(100_000, 1000, "")).await;
        let c = client();
        let started = Instant::now();
        let streams: Vec<_> = (0..200u64)
            .map(|i| {
                let c = c.clone();
                let url = live.url("/api/chat");
                tokio::spawn(async move {
                    // Spread the starts over the first second, so requests
                    // are admitted while policies are swapped.
                    tokio::time::sleep(Duration::from_millis(i * 5)).await;
                    let r = c
                        .post(&url)
                        .json(&json!({"model": "long-stream", "messages": [{"role": "user", "content": "hi"}],
                            "options": {"num_predict": 40, "interval_ms": 50}}))
                        .send()
                        .await
                        .unwrap();
                    let status = r.status();
                    let mut body = r.bytes_stream();
                    let mut text = Vec::new();
                    while let Some(chunk) = body.next().await {
                        text.extend_from_slice(&chunk.unwrap());
                    }
                    (status, String::from_utf8(text).unwrap())
                })
            })
            .collect();

        let edits = [
            variant(90_000, 1000, ""),
            variant(90_000, 900, "  \"gemma3:*\":\n    emulate_tools: always\n"),
            "defaults: {rate_limit: [\n".to_string(),
            variant(100_000, 800, "auth:\n  required: false\n"),
            variant(80_000, 1000, ""),
            variant(100_000, 1000, ""),
        ];
        for edit in &edits {
            tokio::time::sleep(Duration::from_millis(250)).await;
            live.rewrite(edit);
        }
        for (i, s) in streams.into_iter().enumerate() {
            let (status, text) = s.await.unwrap();
            assert_eq!(status, 200, "stream {i}: {text}");
            let lines = ndjson(&text);
            assert_eq!(lines.len(), 41, "stream {i}: 40 tokens and the done chunk");
            let done = lines.last().unwrap();
            assert_eq!(done["done"], true, "stream {i}");
            assert_eq!(done["done_reason"], "length");
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{:?}",
            started.elapsed()
        );
        within_2s("last edit applied", || {
            live.augur.state.policies.status().last_error.is_none()
        })
        .await;
        assert!(live.fake.streams_completed() >= 200);
        assert_eq!(live.fake.streams_aborted(), 0);
    })
    .await;
}
