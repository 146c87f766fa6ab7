//! Retry feedback end to end against the fake Ollama: a 10 KB runaway
//! answer goes back as an excerpt of at most 1 KiB, and the retry fits the
//! model's context (learned from `/api/show` and the request's `num_ctx`):
//! the feedback is shortened, then dropped, never the request itself.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{header, pair, post};
use serde_json::{Value, json};

fn note_schema() -> Value {
    json!({"type": "object", "properties": {
        "note": {"type": "string"},
        "done": {"type": "boolean"}
    }, "required": ["note", "done"]})
}

/// A `loop-string` request: the first answer runs away in `note` until
/// `num_predict` tokens of 4 characters (2600: 10.4 KB) cut it.
fn request(options: Value) -> Value {
    json!({"model": "loop-string", "stream": false, "format": note_schema(),
        "messages": [{"role": "user", "content": "Write a note."}], "options": options})
}

fn retry_messages(fake: &fake_ollama::FakeOllama) -> Vec<Value> {
    let sent = fake.last_json("/api/chat").unwrap();
    sent["messages"].as_array().unwrap().clone()
}

#[tokio::test]
async fn a_10_kb_cut_off_answer_goes_back_as_a_bounded_excerpt() {
    let (fake, augur) = pair().await;
    let r = post(&augur, "/api/chat", &request(json!({"num_predict": 2600}))).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-attempts"), Some("2"));
    let v: Value = r.json().await.unwrap();
    let answer: Value = serde_json::from_str(v["message"]["content"].as_str().unwrap()).unwrap();
    assert_eq!(
        answer["note"].as_str().unwrap().len(),
        512,
        "the grammar's bound"
    );

    let messages = retry_messages(&fake);
    assert_eq!(messages.len(), 3, "{messages:?}");
    assert_eq!(messages[0]["content"], "Write a note.");
    let excerpt = messages[1]["content"].as_str().unwrap();
    assert_eq!(messages[1]["role"], "assistant");
    assert!(excerpt.len() <= 1024, "{} bytes", excerpt.len());
    assert!(excerpt.starts_with(r#"{"note":"la la"#), "{excerpt}");
    let feedback = messages[2]["content"].as_str().unwrap();
    assert!(feedback.len() < 400, "{feedback}");
    assert!(feedback.contains("/note kept growing"), "{feedback}");
    // The context came from /api/show, through the capability cache.
    assert_eq!(fake.requests("/api/show"), 1);
    let r = post(&augur, "/api/chat", &request(json!({"num_predict": 2600}))).await;
    assert_eq!(r.status(), 200);
    assert_eq!(fake.requests("/api/show"), 1, "cached");
}

#[tokio::test]
async fn a_small_num_ctx_shortens_the_excerpt() {
    let (fake, augur) = pair().await;
    // 600 tokens, 300 kept for the answer: a 1 KiB excerpt (~340 tokens)
    // does not fit, a 256-byte one does.
    let options = json!({"num_predict": 2600, "num_ctx": 600});
    let r = post(&augur, "/api/chat", &request(options)).await;
    assert_eq!(r.status(), 200);
    let messages = retry_messages(&fake);
    assert_eq!(messages.len(), 3);
    let excerpt = messages[1]["content"].as_str().unwrap();
    assert!(excerpt.len() <= 256 && excerpt.len() > 64, "{excerpt}");
    assert!(
        messages[2]["content"]
            .as_str()
            .unwrap()
            .contains("kept growing")
    );
}

#[tokio::test]
async fn without_room_only_the_instruction_goes_with_the_request() {
    let (fake, augur) = pair().await;
    let options = json!({"num_predict": 2600, "num_ctx": 100});
    let r = post(&augur, "/api/chat", &request(options)).await;
    assert_eq!(r.status(), 200);
    let messages = retry_messages(&fake);
    assert_eq!(messages.len(), 2, "no excerpt: {messages:?}");
    assert_eq!(messages[0]["content"], "Write a note.");
    let feedback = messages[1]["content"].as_str().unwrap();
    assert_eq!(messages[1]["role"], "user");
    assert!(!feedback.contains("kept growing"), "{feedback}");
    assert!(
        feedback.contains("Answer again") && feedback.contains("at most"),
        "{feedback}"
    );
}
