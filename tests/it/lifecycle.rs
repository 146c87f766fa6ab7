//! The pod lifecycle an orchestrator relies on (Kubernetes sends SIGTERM
//! after the preStop hook, then SIGKILL at the end of the grace period):
//! on SIGTERM `/-/ready` answers 503 from the moment the signal is taken,
//! no later than the proxy listener closes; the admin listener keeps
//! answering through the drain (`/-/healthy` 200, `/-/ready` 503); new
//! connections are refused; streams in flight finish while the drain
//! allows (`server.drain_timeout_ms`) and one still running then is cut;
//! augur then exits 0.
//!
//! Covered elsewhere: a stream in flight ending whole on SIGTERM and its
//! access log (`binary::the_binary_drains_streams_on_sigterm`), policies
//! mounted from a ConfigMap and swapped through `..data`
//! (`policy_reload::kubernetes_configmap_symlink_swap_applies_within_2s`),
//! certificates from a Secret (`tls::rotation`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use crate::common::{
    client, ndjson,
    process::{Process, Start},
};
use fake_ollama::FakeOllama;
use serde_json::json;

const TOKEN: &str = "admin-token-5c1e0a";
const DRAIN_MS: u64 = 1500;

/// A probe as kubelet makes it: a new connection each time, a short
/// timeout. The status, or `None` when nothing answered.
async fn probe(url: &str, token: Option<&str>) -> Option<u16> {
    let c = reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(0)
        .timeout(Duration::from_secs(3))
        .build()
        .unwrap();
    let mut req = c.get(url);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    req.send().await.ok().map(|r| r.status().as_u16())
}

/// A streamed `/api/chat` of `tokens` chunks, `interval_ms` apart, with
/// its first chunk read.
async fn stream(base: &str, tokens: u64, interval_ms: u64) -> (reqwest::Response, Vec<u8>) {
    let mut r = client()
        .post(format!("{base}/api/chat"))
        .json(&json!({"model": "long-stream",
            "options": {"num_predict": tokens, "interval_ms": interval_ms},
            "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let first = r.chunk().await.unwrap().unwrap().to_vec();
    (r, first)
}

/// The rest of a stream's body, and when it ended; a cut is not an error here.
async fn rest(mut r: reqwest::Response, mut text: Vec<u8>) -> (String, Instant) {
    while let Ok(Some(chunk)) = r.chunk().await {
        text.extend_from_slice(&chunk);
    }
    (String::from_utf8_lossy(&text).into_owned(), Instant::now())
}

#[cfg(unix)]
#[tokio::test]
async fn sigterm_turns_ready_to_503_first_then_drains_streams_within_the_grace_and_exits_0() {
    let fake = FakeOllama::builder().start().await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("augur.log");
    let config = format!("[server]\ndrain_timeout_ms = {DRAIN_MS}\n");
    let mut augur = Process::start(Start {
        upstream: &fake.url(),
        config: Some(&config),
        env: vec![("AUGUR_ADMIN_TOKEN", TOKEN), ("RUST_LOG", "info")],
        log: Some(&log),
        ..Start::default()
    })
    .await;
    let (ready, healthy) = (
        format!("{}/-/ready", augur.admin),
        format!("{}/-/healthy", augur.admin),
    );
    assert_eq!(probe(&ready, Some(TOKEN)).await, Some(200));
    let proxy = augur.url.trim_start_matches("http://").to_string();

    // In flight when SIGTERM arrives: one stream that ends within the
    // drain (5 chunks, 100 ms apart), one that would take 20 s.
    let (short, short_first) = stream(&augur.url, 5, 100).await;
    let (long, long_first) = stream(&augur.url, 200, 100).await;
    let short = tokio::spawn(rest(short, short_first));
    let long = tokio::spawn(rest(long, long_first));

    let sent = std::process::Command::new("kill")
        .args(["-TERM", &augur.pid.to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let signalled = Instant::now();

    // Until the proxy refuses connections: whenever it does, /-/ready
    // already answers 503 (it turned when the signal was taken, before
    // the listeners were told to stop), and once it stopped answering 200
    // it never does again.
    let mut unready_seen = false;
    loop {
        let accepting = tokio::net::TcpStream::connect(&proxy).await.is_ok();
        let status = probe(&ready, Some(TOKEN)).await;
        if unready_seen {
            assert_ne!(status, Some(200), "ready again after SIGTERM");
        }
        if !accepting {
            assert_eq!(
                status,
                Some(503),
                "the proxy stopped accepting while /-/ready did not answer 503"
            );
            break;
        }
        unready_seen |= status != Some(200);
        assert!(
            signalled.elapsed() < Duration::from_secs(2),
            "still accepting 2 s after SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }

    // Through the drain the admin listener answers: not ready, but alive
    // (a liveness probe must not restart a draining pod).
    assert_eq!(probe(&ready, Some(TOKEN)).await, Some(503));
    assert_eq!(probe(&healthy, None).await, Some(200));
    assert_eq!(probe(&ready, None).await, Some(401), "still guarded");

    // The short stream ends whole.
    let (text, _) = short.await.unwrap();
    let lines = ndjson(&text);
    assert_eq!(lines.last().unwrap()["done"], true, "{text}");
    assert_eq!(lines.len(), 6, "5 tokens and the done chunk: {text}");
    // The admin listener still answers while the long one runs.
    assert_eq!(probe(&ready, Some(TOKEN)).await, Some(503));

    // The long one is cut when the drain time is up, not before.
    let (text, ended) = long.await.unwrap();
    let cut_after = ended - signalled;
    assert!(
        !text.contains("\"done\":true"),
        "the 20 s stream ended whole: {text}"
    );
    assert!(
        cut_after >= Duration::from_millis(DRAIN_MS - 100),
        "cut after {cut_after:?}, before the drain time"
    );
    assert!(
        cut_after < Duration::from_millis(DRAIN_MS + 2000),
        "cut after {cut_after:?}, long past the drain time"
    );

    // Then augur exits 0, soon after the drain.
    let status = tokio::time::timeout(Duration::from_secs(5), augur.child.wait())
        .await
        .expect("augur did not exit after the drain")
        .unwrap();
    let exited_after = signalled.elapsed();
    assert!(status.success(), "{status}");
    assert!(
        exited_after < Duration::from_millis(DRAIN_MS + 3000),
        "exited {exited_after:?} after SIGTERM"
    );
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("draining"), "{text}");
    assert!(text.contains("drain timeout reached"), "{text}");
    assert!(text.contains("augur stopped"), "{text}");
}
