//! The binary's log, read from its stderr: what a client or a model wrote
//! (a model name, a tool name, an argument key) cannot end a line and
//! write one that reads like augur's own, in the text and JSON formats;
//! the credentials in a URL (a trace collector's, a limit store's) are
//! never written, neither in the log nor in a start-up error.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::{path::Path, time::Duration};

use crate::common::{
    self, augur_bin, client,
    process::{Process, Start},
};
use fake_ollama::FakeOllama;
use serde_json::{Value, json};

/// What a forged line starts with.
const FORGED: &str = "FORGED";

/// Lines that read like augur's access log line, after each line break
/// some reader knows (Python's `splitlines` also breaks at U+0085, U+2028
/// and U+2029).
fn forged(prefix: &str) -> String {
    let line = format!("{FORGED} INFO augur::access: request status=200 model=x");
    format!("{prefix}\n{line}\r\n{line}\u{85}{line}\u{2028}{line}\u{2029}{line}\u{b}{line}")
}

/// `text` split at every line break some reader knows.
fn lines(text: &str) -> Vec<&str> {
    text.split(|c: char| {
        matches!(
            c,
            '\n' | '\r' | '\u{b}' | '\u{c}' | '\u{1c}'
                ..='\u{1e}' | '\u{85}' | '\u{2028}' | '\u{2029}'
        )
    })
    .filter(|l| !l.is_empty())
    .collect()
}

const POLICY: &str = "models:\n  \"*\":\n    tools:\n      native: {validate: false}\n      guard:\n        rules:\n          - id: ssrf\n            pointer: /*\n            url: {block_private: true}\n";

/// The log and the audit log after the forgeries.
struct Logs {
    log: String,
    audit: String,
}

/// The logs of an augur whose `native` model calls a tool whose name and
/// argument key hold forged lines, after a chat with it and one with a
/// forged model name; `config` picks the format.
async fn logs_after_forgeries(config: &str) -> Logs {
    let call = json!([{"name": forged("fetch"), "arguments": {forged("u"): "http://127.0.0.1/"}}]);
    let fake = FakeOllama::builder()
        .script_tool_calls("native", vec![call; 8])
        .start()
        .await;
    let dir = tempfile::tempdir().unwrap();
    let (policies, log) = (dir.path().join("policies"), dir.path().join("augur.log"));
    std::fs::create_dir(&policies).unwrap();
    let audit = dir.path().join("audit.jsonl");
    let policy = format!(
        "audit: {{path: {}, include_arguments: true}}\n{POLICY}",
        audit.display()
    );
    common::write_policy(&policies, "10-guard.yaml", &policy);
    let augur = Process::start(Start {
        upstream: &fake.url(),
        policies: Some(&policies),
        config: Some(config),
        env: vec![("RUST_LOG", "info")],
        log: Some(&log),
        ..Start::default()
    })
    .await;
    for model in ["native".to_string(), forged("model")] {
        let tools = json!([{"type": "function", "function": {"name": "fetch",
            "parameters": {"type": "object", "properties": {"u": {"type": "string"}}}}}]);
        let body = json!({"model": model, "stream": false, "tools": tools,
            "messages": [{"role": "user", "content": "Fetch it"}]});
        let r = client()
            .post(format!("{}/api/chat", augur.url))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_ne!(r.status(), 200, "{:?}", r.text().await);
    }
    // The guard's finding and both access log lines, written after the
    // answers went out.
    let log = read_until(&log, |text| {
        text.matches("augur::access").count() >= 2 && text.contains("tool guard")
    })
    .await;
    let audit = read_until(&audit, |text| text.contains("guard_block")).await;
    Logs { log, audit }
}

/// Each line some reader sees in `text` is a JSON object, and `FORGED`
/// is in one of them.
fn every_line_is_json(text: &str) {
    assert!(text.contains(FORGED), "{text}");
    for line in lines(text) {
        let v: Result<Value, _> = serde_json::from_str(line);
        assert!(v.is_ok_and(|v| v.is_object()), "{line:?}\n{text}");
    }
}

/// The file at `path` once `done` holds for its text (at most 10 s).
async fn read_until(path: &Path, done: impl Fn(&str) -> bool) -> String {
    let start = std::time::Instant::now();
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if done(&text) || start.elapsed() > Duration::from_secs(10) {
            return text;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_value_cannot_forge_a_text_log_line() {
    let Logs { log, audit } = logs_after_forgeries("").await;
    every_line_is_json(&audit);
    assert!(log.contains("tool guard"), "{log}");
    assert!(log.contains(FORGED), "the values are logged: {log}");
    for line in lines(&log) {
        assert!(
            line.starts_with(|c: char| c.is_ascii_digit() || c == '\u{1b}'),
            "every line is augur's own, with its timestamp: {line:?}\n{log}"
        );
    }
}

#[tokio::test]
async fn a_value_cannot_forge_a_json_log_line() {
    let Logs { log, audit } = logs_after_forgeries("[log]\nformat = \"json\"\n").await;
    every_line_is_json(&audit);
    assert!(log.contains(FORGED), "the values are logged: {log}");
    let lines: Vec<Value> = lines(&log)
        .into_iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}\n{log}")))
        .collect();
    assert!(
        lines.iter().any(|l| l["target"] == "augur::access"),
        "{log}"
    );
}

/// URL credentials are hidden wherever augur writes the URL: the trace
/// collector and limit store at start, their connection errors, and a
/// start-up error about the URL.
#[tokio::test]
async fn url_credentials_are_never_written() {
    let fake = FakeOllama::builder().start().await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("augur.log");
    let (collector, store) = (common::free_port(), common::free_port());
    let config = format!(
        "[traces]\nendpoint = \"http://user:secret-1@127.0.0.1:{collector}\"\n\n[limits]\nstore = \"redis://:secret-2@127.0.0.1:{store}/0\"\nstore_timeout_ms = 50\n"
    );
    let augur = Process::start(Start {
        upstream: &fake.url(),
        config: Some(&config),
        env: vec![("RUST_LOG", "info"), ("OTEL_BSP_SCHEDULE_DELAY", "50")],
        log: Some(&log),
        ..Start::default()
    })
    .await;
    let r = client()
        .get(format!("{}/api/tags", augur.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let text = read_until(&log, |t| {
        t.contains("exporting traces") && t.contains("augur started")
    })
    .await;
    assert!(text.contains("exporting traces"), "{text}");
    assert!(!text.contains("secret"), "{text}");
    assert!(text.contains("***@127.0.0.1"), "{text}");

    let file = dir.path().join("bad.toml");
    std::fs::write(
        &file,
        "[limits]\nstore = \"redis://:secret-3@127.0.0.1:1/0#insecure\"\n",
    )
    .unwrap();
    let out = augur_bin()
        .args(["--check-config", "--config"])
        .arg(&file)
        .arg("--policies")
        .arg(dir.path())
        .arg("--schemas")
        .arg(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("insecure"),
        "{stderr}"
    );
    assert!(!stderr.contains("secret"), "{stderr}");
}
