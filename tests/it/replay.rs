//! `augur replay` end to end: exchanges recorded by augur in front of the
//! fake Ollama (see `record.rs`), then the binary: served as an upstream,
//! a recorded request answered byte for byte (its body matched whatever
//! its key order and spacing) and an unknown one a 404 in Ollama's error
//! shape; `--check` reports `same` for the policy the exchanges were
//! recorded under and what differs after a policy change, exit code 1.

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use fake_ollama::FakeOllama;
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::{
    common::{
        client, header,
        live::{Live, bounded},
    },
    record::{chat_body, joined, lines, recording, send, wait_lines},
};

/// Record `n` junk-answered chat requests (whole and streamed in turn) on
/// `gemma3` under `policy_extra`; returns the record file's directory and path.
async fn recorded(n: usize, policy_extra: &str) -> (TempDir, PathBuf) {
    let dir = TempDir::new().unwrap();
    let file = dir.path().join("x.jsonl");
    let junk = vec!["no JSON here".to_string(); 2 * n];
    let fake = FakeOllama::builder().script("gemma3", junk).start().await;
    let policy = format!("{}{policy_extra}", recording(&file, ""));
    let live = Live::with_fake(fake, &policy).await;
    for i in 0..n {
        send(&live, "/api/chat", &chat_body("/api/chat", i % 2 == 1)).await;
    }
    wait_lines(&file, n).await;
    live.augur.stop().await;
    (dir, file)
}

/// A child process that is killed when dropped.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn augur_replay_answers_a_recorded_request_byte_for_byte_and_404s_others() {
    bounded(60, async {
        let (_dir, file) = recorded(2, "    validate: {on_failure: pass}\n").await;
        let (_child, base) = replay(&file, &[]).await;
        for line in lines(&file) {
            let call = &line["upstream"][0];
            // The same request, its keys in another order, spaced out.
            let body: Value = serde_json::from_str(call["body"].as_str().unwrap()).unwrap();
            let mut reordered = serde_json::Map::new();
            for (k, v) in body.as_object().unwrap().iter().rev() {
                reordered.insert(k.clone(), v.clone());
            }
            let text = serde_json::to_string_pretty(&reordered).unwrap();
            let r = client()
                .post(format!("{base}{}", call["path"].as_str().unwrap()))
                .body(text)
                .send()
                .await
                .unwrap();
            assert_eq!(json!(r.status().as_u16()), call["status"]);
            assert_eq!(json!(header(&r, "content-type")), call["content_type"]);
            assert_eq!(r.bytes().await.unwrap(), joined(&call["lines"]).as_bytes());
        }
        let tags: Value = client()
            .get(format!("{base}/api/tags"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(tags["models"][0]["name"], json!("gemma3"));
        let unknown = client()
            .post(format!("{base}/api/chat"))
            .json(&json!({"model": "gemma3", "messages": []}))
            .send()
            .await
            .unwrap();
        assert_eq!(unknown.status(), 404);
        let error: Value = unknown.json().await.unwrap();
        assert!(error["error"].is_string() && error.as_object().unwrap().len() == 1);
    })
    .await;
}

/// `augur replay FILE` with `args` on a free port, once it answers; the
/// child (killed when dropped) and its base URL.
async fn replay(file: &Path, args: &[&str]) -> (Child, String) {
    let port = crate::common::free_port();
    let child = Child(
        crate::common::augur_bin()
            .args(["replay", "--listen", &format!("127.0.0.1:{port}")])
            .args(args)
            .arg(file)
            .spawn()
            .unwrap(),
    );
    let base = format!("http://127.0.0.1:{port}");
    for _ in 0..500 {
        if client()
            .get(format!("{base}/api/version"))
            .send()
            .await
            .is_ok()
        {
            return (child, base);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("augur replay does not answer");
}

#[tokio::test]
async fn recorded_timing_paces_lines_at_their_offsets() {
    bounded(30, async {
        let dir = TempDir::new().unwrap();
        let file = dir.path().join("x.jsonl");
        let call = json!({"path": "/api/chat", "body": "{\"model\":\"m\"}", "status": 200,
            "content_type": "application/x-ndjson",
            "lines": [{"ms": 0, "data": "a\n"}, {"ms": 400, "data": "b\n"}]});
        std::fs::write(&file, format!("{}\n", json!({"upstream": [call]}))).unwrap();
        for (timing, at_least) in [("none", 0), ("recorded", 400)] {
            let (_child, base) = replay(&file, &["--timing", timing]).await;
            let started = std::time::Instant::now();
            let r = client()
                .post(format!("{base}/api/chat"))
                .body("{ \"model\": \"m\" }")
                .send()
                .await
                .unwrap();
            assert_eq!(r.text().await.unwrap(), "a\nb\n");
            assert!(
                started.elapsed() >= Duration::from_millis(at_least),
                "{timing}"
            );
        }
    })
    .await;
}

/// `augur replay --check FILE --policies DIR` with `policy` in DIR: exit
/// code and stdout.
fn check(file: &Path, policy: &str) -> (i32, String) {
    let policies = TempDir::new().unwrap();
    std::fs::write(policies.path().join("10-test.yaml"), policy).unwrap();
    let out = crate::common::augur_bin()
        .args(["replay", "--check"])
        .arg(file)
        .arg("--policies")
        .arg(policies.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    (out.status.code().unwrap_or(-1), format!("{stdout}{stderr}"))
}

#[tokio::test]
async fn check_reports_same_for_an_unchanged_policy_and_a_difference_after_a_change() {
    bounded(60, async {
        let pass = "    validate: {on_failure: pass}\n";
        let (_dir, file) = recorded(2, pass).await;
        let same = format!("models:\n  \"gemma3:*\":\n{pass}");
        let (code, out) = check(&file, &same);
        assert_eq!(code, 0, "{out}");
        assert_eq!(
            out.lines().filter(|l| l.ends_with(": same")).count(),
            2,
            "{out}"
        );
        let error = "models:\n  \"gemma3:*\":\n    validate: {on_failure: error}\n";
        let (code, out) = check(&file, error);
        assert_eq!(code, 1, "{out}");
        assert_eq!(
            out.lines().filter(|l| l.contains(": differs: ")).count(),
            2,
            "{out}"
        );
        assert!(out.contains("status 200 -> 422"), "{out}");
        assert!(
            out.contains("x-augur-validation: invalid -> (none)"),
            "{out}"
        );
    })
    .await;
}

#[tokio::test]
async fn check_answers_capabilities_as_recorded_so_a_tool_request_is_the_same() {
    bounded(60, async {
        let dir = TempDir::new().unwrap();
        let file = dir.path().join("x.jsonl");
        // llama3.2 runs tools itself (the fake's `/api/show` says so).
        let policy = format!(
            "models:\n  \"llama3.2:*\":\n    record: {{path: \"{}\"}}\n",
            file.display()
        );
        let live = Live::start(&policy).await;
        let mut body = chat_body("/api/chat", false);
        body.as_object_mut().unwrap().remove("format");
        body["model"] = json!("llama3.2");
        body["tools"] = json!([crate::common::weather_tool()]);
        body["messages"][0]["content"] = json!("Weather in Paris?");
        send(&live, "/api/chat", &body).await;
        let line = wait_lines(&file, 1).await.remove(0);
        live.augur.stop().await;
        let sent: Value =
            serde_json::from_str(line["upstream"][0]["body"].as_str().unwrap()).unwrap();
        assert!(
            sent.get("tools").is_some(),
            "the upstream ran the tools: {sent}"
        );
        let (code, out) = check(&file, "models:\n  \"llama3.2:*\":\n    validate: {}\n");
        assert_eq!(code, 0, "{out}");
        assert!(out.trim_end().ends_with(": same"), "{out}");
    })
    .await;
}
