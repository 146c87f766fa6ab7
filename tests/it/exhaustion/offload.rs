//! A heavy answer does not stall the worker that reads it: reading a whole
//! answer (a thousand calls checked, then screened against each other and
//! a large conversation by the small-model rules) costs seconds of CPU in
//! a debug build, and runs off the worker's event loop, so
//! `GET /api/version` on the same worker is answered meanwhile.
//!
//! augur runs here as the binary runs it ([`app::serve_workers`]): one
//! worker thread with its own single-threaded event loop, so every request
//! below is served by the same loop.

use std::time::{Duration, Instant};

use augur::{
    app::{self, AppState},
    config::Config,
    policy::PolicyStore,
};
use fake_ollama::FakeOllama;
use serde_json::{Value, json};

use crate::common::{client, free_port, write_policy};

const MODEL: &str = "scripted";
/// Calls in the heavy answer.
const CALLS: usize = 1_000;

/// `lookup(query, page)`.
fn lookup_tool() -> Value {
    json!({"type": "function", "function": {
        "name": "lookup",
        "description": "Look a phrase up in the archive",
        "parameters": {"type": "object", "properties": {
            "query": {"type": "string"}, "page": {"type": "integer"}},
            "required": ["query", "page"]}
    }})
}

/// Word `i` of the conversation.
fn word(i: usize) -> String {
    format!("term{i}x")
}

/// A conversation of about 900 KB (under the most grounding searches) that
/// holds every value of the heavy answer.
fn conversation() -> Vec<Value> {
    let text: Vec<String> = (0..90_000).map(word).collect();
    vec![json!({"role": "user", "content": format!(
        "Look up each of these phrases: {}. Then page through everything.",
        text.join(" ")
    )})]
}

/// [`CALLS`] distinct calls of one pattern, each grounded in the
/// conversation (so every one is kept, and judged against the others).
fn heavy_answer() -> String {
    let calls: Vec<Value> = (0..CALLS)
        .map(|i| {
            let query = format!("{} {} {}", word(i * 3), word(i * 3 + 1), word(i * 3 + 2));
            json!({"name": "lookup", "arguments": {"query": query, "page": i % 7}})
        })
        .collect();
    json!({ "tool_calls": calls }).to_string()
}

/// augur on one worker thread (a single-threaded event loop, as the binary
/// runs each worker) with `policy`, in front of `fake`; its URL and the
/// sender that stops it.
async fn one_worker(
    fake: &FakeOllama,
    policy: &str,
    dirs: &tempfile::TempDir,
) -> (String, tokio::sync::watch::Sender<bool>) {
    let policies = dirs.path().join("policies");
    let schemas = dirs.path().join("schemas");
    std::fs::create_dir_all(&policies).unwrap();
    std::fs::create_dir_all(&schemas).unwrap();
    write_policy(&policies, "10-test.yaml", policy);
    let config = Config {
        upstreams: crate::common::upstreams(&fake.url()),
        policies,
        schemas,
        drain_timeout: Duration::from_secs(5),
        ..Config::default()
    };
    let store = PolicyStore::open(&config.policies, &config.schemas).unwrap();
    let state = AppState::with_store(config, store, None).unwrap();
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], free_port()));
    let (stop, stopping) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        app::serve_workers(state, addr, 1, stopping, None)
            .await
            .unwrap();
    });
    let url = format!("http://{addr}");
    let c = client();
    let up = Instant::now();
    while c.get(format!("{url}/api/version")).send().await.is_err() {
        assert!(
            up.elapsed() < Duration::from_secs(10),
            "augur did not start"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    (url, stop)
}

/// A heavy request answered.
struct Heavy {
    status: u16,
    answer: Value,
    took: Duration,
    /// The longest `GET /api/version` took meanwhile.
    worst: Duration,
}

/// POST `body` to `/api/chat` of augur (one worker, `policy`) in front of
/// a model that answers `reply`, polling `/api/version` every 50 ms on a
/// connection of its own (kept alive) until the answer is in.
async fn while_heavy(policy: &str, reply: String, body: Value) -> Heavy {
    let fake = FakeOllama::builder()
        .script(MODEL, vec![reply])
        .start()
        .await;
    let dirs = tempfile::tempdir().unwrap();
    let (url, stop) = one_worker(&fake, policy, &dirs).await;
    let heavy = {
        let url = url.clone();
        tokio::spawn(async move {
            let start = Instant::now();
            let r = client()
                .post(format!("{url}/api/chat"))
                .json(&body)
                .timeout(Duration::from_secs(300))
                .send()
                .await
                .unwrap();
            let status = r.status().as_u16();
            let answer: Value = r.json().await.unwrap();
            (status, answer, start.elapsed())
        })
    };
    let poller = client();
    let mut worst = Duration::ZERO;
    let mut polls = 0u32;
    while !heavy.is_finished() {
        let t = Instant::now();
        let r = poller
            .get(format!("{url}/api/version"))
            .timeout(Duration::from_secs(300))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        worst = worst.max(t.elapsed());
        polls += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (status, answer, took) = heavy.await.unwrap();
    let _ = stop.send(true);
    eprintln!("heavy request: {took:?}; worst /api/version: {worst:?} over {polls} polls");
    Heavy {
        status,
        answer,
        took,
        worst,
    }
}

/// The heavy answer took long enough to tell, and `/api/version` waited
/// little meanwhile.
fn assert_not_stalled(h: &Heavy) {
    assert!(
        h.took >= Duration::from_millis(400),
        "the answer is heavy enough to tell ({:?})",
        h.took
    );
    assert!(
        h.worst < h.took / 4 && h.worst < Duration::from_secs(1),
        "/api/version waited {:?} while a {:?} answer was read",
        h.worst,
        h.took
    );
}

fn call_count(answer: &Value) -> usize {
    answer["message"]["tool_calls"]
        .as_array()
        .map_or(0, Vec::len)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn version_is_answered_while_a_heavy_answer_is_screened() {
    let body = json!({"model": MODEL, "stream": false, "tools": [lookup_tool()],
        "messages": conversation()});
    let policy = "defaults:\n  tools: {small_model: true}\n";
    let h = while_heavy(policy, heavy_answer(), body).await;
    assert_eq!(h.status, 200, "{}", h.answer);
    assert_eq!(call_count(&h.answer), CALLS, "every grounded call is kept");
    assert_not_stalled(&h);
}
