//! Limits shared through Redis by two augur processes (the real binary) in
//! front of one fake Ollama: a request limit and a token budget hold across
//! both replicas, a restarted replica finds the counters where they were,
//! and a store that goes away gets the policy's `on_store_error` behaviour
//! (fast, shown by readiness and metrics) until it comes back. Over TLS
//! (`rediss://`) the store's certificate is verified against the system's
//! trusted CAs.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::{
    path::Path,
    time::{Duration, Instant},
};

use common::{
    client,
    live::{bounded, sha256_hex},
    process::{Process, Start},
    redis_server::Redis,
    write_policy,
};
use fake_ollama::FakeOllama;
use serde_json::json;

/// One augur process using `redis` for its limits, with the policies in
/// `policies`.
async fn replica(fake: &FakeOllama, redis: &Redis, policies: &Path) -> Process {
    replica_with(fake, redis, policies, Vec::new()).await
}

/// [`replica`] with more environment variables.
async fn replica_with(
    fake: &FakeOllama,
    redis: &Redis,
    policies: &Path,
    env: Vec<(&str, &str)>,
) -> Process {
    let config = format!(
        "[limits]\nstore = \"{}\"\nstore_timeout_ms = 100\nkey_prefix = \"it\"\n",
        redis.url()
    );
    Process::start(Start {
        upstream: &fake.url(),
        policies: Some(policies),
        config: Some(&config),
        env,
        ..Start::default()
    })
    .await
}

/// One augur process with the store's default timeout.
async fn replica_default(fake: &FakeOllama, redis: &Redis, policies: &Path) -> Process {
    let config = format!(
        "[limits]\nstore = \"{}\"\nkey_prefix = \"it\"\n",
        redis.url()
    );
    Process::start(Start {
        upstream: &fake.url(),
        policies: Some(policies),
        config: Some(&config),
        ..Start::default()
    })
    .await
}

/// Up to `n` chats from 32 concurrent clients, alternating between
/// `replicas`, for at most `secs`; how many were admitted, and the slowest
/// answer.
async fn load(replicas: &[&Process], n: usize, secs: Duration) -> (usize, Duration) {
    let end = Instant::now() + secs;
    let urls: Vec<String> = replicas.iter().map(|r| r.url.clone()).collect();
    let next = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut clients = Vec::new();
    for _ in 0..32 {
        let (urls, next) = (urls.clone(), next.clone());
        clients.push(tokio::spawn(async move {
            let (mut admitted, mut slowest) = (0, Duration::ZERO);
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= n || Instant::now() >= end {
                    return (admitted, slowest);
                }
                let started = Instant::now();
                let r = client()
                    .post(format!("{}/api/chat", urls[i % urls.len()]))
                    .json(&json!({"model": "llama3.2", "stream": false,
                        "messages": [{"role": "user", "content": "hi"}]}))
                    .send();
                let r = tokio::time::timeout(Duration::from_secs(10), r)
                    .await
                    .expect("a request hung")
                    .unwrap();
                slowest = slowest.max(started.elapsed());
                match r.status().as_u16() {
                    200 => admitted += 1,
                    429 => {}
                    other => panic!("status {other}"),
                }
            }
        }));
    }
    let mut total = (0, Duration::ZERO);
    for c in clients {
        let (a, s) = c.await.unwrap();
        total = (total.0 + a, total.1.max(s));
    }
    total
}

/// 32 concurrent clients on two replicas with a healthy store: a loaded
/// replica's own scheduling delay is no store outage, and the limit holds
/// to the request: the burst, and what refilled while the rounds ran.
#[tokio::test]
async fn thirty_a_minute_hold_under_concurrent_load_on_two_replicas() {
    bounded(120, async {
        let redis = Redis::start().await;
        let fake = FakeOllama::builder().start().await;
        let policies = tempfile::tempdir().unwrap();
        let limited = "defaults:\n  rate_limit: {requests_per_minute: 30}\n";
        write_policy(policies.path(), "10-limits.yaml", limited);
        let a = replica_default(&fake, &redis, policies.path()).await;
        let b = replica_default(&fake, &redis, policies.path()).await;
        // The burst of 30, then half a request a second: a loaded machine
        // makes the rounds slower, and what refilled meanwhile is admitted
        // too, never more.
        let started = Instant::now();
        let mut total = 0;
        for round in 0..2 {
            let (admitted, _) = load(&[&a, &b], 200, Duration::from_secs(30)).await;
            total += admitted;
            let refilled = (started.elapsed().as_secs_f64() / 2.0).ceil() as usize;
            if round == 0 {
                assert!(admitted >= 30, "round {round}: {admitted}");
            }
            assert!(
                total <= 30 + refilled + 1,
                "round {round}: {total} in all after {:?}",
                started.elapsed()
            );
        }
        for augur in [&a, &b] {
            assert_eq!(metric(augur, "augur_limit_store_local_total").await, 0.0);
            assert_eq!(metric(augur, "augur_limit_store_up").await, 1.0);
        }
    })
    .await;
}

/// A store that stalls (`DEBUG SLEEP`) under concurrent load on two
/// replicas: no request waits past the store's timeout for it, and while it
/// is away each replica counts in its own buckets, so no more than the
/// store's limit plus each replica's is admitted.
#[tokio::test]
async fn a_stalled_store_under_load_keeps_the_limits_and_never_hangs() {
    bounded(120, async {
        let redis = Redis::start().await;
        let fake = FakeOllama::builder().start().await;
        let policies = tempfile::tempdir().unwrap();
        let limited = "defaults:\n  rate_limit: {requests_per_minute: 30}\n";
        write_policy(policies.path(), "10-limits.yaml", limited);
        let a = replica_default(&fake, &redis, policies.path()).await;
        let b = replica_default(&fake, &redis, policies.path()).await;
        let url = redis.url();
        let stall = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            let client = redis::Client::open(url).unwrap();
            let mut conn = client.get_multiplexed_async_connection().await.unwrap();
            let _: redis::RedisResult<String> = redis::cmd("DEBUG")
                .arg("SLEEP")
                .arg("1.5")
                .query_async(&mut conn)
                .await;
        });
        let (admitted, slowest) = load(&[&a, &b], 20_000, Duration::from_millis(2500)).await;
        stall.await.unwrap();
        // The store's 30 and each replica's own 30, and what refills
        // meanwhile: never uncounted.
        assert!(admitted <= 94, "{admitted} admitted against 30/min");
        assert!(admitted >= 30, "{admitted}");
        assert!(slowest < Duration::from_secs(3), "{slowest:?}");
    })
    .await;
}

/// A non-streaming chat through `augur`; the status, and the response.
async fn chat(augur: &Process, key: Option<&str>) -> reqwest::Response {
    let mut req = client()
        .post(format!("{}/api/chat", augur.url))
        .json(&json!({
            "model": "llama3.2", "stream": false,
            "messages": [{"role": "user", "content": "hi"}]
        }));
    if let Some(key) = key {
        req = req.bearer_auth(key);
    }
    tokio::time::timeout(Duration::from_secs(5), req.send())
        .await
        .expect("a request hung")
        .unwrap()
}

fn header(r: &reqwest::Response, name: &str) -> u64 {
    r.headers()[name].to_str().unwrap().parse().unwrap()
}

async fn get_text(url: String) -> (u16, String) {
    let r = client().get(url).send().await.unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

/// A metric's value in `augur`'s `/metrics` (0 when absent).
async fn metric(augur: &Process, name: &str) -> f64 {
    let (_, text) = get_text(format!("{}/metrics", augur.admin)).await;
    text.lines()
        .filter(|l| l.starts_with(name) && !l.starts_with('#'))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Poll `cond` every 50 ms for up to `secs`.
async fn eventually<F: std::future::Future<Output = bool>>(
    what: &str,
    secs: u64,
    mut cond: impl FnMut() -> F,
) {
    let start = Instant::now();
    while !cond().await {
        assert!(
            start.elapsed() < Duration::from_secs(secs),
            "not within {secs} s: {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn ten_a_minute_hold_across_two_replicas_and_a_restart() {
    bounded(90, async {
        let redis = Redis::start().await;
        let fake = FakeOllama::builder().start().await;
        let policies = tempfile::tempdir().unwrap();
        write_policy(
            policies.path(),
            "10-limits.yaml",
            "defaults:\n  rate_limit: {requests_per_minute: 10}\n",
        );
        let a = replica(&fake, &redis, policies.path()).await;
        let b = replica(&fake, &redis, policies.path()).await;

        // Six requests alternate between the replicas: one count.
        for i in 0..6u64 {
            let augur = if i % 2 == 0 { &a } else { &b };
            let r = chat(augur, None).await;
            assert_eq!(r.status(), 200, "request {i}");
            assert_eq!(header(&r, "ratelimit-limit"), 10);
            assert_eq!(header(&r, "ratelimit-remaining"), 9 - i);
        }
        // A restarted replica finds the counters where they were.
        drop(a);
        let a = replica(&fake, &redis, policies.path()).await;
        for i in 6..10u64 {
            let augur = if i % 2 == 0 { &a } else { &b };
            let r = chat(augur, None).await;
            assert_eq!(r.status(), 200, "request {i}");
            assert_eq!(header(&r, "ratelimit-remaining"), 9 - i);
        }
        // The 11th is refused whichever replica gets it.
        for augur in [&a, &b] {
            let r = chat(augur, None).await;
            assert_eq!(r.status(), 429);
            let retry = header(&r, "retry-after");
            assert!((1..=6).contains(&retry), "one request every 6 s: {retry}");
            assert_eq!(header(&r, "ratelimit-remaining"), 0);
        }
        assert_eq!(fake.requests("/api/chat"), 10);
    })
    .await;
}

#[tokio::test]
async fn a_token_budget_is_spent_on_either_replica() {
    bounded(60, async {
        let redis = Redis::start().await;
        let fake = FakeOllama::builder().start().await;
        let policies = tempfile::tempdir().unwrap();
        let policy = format!(
            "auth:\n  keys:\n    - {{id: team, key_sha256: {}, rate_limit: {{tokens_per_minute: 30}}}}\n",
            sha256_hex("team-secret")
        );
        write_policy(policies.path(), "10-limits.yaml", &policy);
        let a = replica(&fake, &redis, policies.path()).await;
        let b = replica(&fake, &redis, policies.path()).await;

        // Each answer reports 22 tokens: one on each replica spends 44 of 30.
        for augur in [&a, &b] {
            let r = chat(augur, Some("team-secret")).await;
            assert_eq!(r.status(), 200);
            let body: serde_json::Value = r.json().await.unwrap();
            let tokens = body["prompt_eval_count"].as_u64().unwrap()
                + body["eval_count"].as_u64().unwrap();
            assert!((16..30).contains(&tokens), "{body}");
            // The charge follows the answer.
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        for augur in [&a, &b] {
            let r = chat(augur, Some("team-secret")).await;
            assert_eq!(r.status(), 429);
            let retry = header(&r, "retry-after");
            // At least 14 in debt at half a token a second.
            assert!((28..=62).contains(&retry), "{retry}");
        }
        // Another principal has its own budget (none here).
        assert_eq!(chat(&a, None).await.status(), 200);
    })
    .await;
}

#[tokio::test]
async fn a_store_outage_gets_on_store_error_and_never_hangs() {
    bounded(120, async {
        let mut redis = Redis::start().await;
        let fake = FakeOllama::builder().start().await;
        let policies = tempfile::tempdir().unwrap();
        let limited = "defaults:\n  rate_limit: {requests_per_minute: 2}\n";
        write_policy(policies.path(), "10-limits.yaml", limited);
        let a = replica(&fake, &redis, policies.path()).await;
        let b = replica(&fake, &redis, policies.path()).await;
        let (status, ready) = get_text(format!("{}/-/ready", a.admin)).await;
        assert_eq!(status, 200);
        assert!(
            ready.contains(&format!("limit store 127.0.0.1:{}: up", redis.port)),
            "{ready}"
        );
        assert_eq!(metric(&a, "augur_limit_store_up").await, 1.0);

        redis.stop().await;
        // allow (the default): each replica counts in its own buckets, at
        // once.
        for (augur, want) in [(&a, 200), (&b, 200), (&a, 200), (&b, 200), (&a, 429)] {
            let started = Instant::now();
            let r = chat(augur, None).await;
            assert_eq!(r.status(), want);
            assert_eq!(header(&r, "ratelimit-limit"), 2);
            assert!(
                started.elapsed() < Duration::from_secs(1),
                "{:?}",
                started.elapsed()
            );
        }
        assert!(metric(&a, "augur_limit_store_local_total").await >= 3.0);
        for augur in [&a, &b] {
            eventually("readiness shows the store down", 5, || async {
                let (status, ready) = get_text(format!("{}/-/ready", augur.admin)).await;
                assert_eq!(status, 200, "the proxy stays in service");
                ready.contains(": down (")
            })
            .await;
            assert_eq!(metric(augur, "augur_limit_store_up").await, 0.0);
            assert!(metric(augur, "augur_limit_store_errors_total").await >= 1.0);
        }

        // deny: 503 with Retry-After, at once, on both replicas.
        write_policy(
            policies.path(),
            "10-limits.yaml",
            &format!("{limited}limits:\n  on_store_error: deny\n"),
        );
        for augur in [&a, &b] {
            eventually("the deny policy is active", 10, || async {
                chat(augur, None).await.status() == 503
            })
            .await;
            let started = Instant::now();
            let r = chat(augur, None).await;
            assert_eq!(r.status(), 503);
            assert_eq!(header(&r, "retry-after"), 1);
            assert!(started.elapsed() < Duration::from_secs(1));
            let body: serde_json::Value = r.json().await.unwrap();
            assert!(
                body["error"].as_str().unwrap().contains("unavailable"),
                "{body}"
            );
        }

        // The store is back: both replicas reconnect and share it again.
        redis.restart().await;
        for augur in [&a, &b] {
            eventually("reconnected", 15, || async {
                let (_, ready) = get_text(format!("{}/-/ready", augur.admin)).await;
                ready.contains(": up")
            })
            .await;
        }
        // Each worker thread reconnects on its own, within its backoff
        // (at most 2.5 s).
        tokio::time::sleep(Duration::from_secs(3)).await;
        for augur in [&a, &b] {
            assert_eq!(metric(augur, "augur_limit_store_up").await, 1.0);
        }
        assert_eq!(chat(&a, None).await.status(), 200);
        assert_eq!(chat(&b, None).await.status(), 200);
        assert_eq!(chat(&a, None).await.status(), 429);
        assert_eq!(chat(&b, None).await.status(), 429);
    })
    .await;
}

#[tokio::test]
async fn a_tls_store_is_used_only_with_a_trusted_certificate() {
    bounded(90, async {
        let redis = Redis::start_tls().await;
        let fake = FakeOllama::builder().start().await;
        let policies = tempfile::tempdir().unwrap();
        let limited = "defaults:\n  rate_limit: {requests_per_minute: 2}\n";
        write_policy(policies.path(), "10-limits.yaml", limited);
        let ca = redis.ca.clone().unwrap();
        let ca = ca.to_str().unwrap();

        // The store's CA trusted (as a system CA would be): limits hold.
        let a = replica_with(&fake, &redis, policies.path(), vec![("SSL_CERT_FILE", ca)]).await;
        let (_, ready) = get_text(format!("{}/-/ready", a.admin)).await;
        assert!(ready.contains(": up"), "{ready}");
        for remaining in [1, 0] {
            let r = chat(&a, None).await;
            assert_eq!(r.status(), 200);
            assert_eq!(header(&r, "ratelimit-remaining"), remaining);
        }
        assert_eq!(chat(&a, None).await.status(), 429);

        // Not trusted: no connection, and the store counts as down.
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("none.pem");
        std::fs::write(&empty, "").unwrap();
        let b = replica_with(
            &fake,
            &redis,
            policies.path(),
            vec![
                ("SSL_CERT_FILE", empty.to_str().unwrap()),
                ("SSL_CERT_DIR", "/nonexistent"),
            ],
        )
        .await;
        let (_, ready) = get_text(format!("{}/-/ready", b.admin)).await;
        assert!(ready.contains(": down"), "{ready}");
        assert_eq!(metric(&b, "augur_limit_store_up").await, 0.0);
        // on_store_error: allow (the default) admits, counted in the
        // replica's own buckets.
        let r = chat(&b, None).await;
        assert_eq!(r.status(), 200);
        assert!(metric(&b, "augur_limit_store_local_total").await >= 1.0);
    })
    .await;
}
