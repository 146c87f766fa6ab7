//! The transparent proxy over real sockets: bytes, headers, streaming,
//! cancellation, error shapes, limits on bodies, unknown paths.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use common::{client, ndjson, pair, post, scrub_times, start_with};
use fake_ollama::FakeOllama;
use futures_util::StreamExt;
use serde_json::{Value, json};

#[tokio::test]
async fn streamed_chat_is_identical_to_going_direct() {
    let (fake, augur) = pair().await;
    let body = json!({"model": "gemma3", "messages": [{"role": "user", "content": "hi"}]});
    let direct = client()
        .post(format!("{}/api/chat", fake.url()))
        .json(&body)
        .send()
        .await
        .unwrap();
    let direct_ct = direct.headers()["content-type"].clone();
    let direct_text = direct.text().await.unwrap();
    let via = post(&augur, "/api/chat", &body).await;
    assert_eq!(via.status(), 200);
    assert_eq!(via.headers()["content-type"], direct_ct);
    assert!(via.headers().contains_key("x-request-id"));
    let via_text = via.text().await.unwrap();
    assert!(direct_text.lines().count() > 3);
    assert_eq!(scrub_times(&via_text), scrub_times(&direct_text));
}

#[tokio::test]
async fn non_streaming_bodies_and_metadata_routes_pass_through() {
    let (fake, augur) = pair().await;
    for path in ["/", "/api/version", "/v1/models"] {
        let d = client()
            .get(format!("{}{path}", fake.url()))
            .send()
            .await
            .unwrap();
        let v = client()
            .get(format!("{}{path}", augur.url))
            .send()
            .await
            .unwrap();
        assert_eq!(v.status(), d.status(), "{path}");
        assert_eq!(
            v.headers().get("content-type"),
            d.headers().get("content-type"),
            "{path}"
        );
        assert_eq!(v.bytes().await.unwrap(), d.bytes().await.unwrap(), "{path}");
    }
    let body = json!({"model": "gemma3", "messages": [{"role": "user", "content": "hi"}], "stream": false});
    let d = client()
        .post(format!("{}/api/chat", fake.url()))
        .json(&body)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let v = post(&augur, "/api/chat", &body).await.text().await.unwrap();
    assert!(!v.ends_with('\n'));
    assert_eq!(scrub_times(&v), scrub_times(&d));
}

#[tokio::test]
async fn host_is_rewritten_and_forwarding_headers_added() {
    let (fake, augur) = pair().await;
    let r = client()
        .get(format!("{}/api/version", augur.url))
        .header("host", "ollama.example.com")
        .header("connection", "keep-alive, x-hop")
        .header("x-hop", "secret")
        .header("x-request-id", "req-123")
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["x-request-id"], "req-123");
    let seen = fake.last_request_to("/api/version").unwrap();
    assert_eq!(seen.headers["host"], fake.addr().to_string().as_str());
    assert_eq!(seen.headers["x-forwarded-for"], "127.0.0.1");
    assert_eq!(seen.headers["x-forwarded-proto"], "http");
    assert!(!seen.headers.contains_key("x-hop"));
}

#[tokio::test]
async fn delete_with_a_json_body_and_unknown_paths_are_forwarded() {
    let (fake, augur) = pair().await;
    let r = client()
        .delete(format!("{}/api/delete", augur.url))
        .json(&json!({"model": "nope"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    assert_eq!(fake.last_json("/api/delete").unwrap()["model"], "nope");
    let r = client()
        .get(format!("{}/api/some/future/endpoint?x=1", augur.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    assert_eq!(r.text().await.unwrap(), "404 page not found");
    assert_eq!(fake.requests("/api/some/future/endpoint"), 1);
}

#[tokio::test]
async fn client_disconnect_cancels_the_upstream_stream() {
    let (fake, augur) = pair().await;
    let body = json!({"model": "slow-stream", "messages": [{"role": "user", "content": "hi"}]});
    let r = post(&augur, "/api/chat", &body).await;
    let mut stream = r.bytes_stream();
    let first = stream.next().await.unwrap().unwrap();
    assert!(first.starts_with(b"{"));
    drop(stream);
    assert!(
        fake.wait_streams_aborted(1, Duration::from_secs(3)).await,
        "the upstream stream was not cancelled"
    );
}

#[tokio::test]
async fn upstream_connections_are_reused_but_not_after_a_cancelled_stream() {
    let (fake, augur) = pair().await;
    let chat = json!({"model": "gemma3", "messages": [{"role": "user", "content": "hi"}]});
    for _ in 0..10 {
        let r = client()
            .get(format!("{}/api/version", augur.url))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        r.bytes().await.unwrap();
        let r = post(&augur, "/api/chat", &chat).await;
        let lines = ndjson(&r.text().await.unwrap());
        assert_eq!(lines.last().unwrap()["done"], true);
    }
    assert_eq!(
        fake.connections(),
        1,
        "sequential requests share one connection"
    );

    let slow = json!({"model": "slow-stream", "messages": [{"role": "user", "content": "hi"}]});
    let mut stream = post(&augur, "/api/chat", &slow).await.bytes_stream();
    stream.next().await.unwrap().unwrap();
    drop(stream);
    assert!(fake.wait_streams_aborted(1, Duration::from_secs(3)).await);
    let r = post(&augur, "/api/chat", &chat).await;
    assert_eq!(
        ndjson(&r.text().await.unwrap()).last().unwrap()["done"],
        true
    );
    assert_eq!(
        fake.connections(),
        2,
        "the cancelled stream's connection was closed"
    );
}

#[tokio::test]
async fn an_upstream_restart_fails_no_request() {
    // Many idle upstream connections (more than one scheduling budget of
    // checks), then the upstream restarts on the same address and closes
    // them all: requests after it go to new connections, none fails.
    let fake = FakeOllama::builder()
        .chunk_delay(Duration::from_millis(20))
        .start()
        .await;
    let addr = fake.addr();
    let augur = start_with(&fake.url(), |_| {}).await;
    let chat = json!({"model": "gemma3", "messages": [{"role": "user", "content": "hi"}]});
    let concurrent = (0..160).map(|_| async {
        let r = post(&augur, "/api/chat", &chat).await;
        (r.status(), r.text().await.unwrap())
    });
    for (status, text) in futures_util::future::join_all(concurrent).await {
        assert_eq!(status, 200);
        assert_eq!(ndjson(&text).last().unwrap()["done"], true);
    }
    assert!(
        fake.connections() > 128,
        "{} upstream connections",
        fake.connections()
    );
    fake.shutdown().await;

    let fake = FakeOllama::builder().listen(addr).start().await;
    for i in 0..20 {
        let r = post(&augur, "/api/chat", &chat).await;
        assert_eq!(r.status(), 200, "request {i} after the restart");
        assert_eq!(
            ndjson(&r.text().await.unwrap()).last().unwrap()["done"],
            true
        );
    }
    assert_eq!(fake.connections(), 1);
}

#[tokio::test]
async fn upstream_down_is_502_in_ollamas_shape() {
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = free.local_addr().unwrap().port();
    drop(free);
    let augur = start_with(&format!("http://127.0.0.1:{port}"), |_| {}).await;
    for path in ["/api/tags", "/api/version"] {
        let r = client()
            .get(format!("{}{path}", augur.url))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 502);
        assert!(
            r.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("application/json")
        );
        let v: Value = r.json().await.unwrap();
        assert!(
            v["error"]
                .as_str()
                .unwrap()
                .contains("upstream unavailable"),
            "{v}"
        );
    }
    let r = client()
        .post(format!("{}/v1/chat/completions", augur.url))
        .json(&json!({"model": "m", "messages": [{"role": "user", "content": "x"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 502);
    let v: Value = r.json().await.unwrap();
    assert!(v["error"]["message"].is_string(), "{v}");
}

#[tokio::test]
async fn slow_first_byte_is_504() {
    let fake = FakeOllama::builder().slow_ms(1500).start().await;
    let augur = start_with(&fake.url(), |c| {
        c.first_byte_timeout = Duration::from_millis(300)
    })
    .await;
    let body = json!({"model": "slow-first-byte", "messages": [{"role": "user", "content": "hi"}]});
    let r = post(&augur, "/api/chat", &body).await;
    assert_eq!(r.status(), 504);
    let v: Value = r.json().await.unwrap();
    assert!(v["error"].as_str().unwrap().contains("timed out"));
}

#[tokio::test]
async fn the_idle_timeout_counts_from_the_last_chunk() {
    let fake = FakeOllama::builder().start().await;
    let chat = json!({"model": "slow-stream", "messages": [{"role": "user", "content": "hi"}]});
    // Chunks come every 200 ms for about 2 s: a 500 ms idle timeout,
    // re-armed at each chunk, never fires.
    let augur = start_with(&fake.url(), |c| c.idle_timeout = Duration::from_millis(500)).await;
    let lines = ndjson(&post(&augur, "/api/chat", &chat).await.text().await.unwrap());
    assert_eq!(lines.last().unwrap()["done"], true, "{lines:?}");
    // A 100 ms idle timeout fires after the first chunk.
    let augur = start_with(&fake.url(), |c| c.idle_timeout = Duration::from_millis(100)).await;
    let lines = ndjson(&post(&augur, "/api/chat", &chat).await.text().await.unwrap());
    let last = lines.last().unwrap();
    assert_eq!(last["error"], "upstream stalled for 100 ms", "{lines:?}");
    assert!(lines.iter().all(|l| l["done"] != true));
}

#[tokio::test]
async fn a_cut_stream_ends_with_an_error_line() {
    let (_fake, augur) = pair().await;
    let body = json!({"model": "stream-cut", "messages": [{"role": "user", "content": "hi"}]});
    let text = post(&augur, "/api/chat", &body).await.text().await.unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() >= 2, "{text}");
    for line in &lines {
        serde_json::from_str::<Value>(line).unwrap();
    }
    let last: Value = serde_json::from_str(lines.last().unwrap()).unwrap();
    assert!(last["error"].is_string(), "{text}");
    assert!(!text.contains("\"done\":true"));
}

#[tokio::test]
async fn oversized_bodies_are_413_but_blobs_stream() {
    let (fake, augur) = pair().await;
    let augur_small = start_with(&fake.url(), |c| c.body_limit = 1024).await;
    let big = "x".repeat(4096);
    let body = json!({"model": "gemma3", "prompt": big});
    let r = client()
        .post(format!("{}/api/generate", augur_small.url))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 413);
    let v: Value = r.json().await.unwrap();
    assert!(v["error"].as_str().unwrap().contains("too large"));
    // Chunked, no length: refused too.
    let chunks =
        futures_util::stream::iter((0..8).map(|_| Ok::<_, std::io::Error>(vec![b'x'; 512])));
    let r = client()
        .post(format!("{}/api/embed", augur_small.url))
        .body(reqwest::Body::wrap_stream(chunks))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 413);
    // A route augur streams through is cut at the limit too.
    let chunks =
        futures_util::stream::iter((0..8).map(|_| Ok::<_, std::io::Error>(vec![b'x'; 512])));
    let r = client()
        .post(format!("{}/api/experimental/web_search", augur_small.url))
        .body(reqwest::Body::wrap_stream(chunks))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 413);
    // A blob upload larger than the limit streams through.
    let data = vec![7u8; 64 * 1024];
    let digest = {
        use sha2::Digest;
        format!("sha256:{}", hex::encode(sha2::Sha256::digest(&data)))
    };
    let r = client()
        .post(format!("{}/api/blobs/{digest}", augur_small.url))
        .body(data)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    drop(augur);
}

/// A body augur cannot read the way the upstream would is refused in
/// Ollama's error shape, never forwarded.
#[tokio::test]
async fn malformed_json_is_refused_before_the_upstream() {
    let (fake, augur) = pair().await;
    let v = client()
        .post(format!("{}/api/chat", augur.url))
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(v.status(), 400);
    let body: serde_json::Value = v.json().await.unwrap();
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .starts_with("invalid JSON body"),
        "{body}"
    );
    assert_eq!(fake.requests("/api/chat"), 0);
}
