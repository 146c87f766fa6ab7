//! The response cache end to end: augur with live policies in front of
//! the fake Ollama, whose upstream calls are counted. A repeated
//! deterministic request is answered from the cache on every generation
//! route, whole and streamed, byte for byte; principals do not share
//! entries unless their policy names a group; a new model build, chance,
//! `Cache-Control: no-cache` and answers that are not clean all go
//! upstream; entries expire and are bounded; a model without a cache
//! policy is served exactly as before.

use std::time::Duration;

use bytes::Bytes;
use fake_ollama::FakeOllama;
use serde_json::{Value, json};

use crate::common::{
    self, client,
    live::{Live, bounded, sha256_hex},
};

/// The generation routes, each with a deterministic request for `model`.
fn requests(model: &str) -> Vec<(&'static str, Value)> {
    let messages = json!([{"role": "user", "content": "What is the capital of France?"}]);
    vec![
        (
            "/api/chat",
            json!({"model": model, "messages": messages, "options": {"temperature": 0}}),
        ),
        (
            "/api/generate",
            json!({"model": model, "prompt": "Capital of France?", "options": {"seed": 7}}),
        ),
        (
            "/v1/chat/completions",
            json!({"model": model, "messages": messages, "temperature": 0}),
        ),
        (
            "/v1/completions",
            json!({"model": model, "prompt": "Capital of France?", "temperature": 0}),
        ),
        (
            "/v1/responses",
            json!({"model": model, "input": "Capital of France?", "temperature": 0}),
        ),
        (
            "/v1/messages",
            json!({"model": model, "max_tokens": 64, "messages": messages, "temperature": 0}),
        ),
    ]
}

/// Upstream generation calls the fake has answered.
fn generations(fake: &FakeOllama) -> u64 {
    requests("m")
        .iter()
        .map(|(path, _)| fake.requests(path))
        .sum()
}

/// A fake Ollama with `loaded` models listed in `/api/ps`, augur under
/// `policy`, and augur reading the loaded models (their digests) often.
async fn start(loaded: &[&str], policy: &str) -> Live {
    let fake = FakeOllama::builder().loaded(loaded).start().await;
    let live = Live::with_fake(fake, policy).await;
    live.augur
        .state
        .fleet
        .polling_loaded(Duration::from_millis(50), live.augur.stopping())
        .map(tokio::spawn);
    for name in loaded {
        let name = format!("{name}:latest");
        assert!(
            common::until(Duration::from_secs(5), || live
                .augur
                .state
                .fleet
                .digest_of(&name)
                .is_some())
            .await,
            "no digest for {name}"
        );
    }
    live
}

/// One request: its `X-Augur-Cache` header, status and body bytes.
async fn send(
    live: &Live,
    path: &str,
    body: &Value,
    key: Option<&str>,
    headers: &[(&str, &str)],
) -> (Option<String>, u16, Bytes) {
    let mut req = client().post(live.url(path)).json(body);
    if let Some(key) = key {
        req = req.bearer_auth(key);
    }
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let r = req.send().await.unwrap();
    let cache = common::header(&r, "x-augur-cache").map(str::to_string);
    let status = r.status().as_u16();
    (cache, status, r.bytes().await.unwrap())
}

const CACHED: &str = "cache: {ttl: 10m, max_bytes: 1048576}";

#[tokio::test]
async fn a_repeat_is_answered_from_the_cache_on_every_route_whole_and_streamed() {
    bounded(60, async {
        let live = start(
            &["gemma3"],
            &format!("models:\n  \"gemma3:*\":\n    {CACHED}\n"),
        )
        .await;
        for (path, body) in requests("gemma3") {
            for stream in [false, true] {
                let mut body = body.clone();
                body["stream"] = json!(stream);
                let before = generations(&live.fake);
                let (first, status, miss) = send(&live, path, &body, None, &[]).await;
                assert_eq!(status, 200, "{path} stream {stream}: {miss:?}");
                assert_eq!(first.as_deref(), Some("miss"), "{path} stream {stream}");
                assert_eq!(generations(&live.fake), before + 1, "{path}");
                let (second, status, hit) = send(&live, path, &body, None, &[]).await;
                assert_eq!(status, 200);
                assert_eq!(second.as_deref(), Some("hit"), "{path} stream {stream}");
                assert_eq!(
                    generations(&live.fake),
                    before + 1,
                    "{path}: no upstream call"
                );
                assert_eq!(
                    hit, miss,
                    "{path} stream {stream}: the hit is the miss's bytes"
                );
            }
        }
        live.augur.stop().await;
    })
    .await;
}

#[tokio::test]
async fn principals_do_not_share_entries_unless_their_policy_names_a_group() {
    bounded(30, async {
        let policy = format!(
            "models:\n  \"gemma3:*\":\n    {CACHED}\n  \"llama3.2:*\":\n    \
             cache: {{ttl: 10m, max_bytes: 1048576, share: team}}\n\
             auth:\n  keys:\n    - {{id: alice, key_sha256: {}}}\n    \
             - {{id: bob, key_sha256: {}}}\n",
            sha256_hex("alice-secret"),
            sha256_hex("bob-secret"),
        );
        let live = start(&["gemma3", "llama3.2"], &policy).await;
        let (path, gemma) = requests("gemma3").remove(0);
        let alice = Some("alice-secret");
        let bob = Some("bob-secret");
        assert_eq!(
            send(&live, path, &gemma, alice, &[]).await.0.unwrap(),
            "miss"
        );
        assert_eq!(
            send(&live, path, &gemma, alice, &[]).await.0.unwrap(),
            "hit"
        );
        assert_eq!(send(&live, path, &gemma, bob, &[]).await.0.unwrap(), "miss");
        assert_eq!(generations(&live.fake), 2);

        let (path, llama) = requests("llama3.2").remove(0);
        assert_eq!(
            send(&live, path, &llama, alice, &[]).await.0.unwrap(),
            "miss"
        );
        assert_eq!(send(&live, path, &llama, bob, &[]).await.0.unwrap(), "hit");
        assert_eq!(generations(&live.fake), 3);

        // The status page counts what each principal got.
        let admin = live.augur.admin().await;
        let status: Value = client()
            .get(format!("{admin}/-/status.json"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(
            status["cache"]["principals"],
            json!([
                {"principal": "alice", "hit": 1, "miss": 2, "bypass": 0},
                {"principal": "bob", "hit": 1, "miss": 1, "bypass": 0},
            ])
        );
        assert_eq!(status["cache"]["entries"], 3);
        live.augur.stop().await;
    })
    .await;
}

#[tokio::test]
async fn a_new_build_of_the_model_is_a_miss() {
    bounded(30, async {
        let live = start(
            &["gemma3"],
            &format!("models:\n  \"gemma3:*\":\n    {CACHED}\n"),
        )
        .await;
        let (path, body) = requests("gemma3").remove(0);
        assert_eq!(send(&live, path, &body, None, &[]).await.0.unwrap(), "miss");
        assert_eq!(send(&live, path, &body, None, &[]).await.0.unwrap(), "hit");
        let fleet = &live.augur.state.fleet;
        let old = fleet.digest_of("gemma3:latest").unwrap();
        live.fake.rebuild("gemma3");
        let changed = common::until(Duration::from_secs(5), || {
            fleet.digest_of("gemma3:latest").is_some_and(|d| d != old)
        });
        assert!(changed.await, "the new digest was read");
        assert_eq!(send(&live, path, &body, None, &[]).await.0.unwrap(), "miss");
        assert_eq!(generations(&live.fake), 2);
        live.augur.stop().await;
    })
    .await;
}

#[tokio::test]
async fn chance_no_cache_and_an_unknown_build_bypass_the_cache() {
    bounded(30, async {
        let policy = format!("models:\n  \"*\":\n    {CACHED}\n");
        let live = start(&["gemma3"], &policy).await;
        let path = "/api/chat";
        let hot = json!({"model": "gemma3", "messages": [{"role": "user", "content": "hi"}],
            "options": {"temperature": 0.7}});
        for n in 1..=2 {
            assert_eq!(
                send(&live, path, &hot, None, &[]).await.0.unwrap(),
                "bypass"
            );
            assert_eq!(generations(&live.fake), n);
        }
        let seeded = json!({"model": "gemma3", "messages": [{"role": "user", "content": "hi"}],
            "options": {"temperature": 0.7, "seed": 42}});
        assert_eq!(
            send(&live, path, &seeded, None, &[]).await.0.unwrap(),
            "miss"
        );
        assert_eq!(
            send(&live, path, &seeded, None, &[]).await.0.unwrap(),
            "hit"
        );
        for directive in ["no-cache", "no-store"] {
            let h = [("cache-control", directive)];
            assert_eq!(
                send(&live, path, &seeded, None, &h).await.0.unwrap(),
                "bypass"
            );
        }
        assert_eq!(generations(&live.fake), 5);
        // qwen3 is not loaded: its digest is unknown, its answers not kept.
        let (_, unlisted) = requests("qwen3").remove(0);
        for _ in 0..2 {
            assert_eq!(
                send(&live, path, &unlisted, None, &[]).await.0.unwrap(),
                "bypass"
            );
        }
        assert_eq!(generations(&live.fake), 7);
        live.augur.stop().await;
    })
    .await;
}

#[tokio::test]
async fn errors_cut_streams_and_invalid_answers_are_not_kept() {
    bounded(30, async {
        let policy = format!(
            "models:\n  \"*\":\n    {CACHED}\n    validate: {{max_retries: 0, on_failure: pass}}\n"
        );
        let live = start(
            &["error-500", "stream-cut", "gemma3", "invalid-then-valid"],
            &policy,
        )
        .await;
        let path = "/api/chat";
        let ask = |model: &str, stream: bool| {
            json!({"model": model, "messages": [{"role": "user", "content": "hi"}],
                "options": {"temperature": 0}, "stream": stream})
        };
        // A 500, a 400 and a cut stream go upstream each time.
        let mut bad = ask("gemma3", false);
        bad["logprobs"] = json!(true);
        bad["top_logprobs"] = json!(50);
        for body in [ask("error-500", false), bad, ask("stream-cut", true)] {
            let before = generations(&live.fake);
            for _ in 0..2 {
                let (cache, status, _) = send(&live, path, &body, None, &[]).await;
                assert_eq!(cache.as_deref(), Some("miss"), "{body}");
                assert!(
                    status != 200 || body["model"] == "stream-cut",
                    "{status} {body}"
                );
            }
            assert_eq!(generations(&live.fake), before + 2, "{body}");
        }
        // An answer still invalid is passed with X-Augur-Validation and not
        // kept; the valid one after it is.
        let schema = json!({"type": "object", "properties": {"a": {"type": "string"}},
            "required": ["a"]});
        let mut body = ask("invalid-then-valid", false);
        body["format"] = schema;
        let before = generations(&live.fake);
        let r = client()
            .post(live.url(path))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(common::header(&r, "x-augur-validation"), Some("invalid"));
        assert_eq!(common::header(&r, "x-augur-cache"), Some("miss"));
        assert_eq!(send(&live, path, &body, None, &[]).await.0.unwrap(), "miss");
        assert_eq!(send(&live, path, &body, None, &[]).await.0.unwrap(), "hit");
        assert_eq!(generations(&live.fake), before + 2);
        live.augur.stop().await;
    })
    .await;
}

#[tokio::test]
async fn entries_expire_and_big_answers_are_not_kept() {
    bounded(30, async {
        let policy = "models:\n  \"gemma3:*\":\n    cache: {ttl: 1s, max_bytes: 2048}\n  \
                      \"long-stream:*\":\n    cache: {ttl: 10m, max_bytes: 2048}\n";
        let live = start(&["gemma3", "long-stream"], policy).await;
        let (path, mut body) = requests("gemma3").remove(0);
        body["stream"] = json!(false);
        assert_eq!(send(&live, path, &body, None, &[]).await.0.unwrap(), "miss");
        assert_eq!(send(&live, path, &body, None, &[]).await.0.unwrap(), "hit");
        tokio::time::sleep(Duration::from_millis(1100)).await;
        assert_eq!(send(&live, path, &body, None, &[]).await.0.unwrap(), "miss");

        // About 100 chunks of 100 bytes: past max_bytes, never kept.
        let (path, long) = requests("long-stream").remove(0);
        let before = generations(&live.fake);
        for _ in 0..2 {
            let (cache, status, answer) = send(&live, path, &long, None, &[]).await;
            assert_eq!((cache.as_deref(), status), (Some("miss"), 200));
            assert!(answer.len() > 2048, "{}", answer.len());
        }
        assert_eq!(generations(&live.fake), before + 2);
        live.augur.stop().await;
    })
    .await;
}

#[tokio::test]
async fn hits_are_charged_to_token_budgets_unless_the_policy_says_not() {
    bounded(30, async {
        let policy = |charge: bool| {
            format!(
                "defaults:\n  rate_limit: {{tokens_per_minute: 30}}\n\
                 models:\n  \"gemma3:*\":\n    \
                 cache: {{ttl: 10m, max_bytes: 1048576, charge_hits: {charge}}}\n\
                 auth:\n  keys:\n    - {{id: alice, key_sha256: {}}}\n",
                sha256_hex("alice-secret"),
            )
        };
        let alice = Some("alice-secret");
        let path = "/api/chat";
        let body = json!({"model": "gemma3", "messages": [{"role": "user", "content": "hi"}],
            "options": {"temperature": 0}, "stream": false});

        // Each answer reports more than half the budget: a charged hit
        // spends it, and the next request is refused.
        let live = start(&["gemma3"], &policy(true)).await;
        assert_eq!(
            send(&live, path, &body, alice, &[]).await.0.unwrap(),
            "miss"
        );
        assert_eq!(send(&live, path, &body, alice, &[]).await.0.unwrap(), "hit");
        assert_eq!(send(&live, path, &body, alice, &[]).await.1, 429);
        live.augur.stop().await;

        let live = start(&["gemma3"], &policy(false)).await;
        assert_eq!(
            send(&live, path, &body, alice, &[]).await.0.unwrap(),
            "miss"
        );
        for _ in 0..3 {
            let (cache, status, _) = send(&live, path, &body, alice, &[]).await;
            assert_eq!((cache.as_deref(), status), (Some("hit"), 200));
        }
        live.augur.stop().await;
    })
    .await;
}

#[tokio::test]
async fn a_model_without_a_cache_policy_is_served_as_before() {
    bounded(30, async {
        let policy = format!("models:\n  \"gemma3:*\":\n    {CACHED}\n");
        let live = start(&["gemma3", "llama3.2"], &policy).await;
        for (path, body) in requests("llama3.2") {
            let before = generations(&live.fake);
            let (cache, status, first) = send(&live, path, &body, None, &[]).await;
            assert_eq!((cache, status), (None, 200), "{path}");
            let (cache, _, second) = send(&live, path, &body, None, &[]).await;
            assert_eq!(cache, None);
            assert_eq!(generations(&live.fake), before + 2, "{path}");
            assert_eq!(first.is_empty(), second.is_empty());
        }
        live.augur.stop().await;
    })
    .await;
}

#[tokio::test]
async fn lookups_and_saved_tokens_are_counted() {
    bounded(30, async {
        let handle = common::metrics();
        let live = start(
            &["echo"],
            "models:\n  \"echo:*\":\n    cache: {ttl: 10m, max_bytes: 1048576}\n",
        )
        .await;
        let text = || handle.render();
        let model = r#"model="echo:latest""#;
        let count = |t: &str, result: &str| {
            common::metric(
                t,
                "augur_cache_requests_total",
                &[model, &format!("result=\"{result}\"")],
            )
        };
        let before = text();
        let (path, mut body) = requests("echo").remove(0);
        body["stream"] = json!(false);
        send(&live, path, &body, None, &[]).await;
        send(&live, path, &body, None, &[]).await;
        body["options"]["temperature"] = json!(1);
        send(&live, path, &body, None, &[]).await;
        let after = text();
        for result in ["miss", "hit", "bypass"] {
            assert!(
                count(&after, result) >= count(&before, result) + 1.0,
                "{result}"
            );
        }
        let saved = |t: &str| common::metric(t, "augur_cache_tokens_saved_total", &[model]);
        assert!(saved(&after) > saved(&before));
        let held: f64 = after
            .lines()
            .find_map(|l| l.strip_prefix("augur_cache_bytes "))
            .and_then(|n| n.trim().parse().ok())
            .unwrap();
        assert!(held > 0.0, "{held}");
        live.augur.stop().await;
    })
    .await;
}
