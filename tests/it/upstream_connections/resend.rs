//! A request written on a connection the upstream had already closed is
//! sent again on a new connection, with one upstream or several.

use std::time::Duration;

use crate::common;

use super::{
    at_once, config, one_by_one, serve_workers,
    servers::{self, Between},
};

/// How long the idle-closing upstreams keep an idle connection.
const KEEP_ALIVE: Duration = Duration::from_millis(200);

/// After the upstream closed every idle connection (those augur opened
/// ahead at start and those a burst left), each of `n` requests is
/// answered, one by one and then all at once.
async fn after_an_idle_spell(between: Between) {
    let upstream = servers::start(between).await;
    let augur = serve_workers(config(&upstream.url), 2).await;
    tokio::time::sleep(KEEP_ALIVE * 3).await;
    let mut failed = Vec::new();
    failed.push(one_by_one(&augur.url, 200).await.len());
    failed.push(at_once(&augur.url, 50).await.len());
    tokio::time::sleep(KEEP_ALIVE * 3).await;
    failed.push(at_once(&augur.url, 50).await.len());
    failed.push(one_by_one(&augur.url, 50).await.len());
    assert_eq!(
        failed,
        [0, 0, 0, 0],
        "failed of 200 one by one, 50 at once, after a second spell 50 at once, 50 one by one; \
         the upstream reset {}",
        upstream.seen.dropped()
    );
    assert_eq!(upstream.seen.answered(), 350, "each request answered once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_closes_idle_connections_answers_every_request() {
    after_an_idle_spell(Between::IdleClose(KEEP_ALIVE)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_resets_idle_connections_answers_every_request() {
    after_an_idle_spell(Between::IdleReset(KEEP_ALIVE)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_forgets_idle_connections_answers_every_request() {
    after_an_idle_spell(Between::Forget(KEEP_ALIVE)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_closes_connections_at_random_answers_every_request() {
    let upstream = servers::start(Between::Random { one_in: 3 }).await;
    let augur = serve_workers(config(&upstream.url), 2).await;
    let mut failed = one_by_one(&augur.url, 300).await.len();
    for _ in 0..6 {
        failed += at_once(&augur.url, 50).await.len();
    }
    assert_eq!(
        failed,
        0,
        "of 600 requests; the upstream closed {} connections with a request unanswered",
        upstream.seen.dropped()
    );
    assert_eq!(upstream.seen.answered(), 600, "each request answered once");
    assert!(
        upstream.seen.dropped() > 0,
        "requests met closing connections"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_upstreams_that_close_idle_connections_answer_without_failing_over() {
    let a = servers::start(Between::IdleClose(KEEP_ALIVE)).await;
    let b = servers::start(Between::Forget(KEEP_ALIVE)).await;
    let mut config = config(&a.url);
    config.upstreams = common::named(&[("closes-idle", &a.url), ("forgets-idle", &b.url)]);
    let augur = serve_workers(config, 2).await;
    tokio::time::sleep(KEEP_ALIVE * 3).await;
    assert_eq!(one_by_one(&augur.url, 100).await, Vec::<u16>::new());
    tokio::time::sleep(KEEP_ALIVE * 3).await;
    assert_eq!(at_once(&augur.url, 50).await, Vec::<u16>::new());
    let text = common::metrics().render();
    for name in ["closes-idle", "forgets-idle"] {
        let label = format!("upstream=\"{name}\"");
        let errors = common::metric(&text, "augur_upstream_errors_total", &[&label]);
        assert_eq!(errors, 0.0, "{name}: no failure counted");
    }
    assert_eq!(a.seen.answered() + b.seen.answered(), 150);
}
