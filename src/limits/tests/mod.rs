//! Unit tests: auth, rate limits, token budgets, concurrency, reload effects.

mod store;

use std::{
    net::{IpAddr, Ipv4Addr},
    time::{Duration, Instant},
};

use http::{HeaderMap, HeaderValue, StatusCode};
use sha2::{Digest, Sha256};

use super::{error::Scope, *};
use crate::policy::{Policy, load_dir};

const IP: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
const IP2: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2));

fn policy(yaml: &str) -> Policy {
    let p = tempfile::tempdir().unwrap();
    std::fs::write(p.path().join("p.yaml"), yaml).unwrap();
    load_dir(p.path(), p.path()).unwrap()
}

fn sha(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

fn keyed(rest: &str) -> Policy {
    policy(&format!(
        "auth:\n  required: true\n  keys:\n    - {{id: ci, key_sha256: {}, models: [\"gemma3:*\"]}}\n    - {{id: ops, key_sha256: {}}}\n{rest}",
        sha("s3cret-ci"),
        sha("s3cret-ops")
    ))
}

fn headers(name: &'static str, value: &str) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(name, HeaderValue::from_str(value).unwrap());
    h
}

fn anon() -> Principal {
    Principal::anonymous(IP)
}

async fn admit(
    l: &Limits,
    p: &Policy,
    who: &Principal,
    model: &str,
) -> Result<Admission, LimitError> {
    let name = crate::policy::normalize_model_name(model);
    check_model(p, who, &name)?;
    let mp = p.models.resolve_normalized(&name);
    l.admit(p, who, Some((&name, &mp)), true, 0).await
}

#[test]
fn bearer_and_x_api_key_authenticate() {
    let (l, p) = (Limits::new(), keyed(""));
    let who = l
        .authenticate(&p, &headers("authorization", "Bearer s3cret-ci"), IP)
        .unwrap();
    assert_eq!(who.key.as_deref(), Some("ci"));
    let who = l
        .authenticate(&p, &headers("authorization", "bearer s3cret-ops"), IP)
        .unwrap();
    assert_eq!(who.label(), "ops");
    let who = l
        .authenticate(&p, &headers("x-api-key", "s3cret-ops"), IP)
        .unwrap();
    assert_eq!(who.key.as_deref(), Some("ops"));
}

#[test]
fn missing_or_wrong_key_is_401() {
    let (l, p) = (Limits::new(), keyed(""));
    for h in [
        HeaderMap::new(),
        headers("authorization", "Bearer nope"),
        headers("x-api-key", ""),
    ] {
        let err = l.authenticate(&p, &h, IP).unwrap_err();
        assert_eq!(err.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(err.headers()["www-authenticate"], "Bearer");
        assert!(!err.message().contains("nope"));
    }
}

#[test]
fn optional_auth_ignores_unknown_keys() {
    let p = policy(&format!(
        "auth: {{keys: [{{id: ci, key_sha256: {}}}]}}\n",
        sha("k")
    ));
    let l = Limits::new();
    assert_eq!(
        l.authenticate(&p, &headers("authorization", "Bearer ollama"), IP)
            .unwrap(),
        anon()
    );
    assert_eq!(
        l.authenticate(&p, &HeaderMap::new(), IP)
            .unwrap()
            .limiter_key(),
        "ip:10.0.0.1"
    );
    assert_eq!(
        l.authenticate(&p, &headers("x-api-key", "k"), IP)
            .unwrap()
            .key
            .as_deref(),
        Some("ci")
    );
}

#[tokio::test]
async fn forbidden_model_is_403_even_for_uncounted_routes() {
    let (l, p) = (Limits::new(), keyed(""));
    let ci = l
        .authenticate(&p, &headers("x-api-key", "s3cret-ci"), IP)
        .unwrap();
    assert!(
        admit(&l, &p, &ci, "gemma3").await.is_ok(),
        "gemma3 = gemma3:latest"
    );
    let err = admit(&l, &p, &ci, "qwen3:8b").await.unwrap_err();
    assert_eq!(err.status(), StatusCode::FORBIDDEN);
    let err = check_model(&p, &ci, "qwen3:latest").unwrap_err();
    assert_eq!(err.status(), StatusCode::FORBIDDEN);
    let err = check_model(&p, &ci, "registry.ollama.ai/library/qwen3:latest");
    assert!(err.is_err());
    let ops = l
        .authenticate(&p, &headers("x-api-key", "s3cret-ops"), IP)
        .unwrap();
    assert!(admit(&l, &p, &ops, "qwen3:8b").await.is_ok());
}

#[test]
fn credentials_are_stripped() {
    let mut h = headers("authorization", "Bearer k");
    h.insert("x-api-key", HeaderValue::from_static("k"));
    h.insert("x-request-id", HeaderValue::from_static("r"));
    auth::strip_credentials(&mut h);
    assert_eq!(h.len(), 1);
}

#[tokio::test]
async fn rate_limit_429_with_retry_after_rounded_up() {
    let l = Limits::new();
    let p = policy("defaults: {rate_limit: {requests_per_minute: 1}}\n");
    let ok = admit(&l, &p, &anon(), "m").await.unwrap();
    let info = ok.rate_info().unwrap();
    assert_eq!((info.limit, info.remaining, info.reset_secs), (1, 0, 60));
    assert_eq!(ok.rate_headers()["ratelimit-remaining"], "0");
    let err = admit(&l, &p, &anon(), "m").await.unwrap_err();
    assert_eq!(err.status(), StatusCode::TOO_MANY_REQUESTS);
    let h = err.headers();
    assert_eq!(h["retry-after"], "60");
    assert_eq!(
        (&h["ratelimit-limit"], &h["ratelimit-remaining"]),
        (
            &"1".parse::<HeaderValue>().unwrap(),
            &"0".parse::<HeaderValue>().unwrap()
        )
    );
    assert_eq!(h["ratelimit-reset"], "60");
    // Another principal has its own budget.
    assert!(admit(&l, &p, &Principal::anonymous(IP2), "m").await.is_ok());
    // Uncounted routes are not limited.
    assert!(l.admit(&p, &anon(), None, false, 0).await.is_ok());

    // 120/min, burst 2: half a second per request, rounded up to 1.
    let p = policy("defaults: {rate_limit: {requests_per_minute: 120, burst: 2}}\n");
    let who = Principal::anonymous(IP2);
    assert_eq!(
        admit(&l, &p, &who, "m")
            .await
            .unwrap()
            .rate_info()
            .unwrap()
            .remaining,
        1
    );
    assert!(admit(&l, &p, &who, "m").await.is_ok());
    let err = admit(&l, &p, &who, "m").await.unwrap_err();
    assert_eq!(err.headers()["retry-after"], "1");
    assert_eq!(err.headers()["ratelimit-limit"], "2");
}

#[tokio::test]
async fn model_scope_is_per_principal_and_model_and_key_rate_replaces_defaults() {
    let l = Limits::new();
    let p = keyed(
        "defaults: {rate_limit: {requests_per_minute: 1}}\nmodels: {\"gemma3:*\": {rate_limit: {requests_per_minute: 1}}}\n",
    );
    let ops = l
        .authenticate(&p, &headers("x-api-key", "s3cret-ops"), IP)
        .unwrap();
    assert!(admit(&l, &p, &ops, "qwen3").await.is_ok());
    let err = admit(&l, &p, &ops, "qwen3").await.unwrap_err();
    assert!(matches!(
        err,
        LimitError::RateLimited {
            scope: Scope::Principal,
            ..
        }
    ));

    let p = keyed("models: {\"gemma3:*\": {rate_limit: {requests_per_minute: 1}}}\n");
    let ci = l
        .authenticate(&p, &headers("x-api-key", "s3cret-ci"), IP)
        .unwrap();
    assert!(admit(&l, &p, &ci, "gemma3").await.is_ok());
    let err = admit(&l, &p, &ci, "gemma3:latest").await.unwrap_err();
    assert!(matches!(
        err,
        LimitError::RateLimited {
            scope: Scope::Model,
            ..
        }
    ));
    assert!(
        admit(&l, &p, &ci, "gemma3:27b").await.is_ok(),
        "another model"
    );
    let ops = l
        .authenticate(&p, &headers("x-api-key", "s3cret-ops"), IP)
        .unwrap();
    assert!(
        admit(&l, &p, &ops, "gemma3").await.is_ok(),
        "another principal"
    );

    // A key's own rate_limit replaces the defaults for that key.
    let p = policy(&format!(
        "defaults: {{rate_limit: {{requests_per_minute: 1}}}}\nauth: {{keys: [{{id: big, key_sha256: {}, rate_limit: {{requests_per_minute: 100}}}}, {{id: free, key_sha256: {}, rate_limit: null}}]}}\n",
        sha("big"),
        sha("free")
    ));
    for key in ["big", "free"] {
        let who = l.authenticate(&p, &headers("x-api-key", key), IP).unwrap();
        for _ in 0..5 {
            assert!(admit(&l, &p, &who, "m").await.is_ok(), "{key}");
        }
    }
}

#[tokio::test]
async fn token_budget_blocks_until_refilled() {
    let l = Limits::new();
    let p = policy("defaults: {rate_limit: {tokens_per_minute: 600}}\n");
    let a = admit(&l, &p, &anon(), "m").await.unwrap();
    a.charge_tokens(500);
    assert!(admit(&l, &p, &anon(), "m").await.is_ok(), "100 left");
    let mp = p.models.resolve_normalized("m:latest");
    l.charge_tokens(&p, &anon(), Some(("m:latest", &mp)), 700);
    let err = admit(&l, &p, &anon(), "m").await.unwrap_err();
    assert!(matches!(
        err,
        LimitError::RateLimited {
            scope: Scope::Tokens,
            limit: 600,
            ..
        }
    ));
    // -600 at 10 tokens/s: about a minute.
    assert!(["60", "61"].contains(&err.headers()["retry-after"].to_str().unwrap()));
    assert!(admit(&l, &p, &Principal::anonymous(IP2), "m").await.is_ok());
    // Refills continuously: at 60000/min a 1000-token debt clears in about 1 s.
    let p = policy("defaults: {rate_limit: {tokens_per_minute: 60000}}\n");
    l.charge_tokens(&p, &anon(), None, 61_000);
    assert!(admit(&l, &p, &anon(), "m").await.is_err());
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert!(admit(&l, &p, &anon(), "m").await.is_ok());
}

#[tokio::test]
async fn concurrency_rejects_at_once_with_zero_timeout() {
    let l = Limits::new();
    let p =
        policy("models: {\"gemma3:*\": {concurrency: {max_in_flight: 1, queue_timeout_ms: 0}}}\n");
    let first = admit(&l, &p, &anon(), "gemma3").await.unwrap();
    assert!(first.holds_slot());
    let start = Instant::now();
    let err = admit(&l, &p, &anon(), "gemma3:latest").await.unwrap_err();
    assert!(start.elapsed() < Duration::from_millis(50));
    assert_eq!(err.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        err.message(),
        "server busy, please try again.  maximum pending requests exceeded"
    );
    assert!(
        admit(&l, &p, &anon(), "gemma3:27b").await.is_ok(),
        "per model name"
    );
    assert!(!admit(&l, &p, &anon(), "qwen3").await.unwrap().holds_slot());
    drop(first);
    assert!(admit(&l, &p, &anon(), "gemma3").await.is_ok());
}

#[tokio::test]
async fn concurrency_queues_up_to_the_timeout() {
    let l = Limits::new();
    let p = policy("defaults: {concurrency: {max_in_flight: 1, queue_timeout_ms: 200}}\n");
    let first = admit(&l, &p, &anon(), "m").await.unwrap();
    let start = Instant::now();
    let err = admit(&l, &p, &anon(), "m").await.unwrap_err();
    assert!(start.elapsed() >= Duration::from_millis(200));
    assert_eq!(err.status(), StatusCode::SERVICE_UNAVAILABLE);
    // Released while waiting: the queued request gets the slot.
    let release = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        drop(first);
    });
    let second = admit(&l, &p, &anon(), "m").await.unwrap();
    assert!(second.holds_slot());
    release.await.unwrap();
}

#[tokio::test]
async fn reload_keeps_unchanged_quotas_and_resets_changed_ones() {
    let l = Limits::new();
    let a = policy("defaults: {rate_limit: {requests_per_minute: 1}, think_emulation: true}\n");
    assert!(admit(&l, &a, &anon(), "m").await.is_ok());
    assert!(admit(&l, &a, &anon(), "m").await.is_err());
    // Same quota, other settings changed: still spent.
    let b = policy("defaults: {rate_limit: {requests_per_minute: 1}, think_emulation: false}\n");
    assert!(admit(&l, &b, &anon(), "m").await.is_err());
    // Changed quota: fresh.
    let c = policy("defaults: {rate_limit: {requests_per_minute: 2}}\n");
    assert!(admit(&l, &c, &anon(), "m").await.is_ok());

    // Concurrency: a changed max_in_flight applies to new requests.
    let one = policy("defaults: {concurrency: {max_in_flight: 1, queue_timeout_ms: 0}}\n");
    let held = admit(&l, &one, &anon(), "m").await.unwrap();
    assert!(admit(&l, &one, &anon(), "m").await.is_err());
    let two = policy("defaults: {concurrency: {max_in_flight: 2, queue_timeout_ms: 0}}\n");
    let _x = admit(&l, &two, &anon(), "m").await.unwrap();
    drop(held);
    l.housekeeping();
    assert!(admit(&l, &one, &anon(), "m").await.is_ok());
}
