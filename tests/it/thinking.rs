//! Thinking emulation end to end against the fake Ollama: `think` on a
//! model without the capability becomes a format of reasoning then answer,
//! returned as Ollama's `thinking` and content, whole or streamed as it is
//! produced, and an answer with a client schema is validated (and retried)
//! before it is sent.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{
    formats::{assert_grammar_safe, chat, generate, hostile_schema, person, scripted},
    header, ndjson, pair, post,
};
use serde_json::{Value, json};

const THOUGHT: &str = r#"{"reasoning": "Light scatters.", "answer": "Blue."}"#;

fn assert_think_format(sent: &Value) {
    assert!(sent.get("think").is_none(), "{sent}");
    let keys: Vec<&String> = sent["format"]["properties"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(keys, ["reasoning", "answer"], "reasoning first");
    assert_eq!(sent["format"]["required"], json!(["reasoning", "answer"]));
}

#[tokio::test]
async fn think_without_the_capability_is_emulated() {
    let (fake, augur) = scripted("gemma3", &[THOUGHT, THOUGHT]).await;
    let mut body = chat("gemma3", Value::Null, false);
    body["think"] = json!(true);
    let r = post(&augur, "/api/chat", &body).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-augur-emulated"), Some("thinking"));
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["message"]["thinking"], "Light scatters.");
    assert_eq!(v["message"]["content"], "Blue.");
    let sent = fake.last_json("/api/chat").unwrap();
    assert_think_format(&sent);
    assert_eq!(
        sent["format"]["properties"]["answer"],
        json!({"type": "string"})
    );

    let mut body = generate("gemma3", Value::Null, false);
    body["think"] = json!(true);
    let r = post(&augur, "/api/generate", &body).await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["thinking"], "Light scatters.");
    assert_eq!(v["response"], "Blue.");
    assert_think_format(&fake.last_json("/api/generate").unwrap());
}

#[tokio::test]
async fn emulated_thinking_with_a_schema_answers_the_schema() {
    let (fake, augur) = pair().await;
    let mut body = generate("gemma3", hostile_schema(), false);
    body["think"] = json!(true);
    let r = post(&augur, "/api/generate", &body).await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert!(v["thinking"].is_string(), "{v}");
    let answer: Value = serde_json::from_str(v["response"].as_str().unwrap()).unwrap();
    assert!(jsonschema::is_valid(&hostile_schema(), &answer), "{answer}");
    let sent = fake.last_json("/api/generate").unwrap();
    assert_think_format(&sent);
    assert_grammar_safe(&sent["format"]);
    assert_eq!(sent["format"]["properties"]["answer"]["type"], "object");
}

#[tokio::test]
async fn emulated_thinking_streams_as_it_is_produced() {
    let (_fake, augur) = scripted("gemma3", &[THOUGHT, THOUGHT]).await;
    for path in ["/api/chat", "/api/generate"] {
        let mut body = if path == "/api/chat" {
            chat("gemma3", Value::Null, true)
        } else {
            generate("gemma3", Value::Null, true)
        };
        body["think"] = json!(true);
        let r = post(&augur, path, &body).await;
        assert_eq!(r.status(), 200);
        let chunks = ndjson(&r.text().await.unwrap());
        let field = |c: &Value, k: &str| {
            c.get("message")
                .and_then(|m| m.get(k))
                .or_else(|| c.get(if k == "content" { "response" } else { k }))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let (last, deltas) = chunks.split_last().unwrap();
        let thinking: Vec<String> = deltas.iter().map(|c| field(c, "thinking")).collect();
        let content: Vec<String> = deltas.iter().map(|c| field(c, "content")).collect();
        assert_eq!(thinking.concat(), "Light scatters.", "{path}: {chunks:?}");
        assert_eq!(content.concat(), "Blue.", "{path}");
        // The thinking arrives in pieces, as the model writes it, and all
        // of it before the answer.
        let first_content = content.iter().position(|c| !c.is_empty()).unwrap();
        assert!(
            thinking[..first_content]
                .iter()
                .filter(|t| !t.is_empty())
                .count()
                > 1
        );
        assert!(thinking[first_content..].iter().all(String::is_empty));
        assert_eq!(last["done"], true);
        assert_eq!(field(last, "content"), "");
        assert_eq!(field(last, "thinking"), "");
    }
}

#[tokio::test]
async fn a_streamed_thinking_answer_with_a_schema_is_validated_before_it_is_sent() {
    let bad = r#"{"reasoning": "Counting.", "answer": {"name": "x"}}"#;
    let good = r#"{"reasoning": "Counting again.", "answer": {"name": "x", "age": 3}}"#;
    let (fake, augur) = scripted("gemma3", &[bad, good]).await;
    let mut body = chat("gemma3", person(), true);
    body["think"] = json!(true);
    let r = post(&augur, "/api/chat", &body).await;
    assert_eq!(r.status(), 200);
    let chunks = ndjson(&r.text().await.unwrap());
    let thinking: String = chunks
        .iter()
        .filter_map(|c| c["message"]["thinking"].as_str())
        .collect();
    let content: String = chunks
        .iter()
        .filter_map(|c| c["message"]["content"].as_str())
        .collect();
    assert_eq!(thinking, "Counting.", "the first thinking only: {chunks:?}");
    let answer: Value = serde_json::from_str(&content).unwrap();
    assert_eq!(answer, json!({"name": "x", "age": 3}));
    assert_eq!(fake.requests("/api/chat"), 2, "retried with feedback");
    assert_eq!(chunks.last().unwrap()["done"], true);
}
