//! Retries of structured answers end to end against the fake Ollama: an
//! invalid answer is asked again with its violations, a cut-off one with
//! more tokens; still invalid after the last attempt is 422 naming the
//! JSON pointers, or with `on_failure: pass` the best attempt marked
//! invalid.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{
    formats::{
        ask_person, assert_person_answer, chat, person, scripted, scripted_with_policy,
        streamed_content,
    },
    header, ndjson, pair, post,
};
use serde_json::{Value, json};

#[tokio::test]
async fn an_invalid_answer_is_retried_with_its_violations() {
    let (fake, augur) = pair().await;
    let r = ask_person(&augur, "/api/chat", "invalid-then-valid", false).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-attempts"), Some("2"));
    let v: Value = r.json().await.unwrap();
    assert_person_answer(v["message"]["content"].as_str().unwrap());
    assert_eq!(fake.requests("/api/chat"), 2);
    let sent = fake.last_json("/api/chat").unwrap();
    let messages = sent["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3, "{messages:?}");
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(messages[1]["content"], r#"{"age":1}"#);
    assert_eq!(messages[2]["role"], "user");
    let feedback = messages[2]["content"].as_str().unwrap();
    assert!(feedback.contains("/name"), "{feedback}");

    // /api/generate: the feedback goes into the prompt.
    let r = ask_person(&augur, "/api/generate", "invalid-then-valid", false).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-attempts"), Some("2"));
    let prompt = fake.last_json("/api/generate").unwrap()["prompt"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        prompt.starts_with("Who?") && prompt.contains("/name"),
        "{prompt}"
    );
}

#[tokio::test]
async fn a_cut_off_answer_is_retried_with_more_tokens() {
    // `truncated` cuts `{"name":"x","age":1}` to `{"name":"x","`: closing it
    // still misses "age", so augur asks again with a larger num_predict.
    let (fake, augur) = pair().await;
    let mut body = chat("truncated", person(), false);
    body["options"] = json!({"num_predict": 100, "temperature": 0});
    let r = post(&augur, "/api/chat", &body).await;
    assert_eq!(r.status(), 422);
    let error = r.json::<Value>().await.unwrap()["error"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        error.contains("after 2 attempts") && error.contains("/age"),
        "{error}"
    );
    assert_eq!(fake.requests("/api/chat"), 2);
    let sent = fake.last_json("/api/chat").unwrap();
    assert_eq!(
        sent["options"],
        json!({"num_predict": 200, "temperature": 0})
    );
    let feedback = sent["messages"][2]["content"].as_str().unwrap();
    assert!(feedback.contains("cut off"), "{feedback}");

    // Without a client limit, the default is raised.
    let r = ask_person(&augur, "/api/generate", "truncated", false).await;
    assert_eq!(r.status(), 422);
    let sent = fake.last_json("/api/generate").unwrap();
    assert_eq!(sent["options"]["num_predict"], 1024);
}

#[tokio::test]
async fn still_invalid_after_the_last_attempt_is_422_with_pointers() {
    let bad = r#"{"name": {"first": "Ann"}}"#;
    let (fake, augur) = scripted("scripted", &[bad, bad, bad, bad]).await;
    for stream in [false, true] {
        let r = ask_person(&augur, "/api/chat", "scripted", stream).await;
        assert_eq!(r.status(), 422, "stream {stream}");
        let v: Value = r.json().await.unwrap();
        let error = v["error"].as_str().unwrap();
        assert!(error.contains("after 2 attempts"), "{error}");
        assert!(error.contains("/name"), "{error}");
        assert!(error.contains("/age"), "{error}");
    }
    assert_eq!(fake.requests("/api/chat"), 4);
}

#[tokio::test]
async fn on_failure_pass_returns_the_best_attempt_marked_invalid() {
    let bad = r#"{"name": "Ann"}"#;
    let yaml = "defaults:\n  validate: {on_failure: pass}\n";
    let (_fake, augur) = scripted_with_policy("scripted", &[bad; 4], yaml).await;
    let r = ask_person(&augur, "/api/chat", "scripted", false).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-validation"), Some("invalid"));
    assert_eq!(header(&r, "x-augur-attempts"), Some("2"));
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["message"]["content"], bad);

    let r = ask_person(&augur, "/api/generate", "scripted", true).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-validation"), Some("invalid"));
    let chunks = ndjson(&r.text().await.unwrap());
    assert_eq!(streamed_content(&chunks), bad);
    assert_eq!(chunks.last().unwrap()["done"], true);
}
