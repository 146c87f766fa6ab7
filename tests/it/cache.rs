//! The response cache end to end: augur with live policies in front of
//! the fake Ollama, whose upstream calls are counted. A repeated
//! deterministic request is answered from the cache on every generation
//! route, whole and streamed, byte for byte; principals do not share
//! entries unless their policy names a group; a new model build, chance,
//! `Cache-Control: no-cache` and an unknown build go upstream; a model
//! without a cache policy is served exactly as before.

use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{
    self,
    cached::{CACHED, generations, requests, send, start},
    client,
    live::{bounded, sha256_hex},
};

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
