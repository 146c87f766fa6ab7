//! Tests of the fake itself over real sockets, with a raw HTTP/1.1 client so the exact bytes
//! (content types, trailing newlines, chunk sequences, abrupt cuts) are visible.

use std::time::{Duration, Instant};

use fake_ollama::FakeOllama;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

mod common;

use common::{Resp, call, post, user, weather_tool};

fn is_go_time(s: &str) -> bool {
    s.ends_with('Z')
        && s.len() >= 20
        && !s.trim_end_matches('Z').ends_with('0')
        && s.as_bytes()[10] == b'T'
}

#[tokio::test]
async fn listing_endpoints() {
    let fake = FakeOllama::builder().start().await;
    let r = call(&fake, "GET", "/", None).await;
    assert_eq!((r.status, r.text().as_str()), (200, "Ollama is running"));
    let r = call(&fake, "GET", "/api/version", None).await;
    assert_eq!(
        r.header("content-type"),
        Some("application/json; charset=utf-8")
    );
    assert_eq!(r.text(), r#"{"version":"0.32.15"}"#);
    let tags = call(&fake, "GET", "/api/tags", None).await.json();
    let caps = |n: &str| {
        tags["models"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == n)
            .unwrap()["capabilities"]
            .clone()
    };
    assert_eq!(
        caps("qwen3:latest"),
        json!(["completion", "tools", "thinking"])
    );
    assert_eq!(caps("gemma3:latest"), json!(["completion", "vision"]));
    assert_eq!(caps("echo:latest"), json!(["completion"]));
    let r = post(&fake, "/api/show", json!({"model": "llama3.2"})).await;
    assert!(r.json()["model_info"].is_object());
    assert_eq!(r.json()["capabilities"], json!(["completion", "tools"]));
    let r = post(&fake, "/api/show", json!({"model": "x"})).await;
    assert_eq!(
        (r.status, r.text().as_str()),
        (404, r#"{"error":"model 'x:latest' not found"}"#)
    );
    assert_eq!(post(&fake, "/api/show", json!({})).await.status, 400);
    let r = call(&fake, "GET", "/nope", None).await;
    assert_eq!(
        (r.status, r.text().as_str(), r.header("content-type")),
        (404, "404 page not found", Some("text/plain"))
    );
    assert_eq!(fake.requests("/api/show"), 3);
    let last = fake.last_request_to("/api/show").unwrap();
    assert_eq!(last.headers["x-forwarded-for"], "10.0.0.1");
    assert_eq!(last.body.as_ref(), b"{}");
}

#[tokio::test]
async fn chat_stream_and_whole() {
    let fake = FakeOllama::builder().start().await;
    let r = post(
        &fake,
        "/api/chat",
        json!({"model": "llama3.2", "messages": user("hi")}),
    )
    .await;
    assert_eq!(r.header("content-type"), Some("application/x-ndjson"));
    let lines = r.lines();
    assert_eq!(lines.len(), 12);
    assert!(
        r.text()
            .starts_with(r#"{"model":"llama3.2","created_at":""#)
    );
    assert!(
        r.text()
            .lines()
            .next()
            .unwrap()
            .ends_with(r#""message":{"role":"assistant","content":"The"},"done":false}"#)
    );
    assert!(
        lines
            .iter()
            .all(|l| is_go_time(l["created_at"].as_str().unwrap()))
    );
    let done = &lines[11];
    assert_eq!(done["done_reason"], "stop");
    let keys: Vec<&str> = done
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "model",
            "created_at",
            "message",
            "done",
            "done_reason",
            "total_duration",
            "load_duration",
            "prompt_eval_count",
            "prompt_eval_duration",
            "eval_count",
            "eval_duration"
        ]
    );
    let r = post(
        &fake,
        "/api/chat",
        json!({"model": "llama3.2", "messages": user("hi"), "stream": false}),
    )
    .await;
    assert_eq!(
        r.header("content-type"),
        Some("application/json; charset=utf-8")
    );
    assert!(r.text().ends_with('}'));
    assert_eq!(
        r.json()["message"]["content"],
        "The sky is blue because of Rayleigh scattering."
    );
    let r = post(
        &fake,
        "/api/chat",
        json!({"model": "llama3.2", "messages": []}),
    )
    .await;
    assert_eq!(r.json()["done_reason"], "load");
    let r = post(
        &fake,
        "/api/generate",
        json!({"model": "llama3.2", "prompt": "hi", "stream": false}),
    )
    .await;
    assert!(r.json()["context"].is_array());
    assert_eq!(
        r.json()["response"],
        "The sky is blue because of Rayleigh scattering."
    );
}

#[tokio::test]
async fn tool_call_sequence_and_errors() {
    let fake = FakeOllama::builder().start().await;
    let r = post(
        &fake,
        "/api/chat",
        json!({"model": "llama3.2", "messages": user("weather?"), "tools": weather_tool()}),
    )
    .await;
    let lines = r.lines();
    assert_eq!(lines.len(), 2);
    let call = &lines[0]["message"];
    assert_eq!(
        (lines[0]["done"].clone(), call["content"].clone()),
        (json!(false), json!(""))
    );
    let tc = &call["tool_calls"][0];
    assert!(
        tc["id"].as_str().unwrap().starts_with("call_") && tc["id"].as_str().unwrap().len() == 13
    );
    assert_eq!(
        tc["function"],
        json!({"index": 0, "name": "get_weather", "arguments": {"city": "x"}})
    );
    assert!(lines[1]["message"].get("tool_calls").is_none());
    let r = post(
        &fake,
        "/api/chat",
        json!({"model": "gemma3", "messages": user("x"), "tools": weather_tool()}),
    )
    .await;
    assert_eq!(
        (r.status, r.text().as_str()),
        (
            400,
            r#"{"error":"registry.ollama.ai/library/gemma3:latest does not support tools"}"#
        )
    );
    let r = post(
        &fake,
        "/api/chat",
        json!({"model": "gemma3", "messages": user("x"), "think": true}),
    )
    .await;
    assert_eq!(
        r.text(),
        r#"{"error":"\"gemma3\" does not support thinking"}"#
    );
    let r = post(
        &fake,
        "/api/chat",
        json!({"model": "llama3.2", "messages": user("x"), "format": "yaml"}),
    )
    .await;
    assert_eq!(
        (r.status, r.header("content-type")),
        (500, Some("application/json"))
    );
    assert_eq!(
        r.json()["error"],
        r#"invalid format: "\"yaml\""; expected "json" or a valid JSON Schema object"#
    );
    let r = post(
        &fake,
        "/api/chat",
        json!({"model": "llama3.2", "messages": user("x"), "format": {"type": "json"}}),
    )
    .await;
    assert_eq!(r.status, 400);
    assert!(
        r.json()["error"]
            .as_str()
            .unwrap()
            .contains("JSON schema conversion failed")
    );
    let r = post(
        &fake,
        "/api/chat",
        json!({"model": "error-500", "messages": user("x"), "stream": false}),
    )
    .await;
    assert_eq!(r.status, 500);
    assert!(
        r.json()["error"]
            .as_str()
            .unwrap()
            .starts_with("model runner has unexpectedly stopped")
    );
}

#[tokio::test]
async fn format_and_content_models() {
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}, "s": {"enum": ["a", "b"]}}, "required": ["n", "s"]});
    let fake = FakeOllama::builder()
        .script("scripted", vec!["one".into(), "two".into()])
        .start()
        .await;
    let ask = |model: &str, extra: Value| {
        let mut v = json!({"model": model, "messages": user(r#"{"tool_calls":[]}"#), "stream": false, "format": schema});
        v.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        v
    };
    let content = |r: Resp| r.json()["message"]["content"].as_str().unwrap().to_owned();
    assert_eq!(
        content(post(&fake, "/api/chat", ask("llama3.2", json!({}))).await),
        r#"{"n":1,"s":"a"}"#
    );
    assert_eq!(
        content(post(&fake, "/api/chat", ask("bad-json", json!({}))).await),
        "```json\n{\"n\":1,\"s\":\"a\",}\n```"
    );
    let r = post(&fake, "/api/chat", ask("truncated", json!({})))
        .await
        .json();
    assert_eq!(r["done_reason"], "length");
    assert!(serde_json::from_str::<Value>(r["message"]["content"].as_str().unwrap()).is_err());
    assert_eq!(
        content(post(&fake, "/api/chat", ask("invalid-then-valid", json!({}))).await),
        r#"{"s":"a"}"#
    );
    assert_eq!(
        content(post(&fake, "/api/chat", ask("invalid-then-valid", json!({}))).await),
        r#"{"n":1,"s":"a"}"#
    );
    assert_eq!(
        content(post(&fake, "/api/chat", ask("tool-json", json!({}))).await),
        r#"{"tool_calls":[]}"#
    );
    let echoed: Value = serde_json::from_str(&content(
        post(&fake, "/api/chat", ask("echo", json!({}))).await,
    ))
    .unwrap();
    assert_eq!(echoed["format"], schema);
    assert_eq!(
        content(post(&fake, "/api/chat", ask("scripted", json!({}))).await),
        "one"
    );
    fake.push_script("scripted", vec!["three".into()]);
    let r = post(
        &fake,
        "/api/chat",
        json!({"model": "scripted", "messages": user("x")}),
    )
    .await;
    assert_eq!(
        r.lines()
            .iter()
            .map(|l| l["message"]["content"].as_str().unwrap())
            .collect::<String>(),
        "two"
    );
    let r = post(
        &fake,
        "/api/chat",
        json!({"model": "long-stream", "messages": user("x"), "options": {"num_predict": 500}}),
    )
    .await;
    assert_eq!(r.lines().len(), 501);
}

#[tokio::test]
async fn faults_and_cancellation() {
    let fake = FakeOllama::builder().slow_ms(300).start().await;
    let t = Instant::now();
    let r = post(
        &fake,
        "/api/chat",
        json!({"model": "slow-first-byte", "messages": user("x")}),
    )
    .await;
    assert!(t.elapsed() >= Duration::from_millis(300) && r.status == 200);
    let r = post(
        &fake,
        "/api/chat",
        json!({"model": "stream-cut", "messages": user("x")}),
    )
    .await;
    assert!(!r.complete);
    assert_eq!(r.text().lines().count(), 3);
    assert!(!r.text().contains("\"done\":true"));
    assert_eq!(fake.streams_cut(), 1);
    // A client that goes away mid-stream is seen as an aborted stream.
    let mut s = tokio::net::TcpStream::connect(fake.addr()).await.unwrap();
    let body = json!({"model": "slow-stream", "messages": user("x")}).to_string();
    let req = format!(
        "POST /api/chat HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut buf = [0u8; 512];
    let _ = s.read(&mut buf).await.unwrap();
    drop(s);
    assert!(fake.wait_streams_aborted(1, Duration::from_secs(3)).await);
    fake.shutdown().await;
}

#[tokio::test]
async fn management_and_blobs() {
    let fake = FakeOllama::builder().start().await;
    let r = post(&fake, "/api/pull", json!({"model": "llama3.2"})).await;
    let lines = r.lines();
    assert_eq!(lines.last().unwrap()["status"], "success");
    assert!(
        lines
            .iter()
            .any(|l| l.get("total").is_some() && l.get("completed").is_some())
    );
    let r = post(
        &fake,
        "/api/pull",
        json!({"model": "llama3.2", "stream": false}),
    )
    .await;
    assert_eq!(r.text(), r#"{"status":"success"}"#);
    let r = call(
        &fake,
        "DELETE",
        "/api/delete",
        Some(br#"{"model":"llama3.2"}"#),
    )
    .await;
    assert_eq!((r.status, r.body.len()), (200, 0));
    assert_eq!(
        call(&fake, "DELETE", "/api/delete", Some(br#"{"model":"zz"}"#))
            .await
            .status,
        404
    );
    assert_eq!(
        post(
            &fake,
            "/api/copy",
            json!({"source": "llama3.2", "destination": "b"})
        )
        .await
        .status,
        200
    );
    let digest = "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"; // "hello"
    let path = format!("/api/blobs/{digest}");
    assert_eq!(call(&fake, "HEAD", &path, None).await.status, 404);
    assert_eq!(call(&fake, "POST", &path, Some(b"hellx")).await.status, 400);
    assert_eq!(call(&fake, "POST", &path, Some(b"hello")).await.status, 201);
    assert_eq!(call(&fake, "HEAD", &path, None).await.status, 200);
    assert_eq!(fake.blob_bytes(), 10);
    let r = post(
        &fake,
        "/api/embed",
        json!({"model": "llama3.2", "input": ["a", "b"]}),
    )
    .await;
    assert_eq!(r.json()["embeddings"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn openai_layer() {
    let fake = FakeOllama::builder().start().await;
    let r = post(
        &fake,
        "/v1/chat/completions",
        json!({"model": "llama3.2", "messages": user("w"), "tools": weather_tool()}),
    )
    .await;
    assert!(r.text().ends_with("}\n"));
    let v = r.json();
    assert_eq!(v["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(
        v["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"],
        r#"{"city":"x"}"#
    );
    let r = post(
        &fake,
        "/v1/chat/completions",
        json!({"model": "llama3.2", "messages": user("w"), "stream": true}),
    )
    .await;
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    assert!(r.text().ends_with("data: [DONE]\n\n"));
    assert!(
        r.text()
            .split("\n\n")
            .filter(|f| !f.is_empty())
            .all(|f| f.starts_with("data: "))
    );
    let r = post(
        &fake,
        "/v1/chat/completions",
        json!({"model": "gemma3", "messages": user("w"), "tools": weather_tool()}),
    )
    .await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["type"], "invalid_request_error");
    let r = call(&fake, "GET", "/v1/models", None).await.json();
    assert_eq!(r["data"][0]["id"], "llama3.2:latest");
}
