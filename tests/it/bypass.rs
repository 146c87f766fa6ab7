//! No way around auth and limits: path variants, parser differentials,
//! model aliases, token budgets, management routes and forwarded keys,
//! each over real sockets (HTTP/1.1 and HTTP/2) against the fake Ollama.
//! A refused request must never reach the upstream.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use augur::config::Config;
use bytes::Bytes;
use common::{Augur, client, start_live};
use fake_ollama::FakeOllama;
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tempfile::TempDir;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const KEY: &str = "qwen-only-key";
const ADMIN: &str = "admin-key";

struct Setup {
    fake: FakeOllama,
    augur: Augur,
    _dirs: (TempDir, TempDir),
}

fn sha(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

/// augur with a key allowed only `qwen3:*` (and an unrestricted one), plus
/// `extra` policy YAML.
async fn setup(extra: &str) -> Setup {
    let fake = FakeOllama::builder().record(true).start().await;
    let policies = tempfile::tempdir().unwrap();
    let schemas = tempfile::tempdir().unwrap();
    let policy = format!(
        "auth:\n  required: true\n  keys:\n    - {{id: qwen, key_sha256: {}, models: [\"qwen3:*\"]}}\n    - {{id: admin, key_sha256: {}}}\n{extra}",
        sha(KEY),
        sha(ADMIN)
    );
    std::fs::write(policies.path().join("10-test.yaml"), policy).unwrap();
    let config = Config {
        upstreams: common::upstreams(&fake.url()),
        policies: policies.path().to_path_buf(),
        schemas: schemas.path().to_path_buf(),
        drain_timeout: Duration::from_secs(5),
        ..Config::default()
    };
    let augur = start_live(config).await;
    Setup {
        fake,
        augur,
        _dirs: (policies, schemas),
    }
}

fn chat_body(model: &str) -> String {
    json!({"model": model, "stream": false, "messages": [{"role": "user", "content": "hi"}]})
        .to_string()
}

/// Send raw HTTP/1.1 bytes; the status code of the answer.
async fn raw_http1(augur: &Augur, method: &str, target: &str, body: &str) -> u16 {
    let mut s = tokio::net::TcpStream::connect(augur.addr).await.unwrap();
    let req = format!(
        "{method} {target} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut out))
        .await
        .unwrap()
        .unwrap();
    let text = String::from_utf8_lossy(&out);
    text.split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {text}"))
}

/// Send over HTTP/2 (prior knowledge); the status code of the answer.
async fn raw_http2(augur: &Augur, method: &str, target: &str, body: &str) -> u16 {
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .http2_only(true)
        .build_http::<Full<Bytes>>();
    let uri: http::Uri = format!("http://{}{target}", augur.addr).parse().unwrap();
    let req = http::Request::builder()
        .method(method)
        .uri(uri)
        .header("authorization", format!("Bearer {KEY}"))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap();
    let resp = client.request(req).await.unwrap();
    let status = resp.status().as_u16();
    let _ = resp.into_body().collect().await;
    status
}

#[tokio::test]
async fn path_variants_are_gated_as_the_route_they_reach() {
    let s = setup("").await;
    let body = chat_body("gemma3");
    for target in [
        "/api/chat",
        "//api/chat",
        "/api//chat",
        "/api/chat/",
        "/api/%63hat",
        "/api%2Fchat",
        "/api/./chat",
        "/api/x/../chat",
        "/api/chat?x=1",
    ] {
        assert_eq!(
            raw_http1(&s.augur, "POST", target, &body).await,
            403,
            "h1 {target}"
        );
        assert_eq!(
            raw_http2(&s.augur, "POST", target, &body).await,
            403,
            "h2 {target}"
        );
    }
    for target in [
        "/v1/chat/completions",
        "//v1//chat/completions",
        "/v1/chat/%63ompletions",
    ] {
        assert_eq!(
            raw_http1(&s.augur, "POST", target, &body).await,
            403,
            "{target}"
        );
    }
    // Unreadable paths are refused, not forwarded.
    for target in [
        "/api/%zzchat",
        "/api/%00chat",
        "/../api/chat",
        "/api/%FFchat",
    ] {
        assert_eq!(
            raw_http1(&s.augur, "POST", target, &body).await,
            400,
            "{target}"
        );
    }
    assert_eq!(s.fake.total_requests(), 0, "nothing reached the upstream");
    // The allowed model goes through, by the canonical path.
    assert_eq!(
        raw_http1(&s.augur, "POST", "//api/%63hat/", &chat_body("qwen3")).await,
        200
    );
    assert_eq!(s.fake.last_request().unwrap().uri, "/api/chat");
}

#[tokio::test]
async fn bodies_read_differently_by_go_are_refused_on_every_model_route() {
    let s = setup("").await;
    let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
    // Read as Go reads them: gemma3, not allowed for the key.
    let forbidden = [
        format!(r#"{{"model":"gemma3","x":{deep},"messages":[]}}"#),
        r#"{"model":"gemma3","x":"\ud800","messages":[]}"#.to_string(),
        r#"{"model":"gemma3","x":1e999,"messages":[]}"#.to_string(),
    ];
    // Ambiguous: refused whatever the key.
    let ambiguous = [
        r#"{"Model":"gemma3","messages":[]}"#,
        r#"{"model":"qwen3","MODEL":"gemma3","messages":[]}"#,
        r#"{"model":"qwen3","model":"gemma3","messages":[]}"#,
        r#"{"model":"qwen3","messages":[]} {"model":"gemma3"}"#,
        "{\"model\":\"qwen3\",\"\u{017F}tream\":true}",
    ];
    for path in [
        "/api/chat",
        "/api/generate",
        "/api/embed",
        "/v1/chat/completions",
        "/v1/embeddings",
    ] {
        for body in &forbidden {
            assert_eq!(
                raw_http1(&s.augur, "POST", path, body).await,
                403,
                "{path} {body:.60}"
            );
        }
        for body in ambiguous {
            assert_eq!(
                raw_http1(&s.augur, "POST", path, body).await,
                400,
                "{path} {body}"
            );
        }
    }
    assert_eq!(s.fake.total_requests(), 0);
}

#[tokio::test]
async fn errors_keep_the_surface_shape() {
    let s = setup("").await;
    let r = client()
        .post(format!("{}/v1/chat/completions", s.augur.url))
        .bearer_auth(KEY)
        .body(r#"{"Model":"qwen3"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["type"], "invalid_request_error", "{v}");
    let r = client()
        .post(format!("{}/api/chat", s.augur.url))
        .bearer_auth(KEY)
        .body(r#"{"Model":"qwen3"}"#)
        .send()
        .await
        .unwrap();
    let v: Value = r.json().await.unwrap();
    assert!(v["error"].as_str().unwrap().contains("\"model\""), "{v}");
}

#[tokio::test]
async fn aliases_share_the_models_rate_bucket_and_concurrency_slot() {
    let s = setup(
        "models:\n  \"gemma3:*\": {rate_limit: {requests_per_minute: 1}}\n  \"slow-stream\": {concurrency: {max_in_flight: 1, queue_timeout_ms: 0}}\n",
    )
    .await;
    let post = |model: &str| {
        client()
            .post(format!("{}/api/chat", s.augur.url))
            .bearer_auth(ADMIN)
            .body(chat_body(model))
            .send()
    };
    assert_eq!(post("gemma3").await.unwrap().status(), 200);
    for alias in [
        "registry.ollama.ai/library/gemma3:latest",
        "library/gemma3",
        "GEMMA3",
        "gemma3:local",
        "https://registry.ollama.ai/library/gemma3",
    ] {
        assert_eq!(post(alias).await.unwrap().status(), 429, "{alias}");
    }
    // A slow stream holds the one slot; every alias is refused beside it.
    let held = client()
        .post(format!("{}/api/chat", s.augur.url))
        .bearer_auth(ADMIN)
        .json(&json!({"model": "slow-stream", "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(held.status(), 200);
    for alias in [
        "registry.ollama.ai/library/slow-stream:latest",
        "Slow-Stream:latest",
    ] {
        assert_eq!(post(alias).await.unwrap().status(), 503, "{alias}");
    }
    drop(held);
}

#[tokio::test]
async fn the_allow_list_cannot_be_laundered_through_management_routes() {
    let s = setup("").await;
    let send = |method: reqwest::Method, path: &str, body: Value| {
        client()
            .request(method, format!("{}{path}", s.augur.url))
            .bearer_auth(KEY)
            .json(&body)
            .send()
    };
    for (path, body) in [
        ("/api/create", json!({"model": "qwen3:x", "from": "gemma3"})),
        (
            "/api/create",
            json!({"name": "qwen3:x", "from": "registry.ollama.ai/library/gemma3"}),
        ),
        (
            "/api/create",
            json!({"model": "qwen3:x", "modelfile": "FROM gemma3\nSYSTEM hi\n"}),
        ),
        (
            "/api/copy",
            json!({"source": "gemma3", "destination": "qwen3:x"}),
        ),
        ("/api/show", json!({"name": "gemma3"})),
        ("/api/show", json!({"model": "qwen3", "name": "gemma3"})),
        ("/api/pull", json!({"name": "gemma3"})),
        ("/api/push", json!({"name": "gemma3"})),
    ] {
        let r = send(reqwest::Method::POST, path, body.clone())
            .await
            .unwrap();
        assert_eq!(r.status(), 403, "{path} {body}");
    }
    let r = send(
        reqwest::Method::DELETE,
        "/api/delete",
        json!({"name": "gemma3"}),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 403);
    let r = client()
        .get(format!("{}/v1/models/gemma3%3Alatest", s.augur.url))
        .bearer_auth(KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    assert_eq!(s.fake.total_requests(), 0);
    // The key's own models are fine.
    let r = send(reqwest::Method::POST, "/api/show", json!({"name": "qwen3"}))
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn client_keys_are_not_forwarded() {
    let s = setup("").await;
    let r = client()
        .post(format!("{}/api/chat", s.augur.url))
        .header("x-api-key", KEY)
        .header("authorization", format!("Bearer {KEY}"))
        .body(chat_body("qwen3"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let seen = s.fake.last_request_to("/api/chat").unwrap();
    assert!(
        seen.headers.get("authorization").is_none(),
        "{:?}",
        seen.headers
    );
    assert!(
        seen.headers.get("x-api-key").is_none(),
        "{:?}",
        seen.headers
    );
    // Also on routes augur forwards without reading.
    let r = client()
        .get(format!("{}/api/tags", s.augur.url))
        .bearer_auth(KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let seen = s.fake.last_request_to("/api/tags").unwrap();
    assert!(seen.headers.get("authorization").is_none());
}

/// Tokens the budget has left, from `RateLimit-*`-free 429s: count how
/// many of `n` requests get through.
async fn admitted_of(n: usize, send: impl Fn() -> reqwest::RequestBuilder, abandon: bool) -> usize {
    let mut ok = 0;
    for _ in 0..n {
        let mut r = send().send().await.unwrap();
        if r.status() == 200 {
            ok += 1;
            if abandon {
                let _ = r.chunk().await;
                drop(r);
                tokio::time::sleep(Duration::from_millis(100)).await;
            } else {
                let _ = r.bytes().await;
            }
        } else {
            assert_eq!(r.status(), 429);
        }
    }
    ok
}

#[tokio::test]
async fn token_budgets_are_charged_on_every_route_and_stream_kind() {
    // 40-token answers against 50 tokens a minute: one or two requests.
    let budget = "defaults: {rate_limit: {tokens_per_minute: 50}}\n";
    let long = |path: &'static str, stream: bool| {
        move |s: &Setup| {
            let body = if path.starts_with("/v1") {
                json!({"model": "long-stream", "stream": stream, "max_tokens": 40,
                       "messages": [{"role": "user", "content": "hi"}]})
            } else {
                json!({"model": "long-stream", "stream": stream,
                       "options": {"num_predict": 40, "interval_ms": 5},
                       "messages": [{"role": "user", "content": "hi"}]})
            };
            client()
                .post(format!("{}{path}", s.augur.url))
                .bearer_auth(ADMIN)
                .json(&body)
        }
    };
    for (path, stream, abandon) in [
        ("/api/chat", true, false),
        ("/api/chat", false, false),
        ("/v1/chat/completions", true, false),
        ("/v1/chat/completions", false, false),
        ("/api/chat", true, true),
        ("/v1/chat/completions", true, true),
    ] {
        let s = setup(budget).await;
        let make = long(path, stream);
        let through = admitted_of(6, || make(&s), abandon).await;
        assert!(
            (1..=2).contains(&through),
            "{path} stream={stream} abandoned={abandon}: {through} of 6 through"
        );
    }
}

fn form(model_parts: &[&str]) -> (String, String) {
    let mut body = String::new();
    for m in model_parts {
        body.push_str(&format!(
            "--B0und\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\n{m}\r\n"
        ));
    }
    body.push_str("--B0und\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.wav\"\r\nContent-Type: audio/wav\r\n\r\nRIFF\r\n--B0und--\r\n");
    ("multipart/form-data; boundary=B0und".to_string(), body)
}

#[tokio::test]
async fn transcription_forms_are_gated_and_forwarded_as_read() {
    let s = setup("").await;
    let send = |target: &str, (ct, body): (String, String)| {
        client()
            .post(format!("{}{target}", s.augur.url))
            .bearer_auth(KEY)
            .header("content-type", ct)
            .body(body)
            .send()
    };
    let path = "/v1/audio/transcriptions";
    assert_eq!(send(path, form(&["gemma3"])).await.unwrap().status(), 403);
    assert_eq!(
        send("//v1/audio/%74ranscriptions", form(&["gemma3"]))
            .await
            .unwrap()
            .status(),
        403
    );
    assert_eq!(
        send(path, form(&["qwen3", "gemma3"]))
            .await
            .unwrap()
            .status(),
        400
    );
    let r = send(
        path,
        ("application/json".into(), "{\"model\":\"gemma3\"}".into()),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["type"], "invalid_request_error", "{v}");
    assert_eq!(s.fake.total_requests(), 0);
    // An allowed model is forwarded in a form augur wrote, without the query.
    let _ = send(&format!("{path}?model=gemma3"), form(&["qwen3"]))
        .await
        .unwrap();
    let seen = s.fake.last_request().unwrap();
    assert_eq!(seen.uri, path);
    let body = String::from_utf8_lossy(&seen.body).to_string();
    assert!(body.contains("name=\"model\"\r\n\r\nqwen3\r\n"), "{body}");
    assert!(
        !body.contains("gemma3") && !body.contains("B0und"),
        "{body}"
    );
}

/// `augur_tokens_charged_total` from the admin listener.
async fn tokens_charged(admin: &str) -> u64 {
    let text = common::get_text(&format!("{admin}/metrics")).await;
    text.lines()
        .find(|l| l.starts_with("augur_tokens_charged_total"))
        .and_then(|l| l.split_whitespace().last())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// A retried request costs both attempts: what augur's own calls report is
/// charged, not only the counts of the answer the client sees.
#[tokio::test]
async fn every_attempt_is_charged() {
    use common::process::{Process, Start};
    let fake = FakeOllama::builder().start().await;
    let policies = tempfile::tempdir().unwrap();
    std::fs::write(
        policies.path().join("10-budget.yaml"),
        "defaults: {rate_limit: {tokens_per_minute: 1000000}}\n",
    )
    .unwrap();
    let augur = Process::start(Start {
        upstream: &fake.url(),
        policies: Some(policies.path()),
        ..Start::default()
    })
    .await;
    let schema = json!({"type": "object", "properties": {"name": {"type": "string"},
        "age": {"type": "integer"}}, "required": ["name", "age"]});
    let r = client()
        .post(format!("{}/api/chat", augur.url))
        .json(
            &json!({"model": "invalid-then-valid", "stream": false, "format": schema,
            "messages": [{"role": "user", "content": "Who?"}]}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["x-augur-attempts"], "2");
    let v: Value = r.json().await.unwrap();
    let last = v["prompt_eval_count"].as_u64().unwrap() + v["eval_count"].as_u64().unwrap();
    let mut charged = 0;
    for _ in 0..50 {
        charged = tokens_charged(&augur.admin).await;
        if charged > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        charged > last,
        "charged {charged}, the last attempt alone {last}"
    );
}
