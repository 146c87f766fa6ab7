//! Faults over real sockets: a client that leaves cancels the upstream
//! work of every delivery mode at once (no further upstream call), over
//! HTTP/1 whatever it sent after its request, and over HTTP/2; an upstream
//! that cuts a whole answer never becomes a complete 200; a stream cut
//! mid-line still ends with a parseable error line.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../common/mod.rs"]
mod common;

mod cancel;
mod client;
mod cuts;
mod modes;

use std::time::{Duration, Instant};

use common::Augur;
use fake_ollama::FakeOllama;
use serde_json::{Value, json};

/// A tool with one required argument.
pub fn weather_tool() -> Value {
    json!({"type": "function", "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string"}
        }, "required": ["city"]}
    }})
}

/// A schema with two required properties.
pub fn person() -> Value {
    json!({"type": "object", "properties": {
        "name": {"type": "string"}, "age": {"type": "integer"}
    }, "required": ["name", "age"]})
}

/// Wait until `f` holds, for up to `timeout`.
pub async fn until(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while !f() {
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    true
}

/// augur in front of `fake` with one policy file.
pub async fn with_policy(fake: &FakeOllama, yaml: &str) -> Augur {
    let policies = tempfile::tempdir().unwrap();
    let schemas = tempfile::tempdir().unwrap();
    common::write_policy(policies.path(), "policy.yaml", yaml);
    let policy = augur::policy::load_dir(policies.path(), schemas.path()).unwrap();
    let config = augur::config::Config {
        upstreams: common::upstreams(&fake.url()),
        drain_timeout: Duration::from_secs(5),
        ..augur::config::Config::default()
    };
    common::start_config(config, policy).await
}
