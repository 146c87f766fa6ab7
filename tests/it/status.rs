//! The status page on the admin listener: its shell is open and strict
//! (no data, a Content-Security-Policy), its JSON needs the admin token,
//! and the JSON shows what happened: repaired, retried, fallen back and
//! refused requests in the ring of recent events (bounded), the upstreams'
//! loaded models from `/api/ps`, and the policy in force.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use augur::config::Secret;
use common::{Augur, client, formats::chat, formats::person, metric, named};
use fake_ollama::FakeOllama;
use serde_json::{Value, json};

/// POST `body` to `path` with `id` as its request id; the status.
async fn send(augur: &Augur, path: &str, id: &str, body: &Value) -> u16 {
    let r = client()
        .post(format!("{}{path}", augur.url))
        .header("x-request-id", id)
        .json(body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let _ = r.bytes().await;
    status
}

async fn snapshot(admin: &str, token: Option<&str>) -> reqwest::Response {
    let mut req = client().get(format!("{admin}/-/status.json"));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    req.send().await.unwrap()
}

/// The events of the snapshot whose request id is `id`, as (kind, detail).
fn events_of(s: &Value, id: &str) -> Vec<(String, String)> {
    s["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["request_id"] == id)
        .map(|e| {
            let text = |k: &str| e[k].as_str().unwrap().to_string();
            (text("kind"), text("detail"))
        })
        .collect()
}

/// Held by the tests that read the ring of events, which is shared by the
/// whole process: one of them fills it.
static RING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test]
async fn the_snapshot_lists_repairs_retries_fallbacks_and_refusals() {
    let _ring = RING.lock().await;
    let a = FakeOllama::builder()
        .script("small", vec!["no".into(), "still no".into()])
        .start()
        .await;
    let b = FakeOllama::builder()
        .models(&[])
        .script("big", vec![r#"{"name":"x","age":1}"#.into()])
        .start()
        .await;
    let policy = "models:\n  small: {fallback: {models: [big]}}\n  \
                  limited: {rate_limit: {requests_per_minute: 1}}\n";
    let augur = common::pair_under(&a, &b, policy).await;
    let admin = augur.admin().await;
    let before = snapshot(&admin, None).await.json::<Value>().await.unwrap();
    // Each request's events are read right after it: the ring is shared
    // by every test of this process.
    let listed = |path: &'static str, id: &'static str, body: Value, status: u16| {
        let (augur, admin) = (&augur, &admin);
        async move {
            assert_eq!(send(augur, path, id, &body).await, status, "{id}");
            let s: Value = snapshot(admin, None).await.json().await.unwrap();
            (events_of(&s, id), s)
        }
    };
    let (repair, _) = listed(
        "/api/chat",
        "st-repair",
        chat("bad-json", person(), false),
        200,
    )
    .await;
    assert!(
        repair
            .iter()
            .any(|(k, d)| k == "repair" && d.contains("code_fence")),
        "{repair:?}"
    );
    let retried = chat("invalid-then-valid", person(), false);
    let (retry, _) = listed("/api/chat", "st-retry", retried, 200).await;
    assert!(
        retry.iter().any(|(k, d)| k == "retry" && d == "2 attempts"),
        "{retry:?}"
    );
    let (fallback, _) = listed(
        "/api/chat",
        "st-fallback",
        chat("small", person(), false),
        200,
    )
    .await;
    assert!(
        fallback
            .iter()
            .any(|(k, d)| k == "fallback" && d.contains("big") && d.contains("invalid")),
        "{fallback:?}"
    );
    let limited = json!({"model": "limited", "prompt": "hi", "stream": false});
    let (first, _) = listed("/api/generate", "st-first", limited.clone(), 404).await;
    assert!(first.is_empty(), "a 404 is no refusal: {first:?}");
    let (refusal, s) = listed("/api/generate", "st-refused", limited, 429).await;
    assert_eq!(
        refusal,
        [("refusal".to_string(), "429 rate limited".to_string())]
    );
    let refused = s["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["request_id"] == "st-refused");
    assert_eq!(refused.unwrap()["model"], "limited");
    assert_eq!(refused.unwrap()["principal"], "anonymous");
    // The model's request limit is spent: nothing left of its burst of 1.
    let usage = s["limits"]["rates"]["usage"].as_array().unwrap();
    let spent = usage.iter().find(|u| u["model"] == "limited:latest");
    assert_eq!(
        spent.map(|u| (&u["scope"], &u["burst"], &u["remaining"])),
        Some((&json!("model"), &json!(1), &json!(0))),
        "{usage:?}"
    );

    // Totals count since start (other tests of this process add to them).
    let total = |s: &Value, k: &str| s["totals"][k].as_u64().unwrap();
    assert!(total(&s, "requests") >= total(&before, "requests") + 5);
    for k in ["repairs", "retries", "fallbacks", "refusals"] {
        assert!(total(&s, k) > total(&before, k), "{k}");
    }
    // The upstreams, their loaded models (`/api/ps`), the policy.
    let ups = s["upstreams"].as_array().unwrap();
    assert_eq!(ups.len(), 2);
    assert_eq!(ups[0]["name"], "a");
    assert_eq!(ups[0]["healthy"], true);
    let loaded = &ups[0]["loaded"][0];
    assert!(loaded["name"].is_string(), "{}", ups[0]);
    assert_eq!(loaded["size_vram"], 3_529_285_632u64);
    assert!(loaded["expires_at"].is_string());
    assert!(ups[0]["loaded_read_at"].is_string());
    assert_eq!(ups[1]["loaded"][0]["name"], "big:latest");
    assert!(s["policy"]["version"].as_str().unwrap().len() > 4);
    assert!(s["policy"]["last_error"].is_null());
    assert!(s["limits"]["queues"].is_array());
    augur.stop().await;
}

#[tokio::test]
async fn the_ring_of_events_stays_bounded() {
    let _ring = RING.lock().await;
    let fake = FakeOllama::builder().start().await;
    let policy = "auth: {required: true, keys: []}\n";
    let dir = tempfile::tempdir().unwrap();
    common::write_policy(dir.path(), "p.yaml", policy);
    let schemas = tempfile::tempdir().unwrap();
    let policy = augur::policy::load_dir(dir.path(), schemas.path()).unwrap();
    let config = augur::config::Config {
        upstreams: common::upstreams(&fake.url()),
        ..Default::default()
    };
    let locked = common::start_config(config, policy).await;
    let admin = locked.admin().await;
    let n = augur::EVENTS_CAPACITY + 20;
    for i in 0..n {
        let body = json!({"model": "m", "prompt": "hi"});
        assert_eq!(
            send(&locked, "/api/generate", &format!("st-ring-{i}"), &body).await,
            401
        );
    }
    let s: Value = snapshot(&admin, None).await.json().await.unwrap();
    let events = s["events"].as_array().unwrap();
    assert_eq!(events.len(), augur::EVENTS_CAPACITY);
    let last = format!("st-ring-{}", n - 1);
    assert_eq!(
        events_of(&s, &last),
        [("refusal".to_string(), "401 unauthenticated".to_string())]
    );
    assert!(
        events_of(&s, "st-ring-0").is_empty(),
        "the oldest went first"
    );
    locked.stop().await;
}

#[tokio::test]
async fn the_json_needs_the_token_and_the_shell_does_not() {
    let fake = FakeOllama::builder().start().await;
    let augur = common::start_with(&fake.url(), |c| {
        c.admin_token = Some(Secret::new("s3cret"));
    })
    .await;
    let admin = augur.admin().await;
    assert_eq!(snapshot(&admin, None).await.status(), 401);
    assert_eq!(snapshot(&admin, Some("wrong")).await.status(), 401);
    let ok = snapshot(&admin, Some("s3cret")).await;
    assert_eq!(ok.status(), 200);
    assert_eq!(ok.headers()["cache-control"], "no-store");
    let page = client()
        .get(format!("{admin}/-/status"))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    let csp = page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        csp.contains("default-src 'none'") && csp.contains("script-src 'self'"),
        "{csp}"
    );
    assert!(!csp.contains("unsafe"), "{csp}");
    let html = page.text().await.unwrap();
    assert!(html.contains(r#"data-token="required""#));
    assert!(
        !html.contains("<script>") && !html.contains("style="),
        "no inline code"
    );
    for path in ["/-/status.js", "/-/status.css", "/-/status.svg"] {
        let r = client().get(format!("{admin}{path}")).send().await.unwrap();
        assert_eq!(r.status(), 200, "{path}");
    }
    augur.stop().await;
}

#[tokio::test]
async fn one_upstream_is_polled_for_its_loaded_models() {
    let fake = FakeOllama::builder()
        .loaded(&["bad-json", "echo"])
        .start()
        .await;
    let mut config = augur::config::Config {
        upstreams: named(&[("status-ps", &fake.url())]),
        ..Default::default()
    };
    config.drain_timeout = Duration::from_secs(5);
    let state = augur::app::AppState::new(
        config,
        augur::policy::Policy::permissive(),
        Some(common::metrics()),
    )
    .unwrap();
    let augur = common::start_state(state).await;
    let poller = augur
        .state
        .fleet
        .polling_loaded(Duration::from_millis(100), augur.stopping())
        .map(tokio::spawn);
    assert!(poller.is_some());
    let admin = augur.admin().await;
    let mut names = Vec::new();
    for _ in 0..50 {
        let s: Value = snapshot(&admin, None).await.json().await.unwrap();
        names = s["upstreams"][0]["loaded"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["name"].as_str().unwrap().to_string())
            .collect();
        if !names.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(names, ["bad-json:latest", "echo:latest"]);
    assert!(fake.requests("/api/ps") >= 1);
    let text = common::get_text(&format!("{admin}/metrics")).await;
    let up = r#"upstream="status-ps""#;
    assert_eq!(metric(&text, "augur_upstream_models_loaded", &[up]), 2.0);
    let vram = metric(
        &text,
        "augur_upstream_model_vram_bytes",
        &[up, r#"model="echo:latest""#],
    );
    assert_eq!(vram, 3_529_285_632.0);
    augur.stop().await;
}

/// Ollama lists a loaded model once, under the name it was loaded by; a
/// copy of it (`ollama cp`) is served by the same runner. The status page
/// names the loaded model by every name it answers to, and counts its
/// VRAM once.
#[tokio::test]
async fn a_loaded_model_is_listed_under_each_of_its_names() {
    let fake = FakeOllama::builder()
        .copy("gemma3", "team-assistant")
        .loaded(&["gemma3"])
        .start()
        .await;
    let mut config = augur::config::Config {
        upstreams: named(&[("status-copies", &fake.url())]),
        ..Default::default()
    };
    config.drain_timeout = Duration::from_secs(5);
    let state = augur::app::AppState::new(
        config,
        augur::policy::Policy::permissive(),
        Some(common::metrics()),
    )
    .unwrap();
    let augur = common::start_state(state).await;
    augur
        .state
        .fleet
        .polling_loaded(Duration::from_millis(100), augur.stopping())
        .map(tokio::spawn);
    let admin = augur.admin().await;
    let mut loaded = Value::Null;
    for _ in 0..50 {
        let s: Value = snapshot(&admin, None).await.json().await.unwrap();
        loaded = s["upstreams"][0]["loaded"].clone();
        if loaded.as_array().is_some_and(|l| !l.is_empty()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let loaded = loaded.as_array().unwrap();
    assert_eq!(loaded.len(), 1, "{loaded:?}");
    assert_eq!(loaded[0]["name"], "gemma3:latest");
    assert_eq!(
        loaded[0]["names"],
        json!(["gemma3:latest", "team-assistant:latest"])
    );
    // Both names are loaded, for the choice of upstream too.
    let upstreams: Value = client()
        .get(format!("{admin}/-/upstreams"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        upstreams["upstreams"][0]["loaded"],
        json!(["gemma3:latest", "team-assistant:latest"]),
        "{upstreams}"
    );
    let text = common::get_text(&format!("{admin}/metrics")).await;
    let up = r#"upstream="status-copies""#;
    assert_eq!(metric(&text, "augur_upstream_models_loaded", &[up]), 1.0);
    augur.stop().await;
}
