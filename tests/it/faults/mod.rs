//! Faults over real sockets: a client that leaves cancels the upstream
//! work of every delivery mode at once (no further upstream call), over
//! HTTP/1 whatever it sent after its request, and over HTTP/2; an upstream
//! that cuts a whole answer never becomes a complete 200; a stream cut
//! mid-line still ends with a parseable error line.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

mod cancel;
mod client;
mod cuts;
mod modes;

use std::time::Duration;

use common::{Augur, until};
use fake_ollama::FakeOllama;
use serde_json::{Value, json};

/// A tool with one required argument.
pub(crate) fn weather_tool() -> Value {
    json!({"type": "function", "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string"}
        }, "required": ["city"]}
    }})
}

/// A schema with two required properties.
pub(crate) fn person() -> Value {
    json!({"type": "object", "properties": {
        "name": {"type": "string"}, "age": {"type": "integer"}
    }, "required": ["name", "age"]})
}

/// augur in front of `fake` with one policy file.
pub(crate) async fn with_policy(fake: &FakeOllama, yaml: &str) -> Augur {
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
