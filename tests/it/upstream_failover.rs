//! Several upstreams when one fails: a request that failed before any byte
//! reached the client is sent once more to another upstream with the model,
//! never after the first byte; Ollama's 503 "server busy" passes the request
//! on; an upstream that stops leaves the rotation and comes back when it
//! answers again; `/-/ready` needs one.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use augur::{
    app::AppState,
    config::{Config, UpstreamSpec},
    policy::Policy,
};
use common::{Augur, client, named, ndjson, post};
use fake_ollama::FakeOllama;
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;

async fn augur_for(upstreams: Vec<UpstreamSpec>) -> Augur {
    let config = Config {
        upstreams,
        drain_timeout: Duration::from_secs(5),
        health_interval: Duration::from_millis(100),
        ..Config::default()
    };
    let policy = crate::upstreams::least_loaded();
    let state = AppState::new(config, policy, Some(common::metrics())).unwrap();
    common::start_state(state).await
}

fn chat(model: &str, stream: bool) -> Value {
    json!({"model": model, "stream": stream, "messages": [{"role": "user", "content": "hi"}]})
}

fn healthy(augur: &Augur, i: usize) -> bool {
    augur.state.fleet.status_json()["upstreams"][i]["healthy"] == true
}

async fn wait_for(ready: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !ready() {
        assert!(tokio::time::Instant::now() < deadline, "timed out");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The URL of a port nothing listens on any more.
async fn dead_url() -> String {
    let fake = FakeOllama::builder().start().await;
    let url = fake.url();
    fake.shutdown().await;
    url
}

/// An upstream that reads each request and closes the connection without
/// answering; counts the connections.
async fn resetting_upstream() -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf).await;
        }
    });
    (url, accepted)
}

#[tokio::test]
async fn a_refused_connection_is_sent_to_another_upstream() {
    let b = FakeOllama::builder().start().await;
    let augur = augur_for(named(&[("a", &dead_url().await), ("b", &b.url())])).await;
    let r = post(&augur, "/api/chat", &chat("llama3.2", true)).await;
    assert_eq!(r.status(), 200);
    let lines = ndjson(&r.text().await.unwrap());
    assert_eq!(lines.last().unwrap()["done"], true);
    assert_eq!(b.requests("/api/chat"), 1);
    let a = &augur.state.fleet.status_json()["upstreams"][0];
    assert_eq!(a["healthy"], false);
    assert!(
        a["last_error"]["message"]
            .as_str()
            .unwrap()
            .contains("connect"),
        "{a}"
    );
    // Out of the rotation: the next request goes straight to b.
    let r = post(
        &augur,
        "/api/generate",
        &json!({"model": "llama3.2", "prompt": "x", "stream": false}),
    )
    .await;
    assert_eq!(r.status(), 200);
    assert_eq!(b.requests("/api/generate"), 1);
}

#[tokio::test]
async fn a_reset_before_the_answer_is_sent_to_another_upstream() {
    let (reset, accepted) = resetting_upstream().await;
    let b = FakeOllama::builder().start().await;
    let augur = augur_for(named(&[("a", &reset), ("b", &b.url())])).await;
    let r = post(&augur, "/api/chat", &chat("llama3.2", false)).await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["done"], true);
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
    assert_eq!(b.requests("/api/chat"), 1);
    assert!(!healthy(&augur, 0));
}

#[tokio::test]
async fn nothing_is_sent_again_after_the_first_byte() {
    let a = FakeOllama::builder().start().await;
    let b = FakeOllama::builder().start().await;
    let augur = augur_for(named(&[("a", &a.url()), ("b", &b.url())])).await;
    let r = post(&augur, "/api/chat", &chat("stream-cut", true)).await;
    assert_eq!(r.status(), 200);
    let text = r.text().await.unwrap();
    let lines = ndjson(&text);
    assert!(lines.len() > 1, "{text}");
    assert!(lines.last().unwrap().get("error").is_some(), "{text}");
    // A whole answer cut after its first bytes.
    let r = post(&augur, "/api/chat", &chat("stream-cut", false)).await;
    assert!(r.text().await.is_err(), "a cut body never looks complete");
    assert_eq!((a.requests("/api/chat"), b.requests("/api/chat")), (2, 0));
}

#[tokio::test]
async fn a_busy_upstream_passes_the_request_on() {
    let a = FakeOllama::builder().start().await;
    let b = FakeOllama::builder().start().await;
    let augur = augur_for(named(&[("a", &a.url()), ("b", &b.url())])).await;
    let chats = || (a.requests("/api/chat"), b.requests("/api/chat"));
    a.set_busy(true);
    let r = post(&augur, "/api/chat", &chat("llama3.2", false)).await;
    assert_eq!(r.status(), 200);
    assert_eq!(chats(), (1, 1));
    // augur's own calls too (tools emulated for gemma3).
    augur.state.fleet.refresh(false).await;
    assert!(healthy(&augur, 0));
    let mut body = chat("gemma3", false);
    body["tools"] = json!([{"type": "function", "function": {"name": "f",
        "parameters": {"type": "object", "properties": {"x": {"type": "string"}}}}}]);
    let r = post(&augur, "/api/chat", &body).await;
    assert_eq!(r.status(), 200);
    assert_eq!(chats(), (2, 2));
    // Everyone busy: Ollama's own 503.
    b.set_busy(true);
    let r = post(&augur, "/api/chat", &chat("llama3.2", false)).await;
    assert_eq!(r.status(), 503);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"], fake_ollama::BUSY);
    assert_eq!(chats(), (3, 3));
}

#[tokio::test]
async fn an_upstream_that_stops_leaves_the_rotation_and_comes_back() {
    let a = FakeOllama::builder().start().await;
    let a_addr = a.addr();
    let b = FakeOllama::builder().start().await;
    let augur = augur_for(named(&[("a", &a.url()), ("b", &b.url())])).await;
    let admin = augur.admin().await;
    let ready = || async {
        client()
            .get(format!("{admin}/-/ready"))
            .send()
            .await
            .unwrap()
            .status()
    };
    let _monitor = augur
        .state
        .fleet
        .monitoring(augur.stopping())
        .map(tokio::spawn);
    // Both upstreams' models known (an upstream whose models are not known
    // comes after those known to have the model).
    let known =
        |i: usize| augur.state.fleet.status_json()["upstreams"][i]["models_source"] == "tags";
    wait_for(|| known(0) && known(1)).await;
    assert_eq!(ready().await, 200);
    a.shutdown().await;
    wait_for(|| !healthy(&augur, 0)).await;
    assert_eq!(ready().await, 200, "one upstream is enough");
    let r = post(&augur, "/api/chat", &chat("llama3.2", false)).await;
    assert_eq!(r.status(), 200);
    assert_eq!(b.requests("/api/chat"), 1);
    // Back on the same address: back in the rotation.
    let a = FakeOllama::builder().listen(a_addr).start().await;
    wait_for(|| healthy(&augur, 0)).await;
    let r = post(&augur, "/api/chat", &chat("llama3.2", false)).await;
    assert_eq!(r.status(), 200);
    assert_eq!((a.requests("/api/chat"), b.requests("/api/chat")), (1, 1));
    a.shutdown().await;
    b.shutdown().await;
    assert_eq!(ready().await, 503);
}

/// An upstream that reads each request and then resets the connection
/// (`RST`, not a clean close), or, when `silent`, never answers.
async fn misbehaving_upstream(silent: bool) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = stream.read(&mut buf).await;
                if silent {
                    tokio::time::sleep(Duration::from_secs(30)).await;
                } else {
                    let _ = stream.set_zero_linger();
                }
            });
        }
    });
    url
}

#[tokio::test]
async fn failure_bodies_never_name_the_upstreams_address() {
    let cases = [
        ("refused", dead_url().await, 502),
        ("reset", misbehaving_upstream(false).await, 502),
        ("timeout", misbehaving_upstream(true).await, 504),
    ];
    let asks = [
        ("/api/chat", Some(chat("llama3.2", false))),
        ("/api/chat", Some(chat("llama3.2", true))),
        ("/v1/chat/completions", Some(chat("llama3.2", false))),
        (
            "/v1/messages",
            Some(json!({"model": "llama3.2", "max_tokens": 8,
            "messages": [{"role": "user", "content": "hi"}]})),
        ),
        ("/api/tags", None),
        ("/api/version", None),
    ];
    for (what, url, status) in cases {
        // Named by default after its host:port, the worst case.
        let config = Config {
            upstreams: common::upstreams(&url),
            first_byte_timeout: Duration::from_millis(300),
            drain_timeout: Duration::from_secs(5),
            ..Config::default()
        };
        let augur =
            common::start_state(AppState::new(config, Policy::permissive(), None).unwrap()).await;
        let address = url.trim_start_matches("http://");
        for (path, body) in &asks {
            let request = match body {
                Some(b) => client().post(format!("{}{path}", augur.url)).json(b),
                None => client().get(format!("{}{path}", augur.url)),
            };
            let r = request.send().await.unwrap();
            assert_eq!(r.status(), status, "{what} {path}");
            let text = r.text().await.unwrap();
            assert!(!text.is_empty(), "{what} {path}");
            assert!(!text.contains(address), "{what} {path}: {text}");
            assert!(!text.contains("127.0.0.1"), "{what} {path}: {text}");
            if what == "refused" && path.starts_with("/api/") {
                let v: Value = serde_json::from_str(&text).unwrap();
                let message = v["error"].as_str().unwrap();
                assert!(message.contains("cannot connect to the upstream"), "{text}");
            }
        }
        augur.stop().await;
    }
}
