//! Test harness: augur in-process on 127.0.0.1:0 in front of a fake Ollama.
//! Each test crate includes it as its own module, and uses what it needs.
#![allow(
    dead_code,
    unreachable_pub,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::field_reassign_with_default
)]

pub mod cached;
pub mod certs;
pub mod dns_server;
pub mod formats;
pub mod https;
pub mod live;
pub mod process;
pub mod redis_server;
pub mod surfaces;
pub mod tool_turns;

use std::{net::SocketAddr, path::Path, time::Duration};

use augur::{
    app::{self, AppState},
    config::Config,
    policy::{Policy, PolicyStore},
};
use fake_ollama::FakeOllama;
use tokio::{net::TcpListener, sync::watch, task::JoinHandle};

/// A running augur.
pub struct Augur {
    pub addr: SocketAddr,
    pub url: String,
    pub state: AppState,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Augur {
    /// Stop accepting and drain.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = tokio::time::timeout(Duration::from_secs(5), self.task).await;
    }

    /// A receiver that turns true when [`Augur::stop`] is called (for
    /// background tasks a test starts, such as the upstream monitor).
    pub fn stopping(&self) -> watch::Receiver<bool> {
        self.stop.subscribe()
    }

    /// Serve the admin router (`/-/policies`, `/metrics`, ...) on its own
    /// port until [`Augur::stop`]; returns its base URL.
    pub async fn admin(&self) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(app::serve(
            listener,
            augur::admin_router(self.state.clone()),
            self.stop.subscribe(),
            app::Accept::from_config(&self.state.config),
        ));
        format!("http://{addr}")
    }
}

/// The upstream list of one upstream at `url`.
pub fn upstreams(url: &str) -> Vec<augur::config::UpstreamSpec> {
    vec![augur::config::UpstreamSpec::from_url(url).unwrap()]
}

/// The Prometheus recorder of this test binary (installed once; every
/// test of the binary records into it).
pub fn metrics() -> metrics_exporter_prometheus::PrometheusHandle {
    static HANDLE: std::sync::OnceLock<metrics_exporter_prometheus::PrometheusHandle> =
        std::sync::OnceLock::new();
    HANDLE
        .get_or_init(|| augur::install_metrics().unwrap())
        .clone()
}

/// The value of the metric line that starts with `name{` and holds every
/// one of `labels` (`key="value"`), or 0.
pub fn metric(text: &str, name: &str, labels: &[&str]) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")))
        .find(|l| labels.iter().all(|label| l.contains(label)))
        .and_then(|l| l.split_whitespace().last())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0.0)
}

/// An upstream list: one upstream per `(name, url)`.
pub fn named(upstreams: &[(&str, &str)]) -> Vec<augur::config::UpstreamSpec> {
    upstreams
        .iter()
        .map(|(name, url)| {
            let mut spec = augur::config::UpstreamSpec::from_url(url).unwrap();
            spec.name = name.to_string();
            spec
        })
        .collect()
}

/// Start augur against `upstream` with the default config tweaked by `f`.
pub async fn start_with(upstream: &str, f: impl FnOnce(&mut Config)) -> Augur {
    let mut config = Config::default();
    config.upstreams = upstreams(upstream);
    config.drain_timeout = Duration::from_secs(5);
    f(&mut config);
    start_config(config, Policy::permissive()).await
}

/// Start augur with a config and a policy.
pub async fn start_config(config: Config, policy: Policy) -> Augur {
    start_state(AppState::new(config, policy, None).unwrap()).await
}

/// Start augur with live policies: a [`PolicyStore`] opened on
/// `config.policies` / `config.schemas` and its watcher running until
/// [`Augur::stop`].
pub async fn start_live(config: Config) -> Augur {
    let store = PolicyStore::open(&config.policies, &config.schemas).unwrap();
    let augur = start_state(AppState::with_store(config, store, None).unwrap()).await;
    let reloading = augur
        .state
        .policies
        .clone()
        .reloading(augur.stop.subscribe());
    tokio::spawn(reloading);
    augur
}

/// Serve an already built state on 127.0.0.1:0.
pub async fn start_state(state: AppState) -> Augur {
    let accept = app::Accept::from_config(&state.config);
    start_accept(state, accept).await
}

/// Serve an already built state on 127.0.0.1:0, accepting connections as
/// `accept` says (TLS, handshake timeout, ...).
pub async fn start_accept(state: AppState, accept: app::Accept) -> Augur {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, rx) = watch::channel(false);
    let router = app::router(state.clone());
    let task = tokio::spawn(app::serve(listener, router, rx, accept));
    Augur {
        addr,
        url: format!("http://{addr}"),
        state,
        stop,
        task,
    }
}

/// A fake Ollama and augur in front of it.
pub async fn pair() -> (FakeOllama, Augur) {
    let fake = FakeOllama::builder().start().await;
    let augur = start_with(&fake.url(), |_| {}).await;
    (fake, augur)
}

/// A plain HTTP client (no proxy, no redirects, no decompression).
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// Replace every `"created_at":"..."` value (they differ per request).
pub fn scrub_times(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let key = "\"created_at\":\"";
    while let Some(i) = rest.find(key) {
        out.push_str(&rest[..i + key.len()]);
        rest = &rest[i + key.len()..];
        let end = rest.find('"').unwrap_or(rest.len());
        out.push('T');
        rest = &rest[end..];
    }
    out.push_str(rest);
    scrub_durations(&out)
}

fn scrub_durations(text: &str) -> String {
    let mut out = text.to_string();
    for key in [
        "total_duration",
        "load_duration",
        "prompt_eval_duration",
        "eval_duration",
    ] {
        let pat = format!("\"{key}\":");
        let mut result = String::new();
        let mut rest = out.as_str();
        while let Some(i) = rest.find(&pat) {
            result.push_str(&rest[..i + pat.len()]);
            rest = &rest[i + pat.len()..];
            let end = rest
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len());
            result.push('0');
            rest = &rest[end..];
        }
        result.push_str(rest);
        out = result;
    }
    out
}

/// Write a policy file into `dir`.
pub fn write_policy(dir: &Path, name: &str, yaml: &str) {
    std::fs::write(dir.join(name), yaml).unwrap();
}

/// POST `body` as JSON to augur's `path`.
pub async fn post(augur: &Augur, path: &str, body: &serde_json::Value) -> reqwest::Response {
    client()
        .post(format!("{}{path}", augur.url))
        .json(body)
        .send()
        .await
        .unwrap()
}

/// A response header as text.
pub fn header<'a>(r: &'a reqwest::Response, name: &str) -> Option<&'a str> {
    r.headers().get(name).map(|v| v.to_str().unwrap())
}

/// The lines of an NDJSON body, each parsed.
pub fn ndjson(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The `(event, data)` pairs of an SSE body.
pub fn events(text: &str) -> Vec<(String, serde_json::Value)> {
    text.split("\n\n")
        .filter(|e| !e.trim().is_empty())
        .map(|e| {
            let mut name = String::new();
            let mut data = serde_json::Value::Null;
            for line in e.lines() {
                if let Some(n) = line.strip_prefix("event: ") {
                    name = n.to_string();
                } else if let Some(d) = line.strip_prefix("data: ") {
                    data = serde_json::from_str(d).unwrap_or_else(|err| panic!("{err}: {d}"));
                }
            }
            (name, data)
        })
        .collect()
}

/// The `augur` binary, run from the repository root, with no `AUGUR_*`
/// settings inherited from the environment.
pub fn augur_bin() -> std::process::Command {
    augur_env(env!("CARGO_BIN_EXE_augur"))
}

/// `program` (the binary itself, or a shell that starts it) with the
/// environment and working directory of [`augur_bin`].
pub fn augur_env(program: &str) -> std::process::Command {
    let mut cmd = std::process::Command::new(program);
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"));
    for var in [
        "AUGUR_CONFIG",
        "AUGUR_POLICIES",
        "AUGUR_SCHEMAS",
        "AUGUR_UPSTREAM",
        "AUGUR_TLS_CERT",
        "AUGUR_TLS_KEY",
        "AUGUR_ADMIN_TLS_CERT",
        "AUGUR_ADMIN_TLS_KEY",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

/// A port free at the time of asking.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// GET `url` with [`client`]; the body as text.
pub async fn get_text(url: &str) -> String {
    client()
        .get(url)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// Wait until `f` holds, for up to `timeout` (checking every 2 ms).
pub async fn until(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + timeout;
    while !f() {
        if std::time::Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    true
}

/// `get_weather(city, days?)`, the tool most emulation tests offer
/// (`tool_turns::weather_tool` is the one of the tool-turn tests: `city`
/// alone).
pub fn weather_tool() -> serde_json::Value {
    serde_json::json!({"type": "function", "function": {
        "name": "get_weather",
        "description": "Current weather for a city",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string"},
            "days": {"type": "integer", "minimum": 1}
        }, "required": ["city"]}
    }})
}

/// Every tool call of a streamed `/api/chat` answer (its NDJSON chunks,
/// see [`ndjson`]), in order.
pub fn tool_calls(chunks: &[serde_json::Value]) -> Vec<&serde_json::Value> {
    chunks
        .iter()
        .filter_map(|c| c["message"]["tool_calls"].as_array())
        .flatten()
        .collect()
}

/// augur in front of `a` and `b` (upstreams named `a` and `b`, both
/// listings read) under one policy file, recording metrics.
pub async fn pair_under(a: &FakeOllama, b: &FakeOllama, policy: &str) -> Augur {
    let policies = tempfile::tempdir().unwrap();
    let schemas = tempfile::tempdir().unwrap();
    write_policy(policies.path(), "policy.yaml", policy);
    let policy = augur::policy::load_dir(policies.path(), schemas.path()).unwrap();
    let config = Config {
        upstreams: named(&[("a", &a.url()), ("b", &b.url())]),
        drain_timeout: Duration::from_secs(5),
        ..Config::default()
    };
    let state = AppState::new(config, policy, Some(metrics())).unwrap();
    let augur = start_state(state).await;
    augur.state.fleet.refresh(true).await;
    augur
}
