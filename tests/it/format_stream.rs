//! Streamed structured answers end to end against the fake Ollama: a
//! schema stream is buffered, repaired and retried before anything is
//! sent; with `stream: pass`, and for JSON mode by default, it streams as
//! it comes and the done chunk reports whether the answer was valid.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{
    formats::{ask_person, assert_person_answer, chat, scripted_with_policy, streamed_content},
    header, ndjson, pair, post,
};
use serde_json::json;

#[tokio::test]
async fn a_schema_stream_is_buffered_by_default() {
    let (fake, augur) = pair().await;
    for path in ["/api/chat", "/api/generate"] {
        let r = ask_person(&augur, path, "bad-json", true).await;
        assert_eq!(r.status(), 200);
        assert_eq!(header(&r, "content-type"), Some("application/x-ndjson"));
        assert!(header(&r, "x-augur-repaired").is_some(), "{path}");
        let chunks = ndjson(&r.text().await.unwrap());
        assert_eq!(chunks.len(), 2, "{path}: {chunks:?}");
        assert_eq!(chunks[0]["done"], false);
        assert_eq!(chunks[1]["done"], true);
        assert_eq!(chunks[1]["done_reason"], "stop");
        assert_person_answer(&streamed_content(&chunks));
        assert_eq!(fake.last_json(path).unwrap()["stream"], false);
    }
}

#[tokio::test]
async fn a_buffered_stream_is_retried_before_anything_is_sent() {
    let (_fake, augur) = pair().await;
    let r = ask_person(&augur, "/api/chat", "invalid-then-valid", true).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-attempts"), Some("2"));
    let chunks = ndjson(&r.text().await.unwrap());
    assert_person_answer(&streamed_content(&chunks));
}

#[tokio::test]
async fn stream_pass_reports_the_outcome_in_the_done_chunk() {
    let bad = r#"{"name": "Ann"}"#;
    let yaml = "defaults:\n  validate: {stream: pass}\n";
    let (fake, augur) = scripted_with_policy("scripted", &[bad], yaml).await;

    let r = ask_person(&augur, "/api/chat", "llama3.2", true).await;
    assert_eq!(r.status(), 200);
    let chunks = ndjson(&r.text().await.unwrap());
    assert!(chunks.len() > 2, "streamed as it came: {chunks:?}");
    assert_eq!(fake.last_json("/api/chat").unwrap()["stream"], true);
    let last = chunks.last().unwrap();
    assert_eq!(last["augur_validation"], "valid");
    assert!(
        chunks[..chunks.len() - 1]
            .iter()
            .all(|c| c.get("augur_validation").is_none())
    );

    let r = ask_person(&augur, "/api/generate", "scripted", true).await;
    assert_eq!(r.status(), 200);
    let chunks = ndjson(&r.text().await.unwrap());
    assert_eq!(streamed_content(&chunks), bad);
    let last = chunks.last().unwrap();
    assert_eq!(last["augur_validation"], "invalid");
    let violations = last["augur_violations"].as_str().unwrap();
    assert!(violations.contains("/age"), "{violations}");
}

#[tokio::test]
async fn json_mode_streams_pass_by_default() {
    let (fake, augur) = pair().await;
    let r = post(&augur, "/api/chat", &chat("llama3.2", json!("JSON"), true)).await;
    assert_eq!(r.status(), 200);
    let chunks = ndjson(&r.text().await.unwrap());
    assert!(chunks.len() > 2, "{chunks:?}");
    assert_eq!(chunks.last().unwrap()["augur_validation"], "valid");
    let sent = fake.last_json("/api/chat").unwrap();
    assert_eq!(
        (sent["format"].clone(), sent["stream"].clone()),
        (json!("json"), json!(true))
    );
}
