//! Exchanges recorded and replayed: augur with live policies in front of
//! the fake Ollama, a `record:` block on one model. A recorded line holds
//! the client's request, every upstream call with its answer lines, the
//! decisions and the answer as sent, whole and streamed, on /api/chat and
//! /v1/chat/completions; redacted fields and keys are never written; the
//! file rotates; a full channel drops lines (counted) and never blocks; a
//! model without the block records nothing. (`augur replay` is in
//! `replay.rs`.)

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use fake_ollama::FakeOllama;
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::common::{
    client, header,
    live::{Live, bounded, sha256_hex},
    until,
};

/// The record file's lines, each parsed.
pub(crate) fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Wait (at most 5 s) until `path` holds `n` lines; returns them.
pub(crate) async fn wait_lines(path: &Path, n: usize) -> Vec<Value> {
    let reached = until(Duration::from_secs(5), || lines(path).len() >= n).await;
    assert!(reached, "{} lines expected in {}", n, path.display());
    lines(path)
}

/// The policy that records `gemma3` to `path`, with `extra` in its block.
pub(crate) fn recording(path: &Path, extra: &str) -> String {
    format!(
        "models:\n  \"gemma3:*\":\n    record: {{path: \"{}\"{extra}}}\n",
        path.display()
    )
}

/// The data of a recorded body's lines, concatenated.
pub(crate) fn joined(lines: &Value) -> String {
    lines
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["data"].as_str().unwrap())
        .collect()
}

pub(crate) async fn send(live: &Live, path: &str, body: &Value) -> (String, String) {
    let r = client()
        .post(live.url(path))
        .json(body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let id = header(&r, "x-request-id").unwrap().to_string();
    (id, r.text().await.unwrap())
}

/// A chat request asking for a JSON answer (so augur validates it and
/// says so in its decisions).
pub(crate) fn chat_body(path: &str, stream: bool) -> Value {
    let messages = json!([{"role": "user", "content": "What is the capital of France?"}]);
    let schema = json!({
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
    });
    match path {
        "/api/chat" => {
            json!({"model": "gemma3", "messages": messages, "stream": stream, "format": schema})
        }
        _ => json!({
            "model": "gemma3", "messages": messages, "stream": stream,
            "response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": schema}},
        }),
    }
}

#[tokio::test]
async fn an_exchange_is_recorded_whole_and_streamed_on_chat_and_openai() {
    bounded(60, async {
        let dir = TempDir::new().unwrap();
        let file = dir.path().join("x.jsonl");
        // Every answer misses the schema: augur asks again, then passes
        // the last attempt on, saying so.
        let junk = vec!["no JSON here".to_string(); 8];
        let fake = FakeOllama::builder().script("gemma3", junk).start().await;
        let policy = format!(
            "{}    validate: {{on_failure: pass}}\n",
            recording(&file, "")
        );
        let live = Live::with_fake(fake, &policy).await;
        let mut n = 0;
        for path in ["/api/chat", "/v1/chat/completions"] {
            for stream in [false, true] {
                let body = chat_body(path, stream);
                let (id, answer) = send(&live, path, &body).await;
                n += 1;
                let line = wait_lines(&file, n).await.pop().unwrap();
                let what = format!("{path} stream {stream}");
                assert_eq!(line["request_id"], json!(id), "{what}");
                assert_eq!(line["route"], json!(path), "{what}");
                assert_eq!(line["model"], json!("gemma3:latest"), "{what}");
                assert!(line["time"].as_str().unwrap().contains('T'), "{what}");
                assert!(line["principal"].is_string(), "{what}");
                let sent: Value =
                    serde_json::from_str(line["request"]["body"].as_str().unwrap()).unwrap();
                assert_eq!(sent, body, "{what}");
                let calls = line["upstream"].as_array().unwrap();
                assert_eq!(calls.len(), 2, "{what}: the answer and the one asked again");
                assert_eq!(calls[0]["status"], json!(200), "{what}");
                assert!(calls[1]["body"].as_str().unwrap().contains("capital"));
                let upstream_lines = calls[0]["lines"].as_array().unwrap();
                assert!(!upstream_lines.is_empty(), "{what}");
                assert!(upstream_lines.iter().all(|l| l["ms"].is_u64()), "{what}");
                assert_eq!(line["answer"]["status"], json!(200), "{what}");
                assert_eq!(line["answer"]["complete"], json!(true), "{what}");
                assert_eq!(joined(&line["answer"]["lines"]), answer, "{what}");
                if stream {
                    let chunks = line["answer"]["lines"].as_array().unwrap();
                    assert!(chunks.len() > 1, "{what}: a line per chunk");
                }
                let decided = &line["decisions"]["headers"];
                assert_eq!(decided["x-augur-validation"], json!("invalid"), "{what}");
                assert_eq!(decided["x-augur-attempts"], json!("2"), "{what}");
                assert!(line["decisions"]["done"].is_object(), "{what}");
            }
        }
        live.augur.stop().await;
    })
    .await;
}

#[tokio::test]
async fn redacted_fields_and_keys_are_never_written() {
    bounded(30, async {
        let dir = TempDir::new().unwrap();
        let file = dir.path().join("x.jsonl");
        let policy = format!(
            "{}auth:\n  keys:\n    - {{id: alice, key_sha256: {}}}\n",
            recording(&file, ", redact: [content, images]"),
            sha256_hex("alice-secret"),
        );
        let live = Live::start(&policy).await;
        for stream in [false, true] {
            // The key as a bearer token, then as X-API-Key.
            let (name, value) = if stream {
                ("x-api-key", "alice-secret".to_string())
            } else {
                ("authorization", "Bearer alice-secret".to_string())
            };
            let r = client()
                .post(live.url("/api/chat"))
                .header(name, value)
                .json(&chat_body("/api/chat", stream))
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 200);
            r.text().await.unwrap();
        }
        let lines = wait_lines(&file, 2).await;
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(!text.contains("alice-secret"), "{text}");
        let lower = text.to_lowercase();
        assert!(!lower.contains("authorization") && !lower.contains("x-api-key"));
        assert!(!text.contains("capital of France"), "the request: {text}");
        for line in &lines {
            assert_eq!(line["principal"], json!("alice"));
            let sent: Value =
                serde_json::from_str(line["request"]["body"].as_str().unwrap()).unwrap();
            assert_eq!(sent["messages"][0]["content"], json!("[redacted]"));
            let answered = joined(&line["answer"]["lines"]);
            assert!(
                answered.contains("\"content\":\"[redacted]\""),
                "{answered}"
            );
        }
        live.augur.stop().await;
    })
    .await;
}

#[tokio::test]
async fn the_file_rotates_at_max_bytes_keeping_the_newest() {
    bounded(30, async {
        let dir = TempDir::new().unwrap();
        let file = dir.path().join("x.jsonl");
        // Recorded under the default bound first; an edit applies from the
        // next line on.
        let live = Live::start(&recording(&file, "")).await;
        let mut ids = vec![
            send(&live, "/api/chat", &chat_body("/api/chat", false))
                .await
                .0,
        ];
        wait_lines(&file, 1).await;
        live.apply(&recording(&file, ", max_bytes: 1024, keep: 2"))
            .await;
        for _ in 0..4 {
            let mut body = chat_body("/api/chat", false);
            body["messages"][0]["content"] = json!("a long question ".repeat(80));
            ids.push(send(&live, "/api/chat", &body).await.0);
        }
        let numbered = |n: u32| PathBuf::from(format!("{}.{n}", file.display()));
        let last = json!(ids[4]);
        let rotated = until(Duration::from_secs(5), || {
            lines(&file).first().map(|l| &l["request_id"]) == Some(&last)
        })
        .await;
        assert!(rotated, "the newest line alone in the file");
        let ids_in =
            |p: &Path| -> Vec<Value> { lines(p).iter().map(|l| l["request_id"].clone()).collect() };
        assert_eq!(ids_in(&file), vec![json!(ids[4])]);
        assert_eq!(ids_in(&numbered(1)), vec![json!(ids[3])]);
        assert_eq!(ids_in(&numbered(2)), vec![json!(ids[2])]);
        assert!(!numbered(3).exists(), "only 2 rotated files are kept");
        live.augur.stop().await;
    })
    .await;
}

#[tokio::test]
async fn a_full_channel_drops_lines_counted_and_never_blocks_a_request() {
    bounded(60, async {
        let metrics = crate::common::metrics();
        let dropped = || metric_plain(&metrics.render(), "augur_record_dropped_total");
        let dir = TempDir::new().unwrap();
        // A FIFO nobody reads: the writer waits on it forever.
        let file = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&file)
            .status()
            .unwrap();
        assert!(made.success());
        let live = Live::start(&recording(&file, "")).await;
        let before = dropped();
        let requests = 100;
        for _ in 0..requests {
            send(&live, "/api/chat", &chat_body("/api/chat", false)).await;
        }
        // The writer took one line and waits; the channel holds 64 more.
        let lost = dropped() - before;
        assert!(lost >= 30.0, "{lost} lines dropped");
        // Let the writer go (the reader drains until the test ends).
        let fifo = file.clone();
        std::thread::spawn(move || {
            let mut reader = std::fs::File::open(fifo).unwrap();
            let _ = std::io::copy(&mut reader, &mut std::io::sink());
        });
        live.augur.stop().await;
    })
    .await;
}

/// The value of a metric line without labels (`name value`), or 0.
fn metric_plain(text: &str, name: &str) -> f64 {
    text.lines()
        .find(|l| l.starts_with(&format!("{name} ")))
        .and_then(|l| l.split_whitespace().last())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0.0)
}

#[tokio::test]
async fn without_a_record_block_nothing_is_written_and_answers_are_the_same() {
    bounded(30, async {
        let dir = TempDir::new().unwrap();
        let file = dir.path().join("x.jsonl");
        let other = format!(
            "models:\n  \"llama3.2:*\":\n    record: {{path: \"{}\"}}\n",
            file.display()
        );
        let live = Live::start(&other).await;
        let body = chat_body("/api/chat", true);
        let (_, unrecorded) = send(&live, "/api/chat", &body).await;
        // A recorded model's line is written; the other model's never was.
        let mut llama = body.clone();
        llama["model"] = json!("llama3.2");
        send(&live, "/api/chat", &llama).await;
        let lines = wait_lines(&file, 1).await;
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0]["model"], json!("llama3.2:latest"));
        // The same request recorded is answered the same.
        live.apply(&recording(&file, "")).await;
        let (_, recorded) = send(&live, "/api/chat", &body).await;
        assert_eq!(
            crate::common::scrub_times(&recorded),
            crate::common::scrub_times(&unrecorded)
        );
        wait_lines(&file, 2).await;
        live.augur.stop().await;
    })
    .await;
}

#[tokio::test]
async fn an_exchange_whose_client_left_is_written_marked_incomplete() {
    bounded(30, async {
        let dir = TempDir::new().unwrap();
        let file = dir.path().join("x.jsonl");
        let fake = FakeOllama::builder()
            .chunk_delay(Duration::from_millis(200))
            .start()
            .await;
        let live = Live::with_fake(fake, &recording(&file, "")).await;
        let mut body = chat_body("/api/chat", true);
        body.as_object_mut().unwrap().remove("format");
        let mut r = client()
            .post(live.url("/api/chat"))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert!(r.chunk().await.unwrap().is_some());
        drop(r);
        let line = wait_lines(&file, 1).await.remove(0);
        assert_eq!(line["answer"]["complete"], json!(false));
        assert!(!line["answer"]["lines"].as_array().unwrap().is_empty());
        live.augur.stop().await;
    })
    .await;
}
