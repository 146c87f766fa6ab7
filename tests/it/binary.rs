//! The `augur` binary itself: `--check-config`, the open-files limit it
//! raises at start, and draining streams on SIGTERM with its access log.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::{
    future::Future,
    path::Path,
    time::{Duration, Instant},
};

use common::{augur_bin, augur_env, client, free_port, ndjson};
use fake_ollama::FakeOllama;
use serde_json::json;

async fn bounded<T>(secs: u64, f: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(secs), f)
        .await
        .unwrap_or_else(|_| panic!("test did not finish within {secs} s"))
}

#[test]
fn check_config_accepts_the_shipped_policies_and_refuses_broken_ones() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = augur_bin()
        .arg("--check-config")
        .arg("--policies")
        .arg(root.join("policies"))
        .arg("--schemas")
        .arg(root.join("schemas"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("policies OK"), "{stderr}");

    for (text, expect) in [
        ("defaults: {emulate_tools: [\n", "invalid YAML"),
        ("defaults: {emulate_tools: maybe}\n", "emulate_tools"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("20-broken.yaml"), text).unwrap();
        let out = augur_bin()
            .arg("--check-config")
            .arg("--policies")
            .arg(dir.path())
            .arg("--schemas")
            .arg(root.join("schemas"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{text}: {stderr}");
        assert!(
            stderr.contains("20-broken.yaml") && stderr.contains(expect),
            "{stderr}"
        );
    }
}

#[cfg(unix)]
#[tokio::test]
async fn the_binary_drains_streams_on_sigterm() {
    bounded(30, async {
        const KEY: &str = "env-key-d2f7c1e9";
        let fake = FakeOllama::builder().start().await;
        let policies = tempfile::tempdir().unwrap();
        std::fs::write(
            policies.path().join("10-auth.yaml"),
            "auth:\n  required: true\n  keys:\n    - {id: drain-test, key_env: AUGUR_TEST_DRAIN_KEY}\n",
        )
        .unwrap();
        let logs = tempfile::NamedTempFile::new().unwrap();
        let (port, admin_port) = (free_port(), free_port());
        let mut child = tokio::process::Command::from(augur_bin())
            .arg("--listen")
            .arg(format!("127.0.0.1:{port}"))
            .arg("--admin-listen")
            .arg(format!("127.0.0.1:{admin_port}"))
            .arg("--upstream")
            .arg(fake.url())
            .arg("--policies")
            .arg(policies.path())
            .arg("--schemas")
            .arg(policies.path())
            .env("AUGUR_TEST_DRAIN_KEY", KEY)
            .env("RUST_LOG", "debug")
            .stdout(std::process::Stdio::null())
            .stderr(logs.reopen().unwrap())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let base = format!("http://127.0.0.1:{port}");
        let c = client();
        let up = Instant::now();
        loop {
            if let Ok(r) = c.get(&base).send().await
                && r.status() == 200
            {
                break;
            }
            assert!(up.elapsed() < Duration::from_secs(10), "augur did not start");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }

        let r = c.get(format!("{base}/api/tags")).send().await.unwrap();
        assert_eq!(r.status(), 401);
        let r = c
            .get(format!("{base}/api/tags"))
            .bearer_auth(KEY)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);

        // A stream in flight (11 chunks, 200 ms apart) when SIGTERM arrives.
        let mut stream = c
            .post(format!("{base}/api/chat"))
            .header("x-api-key", KEY)
            .json(&json!({"model": "slow-stream", "messages": [{"role": "user", "content": "hi"}]}))
            .send()
            .await
            .unwrap();
        assert_eq!(stream.status(), 200);
        let mut text = stream.chunk().await.unwrap().unwrap().to_vec();

        let metrics = c
            .get(format!("http://127.0.0.1:{admin_port}/metrics"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(!metrics.contains(KEY), "the key is in /metrics");
        assert!(metrics.contains("augur_auth_failures_total"), "{metrics}");

        let pid = child.id().unwrap().to_string();
        let sent = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap();
        assert!(sent.success());

        // New connections are refused soon after.
        let signalled = Instant::now();
        while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
            assert!(
                signalled.elapsed() < Duration::from_secs(2),
                "still accepting after SIGTERM"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // The stream in flight still ends with its done chunk.
        while let Some(chunk) = stream.chunk().await.unwrap() {
            text.extend_from_slice(&chunk);
        }
        let lines = ndjson(&String::from_utf8(text).unwrap());
        assert_eq!(lines.last().unwrap()["done"], true);
        assert_eq!(lines.len(), 12, "11 tokens and the done chunk");

        let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
            .await
            .expect("augur did not exit after draining")
            .unwrap();
        assert!(status.success(), "{status}");
        let log = std::fs::read_to_string(logs.path()).unwrap();
        assert!(log.contains("draining"), "{log}");
        assert!(!log.contains(KEY), "the key is in the log");
        assert!(log.contains("drain-test"), "the key id is logged instead");
        let access = log
            .lines()
            .find(|l| l.contains("augur::access") && l.contains("/api/chat"))
            .unwrap_or_else(|| panic!("no access log line for the stream: {log}"));
        assert!(access.contains("slow-stream"), "model: {access}");
        assert!(access.contains("drain-test"), "principal: {access}");
    })
    .await;
}

/// The soft and hard "Max open files" limits of process `pid`.
#[cfg(target_os = "linux")]
fn open_files_limits(pid: u32) -> (String, String) {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap();
    let fields: Vec<&str> = line["Max open files".len()..].split_whitespace().collect();
    (fields[0].to_string(), fields[1].to_string())
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn the_binary_raises_its_open_files_limit() {
    let fake = FakeOllama::builder().start().await;
    let policies = tempfile::tempdir().unwrap();
    let port = free_port();
    // The shell lowers the soft limit; augur, exec'd in its place, starts with it.
    let mut child = tokio::process::Command::from(augur_env("sh"))
        .arg("-c")
        .arg("ulimit -Sn 256 && exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_augur"))
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .args(["--admin-listen", &format!("127.0.0.1:{}", free_port())])
        .args(["--upstream", &fake.url()])
        .arg("--policies")
        .arg(policies.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let started = Instant::now();
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "augur did not start"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (soft, hard) = open_files_limits(child.id().unwrap());
    assert_eq!(soft, hard, "soft limit raised to the hard limit");
    assert_ne!(soft, "256");
    child.kill().await.unwrap();
}

/// A log written to a file holds no colour codes: augur colours its log
/// only on a terminal, never with `NO_COLOR`.
#[tokio::test]
async fn a_log_file_holds_no_colour_codes() {
    use common::process::{Process, Start};
    let fake = FakeOllama::builder().start().await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("augur.log");
    let augur = Process::start(Start {
        upstream: &fake.url(),
        log: Some(&log),
        env: vec![("RUST_LOG", "info")],
        ..Start::default()
    })
    .await;
    let r = client()
        .post(format!("{}/api/chat", augur.url))
        .json(&json!({"model": "gemma3", "stream": false,
            "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    drop(augur);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("request"), "{text}");
    assert!(
        !text.contains('\u{1b}'),
        "colour codes in a log file: {text:?}"
    );
}
