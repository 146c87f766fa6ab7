//! Merged listings with a faulty upstream: one whose `/api/tags`,
//! `/api/ps` or `/v1/models` sends its head and then stalls, or trickles
//! its body forever, is left out once `upstream.listing_timeout_ms` has
//! passed, and the healthy upstream's models answer.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::{Duration, Instant};

use augur::{app::AppState, config::Config, policy::Policy};
use common::{Augur, client, named};
use fake_ollama::{FakeOllama, ListingFault};
use serde_json::Value;

/// The listing timeout the tests configure.
const LISTING_TIMEOUT: Duration = Duration::from_millis(300);
/// Longest a merged listing may take here (the timeout, and slack for a
/// loaded machine).
const ANSWER_WITHIN: Duration = Duration::from_secs(3);

/// A faulty upstream (listed first) and a healthy one behind augur.
async fn fleet(fault: ListingFault) -> (FakeOllama, FakeOllama, Augur) {
    let faulty = FakeOllama::builder()
        .models(&["qwen3"])
        .loaded(&["qwen3"])
        .listing_fault(fault)
        .start()
        .await;
    let healthy = FakeOllama::builder()
        .models(&["llama3.2", "gemma3"])
        .loaded(&["gemma3"])
        .start()
        .await;
    let config = Config {
        upstreams: named(&[("faulty", &faulty.url()), ("healthy", &healthy.url())]),
        drain_timeout: Duration::from_secs(5),
        listing_timeout: LISTING_TIMEOUT,
        ..Config::default()
    };
    let state = AppState::new(config, Policy::permissive(), None).unwrap();
    let augur = common::start_state(state).await;
    (faulty, healthy, augur)
}

/// `GET path` through augur, answered in whole within [`ANSWER_WITHIN`]:
/// the `id` of each entry under `key`.
async fn listed(augur: &Augur, path: &str, key: &str, id: &str) -> Vec<String> {
    let started = Instant::now();
    let ask = async {
        let r = client()
            .get(format!("{}{path}", augur.url))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{path}");
        r.json::<Value>().await.unwrap()
    };
    let v = tokio::time::timeout(ANSWER_WITHIN, ask)
        .await
        .unwrap_or_else(|_| panic!("{path}: no answer within {ANSWER_WITHIN:?}"));
    assert!(started.elapsed() >= LISTING_TIMEOUT, "{path}: {v}");
    v[key]
        .as_array()
        .unwrap_or_else(|| panic!("{path}: {v}"))
        .iter()
        .map(|e| e[id].as_str().unwrap().to_string())
        .collect()
}

async fn tags_leave_out(fault: ListingFault) {
    let (faulty, _healthy, augur) = fleet(fault).await;
    let names = listed(&augur, "/api/tags", "models", "name").await;
    assert_eq!(names, ["llama3.2:latest", "gemma3:latest"]);
    assert_eq!(faulty.requests("/api/tags"), 1);
}

async fn ps_leaves_out(fault: ListingFault) {
    let (faulty, _healthy, augur) = fleet(fault).await;
    let names = listed(&augur, "/api/ps", "models", "name").await;
    assert_eq!(names, ["gemma3:latest"]);
    assert_eq!(faulty.requests("/api/ps"), 1);
}

async fn openai_models_leave_out(fault: ListingFault) {
    let (faulty, _healthy, augur) = fleet(fault).await;
    let ids = listed(&augur, "/v1/models", "data", "id").await;
    assert_eq!(ids, ["llama3.2:latest", "gemma3:latest"]);
    assert_eq!(faulty.requests("/v1/models"), 1);
}

#[tokio::test]
async fn tags_leave_out_an_upstream_that_stalls_after_its_headers() {
    tags_leave_out(ListingFault::StallAfterHead).await;
}

#[tokio::test]
async fn tags_leave_out_an_upstream_that_trickles_its_body() {
    tags_leave_out(ListingFault::Trickle).await;
}

#[tokio::test]
async fn ps_leaves_out_an_upstream_that_stalls_after_its_headers() {
    ps_leaves_out(ListingFault::StallAfterHead).await;
}

#[tokio::test]
async fn ps_leaves_out_an_upstream_that_trickles_its_body() {
    ps_leaves_out(ListingFault::Trickle).await;
}

#[tokio::test]
async fn openai_models_leave_out_an_upstream_that_stalls_after_its_headers() {
    openai_models_leave_out(ListingFault::StallAfterHead).await;
}

#[tokio::test]
async fn openai_models_leave_out_an_upstream_that_trickles_its_body() {
    openai_models_leave_out(ListingFault::Trickle).await;
}

#[tokio::test]
async fn the_faulty_listings_still_send_their_head_at_once() {
    // The fault shapes themselves: a 200 head at once, then a body that
    // does not end.
    for fault in [ListingFault::StallAfterHead, ListingFault::Trickle] {
        let fake = FakeOllama::builder().listing_fault(fault).start().await;
        for path in ["/api/tags", "/api/ps", "/v1/models"] {
            let r = tokio::time::timeout(
                Duration::from_secs(2),
                client().get(format!("{}{path}", fake.url())).send(),
            )
            .await
            .unwrap()
            .unwrap();
            assert_eq!(r.status(), 200, "{fault:?} {path}");
            let body = tokio::time::timeout(Duration::from_millis(400), r.bytes()).await;
            assert!(body.is_err(), "{fault:?} {path}: the body ended");
        }
    }
}
