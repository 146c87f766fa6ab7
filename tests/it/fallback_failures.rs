//! Fallback models that fail: one no upstream has (404), one whose
//! upstream answers 500, one whose concurrency slot is taken. A failing
//! fallback model is passed over; when none is left, `on_failure` decides
//! over the best answer so far (`X-Augur-Fallback: failed`), and its own
//! error never reaches the client. Also: streamed emulated tools with
//! `validate.max_retries: 0` fall back, a client that leaves while a
//! fallback model generates cancels it (and nothing more is asked), and
//! `GET /-/policies` warns about fallback models no upstream lists.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::{Duration, Instant};

use common::{Augur, client, header, metric, ndjson, post, until};
use fake_ollama::FakeOllama;
use serde_json::{Value, json};
use tokio::{io::AsyncWriteExt, net::TcpStream};

fn schema() -> Value {
    json!({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]})
}

/// One fake whose catalog is the scripted models, each answering its
/// replies in turn.
async fn scripted(scripts: &[(&str, &[&str])]) -> FakeOllama {
    let mut builder = FakeOllama::builder().models(&[]);
    for (model, replies) in scripts {
        builder = builder.script(model, replies.iter().map(|r| r.to_string()).collect());
    }
    builder.start().await
}

fn ask(model: &str, format: Value, stream: bool) -> Value {
    json!({"model": model, "stream": stream, "format": format,
           "messages": [{"role": "user", "content": "a number"}]})
}

async fn admin_get(augur: &Augur, path: &str) -> String {
    let admin = augur.admin().await;
    common::get_text(&format!("{admin}{path}")).await
}

const NO: &[&str] = &["no", "still no"];

#[tokio::test]
async fn a_fallback_model_no_upstream_has_leaves_the_answer_to_on_failure() {
    let a = scripted(&[("small", NO), ("petit", NO)]).await;
    let b = scripted(&[("big", &[])]).await;
    let policy = "models:\n  \
        small: {fallback: {models: [\"nosuch:model\"]}, validate: {on_failure: pass}}\n  \
        petit: {fallback: {models: [\"nosuch:model\"]}}\n";
    let augur = common::pair_under(&a, &b, policy).await;
    // `pass`: the requested model's best answer, marked invalid.
    let r = post(&augur, "/api/chat", &ask("small", schema(), false)).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-validation"), Some("invalid"));
    assert_eq!(header(&r, "x-augur-fallback"), Some("failed"));
    assert_eq!(header(&r, "x-augur-model"), None);
    let text = r.text().await.unwrap();
    assert!(!text.contains("nosuch"), "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["model"], "small");
    assert_eq!(v["message"]["content"], "still no");
    // `error`: 422 for the requested model's answer, not the fallback's 404.
    let r = post(&augur, "/api/chat", &ask("petit", schema(), false)).await;
    assert_eq!(r.status(), 422);
    let text = r.text().await.unwrap();
    assert!(!text.contains("nosuch"), "{text}");
    assert!(
        text.contains("does not match the requested format"),
        "{text}"
    );
    // Two attempts each, and each fallback was asked once (a 404).
    assert_eq!(a.requests("/api/chat"), 6);
    let metrics = admin_get(&augur, "/metrics").await;
    let labels = ["from=\"small:latest\"", "to=\"nosuch:model\""];
    assert_eq!(
        metric(&metrics, "augur_fallback_failures_total", &labels),
        1.0
    );
}

#[tokio::test]
async fn a_fallback_model_whose_upstream_answers_500_leaves_the_answer_to_on_failure() {
    let replies: &[&str] = &["no", "still no", "no", "still no"];
    let a = scripted(&[("tiny", replies), ("wee", NO)]).await;
    // `error-500` is a model whose runner dies: 500 before any byte.
    let b = FakeOllama::builder().models(&["error-500"]).start().await;
    let policy = "models:\n  \
        tiny: {fallback: {models: [error-500]}, validate: {on_failure: pass}}\n  \
        wee: {fallback: {models: [error-500]}}\n";
    let augur = common::pair_under(&a, &b, policy).await;
    let r = post(&augur, "/api/chat", &ask("tiny", schema(), false)).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-validation"), Some("invalid"));
    assert_eq!(header(&r, "x-augur-fallback"), Some("failed"));
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["message"]["content"], "still no");
    // Streamed, held for validation: the same, as chunks.
    let r = post(&augur, "/api/chat", &ask("tiny", schema(), true)).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-fallback"), Some("failed"));
    let chunks = ndjson(&r.text().await.unwrap());
    assert!(chunks.iter().all(|c| c["model"] == "tiny"), "{chunks:?}");
    assert_eq!(chunks.last().unwrap()["done"], true);
    let r = post(&augur, "/api/chat", &ask("wee", schema(), false)).await;
    assert_eq!(r.status(), 422);
    assert_eq!(b.requests("/api/chat"), 3);
}

#[tokio::test]
async fn when_every_fallback_fails_a_failed_upstream_gives_its_own_error() {
    let a = FakeOllama::builder().models(&["error-500"]).start().await;
    let b = scripted(&[("big", &[])]).await;
    let policy = "models:\n  \
        error-500: {fallback: {models: [\"nosuch:model\"], on: [upstream_error]}}\n";
    let augur = common::pair_under(&a, &b, policy).await;
    for (format, stream) in [(schema(), false), (json!("json"), true)] {
        let r = post(&augur, "/api/chat", &ask("error-500", format, stream)).await;
        assert_eq!(r.status(), 500);
        let text = r.text().await.unwrap();
        assert!(
            text.contains("model runner has unexpectedly stopped"),
            "{text}"
        );
        assert!(!text.contains("nosuch"), "{text}");
    }
}

#[tokio::test]
async fn a_fallback_model_waits_for_a_slot_of_its_own_concurrency_limit() {
    let a = scripted(&[("solo", &["no", "still no", "no", "still no"])]).await;
    let b = FakeOllama::builder()
        .models(&["slow-first-byte"])
        .slow_ms(1500)
        .start()
        .await;
    let policy = "models:\n  \
        solo: {fallback: {models: [slow-first-byte]}, validate: {on_failure: pass}}\n  \
        slow-first-byte: {concurrency: {max_in_flight: 1, queue_timeout_ms: 200}}\n";
    let augur = common::pair_under(&a, &b, policy).await;
    // A request of its own holds the fallback model's one slot.
    let slow = {
        let url = augur.url.clone();
        tokio::spawn(async move {
            client()
                .post(format!("{url}/api/chat"))
                .json(&json!({"model": "slow-first-byte", "stream": false,
                    "messages": [{"role": "user", "content": "hi"}]}))
                .send()
                .await
                .unwrap()
                .status()
        })
    };
    while b.requests("/api/chat") == 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let r = post(&augur, "/api/chat", &ask("solo", schema(), false)).await;
    assert_eq!(
        b.requests("/api/chat"),
        1,
        "no second generation while the slot is held"
    );
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-fallback"), Some("failed"));
    assert_eq!(header(&r, "x-augur-validation"), Some("invalid"));
    assert_eq!(slow.await.unwrap(), 200);
    // The slot is free again: the fallback model answers.
    let r = post(&augur, "/api/chat", &ask("solo", schema(), false)).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-model"), Some("slow-first-byte"));
    assert_eq!(header(&r, "x-augur-fallback"), Some("invalid"));
    assert_eq!(b.requests("/api/chat"), 2);
}

fn weather(model: &str) -> Value {
    json!({"model": model, "stream": true,
        "messages": [{"role": "user", "content": "weather in Oslo?"}],
        "tools": [{"type": "function", "function": {"name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
            "required": ["city"]}}}]})
}

#[tokio::test]
async fn streamed_tools_without_retries_fall_back() {
    // No city: nothing to repair. Then an answer that is no envelope.
    let bad = r#"{"tool_call":{"name":"get_weather","arguments":{}}}"#;
    let cut = r#"{"tool_call":{"name":"get_we"#;
    let good = r#"{"tool_call":{"name":"get_weather","arguments":{"city":"Oslo"}}}"#;
    let a = scripted(&[("mini", &[bad, cut])]).await;
    let b = scripted(&[("maxi", &[good, good])]).await;
    let policy = "models:\n  mini: {validate: {max_retries: 0}, fallback: {models: [maxi]}}\n";
    let augur = common::pair_under(&a, &b, policy).await;
    for sent in 1..=2 {
        let r = post(&augur, "/api/chat", &weather("mini")).await;
        assert_eq!(r.status(), 200);
        let chunks = ndjson(&r.text().await.unwrap());
        let calls = common::tool_calls(&chunks);
        assert_eq!(calls.len(), 1, "{chunks:?}");
        assert_eq!(calls[0]["function"]["arguments"]["city"], "Oslo");
        let done = chunks.last().unwrap();
        assert_eq!(done["augur_model"], "maxi", "{done}");
        assert_eq!(done["augur_fallback"], "invalid");
        assert!(chunks.iter().all(|c| c["model"] == "mini"));
        // The streamed answer was the requested model's one attempt.
        assert_eq!(
            (a.requests("/api/chat"), b.requests("/api/chat")),
            (sent, sent)
        );
    }
}

#[tokio::test]
async fn a_client_that_leaves_during_a_fallback_cancels_it() {
    // `dribble` answers the user message, 2 characters every 20 ms:
    // seconds of generation, and no `a` in it.
    let content = "x".repeat(400);
    let thought = r#"{"reasoning": "Counting.", "answer": {"b": 1}}"#;
    let a = scripted(&[("scant", &["no", "no", thought]), ("ample", &[])]).await;
    let b = FakeOllama::builder().models(&["dribble"]).start().await;
    // Had the cancelled fallback counted as a failed one, `ample` would
    // be asked next.
    let policy = "models:\n  \
        scant: {validate: {max_retries: 0}, fallback: {models: [dribble, ample]}}\n";
    let augur = common::pair_under(&a, &b, policy).await;
    // Whole; streamed, held for validation; streamed with emulated
    // thinking (its thinking went out before the fallback was asked).
    let modes = [
        ("whole", false, false),
        ("buffered", true, false),
        ("thinking", true, true),
    ];
    for (i, (mode, stream, think)) in modes.into_iter().enumerate() {
        let mut body = ask("scant", schema(), stream);
        body["messages"][0]["content"] = json!(content);
        if think {
            body["think"] = json!(true);
        }
        let body = serde_json::to_vec(&body).unwrap();
        let mut socket = TcpStream::connect(augur.addr).await.unwrap();
        let head = format!(
            "POST /api/chat HTTP/1.1\r\nHost: augur\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        socket.write_all(head.as_bytes()).await.unwrap();
        socket.write_all(&body).await.unwrap();
        let generating = until(Duration::from_secs(10), || {
            b.bodies().get(i).is_some_and(|l| l.pieces >= 5)
        })
        .await;
        assert!(generating, "{mode}: the fallback did not start");
        let asked = a.requests("/api/chat");
        assert_eq!(
            asked,
            i as u64 + 1,
            "{mode}: the requested model's one attempt"
        );
        drop(socket);
        let left = Instant::now();
        until(Duration::from_secs(3), || {
            b.bodies().iter().all(|l| l.ended.is_some())
        })
        .await;
        // Long enough for another attempt to have been sent, had one been.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let bodies = b.bodies();
        let fallback = &bodies[i];
        assert!(!fallback.completed, "{mode}: {fallback:?}");
        let cancelled_after = fallback.ended.map(|e| e.saturating_duration_since(left));
        eprintln!("{mode}: cancelled after {cancelled_after:?}");
        assert!(
            cancelled_after.is_some_and(|d| d <= Duration::from_secs(1)),
            "{mode}: cancelled after {cancelled_after:?}"
        );
        assert_eq!(bodies.len(), i + 1, "{mode}: {bodies:?}");
        assert_eq!(a.requests("/api/chat"), asked, "{mode}");
    }
}

#[tokio::test]
async fn the_policies_page_warns_about_fallback_models_no_upstream_lists() {
    let a = scripted(&[("small", &[])]).await;
    let b = scripted(&[("big", &[])]).await;
    let policy = "models:\n  small: {fallback: {models: [big, \"nosuch:model\"]}}\n";
    let augur = common::pair_under(&a, &b, policy).await;
    let shown: Value = serde_json::from_str(&admin_get(&augur, "/-/policies").await).unwrap();
    assert_eq!(
        shown["warnings"],
        json!([r#"models.small.fallback.models: "nosuch:model" is listed by no upstream"#]),
        "{shown}"
    );
}
