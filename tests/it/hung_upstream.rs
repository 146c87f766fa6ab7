//! A hung upstream: a wedged runner behind a server that still answers
//! `/api/version`, `/api/tags` and `/api/ps`, so every probe says it is
//! healthy, while a generation never gets a first byte. The first request
//! that times out marks it stalled: it is ranked after the healthy
//! upstream (even with the model loaded there and not here) until it
//! serves again, and the request whose body augur holds is sent once more
//! to the healthy one. Sequential and concurrent requests then all reach
//! the healthy upstream; when the hung one serves again, it is back.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use augur::{app::AppState, config::Config, policy::Policy};
use common::{Augur, named, post};
use fake_ollama::FakeOllama;
use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_millis(300);

/// augur in front of `hung` (listed first, with the model loaded) and
/// `good`, probing every 100 ms.
async fn augur_for(hung: &FakeOllama, good: &FakeOllama) -> Augur {
    let config = Config {
        upstreams: named(&[("hung", &hung.url()), ("good", &good.url())]),
        drain_timeout: Duration::from_secs(5),
        health_interval: Duration::from_millis(100),
        first_byte_timeout: TIMEOUT,
        ..Config::default()
    };
    let state = AppState::new(config, Policy::permissive(), Some(common::metrics())).unwrap();
    let augur = common::start_state(state).await;
    let _monitor = augur
        .state
        .fleet
        .monitoring(augur.stopping())
        .map(tokio::spawn);
    // Both upstreams' models and loaded models known.
    let known = |i: usize| {
        let s = augur.state.fleet.status_json();
        s["upstreams"][i]["models_source"] == "tags"
            && s["upstreams"][i]["loaded_read_at"].is_string()
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !(known(0) && known(1)) {
        assert!(tokio::time::Instant::now() < deadline, "models not read");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    augur
}

fn chat(stream: bool) -> Value {
    json!({"model": "llama3.2", "stream": stream,
        "messages": [{"role": "user", "content": "hi"}]})
}

fn upstream(augur: &Augur, i: usize) -> Value {
    augur.state.fleet.status_json()["upstreams"][i].clone()
}

#[tokio::test]
async fn a_hung_upstream_that_answers_its_probes_stops_getting_requests() {
    common::live::bounded(30, async {
        let hung = FakeOllama::builder()
            .hung(true)
            .loaded(&["llama3.2"])
            .start()
            .await;
        let good = FakeOllama::builder().loaded(&["other"]).start().await;
        let augur = augur_for(&hung, &good).await;

        // The first request waits for the timeout, then is answered by the
        // healthy upstream; the hung one is stalled, yet probed healthy.
        let r = post(&augur, "/api/chat", &chat(false)).await;
        assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
        assert_eq!(hung.requests("/api/chat"), 1);
        assert_eq!(good.requests("/api/chat"), 1);
        tokio::time::sleep(Duration::from_millis(250)).await;
        let shown = upstream(&augur, 0);
        assert_eq!(shown["stalled"], true, "{shown}");
        assert_eq!(shown["healthy"], true, "{shown}");

        // Six sequential requests, whole and streamed: none waits for the
        // hung upstream.
        for i in 0..6 {
            let started = tokio::time::Instant::now();
            let r = post(&augur, "/api/chat", &chat(i % 2 == 0)).await;
            assert_eq!(r.status(), 200);
            let _ = r.text().await.unwrap();
            assert!(started.elapsed() < TIMEOUT, "request {i} waited");
        }
        // Eight concurrent.
        let all = (0..8).map(|i| {
            let augur = &augur;
            async move { post(augur, "/api/chat", &chat(i % 2 == 0)).await.status() }
        });
        let statuses = futures_util::future::join_all(all).await;
        assert!(statuses.iter().all(|s| *s == 200), "{statuses:?}");
        assert_eq!(hung.requests("/api/chat"), 1);
        assert_eq!(good.requests("/api/chat"), 1 + 6 + 8);

        // It serves again: a request that finds nothing else to go to
        // (pinned here) clears the stall, and it is back in the rotation.
        hung.set_hung(false);
        let r = common::client()
            .post(format!("{}/api/chat", augur.url))
            .header("x-augur-upstream", "hung")
            .json(&chat(false))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(upstream(&augur, 0)["stalled"], false);
        let r = post(&augur, "/api/chat", &chat(false)).await;
        assert_eq!(r.status(), 200);
        assert_eq!(
            hung.requests("/api/chat"),
            3,
            "loaded there: preferred again"
        );
    })
    .await;
}

/// With one upstream there is nowhere else to go: the client gets the 504
/// in its route's shape, after the timeout, and nothing hangs.
#[tokio::test]
async fn a_single_hung_upstream_answers_504_after_the_timeout() {
    common::live::bounded(30, async {
        let hung = FakeOllama::builder().hung(true).start().await;
        let augur = common::start_with(&hung.url(), |c| c.first_byte_timeout = TIMEOUT).await;
        for (path, stream) in [("/api/chat", false), ("/v1/chat/completions", true)] {
            let started = tokio::time::Instant::now();
            let r = post(&augur, path, &chat(stream)).await;
            assert_eq!(r.status(), 504, "{path}");
            assert!(started.elapsed() < TIMEOUT * 4, "{path}");
            let v: Value = r.json().await.unwrap();
            assert!(
                v["error"].is_string() || v["error"]["message"].is_string(),
                "{v}"
            );
        }
    })
    .await;
}
