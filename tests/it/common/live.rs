//! Live policies over real sockets: a fake Ollama with augur in front of
//! it whose policy file and named schemas live in temporary directories and
//! are edited while it runs, with the keys, headers and error bodies the
//! policy tests check.

use std::{
    future::Future,
    time::{Duration, Instant},
};

use augur::config::Config;
use fake_ollama::FakeOllama;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tempfile::TempDir;

use super::{Augur, client, header, start_live, write_policy};

/// The named schema `answer.json` every [`Live`] starts with.
pub const ANSWER_SCHEMA: &str = r#"{"type":"object","properties":{"answer":{"type":"string"},"confidence":{"type":"number"}},"required":["answer","confidence"]}"#;

/// Run `f`, failing the test if it takes longer than `secs`.
pub async fn bounded<T>(secs: u64, f: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(secs), f)
        .await
        .unwrap_or_else(|_| panic!("test did not finish within {secs} s"))
}

/// The `key_sha256` of an API key, as a policy file names it.
pub fn sha256_hex(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

/// A fake Ollama, augur with live policies in front of it, and the
/// directories the policies and named schemas live in.
pub struct Live {
    pub fake: FakeOllama,
    pub augur: Augur,
    policies: TempDir,
    _schemas: TempDir,
}

/// The policy file a [`Live`] writes and edits.
pub const POLICY_FILE: &str = "10-test.yaml";

impl Live {
    pub async fn start(policy: &str) -> Self {
        Self::with_fake(FakeOllama::builder().start().await, policy).await
    }

    pub async fn with_fake(fake: FakeOllama, policy: &str) -> Self {
        let policies = tempfile::tempdir().unwrap();
        let schemas = tempfile::tempdir().unwrap();
        std::fs::write(schemas.path().join("answer.json"), ANSWER_SCHEMA).unwrap();
        write_policy(policies.path(), POLICY_FILE, policy);
        let config = Config {
            upstreams: super::upstreams(&fake.url()),
            policies: policies.path().to_path_buf(),
            schemas: schemas.path().to_path_buf(),
            drain_timeout: Duration::from_secs(5),
            ..Config::default()
        };
        let augur = start_live(config).await;
        Self {
            fake,
            augur,
            policies,
            _schemas: schemas,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.augur.url)
    }

    pub fn version(&self) -> String {
        self.augur.state.policies.status().version
    }

    /// Replace the policy file as editors do (temp file, then rename), so
    /// no reader ever sees half a file.
    pub fn rewrite(&self, yaml: &str) {
        let tmp = self.policies.path().join(".10-test.yaml.tmp");
        std::fs::write(&tmp, yaml).unwrap();
        std::fs::rename(&tmp, self.policies.path().join(POLICY_FILE)).unwrap();
    }

    /// Rewrite the policy file and wait (at most 2 s) until it is active.
    pub async fn apply(&self, yaml: &str) {
        let before = self.version();
        self.rewrite(yaml);
        within_2s("policy applied", || {
            let s = self.augur.state.policies.status();
            s.version != before && s.last_error.is_none()
        })
        .await;
    }
}

/// Poll `cond` for up to 2 s (the reload promise).
pub async fn within_2s(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "not within 2 s: {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A non-streaming chat request for `model` with an optional bearer key.
pub async fn chat(live: &Live, model: &str, key: Option<&str>) -> reqwest::Response {
    let mut req = client().post(live.url("/api/chat")).json(&json!({
        "model": model, "stream": false,
        "messages": [{"role": "user", "content": "hi"}]
    }));
    if let Some(key) = key {
        req = req.bearer_auth(key);
    }
    req.send().await.unwrap()
}

/// A response header as a whole number; fails the test when it is
/// missing or not one.
pub fn header_u64(r: &reqwest::Response, name: &str) -> u64 {
    header(r, name)
        .unwrap_or_else(|| panic!("no {name} header"))
        .parse()
        .unwrap_or_else(|_| panic!("{name} is not a whole number"))
}

/// The `error` text of an Ollama-style `{"error": "..."}` body.
pub async fn error_text(r: reqwest::Response) -> String {
    let v: Value = r.json().await.unwrap();
    let obj = v.as_object().unwrap();
    assert_eq!(obj.len(), 1, "{v}");
    obj["error"].as_str().unwrap().to_string()
}
