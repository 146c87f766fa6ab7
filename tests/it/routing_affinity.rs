//! Affinity among several upstreams: every turn of a conversation goes to
//! the same upstream on every surface, different conversations spread,
//! a load bound spills the rest, `X-Augur-Session` keys a conversation,
//! `routing: least_loaded` keeps the least-loaded order, and with one
//! upstream (or one per model) nothing is chosen by affinity.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use augur::{app::AppState, config::Config, policy::Policy};
use common::{Augur, client, metric, named};
use fake_ollama::FakeOllama;
use serde_json::{Value, json};

const SYSTEM: &str = "You answer in one line.";

/// The generation routes a fake counts.
const ROUTES: [&str; 5] = [
    "/api/chat",
    "/api/generate",
    "/v1/chat/completions",
    "/v1/responses",
    "/v1/messages",
];

fn generations(f: &FakeOllama) -> u64 {
    ROUTES.iter().map(|r| f.requests(r)).sum()
}

fn policy(yaml: &str) -> Policy {
    let schemas = tempfile::tempdir().unwrap();
    let files = [("policy.yaml".to_string(), yaml.to_string())];
    augur::policy::load_texts(&files, schemas.path()).unwrap()
}

async fn augur_over(fakes: &[&FakeOllama], yaml: &str) -> Augur {
    let urls: Vec<String> = fakes.iter().map(|f| f.url()).collect();
    let names: Vec<String> = (0..fakes.len()).map(|i| format!("box{i}")).collect();
    let pairs: Vec<(&str, &str)> = names
        .iter()
        .zip(&urls)
        .map(|(n, u)| (n.as_str(), u.as_str()))
        .collect();
    let config = Config {
        upstreams: named(&pairs),
        drain_timeout: Duration::from_secs(5),
        health_interval: Duration::from_millis(100),
        ..Config::default()
    };
    let state = AppState::new(config, policy(yaml), Some(common::metrics())).unwrap();
    let augur = common::start_state(state).await;
    augur.state.fleet.refresh(true).await;
    augur
}

async fn two(model: &str, yaml: &str) -> (FakeOllama, FakeOllama, Augur) {
    let a = FakeOllama::builder().models(&[model]).start().await;
    let b = FakeOllama::builder().models(&[model]).start().await;
    let augur = augur_over(&[&a, &b], yaml).await;
    (a, b, augur)
}

async fn send(augur: &Augur, path: &str, body: &Value, session: Option<&str>) {
    let mut req = client().post(format!("{}{path}", augur.url)).json(body);
    if let Some(s) = session {
        req = req.header("x-augur-session", s);
    }
    let r = req.send().await.unwrap();
    assert_eq!(r.status(), 200, "{path}: {}", r.text().await.unwrap());
    r.bytes().await.unwrap();
}

/// Turn `turns` (1, 2, …) of conversation `first` on each surface.
fn turns(model: &str, first: &str, turns: usize) -> Vec<(&'static str, Value)> {
    let mut messages = vec![json!({"role": "user", "content": first})];
    for t in 1..turns {
        messages.push(json!({"role": "assistant", "content": format!("answer {t}")}));
        messages.push(json!({"role": "user", "content": format!("question {t}")}));
    }
    let with_system = |m: &Vec<Value>| {
        let mut all = vec![json!({"role": "system", "content": SYSTEM})];
        all.extend(m.iter().cloned());
        all
    };
    vec![
        (
            "/api/chat",
            json!({"model": model, "stream": false, "messages": with_system(&messages)}),
        ),
        (
            "/v1/chat/completions",
            json!({"model": model, "messages": with_system(&messages)}),
        ),
        (
            "/v1/messages",
            json!({"model": model, "max_tokens": 64, "system": SYSTEM, "messages": messages}),
        ),
        (
            "/v1/responses",
            json!({"model": model, "instructions": SYSTEM, "input": messages}),
        ),
        (
            "/api/generate",
            json!({"model": model, "stream": false, "system": SYSTEM, "prompt": first}),
        ),
    ]
}

/// Which fake served the requests sent by `f` (all on one, or a panic).
async fn one_home(
    a: &FakeOllama,
    b: &FakeOllama,
    f: impl std::future::Future<Output = ()>,
) -> usize {
    let before = (generations(a), generations(b));
    f.await;
    let after = (generations(a), generations(b));
    match (after.0 - before.0, after.1 - before.1) {
        (n, 0) if n > 0 => 0,
        (0, n) if n > 0 => 1,
        split => panic!("a conversation was split over both upstreams: {split:?}"),
    }
}

#[tokio::test]
async fn every_turn_of_a_conversation_goes_to_one_upstream_on_every_surface() {
    let model = "affinity-turns";
    let (a, b, augur) = two(model, "").await;
    let mut homes = Vec::new();
    for c in 0..12 {
        let first = format!("conversation {c}: hello");
        let home = one_home(&a, &b, async {
            for n in [1, 2, 3] {
                for (path, body) in turns(model, &first, n) {
                    send(&augur, path, &body, None).await;
                }
            }
        })
        .await;
        homes.push(home);
    }
    // Different conversations under one system prompt spread over both.
    let on_a = homes.iter().filter(|&&h| h == 0).count();
    assert!((1..12).contains(&on_a), "{homes:?}");
    let text = common::get_text(&format!("{}/metrics", augur.admin().await)).await;
    let label = format!("model=\"{model}:latest\"");
    let decisions = |how: &str| {
        let how = format!("how=\"{how}\"");
        metric(&text, "augur_routing_decisions_total", &[&label, &how])
    };
    assert_eq!(decisions("affinity"), 12.0 * 3.0 * 5.0, "{text}");
    assert_eq!(decisions("spill") + decisions("least_loaded"), 0.0);
}

#[tokio::test]
async fn under_concurrent_load_no_upstream_takes_more_than_its_bound() {
    let model = "affinity-load";
    let a = FakeOllama::builder()
        .models(&[model])
        .slow_ms(400)
        .start()
        .await;
    let b = FakeOllama::builder()
        .models(&[model])
        .slow_ms(400)
        .start()
        .await;
    let augur = augur_over(&[&a, &b], "").await;
    // Twelve requests of one conversation at once: its home takes at most
    // ceil(1.25 × 12 / 2) = 8 of them, the other the rest.
    let body = json!({"model": model, "stream": false,
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "hot"}]});
    let all = (0..12).map(|_| send(&augur, "/api/chat", &body, None));
    futures_util::future::join_all(all).await;
    let (on_a, on_b) = (a.requests("/api/chat"), b.requests("/api/chat"));
    assert_eq!(on_a + on_b, 12);
    assert!(on_a <= 8 && on_b <= 8, "{on_a} and {on_b}");
    assert!(
        on_a.max(on_b) > 6,
        "affinity kept more than half: {on_a} and {on_b}"
    );
    let text = common::get_text(&format!("{}/metrics", augur.admin().await)).await;
    let label = format!("model=\"{model}:latest\"");
    let spilled = metric(
        &text,
        "augur_routing_decisions_total",
        &[&label, "how=\"spill\""],
    );
    assert_eq!(spilled, on_a.min(on_b) as f64);
}

#[tokio::test]
async fn the_session_header_keys_a_conversation_in_place_of_its_prompt() {
    let model = "affinity-session";
    let (a, b, augur) = two(model, "").await;
    let chat = |text: &str| json!({"model": model, "stream": false, "messages": [{"role": "user", "content": text}]});
    let mut homes = Vec::new();
    for s in 0..8 {
        let session = format!("session-{s}");
        // Different prompts, one session: one upstream.
        let home = one_home(&a, &b, async {
            for p in 0..4 {
                send(
                    &augur,
                    "/api/chat",
                    &chat(&format!("prompt {p}")),
                    Some(&session),
                )
                .await;
            }
        })
        .await;
        homes.push(home);
    }
    assert!(homes.contains(&0) && homes.contains(&1), "{homes:?}");
}

#[tokio::test]
async fn least_loaded_routing_keeps_the_least_loaded_order() {
    let model = "affinity-off";
    let (a, b, augur) = two(
        model,
        "models:\n  \"affinity-off\": {routing: least_loaded}\n",
    )
    .await;
    // An idle fleet: the first listed, whatever the conversation.
    for c in 0..8 {
        for (path, body) in turns(model, &format!("conversation {c}"), 2) {
            send(&augur, path, &body, Some(&format!("s{c}"))).await;
        }
    }
    assert_eq!((generations(&a), generations(&b)), (8 * 5, 0));
    let text = common::get_text(&format!("{}/metrics", augur.admin().await)).await;
    let label = format!("model=\"{model}:latest\"");
    let decisions = metric(
        &text,
        "augur_routing_decisions_total",
        &[&label, "how=\"least_loaded\""],
    );
    assert_eq!(decisions, 8.0 * 5.0);
}

#[tokio::test]
async fn with_one_upstream_or_one_per_model_nothing_is_chosen_by_affinity() {
    // One upstream: no choice, no key read, nothing counted.
    let single = FakeOllama::builder()
        .models(&["affinity-single"])
        .start()
        .await;
    let augur = augur_over(&[&single], "").await;
    for (path, body) in turns("affinity-single", "hello", 2) {
        send(&augur, path, &body, Some("s")).await;
    }
    assert_eq!(generations(&single), 5);
    let text = common::get_text(&format!("{}/metrics", augur.admin().await)).await;
    let counted = text
        .lines()
        .any(|l| l.starts_with("augur_routing_decisions_total") && l.contains("affinity-single"));
    assert!(!counted, "{text}");
    // One upstream per model: each model goes where it is, least loaded.
    let a = FakeOllama::builder().models(&["affinity-x"]).start().await;
    let b = FakeOllama::builder().models(&["affinity-y"]).start().await;
    let augur = augur_over(&[&a, &b], "").await;
    for c in 0..6 {
        let first = format!("conversation {c}");
        for (path, body) in turns("affinity-x", &first, 1) {
            send(&augur, path, &body, None).await;
        }
        for (path, body) in turns("affinity-y", &first, 1) {
            send(&augur, path, &body, None).await;
        }
    }
    assert_eq!((generations(&a), generations(&b)), (30, 30));
    let text = common::get_text(&format!("{}/metrics", augur.admin().await)).await;
    for m in ["affinity-x", "affinity-y"] {
        let label = format!("model=\"{m}:latest\"");
        let how = |h: &str| {
            let h = format!("how=\"{h}\"");
            metric(&text, "augur_routing_decisions_total", &[&label, &h])
        };
        assert_eq!(
            (how("least_loaded"), how("affinity")),
            (30.0, 0.0),
            "{text}"
        );
    }
}
