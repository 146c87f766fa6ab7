//! What is sent again and what is not: once at most, on a new connection,
//! only for a connection taken from the pool, never after a byte of the
//! answer, and after it was written only when augur holds the body and it
//! changes no model.

use serde_json::json;

use crate::common::{self, Augur, client};

use super::{
    chat,
    servers::{self, Act, Between, Upstream},
};

/// augur in-process (nothing opened ahead) in front of an upstream run by
/// `script`.
async fn scripted(script: fn(usize, usize) -> Act) -> (Upstream, Augur) {
    let upstream = servers::start(Between::Scripted(script)).await;
    let augur = common::start_with(&upstream.url, |_| {}).await;
    (upstream, augur)
}

/// POST `body` to augur's `path`; the status.
async fn post(augur: &Augur, path: &str, body: &serde_json::Value) -> u16 {
    let r = common::post(augur, path, body).await;
    let status = r.status().as_u16();
    let _ = r.bytes().await;
    status
}

/// `augur_upstream_resends_total` for `upstream` and `reason`.
fn resends(upstream: &Upstream, reason: &str) -> f64 {
    let name = upstream.url.trim_start_matches("http://");
    let labels = [
        format!("upstream=\"{name}\""),
        format!("reason=\"{reason}\""),
    ];
    let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
    let text = common::metrics().render();
    common::metric(&text, "augur_upstream_resends_total", &labels)
}

/// The first request of each connection is answered, the others dropped.
fn answer_first(_: usize, n: usize) -> Act {
    if n == 0 { Act::Answer } else { Act::Drop }
}

#[tokio::test]
async fn a_request_the_upstream_dropped_on_a_kept_connection_is_sent_again_once() {
    common::metrics();
    // Only the first connection's first request is answered.
    let (upstream, augur) = scripted(|c, n| {
        if (c, n) == (0, 0) {
            Act::Answer
        } else {
            Act::Drop
        }
    })
    .await;
    assert_eq!(post(&augur, "/api/chat", &chat()).await, 200);
    assert_eq!(post(&augur, "/api/chat", &chat()).await, 502);
    let seen = &upstream.seen;
    assert_eq!(
        (seen.received(), seen.accepted()),
        (3, 2),
        "sent again once, on a new connection"
    );
    assert_eq!(resends(&upstream, "unanswered"), 1.0);
}

#[tokio::test]
async fn a_request_on_a_kept_connection_the_upstream_closed_is_answered() {
    common::metrics();
    let (upstream, augur) = scripted(answer_first).await;
    for _ in 0..3 {
        assert_eq!(post(&augur, "/api/chat", &chat()).await, 200);
    }
    let seen = &upstream.seen;
    // The first connection answered one; each next one was dropped on a
    // kept connection and answered on a new one.
    assert_eq!((seen.received(), seen.answered()), (5, 3));
    assert_eq!(resends(&upstream, "unanswered"), 2.0);
    // A bodiless GET too.
    let r = client()
        .get(format!("{}/api/version", augur.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(resends(&upstream, "unanswered"), 3.0);
}

#[tokio::test]
async fn a_failure_on_a_new_connection_is_not_sent_again() {
    let (upstream, augur) = scripted(|_, _| Act::Drop).await;
    assert_eq!(post(&augur, "/api/chat", &chat()).await, 502);
    assert_eq!((upstream.seen.received(), upstream.seen.accepted()), (1, 1));
}

#[tokio::test]
async fn an_answer_that_began_is_never_sent_again() {
    let (upstream, augur) = scripted(|_, n| if n == 0 { Act::Answer } else { Act::Cut }).await;
    assert_eq!(post(&augur, "/api/chat", &chat()).await, 200);
    assert_eq!(post(&augur, "/api/chat", &chat()).await, 502);
    assert_eq!((upstream.seen.received(), upstream.seen.accepted()), (2, 1));
}

#[tokio::test]
async fn a_streamed_body_is_not_sent_again_once_written() {
    let (upstream, augur) = scripted(answer_first).await;
    let r = client()
        .get(format!("{}/api/version", augur.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    // A blob upload streams through augur: its bytes are not held.
    let r = client()
        .post(format!("{}/api/blobs/sha256:{}", augur.url, "0".repeat(64)))
        .body("blob bytes")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 502);
    assert_eq!((upstream.seen.received(), upstream.seen.accepted()), (2, 1));
}

#[tokio::test]
async fn a_model_store_change_is_not_sent_again_once_written() {
    for (path, body) in [
        ("/api/pull", json!({"model": "m"})),
        ("/api/create", json!({"model": "m2", "from": "m"})),
        ("/api/copy", json!({"source": "m", "destination": "m2"})),
        ("/api/push", json!({"model": "m"})),
    ] {
        let (upstream, augur) = scripted(answer_first).await;
        assert_eq!(post(&augur, "/api/chat", &chat()).await, 200);
        assert_eq!(post(&augur, path, &body).await, 502, "{path}");
        assert_eq!(upstream.seen.received(), 2, "{path}");
    }
    let (upstream, augur) = scripted(answer_first).await;
    assert_eq!(post(&augur, "/api/chat", &chat()).await, 200);
    let r = client()
        .delete(format!("{}/api/delete", augur.url))
        .json(&json!({"model": "m"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 502);
    assert_eq!(upstream.seen.received(), 2);
}
