//! Admission through a shared store (a real `redis-server`): exact
//! `RateLimit-*` and `Retry-After` values, all-or-nothing across scopes,
//! shared state between two `Limits` (two replicas), reservations settled
//! by the charge, and `on_store_error`.

use std::{
    net::{IpAddr, Ipv4Addr},
    time::Duration,
};

use http::StatusCode;

use super::super::{error::Scope, shared::keys::key_for, shared::tests::Server, *};
use crate::policy::{Policy, load_dir};

const IP: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));

fn policy(yaml: &str) -> Policy {
    let p = tempfile::tempdir().unwrap();
    std::fs::write(p.path().join("p.yaml"), yaml).unwrap();
    load_dir(p.path(), p.path()).unwrap()
}

async fn replica(server: &Server) -> Limits {
    let l = Limits::with_redis(&server.url(), "augur", Duration::from_millis(250)).unwrap();
    l.start(Duration::from_secs(5)).await;
    l
}

async fn admit(
    l: &Limits,
    p: &Policy,
    model: &str,
    estimate: u64,
) -> Result<Admission, LimitError> {
    let name = crate::policy::normalize_model_name(model);
    let mp = p.models.resolve_normalized(&name);
    l.admit(
        p,
        &Principal::anonymous(IP),
        Some((&name, &mp)),
        true,
        estimate,
    )
    .await
}

#[tokio::test]
async fn two_replicas_share_one_rate_limit_with_exact_headers() {
    let server = Server::start().await;
    let (a, b) = (replica(&server).await, replica(&server).await);
    let p = policy("defaults: {rate_limit: {requests_per_minute: 3}}\n");
    for (l, remaining) in [(&a, 2), (&b, 1), (&a, 0)] {
        let ok = admit(l, &p, "m", 0).await.unwrap();
        let info = ok.rate_info().unwrap();
        // 20 s per request: full again after (3 - remaining) of them.
        let reset = 20 * u64::from(3 - remaining);
        assert_eq!(
            (info.limit, info.remaining, info.reset_secs),
            (3, remaining, reset)
        );
    }
    let err = admit(&b, &p, "m", 0).await.unwrap_err();
    assert_eq!(err.status(), StatusCode::TOO_MANY_REQUESTS);
    let h = err.headers();
    let retry: u64 = h["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((19..=20).contains(&retry), "{retry}");
    assert_eq!(h["ratelimit-limit"], "3");
}

#[tokio::test]
async fn a_model_refusal_spends_nothing_of_the_principal_limit() {
    let server = Server::start().await;
    let l = replica(&server).await;
    let p = policy(
        "defaults: {rate_limit: {requests_per_minute: 3}}\nmodels: {\"gemma3:*\": {rate_limit: {requests_per_minute: 1}}}\n",
    );
    let ok = admit(&l, &p, "gemma3", 0).await.unwrap();
    assert_eq!(ok.rate_info().unwrap().remaining, 0, "the tighter limit");
    for _ in 0..3 {
        let err = admit(&l, &p, "gemma3:latest", 0).await.unwrap_err();
        assert!(matches!(
            err,
            LimitError::RateLimited {
                scope: Scope::Model,
                ..
            }
        ));
    }
    // Two of three left for other models: the refusals took none.
    let ok = admit(&l, &p, "qwen3", 0).await.unwrap();
    assert_eq!(ok.rate_info().unwrap().remaining, 1);
}

#[tokio::test]
async fn budgets_reserve_the_estimate_and_settle_the_answer() {
    let server = Server::start().await;
    let (a, b) = (replica(&server).await, replica(&server).await);
    let p = policy("defaults: {rate_limit: {tokens_per_minute: 600}}\n");
    let first = admit(&a, &p, "m", 100).await.unwrap();
    assert!(first.charges_tokens());
    // The answer cost 250: 150 more than reserved.
    first.charge_tokens(250);
    drop(first);
    // Refused by the concurrency queue or dropped uncharged: refunded.
    let second = admit(&b, &p, "m", 200).await.unwrap();
    drop(second);
    let mut balance = 0;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(10)).await;
        let store = b.shared.as_ref().unwrap();
        let key = key_for(
            "augur",
            &Principal::anonymous(IP).limiter_key(),
            "tokens",
            None,
        );
        balance = store.charge(&[(key, 600)], 0).await.unwrap()[0];
        if (350..=352).contains(&balance) {
            break;
        }
    }
    assert!((350..=352).contains(&balance), "{balance}");
    // Spent elsewhere, refused here.
    let third = admit(&a, &p, "m", 0).await.unwrap();
    third.charge_tokens(400);
    drop(third);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let err = admit(&b, &p, "m", 0).await.unwrap_err();
    assert!(matches!(
        err,
        LimitError::RateLimited {
            scope: Scope::Tokens,
            limit: 600,
            ..
        }
    ));
}

#[tokio::test]
async fn on_store_error_allows_or_denies() {
    let mut server = Server::start().await;
    let l = replica(&server).await;
    server.stop().await;
    let allow = policy("defaults: {rate_limit: {requests_per_minute: 1}}\n");
    let deny = policy(
        "defaults: {rate_limit: {requests_per_minute: 1}}\nlimits: {on_store_error: deny}\n",
    );
    // `allow`: the replica's own buckets hold the limit meanwhile.
    let ok = admit(&l, &allow, "m", 0).await.unwrap();
    assert!(ok.rate_info().is_some());
    for _ in 0..3 {
        let err = admit(&l, &allow, "m", 0).await.unwrap_err();
        assert!(matches!(err, LimitError::RateLimited { .. }), "{err:?}");
    }
    let err = admit(&l, &deny, "m", 0).await.unwrap_err();
    assert_eq!(err, LimitError::StoreUnavailable);
    assert_eq!(err.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(err.headers()["retry-after"], "1");
    // Nothing to ask the store: no refusal either way.
    let none = policy("limits: {on_store_error: deny}\n");
    assert!(admit(&l, &none, "m", 0).await.is_ok());
    assert!(!l.store_health().unwrap().up);
}

#[test]
fn weights_and_on_store_error_come_from_policies() {
    let p = policy(
        "auth: {keys: [{id: a, key_sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08, weight: 3}]}\nlimits: {on_store_error: deny}\n",
    );
    assert_eq!(p.auth.keys[0].weight, 3);
    assert_eq!(p.on_store_error, crate::policy::OnStoreError::Deny);
    let shown = crate::policy::show::effective(&p);
    assert_eq!(shown["limits"]["on_store_error"], "deny");
    assert_eq!(shown["auth"]["keys"][0]["weight"], 3);
    assert_eq!(
        policy("{}\n").on_store_error,
        crate::policy::OnStoreError::Allow
    );
    for bad in [
        "limits: {on_store_error: maybe}\n",
        "limits: {on_error: deny}\n",
        "auth: {keys: [{id: a, key_env: PATH, weight: 0}]}\n",
    ] {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("p.yaml"), bad).unwrap();
        assert!(load_dir(d.path(), d.path()).is_err(), "{bad}");
    }
}
