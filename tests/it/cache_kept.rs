//! The response cache keeps only what it should: errors, 4xx, cut
//! streams and invalid answers go upstream every time; entries expire and
//! answers past `max_bytes` are not kept; hits charge token budgets as the
//! policy says; lookups and saved tokens are counted.

use std::time::Duration;

use serde_json::json;

use crate::common::{
    self,
    cached::{CACHED, generations, requests, send, start},
    client,
    live::{bounded, sha256_hex},
};

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
async fn lookups_and_saved_tokens_are_counted() {
    bounded(30, async {
        let handle = common::metrics();
        let policy = format!(
            "models:\n  \"echo:*\":\n    cache: {{ttl: 10m, max_bytes: 1048576}}\n\
             auth:\n  keys:\n    - {{id: cache-meter, key_sha256: {}}}\n",
            sha256_hex("cache-meter-secret"),
        );
        let live = start(&["echo"], &policy).await;
        let key = Some("cache-meter-secret");
        let text = || handle.render();
        let model = r#"model="echo:latest""#;
        let count = |t: &str, result: &str| {
            common::metric(
                t,
                "augur_cache_requests_total",
                &[model, &format!("result=\"{result}\"")],
            )
        };
        // The GenAI metrics of this key's requests: upstream work only.
        let generated = |t: &str| {
            common::metric(
                t,
                "gen_ai_client_operation_duration_seconds_count",
                &[r#"principal="cache-meter""#],
            )
        };
        let before = text();
        let (path, mut body) = requests("echo").remove(0);
        body["stream"] = json!(false);
        send(&live, path, &body, key, &[]).await;
        let missed = text();
        assert_eq!(generated(&missed), generated(&before) + 1.0);
        send(&live, path, &body, key, &[]).await;
        let hit = text();
        assert_eq!(
            generated(&hit),
            generated(&missed),
            "a hit is not generated"
        );
        body["options"]["temperature"] = json!(1);
        send(&live, path, &body, key, &[]).await;
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

#[tokio::test]
async fn a_stream_whose_client_left_is_not_kept() {
    bounded(30, async {
        let policy = format!("models:\n  \"slow-stream:*\":\n    {CACHED}\n");
        let live = start(&["slow-stream"], &policy).await;
        let (path, body) = requests("slow-stream").remove(0);
        let mut r = client()
            .post(live.url(path))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(common::header(&r, "x-augur-cache"), Some("miss"));
        assert!(r.chunk().await.unwrap().is_some());
        drop(r);
        // The upstream stream is dropped with the recording.
        assert!(
            live.fake
                .wait_streams_aborted(1, Duration::from_secs(5))
                .await
        );
        assert_eq!(send(&live, path, &body, None, &[]).await.0.unwrap(), "miss");
        assert_eq!(send(&live, path, &body, None, &[]).await.0.unwrap(), "hit");
        assert_eq!(generations(&live.fake), 2);
        live.augur.stop().await;
    })
    .await;
}
