//! Several upstreams: requests naming a model go to an upstream that has
//! it (loaded ones first), listings are merged, management routes follow
//! `X-Augur-Upstream` or go to the first healthy upstream, and models are
//! learned again after a pull through augur. Each upstream is a fake
//! Ollama with its own catalog.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use augur::{
    app::AppState,
    config::{Config, UpstreamSpec},
    policy::Policy,
};
use common::{Augur, client, metric, named, post};
use fake_ollama::FakeOllama;
use serde_json::{Value, json};

/// The policy of these tests: every scope without a key, and each
/// request to the least loaded upstream (the order they check; affinity
/// has its own tests, `routing_affinity.rs`).
pub(crate) fn least_loaded() -> Policy {
    let yaml = "auth: {anonymous_scopes: [generate, read, manage]}\n\
                defaults: {routing: least_loaded}\n";
    let schemas = tempfile::tempdir().unwrap();
    augur::policy::load_texts(&[("policy.yaml".into(), yaml.into())], schemas.path()).unwrap()
}

/// augur in front of `upstreams`, recording metrics.
pub(crate) async fn augur_for(upstreams: Vec<UpstreamSpec>, f: impl FnOnce(&mut Config)) -> Augur {
    let mut config = Config {
        upstreams,
        drain_timeout: Duration::from_secs(5),
        health_interval: Duration::from_millis(100),
        ..Config::default()
    };
    f(&mut config);
    let state = AppState::new(config, least_loaded(), Some(common::metrics())).unwrap();
    common::start_state(state).await
}

fn chat(model: &str, stream: bool) -> Value {
    json!({"model": model, "stream": stream, "messages": [{"role": "user", "content": "hi"}]})
}

fn chats(a: &FakeOllama, b: &FakeOllama) -> (u64, u64) {
    (a.requests("/api/chat"), b.requests("/api/chat"))
}

async fn names(augur: &Augur, path: &str, list: &str, id: &str, pin: Option<&str>) -> Vec<String> {
    let mut req = client().get(format!("{}{path}", augur.url));
    if let Some(name) = pin {
        req = req.header("x-augur-upstream", name);
    }
    let r = req.send().await.unwrap();
    assert_eq!(r.status(), 200, "{path}");
    let v: Value = r.json().await.unwrap();
    v[list]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m[id].as_str().unwrap().to_string())
        .collect()
}

/// `/-/upstreams` entry `name` (read without probing).
fn upstream(augur: &Augur, name: &str) -> Value {
    let status = augur.state.fleet.status_json();
    status["upstreams"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["name"] == name)
        .cloned()
        .unwrap()
}

#[tokio::test]
async fn requests_go_to_an_upstream_that_has_the_model() {
    let a = FakeOllama::builder().models(&["llama3.2"]).start().await;
    let b = FakeOllama::builder().models(&["gemma3"]).start().await;
    let augur = augur_for(
        named(&[("route-a", &a.url()), ("route-b", &b.url())]),
        |_| {},
    )
    .await;
    augur.state.fleet.refresh(true).await;

    let r = post(&augur, "/api/chat", &chat("gemma3", false)).await;
    assert_eq!(r.status(), 200);
    assert_eq!(chats(&a, &b), (0, 1));
    let r = post(&augur, "/api/chat", &chat("llama3.2:latest", true)).await;
    assert_eq!(r.status(), 200);
    assert!(r.text().await.unwrap().contains("\"done\":true"));
    assert_eq!(chats(&a, &b), (1, 1));

    // Tools emulated for gemma3: its capabilities come from the upstream
    // that has it, and so does every call.
    let tool = json!({"type": "function", "function": {"name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}});
    let mut body = chat("gemma3", false);
    body["tools"] = json!([tool]);
    let r = post(&augur, "/api/chat", &body).await;
    assert_eq!(r.status(), 200);
    assert_eq!(common::header(&r, "x-augur-emulated"), Some("tools"));
    assert_eq!((a.requests("/api/show"), b.requests("/api/show")), (0, 1));
    assert_eq!(chats(&a, &b), (1, 2));

    // A model nobody has: Ollama's own answer.
    let r = post(&augur, "/api/chat", &chat("nope", false)).await;
    assert_eq!(r.status(), 404);
    assert_eq!(
        r.text().await.unwrap(),
        r#"{"error":"model 'nope' not found"}"#
    );

    let admin = augur.admin().await;
    let v: Value = client()
        .get(format!("{admin}/-/upstreams"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let b_status = &v["upstreams"][1];
    assert_eq!(b_status["name"], "route-b");
    assert_eq!(b_status["healthy"], true);
    assert_eq!(b_status["in_flight"], 0);
    assert_eq!(b_status["models_source"], "tags");
    assert_eq!(b_status["models"], json!(["gemma3:latest"]));
    assert_eq!(b_status["loaded"], json!(["gemma3:latest"]));
    let text = common::get_text(&format!("{admin}/metrics")).await;
    let requests = |name: &str| {
        let label = format!("upstream=\"{name}\"");
        metric(&text, "augur_upstream_requests_total", &[&label])
    };
    // Metric labels are the upstreams' names (unique to this test).
    assert_eq!(
        (requests("route-a"), requests("route-b")),
        (2.0, 2.0),
        "{text}"
    );
    assert_eq!(
        metric(&text, "augur_upstream_healthy", &["upstream=\"route-a\""]),
        1.0
    );
    assert_eq!(
        metric(&text, "augur_upstream_in_flight", &["upstream=\"route-b\""]),
        0.0
    );
}

#[tokio::test]
async fn a_model_goes_where_it_is_loaded() {
    let both = ["llama3.2", "gemma3"];
    let a = FakeOllama::builder()
        .models(&both)
        .loaded(&[])
        .start()
        .await;
    let b = FakeOllama::builder()
        .models(&both)
        .loaded(&["gemma3"])
        .start()
        .await;
    let augur = augur_for(named(&[("a", &a.url()), ("b", &b.url())]), |_| {}).await;
    augur.state.fleet.refresh(true).await;
    for _ in 0..3 {
        let r = post(&augur, "/api/chat", &chat("gemma3", false)).await;
        assert_eq!(r.status(), 200);
    }
    assert_eq!(chats(&a, &b), (0, 3));
    // Loaded nowhere: the first listed of those that have it.
    let r = post(
        &augur,
        "/api/generate",
        &json!({"model": "llama3.2", "prompt": "x"}),
    )
    .await;
    assert_eq!(r.status(), 200);
    assert_eq!(
        (a.requests("/api/generate"), b.requests("/api/generate")),
        (1, 0)
    );
}

#[tokio::test]
async fn listings_of_every_upstream_are_merged() {
    let a = FakeOllama::builder()
        .models(&["llama3.2", "gemma3"])
        .loaded(&["llama3.2"])
        .start()
        .await;
    let b = FakeOllama::builder()
        .models(&["gemma3", "qwen3"])
        .loaded(&["qwen3"])
        .start()
        .await;
    let augur = augur_for(named(&[("a", &a.url()), ("b", &b.url())]), |_| {}).await;
    let all = ["llama3.2:latest", "gemma3:latest", "qwen3:latest"];
    assert_eq!(
        names(&augur, "/api/tags", "models", "name", None).await,
        all
    );
    assert_eq!(
        names(&augur, "/api/ps", "models", "name", None).await,
        ["llama3.2:latest", "qwen3:latest"]
    );
    assert_eq!(names(&augur, "/v1/models", "data", "id", None).await, all);
    // Named: that upstream's own list, as it answered it.
    assert_eq!(
        names(&augur, "/api/tags", "models", "name", Some("b")).await,
        ["gemma3:latest", "qwen3:latest"]
    );
    let r = client()
        .get(format!("{}/api/tags", augur.url))
        .send()
        .await
        .unwrap();
    assert_eq!(
        common::header(&r, "content-type"),
        Some("application/json; charset=utf-8")
    );
    // Emulated models still advertise tools in the merged list.
    let v: Value = r.json().await.unwrap();
    let gemma = &v["models"][1];
    assert_eq!(
        gemma["capabilities"],
        json!(["completion", "vision", "tools"])
    );
}

async fn pull(augur: &Augur, model: &str, pin: Option<&str>) -> reqwest::Response {
    let mut req = client()
        .post(format!("{}/api/pull", augur.url))
        .json(&json!({"model": model, "stream": false}));
    if let Some(name) = pin {
        req = req.header("x-augur-upstream", name);
    }
    req.send().await.unwrap()
}

#[tokio::test]
async fn management_routes_follow_the_header_or_go_to_the_first_healthy_upstream() {
    let a = FakeOllama::builder().start().await;
    let b = FakeOllama::builder().start().await;
    let augur = augur_for(named(&[("a", &a.url()), ("b", &b.url())]), |_| {}).await;
    let pulls = || (a.requests("/api/pull"), b.requests("/api/pull"));
    assert_eq!(pull(&augur, "gemma3", None).await.status(), 200);
    assert_eq!(pulls(), (1, 0));
    assert_eq!(pull(&augur, "gemma3", Some("b")).await.status(), 200);
    assert_eq!(pulls(), (1, 1));
    let seen = b.last_request_to("/api/pull").unwrap();
    assert!(!seen.headers.contains_key("x-augur-upstream"));
    let r = pull(&augur, "gemma3", Some("c")).await;
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("X-Augur-Upstream"));
    assert_eq!(pulls(), (1, 1));
    // The first upstream is down: the first healthy one.
    a.shutdown().await;
    augur.state.fleet.refresh(false).await;
    assert_eq!(upstream(&augur, "a")["healthy"], false);
    assert_eq!(pull(&augur, "gemma3", None).await.status(), 200);
    assert_eq!(b.requests("/api/pull"), 2);
}

#[tokio::test]
async fn a_pull_through_augur_has_the_models_read_again() {
    let a = FakeOllama::builder().models(&["llama3.2"]).start().await;
    let b = FakeOllama::builder()
        .models(&["gemma3"])
        .pull_adds(true)
        .start()
        .await;
    let augur = augur_for(named(&[("a", &a.url()), ("b", &b.url())]), |c| {
        c.models_refresh = Duration::from_secs(3600);
    })
    .await;
    let monitor = augur
        .state
        .fleet
        .monitoring(augur.stopping())
        .map(tokio::spawn);
    assert!(monitor.is_some());
    wait_for(|| upstream(&augur, "b")["models_source"] == "tags").await;
    let r = post(&augur, "/api/chat", &chat("phi4", false)).await;
    assert_eq!(r.status(), 404);
    assert_eq!(pull(&augur, "phi4", Some("b")).await.status(), 200);
    wait_for(|| {
        upstream(&augur, "b")["models"]
            .as_array()
            .unwrap()
            .contains(&json!("phi4:latest"))
    })
    .await;
    let r = post(&augur, "/api/chat", &chat("phi4", false)).await;
    assert_eq!(r.status(), 200);
    assert_eq!(chats(&a, &b), (1, 1));
}

/// Wait (up to 5 s) until `ready` holds.
pub(crate) async fn wait_for(ready: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !ready() {
        assert!(tokio::time::Instant::now() < deadline, "timed out");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
